/* test_recordio.c: Fluid's RecordIO files (runtime/recordio.c): a chunk built here byte by byte
 * from the format's definition is what the writer writes and what the scanner reads; chunks close
 * every max_records records; a record of tensor streams (as fluid.recordio_writer writes a
 * batch) reads back as its tensors; a file the Python writer of tests/e2e/fluid_files.py made
 * (tests/fuzz/corpus/recordio/chunks_of_2) reads as the values it wrote; every prefix of a file is its whole chunks or an error; and
 * each corruption (magic, checksum, compressor, sizes, record counts) is an error naming it. Snappy
 * chunks: a small one built here byte by byte in the snappystream framing Fluid writes (its CRC-32C
 * by a bitwise loop checked on the standard's check value) is what the writer writes; payloads of
 * several 32 KiB blocks, compressible and not, read back as written, each block compressed only
 * when that saves an eighth; a compressed block of no bytes adds nothing; a damaged block is an error
 * naming its CRC-32C. */
#include "runtime/recordio.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "runtime/lodstream.h"
#include "tests/cunit.h"

static void u32(FlBuf *b, uint32_t v) { fl_buf_append(b, (const char *)&v, 4); }

/* One chunk of the records "ab", "" and "xyz": payload 02000000 'a' 'b' 00000000 03000000 'x' 'y'
 * 'z' (17 bytes), its CRC-32 from zlib. */
static void hand_chunk(FlBuf *b) {
    FlBuf pl = {0};
    u32(&pl, 2);
    fl_buf_append(&pl, "ab", 2);
    u32(&pl, 0);
    u32(&pl, 3);
    fl_buf_append(&pl, "xyz", 3);
    u32(b, 0x01020304);
    u32(b, 3);
    u32(b, (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)pl.data, (uInt)pl.len));
    u32(b, 0);
    u32(b, (uint32_t)pl.len);
    fl_buf_append(b, pl.data, pl.len);
    fl_buf_free(&pl);
}

/* The records of data[0, len) joined as "rec|rec|..." into out; the status of the scan. */
static FlStatus scan(const void *data, size_t len, char *out, size_t cap, FlErr *e) {
    FlRecordioScanner s;
    fl_recordio_scanner_init(&s, data, len);
    out[0] = 0;
    for (;;) {
        const unsigned char *r;
        size_t n, at;
        bool ok;
        FlStatus st = fl_recordio_next(e, &s, &r, &n, &at, &ok);
        if (st || !ok) {
            fl_recordio_scanner_fini(&s);
            return st;
        }
        size_t l = strlen(out);
        if (l + n + 2 < cap) {
            memcpy(out + l, r, n);
            out[l + n] = '|';
            out[l + n + 1] = 0;
        }
    }
}

static void test_hand_chunk_read_and_written(void) {
    FlBuf want = {0};
    hand_chunk(&want);
    CU_ASSERT_EQUAL(want.len, 37);
    char got[64];
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(scan(want.data, want.len, got, sizeof got, &e), FL_OK);
    CHECK_STR(got, "ab||xyz|");
    FlRecordioWriter w;
    fl_recordio_writer_init(&w, 1000, FL_RECORDIO_NO_COMPRESS);
    CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, "ab", 2), FL_OK);
    CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, NULL, 0), FL_OK);
    CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, "xyz", 3), FL_OK);
    fl_recordio_writer_flush(&w);
    fl_recordio_writer_flush(&w); /* nothing open: no empty chunk */
    CU_ASSERT(w.out.len == want.len && memcmp(w.out.data, want.data, want.len) == 0);
    fl_recordio_writer_fini(&w);
    fl_buf_free(&want);
}

/* max_records 2: five records make chunks of 2, 2 and 1; every prefix of the file is either its
 * first whole chunks (their records) or an error naming where it ends. */
