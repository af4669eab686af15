/* recordio.c: Fluid's RecordIO files (recordio.h says what the bytes are).
 *
 * The writer keeps the open chunk's payload and prepends its header when it closes it (a Snappy
 * chunk's payload framed first). The scanner checks a chunk whole when it enters it (header,
 * checksum, a Snappy chunk's blocks uncompressed and their CRC-32C, every record's length inside
 * the payload, nothing after the last), so the records it then hands out need no more checks.
 */
#include "runtime/recordio.h"

#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static const char SNAPPY_MAGIC[7] = {'s', 'n', 'a', 'p', 'p', 'y', 0};

static uint32_t crc(const unsigned char *p, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    while (n > 0) { /* zlib takes uInt lengths */
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

static void put_u32(FlBuf *b, uint32_t v) { fl_buf_append(b, (const char *)&v, 4); }

static uint32_t get_u32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ---------------------------------------------------------------- Snappy framing */

/* CRC-32C (Castagnoli) by a table of the caller's, made once per chunk. */
typedef struct Crc32c {
    uint32_t t[256];
} Crc32c;

static void crc32c_init(Crc32c *c) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t v = i;
        for (int k = 0; k < 8; k++) v = v & 1 ? (v >> 1) ^ 0x82f63b78u : v >> 1;
        c->t[i] = v;
    }
}

/* The masked CRC-32C of n bytes, as the framing stores it. */
static uint32_t crc32c_masked(const Crc32c *c, const unsigned char *p, size_t n) {
    uint32_t v = 0xffffffffu;
    for (size_t i = 0; i < n; i++) v = (v >> 8) ^ c->t[(v ^ p[i]) & 0xff];
    v = ~v;
    return ((v >> 15) | (v << 17)) + 0xa282ead8u;
}

static void put_be(FlBuf *b, uint32_t v, int bytes) {
    for (int k = bytes - 1; k >= 0; k--) fl_buf_putc(b, (char)(v >> (8 * k) & 0xff));
}

static uint32_t get_be(const unsigned char *p, int bytes) {
    uint32_t v = 0;
    for (int k = 0; k < bytes; k++) v = v << 8 | p[k];
    return v;
}

/* The n bytes at p framed into out: blocks of FL_RECORDIO_SNAPPY_BLOCK bytes, each compressed or
 * stored as it is when compression saves less than an eighth. */
static void snappy_frame(FlBuf *out, const unsigned char *p, size_t n) {
    Crc32c c;
    crc32c_init(&c);
    fl_buf_append(out, SNAPPY_MAGIC, sizeof SNAPPY_MAGIC);
    size_t cap = snappy_max_compressed_length(FL_RECORDIO_SNAPPY_BLOCK);
    char *z = fl_xmalloc(cap);
    for (size_t at = 0; at < n; at += FL_RECORDIO_SNAPPY_BLOCK) {
        size_t k = n - at < FL_RECORDIO_SNAPPY_BLOCK ? n - at : FL_RECORDIO_SNAPPY_BLOCK, zn = cap;
        bool packed = snappy_compress((const char *)p + at, k, z, &zn) == SNAPPY_OK && zn < k - k / 8;
        fl_buf_putc(out, packed ? 1 : 0);
        put_be(out, (uint32_t)(packed ? zn : k), 2);
        put_be(out, crc32c_masked(&c, p + at, k), 4);
        fl_buf_append(out, packed ? z : (const char *)p + at, packed ? zn : k);
    }
    free(z);
}

