/* fuzz_recordio.c: libFuzzer target for the RecordIO scanner (runtime/recordio.c): hostile bytes
 * as a RecordIO file, and 16 of its prefixes (a file cut short). Any outcome is fine but a crash,
 * a sanitizer report, a hang or a broken promise: every record handed out lies inside the file,
 * after its chunk's header, and a scan ends (the file is read to its end or an error is given).
 * Each record is also read as tensor streams (runtime/lodstream.c), as open_files reads a batch.
 *
 * fuzz_recordio_corpus (an ordinary test, label runtime) replays tests/fuzz/corpus/recordio
 * (tests/fuzz/recordio_seeds.py writes it) and the kept crashers; with -DFL_FUZZ=ON the libFuzzer
 * binary fuzz_recordio explores further:
 *   mkdir -p build-fuzz/corpus-recordio
 *   build-fuzz/tests/fuzz/fuzz_recordio build-fuzz/corpus-recordio tests/fuzz/corpus/recordio \
 *       -max_total_time=600 -timeout=10 -artifact_prefix=tests/fuzz/crashes/recordio/
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/lodstream.h"
#include "runtime/recordio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *msg) {
    if (ok) return;
    fprintf(stderr, "fuzz_recordio: broken promise: %s (%s)\n", what, msg);
    abort();
}

static void scan(const uint8_t *data, size_t size) {
    unsigned char *copy = malloc(size ? size : 1); /* its own allocation: a read past the end is reported */
    if (size) memcpy(copy, data, size);
    FlRecordioScanner s;
    fl_recordio_scanner_init(&s, copy, size);
    FlErr e = {{0}};
    for (size_t n = 0;; n++) {
        const unsigned char *r;
        size_t len, at;
        bool ok;
        if (fl_recordio_next(&e, &s, &r, &len, &at, &ok)) {
            check(e.msg[0] != 0, "a message when the scan fails", "empty");
            break;
        }
        if (!ok) break;
        check(n <= size / 4, "no more records than 4-byte lengths fit", "count");
        check(at >= FL_RECORDIO_HEADER && r == copy + at + 4 && at + 4 + len <= size, "a record inside the file",
              "bounds");
        size_t off = 0, used;
        for (int k = 0; k < 4 && off < len; k++, off += used) {
            FlLodTensor lt;
            fl_lodtensor_init(&lt);
            FlStatus st = fl_lodstream_read(&e, r + off, len - off, at + 4 + off, &used, &lt);
            fl_lodtensor_fini(&lt);
            if (st) break;
        }
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    scan(data, size);
    for (size_t k = 1; k <= 16 && size > 1; k++) scan(data, size * k / 17);
    return 0;
}