static void test_chunks_and_prefixes(void) {
    FlRecordioWriter w;
    fl_recordio_writer_init(&w, 2, FL_RECORDIO_NO_COMPRESS);
    FlErr e = {{0}};
    const char *recs[] = {"one", "two", "three", "four", "five"};
    for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, recs[i], strlen(recs[i])), FL_OK);
    fl_recordio_writer_flush(&w);
    size_t c1 = 20 + 7 + 7, c2 = c1 + 20 + 9 + 8;
    CU_ASSERT_EQUAL(w.out.len, c2 + 20 + 8);
    char got[128];
    CU_ASSERT_EQUAL(scan(w.out.data, w.out.len, got, sizeof got, &e), FL_OK);
    CHECK_STR(got, "one|two|three|four|five|");
    for (size_t n = 0; n < w.out.len; n++) {
        FlStatus st = scan(w.out.data, n, got, sizeof got, &e);
        if (n == 0 || n == c1 || n == c2) {
            CU_ASSERT_EQUAL(st, FL_OK);
            CHECK_STR(got, n == 0 ? "" : n == c1 ? "one|two|" : "one|two|three|four|");
        } else {
            CU_ASSERT_EQUAL(st, FL_ERROR);
            CU_ASSERT(strstr(e.msg, "the file ends inside the header of the chunk at byte") != NULL ||
                      strstr(e.msg, "bytes of records, but the file has") != NULL);
        }
    }
    fl_recordio_writer_fini(&w);
}

/* A record as fluid.recordio_writer writes a batch: the stream of each feed var, one after the
 * other; the scanner's record reads back as those tensors, byte for byte. */
static void test_record_of_tensors(void) {
    FlErr e = {{0}};
    FlTensor x = FL_TENSOR_INIT, y = FL_TENSOR_INIT;
    int64_t nx[2] = {2, 3}, ny[2] = {2, 1};
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &x, FL_DT_FLOAT32, 2, nx), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &y, FL_DT_INT64, 2, ny), FL_OK);
    for (int i = 0; i < 6; i++) fl_tensor_set(&x, i, 0.25 * i - 1);
    fl_tensor_set(&y, 0, 7), fl_tensor_set(&y, 1, -3);
    FlBuf rec = {0};
    CU_ASSERT_EQUAL_FATAL(fl_lodstream_write(&e, &rec, &x, 0, NULL), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_lodstream_write(&e, &rec, &y, 0, NULL), FL_OK);
    FlRecordioWriter w;
    fl_recordio_writer_init(&w, 1000, FL_RECORDIO_NO_COMPRESS);
    CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, rec.data, rec.len), FL_OK);
    fl_recordio_writer_flush(&w);
    FlRecordioScanner s;
    fl_recordio_scanner_init(&s, w.out.data, w.out.len);
    const unsigned char *r;
    size_t n, at, used;
    bool ok;
    CU_ASSERT_EQUAL_FATAL(fl_recordio_next(&e, &s, &r, &n, &at, &ok), FL_OK);
    CU_ASSERT_FATAL(ok && n == rec.len && at == 20);
    FlLodTensor a, b;
    fl_lodtensor_init(&a);
    fl_lodtensor_init(&b);
    CU_ASSERT_EQUAL_FATAL(fl_lodstream_read(&e, r, n, at + 4, &used, &a), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_lodstream_read(&e, r + used, n - used, at + 4 + used, &used, &b), FL_OK);
    CU_ASSERT(a.t.dtype == FL_DT_FLOAT32 && fl_tensor_same_shape(&a.t, &x));
    CU_ASSERT(memcmp(fl_tensor_data(&a.t), fl_tensor_data(&x), fl_tensor_nbytes(&x)) == 0);
    CU_ASSERT(b.t.dtype == FL_DT_INT64 && memcmp(fl_tensor_data(&b.t), fl_tensor_data(&y), 16) == 0);
    CU_ASSERT_EQUAL(fl_recordio_next(&e, &s, &r, &n, &at, &ok), FL_OK);
    CU_ASSERT(!ok);
    fl_lodtensor_fini(&a);
    fl_lodtensor_fini(&b);
    fl_recordio_writer_fini(&w);
    fl_buf_free(&rec);
    fl_tensor_fini(&x);
    fl_tensor_fini(&y);
}

/* recordio_seeds.py's chunks_of_2: 5 records in chunks of 2, 2 and 1, record i the streams of a
 * float32 [2, 3] {i, 1, 2, 3, 4, 5}, an int64 [2, 1] {i, -i} and an int64 [3, 1] {1, 2, 3} with
 * LoD {0, 1, 3}. */