/* The framed payload of the Snappy chunk at byte `at` (n bytes at p) uncompressed into out. */
static FlStatus snappy_unframe(FlErr *e, const unsigned char *p, size_t n, size_t at, FlBuf *out) {
    out->len = 0;
    if (n < sizeof SNAPPY_MAGIC || memcmp(p, SNAPPY_MAGIC, sizeof SNAPPY_MAGIC) != 0)
        return fl_err(e, "the Snappy chunk at byte %zu does not start with the framing's \"snappy\\0\"", at);
    Crc32c c;
    crc32c_init(&c);
    size_t q = sizeof SNAPPY_MAGIC, body = at + FL_RECORDIO_HEADER;
    while (q < n) {
        size_t b = body + q;
        if (n - q < 7)
            return fl_err(e, "the Snappy chunk at byte %zu ends inside the header of its block at byte %zu", at, b);
        unsigned flag = p[q];
        uint32_t len = get_be(p + q + 1, 2), sum = get_be(p + q + 3, 4);
        if (flag > 1)
            return fl_err(e, "the block at byte %zu of the Snappy chunk at byte %zu has flag %u (0 stored, 1 "
                             "compressed)", b, at, flag);
        if (len == 0 || len > FL_RECORDIO_SNAPPY_BLOCK || len > n - q - 7)
            return fl_err(e, "the block at byte %zu of the Snappy chunk at byte %zu says %u bytes (1 to %d, and %zu "
                             "are left)", b, at, len, FL_RECORDIO_SNAPPY_BLOCK, n - q - 7);
        const char *d = (const char *)p + q + 7;
        size_t plain = len;
        /* the block's plain bytes: its own data when stored, else a buffer of their own (never
         * empty, so that the CRC below reads a real pointer also for a block of no bytes) */
        char *tmp = NULL;
        if (flag == 1) {
            if (snappy_uncompressed_length(d, len, &plain) != SNAPPY_OK ||
                snappy_validate_compressed_buffer(d, len) != SNAPPY_OK)
                return fl_err(e, "the block at byte %zu of the Snappy chunk at byte %zu is no Snappy data", b, at);
            /* a valid block's length is real: a 32 KiB block gives at most about 1 MiB */
            tmp = fl_xmalloc(plain ? plain : 1);
            size_t got = plain;
            if (snappy_uncompress(d, len, tmp, &got) != SNAPPY_OK || got != plain) {
                free(tmp);
                return fl_err(e, "the block at byte %zu of the Snappy chunk at byte %zu is no Snappy data", b, at);
            }
        }
        const unsigned char *bytes = (const unsigned char *)(tmp ? tmp : d);
        uint32_t got = crc32c_masked(&c, bytes, plain);
        if (got == sum) fl_buf_append(out, (const char *)bytes, plain);
        free(tmp);
        if (got != sum)
            return fl_err(e, "the block at byte %zu of the Snappy chunk at byte %zu has CRC-32C 0x%08x, but its %zu "
                             "bytes give 0x%08x (the file is damaged)", b, at, sum, plain, got);
        q += 7 + (size_t)len;
    }
    return FL_OK;
}

/* ---------------------------------------------------------------- writing */

void fl_recordio_writer_init(FlRecordioWriter *w, uint32_t max_records, FlRecordioCompressor compressor) {
    FL_ASSERT(compressor == FL_RECORDIO_NO_COMPRESS || compressor == FL_RECORDIO_SNAPPY);
    memset(w, 0, sizeof *w);
    w->max_records = max_records ? max_records : 1;
    w->compressor = compressor;
}

void fl_recordio_writer_fini(FlRecordioWriter *w) {
    fl_buf_free(&w->out);
    fl_buf_free(&w->chunk);
    w->nrec = 0;
}

FlStatus fl_recordio_writer_add(FlErr *e, FlRecordioWriter *w, const void *rec, size_t len) {
    if (len > UINT32_MAX) return fl_err(e, "a record of %zu bytes (RecordIO's lengths are 32-bit)", len);
    put_u32(&w->chunk, (uint32_t)len);
    if (len) fl_buf_append(&w->chunk, rec, len);
    if (++w->nrec == w->max_records) fl_recordio_writer_flush(w);
    return FL_OK;
}

void fl_recordio_writer_flush(FlRecordioWriter *w) {
    if (w->nrec == 0) return;
    FlBuf framed = {0};
    if (w->compressor == FL_RECORDIO_SNAPPY)
        snappy_frame(&framed, (const unsigned char *)w->chunk.data, w->chunk.len);
    const FlBuf *pay = w->compressor == FL_RECORDIO_SNAPPY ? &framed : &w->chunk;
    put_u32(&w->out, FL_RECORDIO_MAGIC);
    put_u32(&w->out, w->nrec);
    put_u32(&w->out, crc((const unsigned char *)pay->data, pay->len));
    put_u32(&w->out, (uint32_t)w->compressor);
    put_u32(&w->out, (uint32_t)pay->len);
    fl_buf_append(&w->out, pay->data, pay->len);
    fl_buf_free(&framed);
    w->chunk.len = 0;
    w->nrec = 0;
}

