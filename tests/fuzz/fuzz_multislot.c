/* fuzz_multislot.c: libFuzzer target for the MultiSlot reader of Fluid's Dataset API
 * (dataset/multislot.c): hostile bytes as a MultiSlot file of four slots (sparse ids, a float slot
 * that is not used, a dense pair of floats, a dense click id), and 8 of its prefixes. Any outcome
 * is fine but a crash, a sanitizer report, a hang or a broken promise: a load gives a table of
 * one row per line, each sparse row of one step or more, every value within its field, or an
 * error that names the file and its line ("FILE:LINE: ...").
 *
 * fuzz_multislot_corpus (an ordinary test, label runtime) replays tests/fuzz/corpus/multislot
 * (lines in the format and lines with each of its errors) and the kept crashers; with
 * -DFL_FUZZ=ON the libFuzzer binary fuzz_multislot explores further:
 *   mkdir -p build-fuzz/corpus-multislot
 *   build-fuzz/tests/fuzz/fuzz_multislot build-fuzz/corpus-multislot tests/fuzz/corpus/multislot \
 *       -max_total_time=600 -timeout=10 -artifact_prefix=tests/fuzz/crashes/multislot/
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
    fprintf(stderr, "fuzz_multislot: broken promise: %s (%s)\n", what, msg);
    abort();
}

static const FlDsSlot slots[4] = {{"ids", false, 0}, {"unused", true, -1}, {"dense", true, 2}, {"click", false, 1}};

static void load(const uint8_t *data, size_t size) {
    char path[] = "/tmp/fuzz_multislot.XXXXXX";
    int fd = mkstemp(path);
    check(fd >= 0, "a temporary file", path);
    check(write(fd, data, size) == (ssize_t)size, "the file written", path);
    close(fd);
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        if (data[i] == '\n' || i + 1 == size) lines++;
    char *files[1] = {path};
    FlDsTable *t = NULL;
    FlErr e;
    if (fl_ds_multislot_load(files, 1, slots, 4, &t, &e) == FL_OK) {
        check(t && t->layout.nfields == 3, "a table of the three used slots", "fields");
        check(t->rows == lines, "a row per line", "rows");
        const int64_t *off = t->offsets[0];
        check(off && off[0] == 0, "the sparse slot's offsets from 0", "offsets");
        volatile int64_t sum = 0;
        for (size_t r = 0; r < t->rows; r++) {
            check(off[r + 1] > off[r], "each sparse row one step or more", "steps");
            sum += ((const int64_t *)t->data[0])[off[r + 1] - 1];
            check(((const int64_t *)t->data[2])[r] >= 0, "ids of int64's range", "click");
            sum += (int64_t)((const float *)t->data[1])[2 * r + 1];
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
    load(data, size);
    for (size_t k = 1; k <= 8 && size > 1; k++) load(data, size * k / 9);
    return 0;
}
