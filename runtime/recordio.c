/* recordio.c: Fluid's RecordIO files (recordio.h says what the bytes are).
 *
 * The writer keeps the open chunk's payload and prepends its header when it closes it. The
 * scanner checks a chunk whole when it enters it (header, checksum, every record's length inside
 * the payload, nothing after the last), so the records it then hands out need no more checks.
 */
#include "runtime/recordio.h"

#include <string.h>
#include <zlib.h>

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

/* ---------------------------------------------------------------- writing */

void fl_recordio_writer_init(FlRecordioWriter *w, uint32_t max_records) {
    memset(w, 0, sizeof *w);
    w->max_records = max_records ? max_records : 1;
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
    const unsigned char *p = (const unsigned char *)w->chunk.data;
    put_u32(&w->out, FL_RECORDIO_MAGIC);
    put_u32(&w->out, w->nrec);
    put_u32(&w->out, crc(p, w->chunk.len));
    put_u32(&w->out, FL_RECORDIO_NO_COMPRESS);
    put_u32(&w->out, (uint32_t)w->chunk.len);
    fl_buf_append(&w->out, w->chunk.data, w->chunk.len);
    w->chunk.len = 0;
    w->nrec = 0;
}

/* ---------------------------------------------------------------- scanning */

void fl_recordio_scanner_init(FlRecordioScanner *s, const void *data, size_t len) {
    memset(s, 0, sizeof *s);
    s->p = data;
    s->len = len;
}

static const char *compressor_name(uint32_t c) {
    switch (c) {
    case FL_RECORDIO_SNAPPY: return "Snappy";
    case FL_RECORDIO_GZIP: return "Gzip";
    default: return NULL;
    }
}

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
    if (comp != FL_RECORDIO_NO_COMPRESS) {
        const char *nm = compressor_name(comp);
        if (comp == FL_RECORDIO_SNAPPY)
            return fl_err(e, "the chunk at byte %zu is Snappy-compressed, and fluidc reads chunks without compression: "
                             "write the file with compressor=Compressor.NoCompress", at);
        if (nm)
            return fl_err(e, "the chunk at byte %zu is %s-compressed, which Fluid's own writer does not implement: "
                             "write the file with compressor=Compressor.NoCompress", at, nm);
        return fl_err(e, "the chunk at byte %zu has compressor %u, which is none of RecordIO's (0 none, 1 Snappy, "
                         "2 Gzip)", at, comp);
    }
    size_t body = at + FL_RECORDIO_HEADER;
    if (size > s->len - body)
        return fl_err(e, "the chunk at byte %zu says %u bytes of records, but the file has %zu after its header", at,
                      size, s->len - body);
    uint32_t got = crc(s->p + body, size);
    if (got != sum)
        return fl_err(e, "the chunk at byte %zu has checksum 0x%08x, but its %u bytes sum to 0x%08x (the file is "
                         "damaged)", at, sum, size, got);
    size_t end = body + size, q = body;
    for (uint32_t i = 0; i < n; i++) {
        if (end - q < 4)
            return fl_err(e, "record %u of the chunk at byte %zu (byte %zu) runs past the chunk's end (it says %u "
                             "records)", i, at, q, n);
        uint32_t rl = get_u32(s->p + q);
        if (rl > end - q - 4)
            return fl_err(e, "record %u of the chunk at byte %zu (byte %zu) is %u bytes long, past the chunk's end "
                             "(%zu bytes left)", i, at, q, rl, end - q - 4);
        q += 4 + (size_t)rl;
    }
    if (q != end)
        return fl_err(e, "the chunk at byte %zu holds %zu bytes after its %u records", at, end - q, n);
    s->chunk_at = at;
    s->rec = body;
    s->chunk_end = end;
    s->left = n;
    s->pos = end;
    return FL_OK;
}

FlStatus fl_recordio_next(FlErr *e, FlRecordioScanner *s, const unsigned char **rec, size_t *len, size_t *at,
                          bool *ok) {
    *ok = false;
    while (s->left == 0) {
        if (s->pos == s->len) return FL_OK;
        if (enter_chunk(e, s)) return FL_ERROR;
    }
    uint32_t rl = get_u32(s->p + s->rec);
    *at = s->rec;
    *rec = s->p + s->rec + 4;
    *len = rl;
    s->rec += 4 + (size_t)rl;
    s->left--;
    *ok = true;
    return FL_OK;
}