/* ---------------------------------------------------------------- scanning */

void fl_recordio_scanner_init(FlRecordioScanner *s, const void *data, size_t len) {
    memset(s, 0, sizeof *s);
    s->p = data;
    s->len = len;
}

void fl_recordio_scanner_fini(FlRecordioScanner *s) { fl_buf_free(&s->plain); }

/* Enters the chunk at s->pos, checked whole. */
static FlStatus enter_chunk(FlErr *e, FlRecordioScanner *s) {
    size_t at = s->pos, left = s->len - at;
    if (left < FL_RECORDIO_HEADER)
        return fl_err(e, "the file ends inside the header of the chunk at byte %zu (%zu of its 20 bytes)", at, left);
    const unsigned char *h = s->p + at;
    uint32_t magic = get_u32(h), n = get_u32(h + 4), sum = get_u32(h + 8), comp = get_u32(h + 12),
             size = get_u32(h + 16);
    if (magic != FL_RECORDIO_MAGIC)
        return fl_err(e, "the chunk at byte %zu starts with 0x%08x, not RecordIO's magic number 0x%08x", at, magic,
                      FL_RECORDIO_MAGIC);
    if (comp == FL_RECORDIO_GZIP)
        return fl_err(e, "the chunk at byte %zu is Gzip-compressed, which Fluid's own writer does not implement: "
                         "write the file with compressor=Compressor.NoCompress or Snappy", at);
    if (comp != FL_RECORDIO_NO_COMPRESS && comp != FL_RECORDIO_SNAPPY)
        return fl_err(e, "the chunk at byte %zu has compressor %u, which is none of RecordIO's (0 none, 1 Snappy, "
                         "2 Gzip)", at, comp);
    size_t body = at + FL_RECORDIO_HEADER;
    if (size > s->len - body)
        return fl_err(e, "the chunk at byte %zu says %u bytes of records, but the file has %zu after its header", at,
                      size, s->len - body);
    uint32_t got = crc(s->p + body, size);
    if (got != sum)
        return fl_err(e, "the chunk at byte %zu has checksum 0x%08x, but its %u bytes sum to 0x%08x (the file is "
                         "damaged)", at, sum, size, got);
    s->snappy = comp == FL_RECORDIO_SNAPPY;
    const unsigned char *pay = s->p + body;
    size_t end = size, base = body; /* the payload's records' bytes, and where its byte 0 is in the file */
    if (s->snappy) {
        if (snappy_unframe(e, s->p + body, size, at, &s->plain)) return FL_ERROR;
        pay = (const unsigned char *)s->plain.data;
        end = s->plain.len;
        base = 0;
    }
    const char *where = s->snappy ? " of its uncompressed payload" : "";
    size_t q = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (end - q < 4)
            return fl_err(e, "record %u of the chunk at byte %zu (byte %zu%s) runs past the chunk's end (it says %u "
                             "records)", i, at, base + q, where, n);
        uint32_t rl = get_u32(pay + q);
        if (rl > end - q - 4)
            return fl_err(e, "record %u of the chunk at byte %zu (byte %zu%s) is %u bytes long, past the chunk's end "
                             "(%zu bytes left)", i, at, base + q, where, rl, end - q - 4);
        q += 4 + (size_t)rl;
    }
    if (q != end)
        return fl_err(e, "the chunk at byte %zu holds %zu bytes after its %u records%s", at, end - q, n,
                      s->snappy ? " (uncompressed)" : "");
    s->chunk_at = at;
    s->body = pay;
    s->rec = 0;
    s->left = n;
    s->pos = body + size;
    return FL_OK;
}

FlStatus fl_recordio_next(FlErr *e, FlRecordioScanner *s, const unsigned char **rec, size_t *len, size_t *at,
                          bool *ok) {
    *ok = false;
    while (s->left == 0) {
        if (s->pos == s->len) return FL_OK;
        if (enter_chunk(e, s)) return FL_ERROR;
    }
    uint32_t rl = get_u32(s->body + s->rec);
    *at = s->snappy ? s->chunk_at : (size_t)(s->body - s->p) + s->rec;
    *rec = s->body + s->rec + 4;
    *len = rl;
    s->rec += 4 + (size_t)rl;
    s->left--;
    *ok = true;
    return FL_OK;
}