static void test_python_written_file(void) {
    FlErr e = {{0}};
    size_t flen = 0;
    char *file = fl_read_file(FL_SOURCE_DIR "/tests/fuzz/corpus/recordio/chunks_of_2", &flen, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    FlRecordioScanner s;
    fl_recordio_scanner_init(&s, file, flen);
    int nrec = 0;
    for (;;) {
        const unsigned char *r;
        size_t n, at, used, off = 0;
        bool ok;
        CU_ASSERT_EQUAL_FATAL(fl_recordio_next(&e, &s, &r, &n, &at, &ok), FL_OK);
        if (!ok) break;
        FlLodTensor t[3];
        for (int k = 0; k < 3; k++) {
            fl_lodtensor_init(&t[k]);
            CU_ASSERT_EQUAL_FATAL(fl_lodstream_read(&e, r + off, n - off, at + 4 + off, &used, &t[k]), FL_OK);
            off += used;
        }
        CU_ASSERT_EQUAL(off, n);
        const float *x = fl_tensor_data(&t[0].t);
        const int64_t *y = fl_tensor_data(&t[1].t), *z = fl_tensor_data(&t[2].t), *o = fl_tensor_data(&t[2].lod[0]);
        CU_ASSERT(t[0].t.dtype == FL_DT_FLOAT32 && t[0].t.ne[0] == 2 && t[0].t.ne[1] == 3);
        CU_ASSERT(x[0] == (float)nrec && x[1] == 1 && x[5] == 5);
        CU_ASSERT(t[1].t.dtype == FL_DT_INT64 && y[0] == nrec && y[1] == -nrec);
        CU_ASSERT(t[2].nlevels == 1 && z[2] == 3 && o[0] == 0 && o[1] == 1 && o[2] == 3);
        for (int k = 0; k < 3; k++) fl_lodtensor_fini(&t[k]);
        nrec++;
    }
    CU_ASSERT_EQUAL(nrec, 5);
    free(file);
}

static void test_corrupt_chunks(void) {
    struct {
        size_t at;
        uint32_t v;
        const char *want;
    } cases[] = {
        {0, 0x04030201, "the chunk at byte 0 starts with 0x04030201, not RecordIO's magic number 0x01020304"},
        {4, 2, "the chunk at byte 0 holds 7 bytes after its 2 records"},
        {4, 4, "record 3 of the chunk at byte 0 (byte 37) runs past the chunk's end (it says 4 records)"},
        {8, 12345, "the chunk at byte 0 has checksum 0x00003039, but its 17 bytes sum to"},
        {12, 1, "the Snappy chunk at byte 0 does not start with the framing's \"snappy\\0\""},
        {12, 2, "is Gzip-compressed, which Fluid's own writer does not implement"},
        {12, 9, "has compressor 9, which is none of RecordIO's (0 none, 1 Snappy, 2 Gzip)"},
        {16, 18, "the chunk at byte 0 says 18 bytes of records, but the file has 17 after its header"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        FlBuf b = {0};
        hand_chunk(&b);
        memcpy(b.data + cases[k].at, &cases[k].v, 4);
        char got[64];
        FlErr e = {{0}};
        CU_ASSERT_EQUAL(scan(b.data, b.len, got, sizeof got, &e), FL_ERROR);
        if (!strstr(e.msg, cases[k].want)) fprintf(stderr, "\nmessage '%s' lacks '%s'\n", e.msg, cases[k].want);
        CU_ASSERT(strstr(e.msg, cases[k].want) != NULL);
        fl_buf_free(&b);
    }
    /* a record length past the chunk: the checksum is made to match, so the length is what is
     * wrong */
    FlBuf b = {0};
    hand_chunk(&b);
    uint32_t big = 100;
    memcpy(b.data + 20 + 10, &big, 4);
    uint32_t sum = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)b.data + 20, 17);
    memcpy(b.data + 8, &sum, 4);
    char got[64];
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(scan(b.data, b.len, got, sizeof got, &e), FL_ERROR);
    CU_ASSERT(strstr(e.msg, "record 2 of the chunk at byte 0 (byte 30) is 100 bytes long, past the chunk's end (3 "
                            "bytes left)") != NULL);
    fl_buf_free(&b);
}

