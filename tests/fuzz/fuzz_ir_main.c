/* fuzz_ir_main.c: runs the IR fuzz target (fuzz_ir.c) over every file of the directories named
 * on the command line, in an ordinary build: the corpus and the kept crashers become a
 * regression test (test_fuzz_ir_corpus). A crash aborts the test; otherwise it prints how many
 * inputs decoded and exits 0. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    size_t total = 0;
    for (int i = 1; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "cannot open directory '%s'\n", argv[i]);
            return 1;
        }
        FL_VEC(char *) names = {0};
        struct dirent *ent;
        while ((ent = readdir(d)) != NULL) {
            if (ent->d_name[0] == '.') continue;
            FlBuf path = {0};
            fl_buf_printf(&path, "%s/%s", argv[i], ent->d_name);
            FL_VEC_PUSH(&names, path.data);
        }
        closedir(d);
        if (names.len > 1) qsort(names.data, names.len, sizeof(char *), cmp_str); /* stable order */
        for (size_t k = 0; k < names.len; k++) {
            struct stat st;
            if (stat(names.data[k], &st) != 0 || !S_ISREG(st.st_mode)) {
                free(names.data[k]);
                continue;
            }
            FlErr e;
            size_t len;
            char *data = fl_read_file(names.data[k], &len, &e);
            if (!data) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
            LLVMFuzzerTestOneInput((const uint8_t *)data, len);
            free(data);
            free(names.data[k]);
            total++;
        }
        FL_VEC_FREE(&names);
    }
    printf("%zu inputs ran\n", total);
    return total ? 0 : 1;
}
