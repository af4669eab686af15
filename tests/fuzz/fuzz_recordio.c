/* fuzz_recordio.c: libFuzzer target for the RecordIO scanner (runtime/recordio.c): hostile bytes
 * as a RecordIO file, and 16 of its prefixes (a file cut short). Any outcome is fine but a crash,
 * a sanitizer report, a hang or a broken promise: every record handed out lies inside the file,
 * after its chunk's header, and a scan ends (the file is read to its end or an error is given).
 * Each record is also read as tensor streams (runtime/lodstream.c), and the whole file by open_files'
 * parse (runtime/core/reader_files.c) declared as the seeds' batches are (float32 [-1, 3], int64
 * [-1, 1], int64 [-1, 1] of LoD level 1): a table it gives holds offsets that cut its fields.
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

#include "runtime/core/reader_files.h"
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
        if (s.snappy) { /* its bytes in the scanner's uncompressed payload */
            const unsigned char *pb = (const unsigned char *)s.plain.data;
            check(at + FL_RECORDIO_HEADER <= size && r >= pb + 4 && r + len <= pb + s.plain.len,
                  "a record inside its chunk's uncompressed payload", "bounds");
        } else {
            check(n <= size / 4, "no more records than 4-byte lengths fit", "count");
            check(at >= FL_RECORDIO_HEADER && r == copy + at + 4 && at + 4 + len <= size, "a record inside the file",
                  "bounds");
        }
        size_t off = 0, used;
        for (int k = 0; k < 4 && off < len; k++, off += used) {
            FlLodTensor lt;
            fl_lodtensor_init(&lt);
            FlStatus st = fl_lodstream_read(&e, r + off, len - off, at + 4 + off, &used, &lt);
            fl_lodtensor_fini(&lt);
            if (st) break;
        }
    }
    fl_recordio_scanner_fini(&s);
    free(copy);
}

/* open_files' parse of the file, declared as the seeds' batches. */
static void parse(const uint8_t *data, size_t size) {
    static char *names[3] = {"x", "y", "ids"}, *types[3] = {"float32", "int64", "int64"}, *files[1] = {"fuzz.recordio"};
    static int64_t widths[3] = {3, 1, 1}, dims[6] = {-1, 3, -1, 1, -1, 1}, ranks[3] = {2, 2, 2}, lods[3] = {0, 0, 1};
    FlReaderDesc d = {.kind = "recordio", .n = 1, .pass_num = 1};
    d.files.data = files, d.files.len = 1;
    d.slot_names.data = names, d.slot_names.len = 3;
    d.slot_types.data = types, d.slot_types.len = 3;
    d.slot_widths.data = widths, d.slot_widths.len = 3;
    d.shape_concat.data = dims, d.shape_concat.len = 6;
    d.ranks.data = ranks, d.ranks.len = 3;
    d.lod_levels.data = lods, d.lod_levels.len = 3;
    unsigned char *copy = malloc(size ? size : 1);
    if (size) memcpy(copy, data, size);
    FlDsTable *t = NULL;
    FlErr e = {{0}};
    if (fl_reader_files_parse(&d, copy, size, &t, &e)) {
        check(e.msg[0] != 0 && t == NULL, "a message and no table when the parse fails", "empty");
    } else {
        check(t && t->records && t->rows <= size / 4, "no more records than 4-byte lengths fit", "count");
        for (size_t f = 0; f < 3; f++) {
            check(t->offsets[f][0] == 0, "offsets from 0", "offsets");
            for (size_t r = 0; r < t->rows; r++) {
                check(t->offsets[f][r] <= t->offsets[f][r + 1], "rows never decreasing", "offsets");
                if (!t->seq_at[f]) continue;
                for (int64_t q = t->seq_at[f][r]; q < t->seq_at[f][r + 1]; q++)
                    check(t->seq_end[f][q] >= t->offsets[f][r] && t->seq_end[f][q] <= t->offsets[f][r + 1],
                          "a record's sequences inside its rows", "lod");
            }
        }
    }
    fl_ds_free(t);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    scan(data, size);
    parse(data, size);
    for (size_t k = 1; k <= 16 && size > 1; k++) scan(data, size * k / 17);
    return 0;
}