/* CRC-32C bit by bit (the writer's is by table), masked as the framing stores it. */
static uint32_t crc32c_bits(const void *data, size_t n) {
    const unsigned char *p = data;
    uint32_t v = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        v ^= p[i];
        for (int k = 0; k < 8; k++) v = (v >> 1) ^ (0x82f63b78u & (0u - (v & 1)));
    }
    return ~v;
}

static uint32_t masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

static void be(FlBuf *b, uint32_t v, int bytes) {
    for (int k = bytes - 1; k >= 0; k--) fl_buf_putc(b, (char)(v >> (8 * k)));
}

/* hand_chunk's records in a Snappy chunk: the framing's magic, one stored block (17 bytes do not
 * compress by an eighth) with its masked CRC-32C. */
static void test_snappy_hand_chunk(void) {
    CU_ASSERT_EQUAL(crc32c_bits("123456789", 9), 0xe3069283u); /* the standard's check value */
    FlBuf plain = {0}, fr = {0}, want = {0};
    hand_chunk(&plain);
    const char *pl = plain.data + 20;
    fl_buf_append(&fr, "snappy", 7); /* and its zero byte */
    fl_buf_putc(&fr, 0);
    be(&fr, 17, 2);
    be(&fr, masked(crc32c_bits(pl, 17)), 4);
    fl_buf_append(&fr, pl, 17);
    u32(&want, 0x01020304);
    u32(&want, 3);
    u32(&want, (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)fr.data, (uInt)fr.len));
    u32(&want, 1);
    u32(&want, (uint32_t)fr.len);
    fl_buf_append(&want, fr.data, fr.len);
    FlErr e = {{0}};
    FlRecordioWriter w;
    fl_recordio_writer_init(&w, 1000, FL_RECORDIO_SNAPPY);
    CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, "ab", 2), FL_OK);
    CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, NULL, 0), FL_OK);
    CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, "xyz", 3), FL_OK);
    fl_recordio_writer_flush(&w);
    CU_ASSERT_EQUAL_FATAL(w.out.len, want.len);
    CU_ASSERT(memcmp(w.out.data, want.data, want.len) == 0);
    char got[64];
    CU_ASSERT_EQUAL(scan(want.data, want.len, got, sizeof got, &e), FL_OK);
    CU_ASSERT_STRING_EQUAL(got, "ab||xyz|");
    fl_recordio_writer_fini(&w);
    fl_buf_free(&plain);
    fl_buf_free(&fr);
    fl_buf_free(&want);
}

/* A Snappy chunk whose first block is compressed and holds no bytes (Snappy's one-byte empty
 * stream, the CRC-32C of nothing), then hand_chunk's payload as a stored block: the empty block
 * adds nothing and the records read as written; a wrong CRC-32C on the empty block is an error. */
static void test_snappy_empty_block(void) {
    for (int bad = 0; bad < 2; bad++) {
        FlBuf plain = {0}, fr = {0}, chunk = {0};
        hand_chunk(&plain);
        const char *pl = plain.data + 20;
        fl_buf_append(&fr, "snappy", 7); /* and its zero byte */
        fl_buf_putc(&fr, 1); /* compressed, 1 byte: the uncompressed length 0 */
        be(&fr, 1, 2);
        be(&fr, masked(crc32c_bits("", 0)) ^ (uint32_t)bad, 4);
        fl_buf_putc(&fr, 0);
        fl_buf_putc(&fr, 0); /* stored, 17 bytes */
        be(&fr, 17, 2);
        be(&fr, masked(crc32c_bits(pl, 17)), 4);
        fl_buf_append(&fr, pl, 17);
        u32(&chunk, 0x01020304);
        u32(&chunk, 3);
        u32(&chunk, (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)fr.data, (uInt)fr.len));
        u32(&chunk, 1);
        u32(&chunk, (uint32_t)fr.len);
        fl_buf_append(&chunk, fr.data, fr.len);
        FlErr e = {{0}};
        char got[64];
        FlStatus st = scan(chunk.data, chunk.len, got, sizeof got, &e);
        CU_ASSERT_EQUAL(st, bad ? FL_ERROR : FL_OK);
        if (!bad) CU_ASSERT_STRING_EQUAL(got, "ab||xyz|");
        if (bad) CU_ASSERT(strstr(e.msg, "the block at byte 27 of the Snappy chunk at byte 0 has CRC-32C") != NULL);
        fl_buf_free(&plain);
        fl_buf_free(&fr);
        fl_buf_free(&chunk);
    }
}

