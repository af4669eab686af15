/* fuzz_ctr.c: libFuzzer target for the reader of fluid.contrib.ctr_reader's files (dataset/ctr.c):
 * hostile bytes as a 'csv' file (the label, a dense pair of floats in field 1, sparse ids in field
 * 2), as an 'svm' file (slots 1 and 2 and the label), and as that svm file listed twice, read as
 * gzip by two threads; each also 8 of its prefixes. Any outcome is fine but a crash, a sanitizer
 * report, a hang or a broken promise: a load gives a table of one row per line (twice as many for
 * the file listed twice), each sparse row of one step or more, svm labels 0 or 1, or an error that
 * names the file and its line ("FILE:LINE: ...").
 *
 * fuzz_ctr_corpus (an ordinary test, label runtime) replays tests/fuzz/corpus/ctr (lines of both
 * formats and lines with each of their errors) and the kept crashers; with -DFL_FUZZ=ON the
 * libFuzzer binary fuzz_ctr explores further:
 *   mkdir -p build-fuzz/corpus-ctr
 *   build-fuzz/tests/fuzz/fuzz_ctr build-fuzz/corpus-ctr tests/fuzz/corpus/ctr \
 *       -max_total_time=600 -timeout=10 -artifact_prefix=tests/fuzz/crashes/ctr/
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *msg) {
    if (ok) return;
    fprintf(stderr, "fuzz_ctr: broken promise: %s (%s)\n", what, msg);
    abort();
}

static const FlDsSlot csv_slots[3] = {{"label", false, 1}, {"dense", true, 2}, {"ids", false, 0}};
static const int64_t csv_keys[3] = {0, 1, 2};
static const FlDsSlot svm_slots[3] = {{"s1", false, 0}, {"s2", false, 0}, {"click", false, 1}};
static const int64_t svm_keys[3] = {1, 2, -1};

static void load(const uint8_t *data, size_t size, int how) {
    char path[] = "/tmp/fuzz_ctr.XXXXXX";
    int fd = mkstemp(path);
    check(fd >= 0, "a temporary file", path);
    check(write(fd, data, size) == (ssize_t)size, "the file written", path);
    close(fd);
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        if (data[i] == '\n' || i + 1 == size) lines++;
    char *files[2] = {path, path};
    bool csv = how == 0;
    FlDsCtr d = {csv, how == 2, how == 2 ? 2 : 1, files, how == 2 ? 2 : 1, csv ? csv_slots : svm_slots,
                 csv ? csv_keys : svm_keys, 3};
    FlDsTable *t = NULL;
    FlErr e;
    if (fl_ds_ctr_load(&d, &t, &e) == FL_OK) {
        size_t seq = csv ? 2 : 0, label = csv ? 0 : 2;
        check(t && t->layout.nfields == 3, "a table of the three slots", "fields");
        check(t->rows == lines * d.nfiles, "a row per line of each file", "rows");
        volatile int64_t sum = 0;
        for (size_t f = seq; f <= (csv ? 2u : 1u); f++) {
            const int64_t *off = t->offsets[f];
            check(off && off[0] == 0, "a sparse slot's offsets from 0", "offsets");
            for (size_t r = 0; r < t->rows; r++) {
                check(off[r + 1] > off[r], "each sparse row one step or more", "steps");
                sum += ((const int64_t *)t->data[f])[off[r + 1] - 1];
            }
        }
        for (size_t r = 0; r < t->rows; r++) {
            int64_t l = ((const int64_t *)t->data[label])[r];
            check(csv || l == 0 || l == 1, "an svm label 0 or 1", "label");
            if (csv) sum += (int64_t)((const float *)t->data[1])[2 * r + 1];
        }
        (void)sum;
        fl_ds_free(t);
    } else {
        check(t == NULL, "no table when the load fails", e.msg);
        check(strncmp(e.msg, path, strlen(path)) == 0 && e.msg[strlen(path)] == ':', "an error naming the file",
              e.msg);
    }
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int how = 0; how < 3; how++) {
        load(data, size, how);
        for (size_t k = 1; k <= 8 && size > 1; k++) load(data, size * k / 9, how);
    }
    return 0;
}
