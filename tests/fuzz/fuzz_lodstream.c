/* fuzz_lodstream.c: libFuzzer target for Fluid's LoDTensor stream reader (runtime/lodstream.c),
 * which fluid.layers.load and the RecordIO reader use: hostile bytes as a stream, and 16 of its
 * prefixes (a file cut short). Any outcome is fine but a crash, a sanitizer report, a hang or a
 * broken promise: a read gives a tensor whose bytes lie inside the input and whose LoD cuts it
 * (and which the writer writes and the reader reads back the same), or an error and no tensor.
 *
 * fuzz_lodstream_corpus (an ordinary test, label runtime) replays tests/fuzz/corpus/lodstream
 * (tests/fuzz/lodstream_seeds.py writes it) and the kept crashers; with -DFL_FUZZ=ON the
 * libFuzzer binary fuzz_lodstream explores further:
 *   mkdir -p build-fuzz/corpus-lodstream
 *   build-fuzz/tests/fuzz/fuzz_lodstream build-fuzz/corpus-lodstream tests/fuzz/corpus/lodstream \
 *       -max_total_time=600 -timeout=10 -artifact_prefix=tests/fuzz/crashes/lodstream/
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/lodstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *msg) {
    if (ok) return;
    fprintf(stderr, "fuzz_lodstream: broken promise: %s (%s)\n", what, msg);
    abort();
}

static void read1(const uint8_t *data, size_t size) {
    unsigned char *copy = malloc(size ? size : 1); /* its own allocation: a read past the end is reported */
    if (size) memcpy(copy, data, size);
    FlLodTensor lt;
    fl_lodtensor_init(&lt);
    FlErr e = {{0}};
    size_t used = 0;
    if (fl_lodstream_read(&e, copy, size, 0, &used, &lt) == FL_OK) {
        check(used <= size, "no more bytes used than given", "used");
        check(fl_tensor_has_data(&lt.t), "a tensor when the read succeeds", "empty");
        check(fl_tensor_nbytes(&lt.t) <= used, "values inside the stream", "nbytes");
        int64_t rows = lt.t.ndim ? lt.t.ne[0] : 1;
        for (int l = lt.nlevels - 1; l >= 0; l--) {
            const int64_t *o = fl_tensor_data(&lt.lod[l]);
            int64_t n = lt.lod[l].ne[0];
            check(n >= 1 && o[0] == 0 && o[n - 1] == rows, "a level that cuts what is inside it", "lod");
            rows = n - 1;
        }
        FlBuf b = {0};
        check(fl_lodstream_write(&e, &b, &lt.t, lt.nlevels, lt.lod) == FL_OK, "the writer takes what was read", e.msg);
        FlLodTensor again;
        fl_lodtensor_init(&again);
        size_t used2 = 0;
        check(fl_lodstream_read(&e, b.data, b.len, 0, &used2, &again) == FL_OK && used2 == b.len,
              "the writer's bytes read back", e.msg);
        check(again.t.dtype == lt.t.dtype && fl_tensor_same_shape(&again.t, &lt.t) &&
                  memcmp(fl_tensor_data(&again.t), fl_tensor_data(&lt.t), fl_tensor_nbytes(&lt.t)) == 0 &&
                  again.nlevels == lt.nlevels,
              "the same tensor read back", "differs");
        fl_lodtensor_fini(&again);
        fl_buf_free(&b);
    } else {
        check(!fl_tensor_has_data(&lt.t) && lt.nlevels == 0, "no tensor when the read fails", e.msg);
        check(e.msg[0] != 0, "a message when the read fails", "empty");
    }
    fl_lodtensor_fini(&lt);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    read1(data, size);
    for (size_t k = 1; k <= 16 && size > 1; k++) read1(data, size * k / 17);
    return 0;
}