/* Records of `big` bytes each, compressible (a repeated phrase) or not (an LCG's bytes). */
static void fill(char *p, size_t n, bool compressible, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = compressible ? "the same few words again "[i % 25] : (char)(seed >> 24);
    }
}

static void test_snappy_blocks(void) {
    for (int compressible = 0; compressible < 2; compressible++) {
        enum { NREC = 3, BIG = 30000 }; /* a payload of 90012 bytes: blocks of 32768, 32768, 24476 */
        char *recs = malloc(NREC * BIG);
        fill(recs, NREC * BIG, compressible, 7);
        FlErr e = {{0}};
        FlRecordioWriter w;
        fl_recordio_writer_init(&w, 1000, FL_RECORDIO_SNAPPY);
        for (int k = 0; k < NREC; k++) CU_ASSERT_EQUAL(fl_recordio_writer_add(&e, &w, recs + k * BIG, BIG), FL_OK);
        fl_recordio_writer_flush(&w);
        /* the blocks: each flag says compressed exactly when the data is */
        const unsigned char *o = (const unsigned char *)w.out.data;
        size_t q = 20 + 7, blocks = 0;
        while (q < w.out.len) {
            unsigned len = (unsigned)o[q + 1] << 8 | o[q + 2];
            CU_ASSERT_EQUAL(o[q], compressible ? 1 : 0);
            if (!compressible) CU_ASSERT_EQUAL(len, blocks < 2 ? 32768u : 90012u - 65536u);
            if (compressible) CU_ASSERT(len < 32768 / 4);
            q += 7 + len;
            blocks++;
        }
        CU_ASSERT_EQUAL(q, w.out.len);
        CU_ASSERT_EQUAL(blocks, 3);
        /* read back as written */
        FlRecordioScanner s;
        fl_recordio_scanner_init(&s, w.out.data, w.out.len);
        for (int k = 0; k <= NREC; k++) {
            const unsigned char *r;
            size_t n, at;
            bool ok;
            CU_ASSERT_EQUAL_FATAL(fl_recordio_next(&e, &s, &r, &n, &at, &ok), FL_OK);
            CU_ASSERT_EQUAL(ok, k < NREC);
            if (ok) CU_ASSERT(n == BIG && memcmp(r, recs + k * BIG, BIG) == 0 && at == 0);
        }
        fl_recordio_scanner_fini(&s);
        /* a byte of the second block's data flipped, the chunk's CRC-32 made to match: the block's
         * CRC-32C (or Snappy's own checks) finds it */
        unsigned first = (unsigned)o[28] << 8 | o[29];
        size_t b2 = 27 + 7 + first;
        w.out.data[b2 + 7 + 100] ^= 0x10;
        uint32_t sum = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)w.out.data + 20, (uInt)(w.out.len - 20));
        memcpy(w.out.data + 8, &sum, 4);
        char got[8];
        CU_ASSERT_EQUAL(scan(w.out.data, w.out.len, got, sizeof got, &e), FL_ERROR);
        char want[96];
        snprintf(want, sizeof want, "the block at byte %zu of the Snappy chunk at byte 0 ", b2);
        if (!strstr(e.msg, want)) fprintf(stderr, "\nmessage '%s' lacks '%s'\n", e.msg, want);
        CU_ASSERT(strstr(e.msg, want) != NULL);
        if (!compressible) CU_ASSERT(strstr(e.msg, "has CRC-32C") != NULL);
        fl_recordio_writer_fini(&w);
        free(recs);
    }
}

int main(void) {
    static const FlTestCase cases[] = {
        {"hand_chunk_read_and_written", test_hand_chunk_read_and_written},
        {"chunks_and_prefixes", test_chunks_and_prefixes},
        {"record_of_tensors", test_record_of_tensors},
        {"python_written_file", test_python_written_file},
        {"corrupt_chunks", test_corrupt_chunks},
        {"snappy_hand_chunk", test_snappy_hand_chunk},
        {"snappy_blocks", test_snappy_blocks},
        {"snappy_empty_block", test_snappy_empty_block},
    };
    return fl_test_run("recordio", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
