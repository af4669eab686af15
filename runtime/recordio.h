/* recordio.h: Fluid's RecordIO files (the files of fluid.recordio_writer, which Fluid's
 * open_files reads), written and scanned. All integers are little-endian uint32:
 *
 *     file    = chunk*
 *     chunk   = magic 0x01020304, number of records, CRC-32 (zlib's) of the payload, compressor
 *               (0 none, 1 Snappy, 2 Gzip), payload size in bytes; then the payload
 *     payload = for each record: its length, then its bytes (before compression)
 *
 * A writer closes a chunk every max_records records and at the end; in a file of
 * fluid.recordio_writer each record holds one batch, the LoDTensor stream (lodstream.h) of each
 * feed var in order. The scanner reads chunks of compressor 0 (Compressor.NoCompress); a Snappy
 * chunk is an error saying so (no Snappy library is linked), and so is Gzip, which Fluid's own
 * writer does not implement.
 *
 * Errors: a message in e naming the byte of the file where it goes wrong (a chunk header cut
 * short, another magic number, a checksum that does not match, a record running past its chunk,
 * bytes left in a chunk after its records). Nothing is shared: no thread-safety needed.
 */
#ifndef FL_RECORDIO_H
#define FL_RECORDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define FL_RECORDIO_MAGIC 0x01020304u
#define FL_RECORDIO_HEADER 20

typedef enum FlRecordioCompressor {
    FL_RECORDIO_NO_COMPRESS = 0,
    FL_RECORDIO_SNAPPY = 1,
    FL_RECORDIO_GZIP = 2,
    FL_RECORDIO_COMPRESSOR_COUNT
} FlRecordioCompressor;

/* A file being written, in memory: complete chunks in out, the open chunk's payload in chunk.
 * The caller owns the struct (init/fini) and writes out.data[0, out.len) after the last flush. */
typedef struct FlRecordioWriter {
    FlBuf out;
    FlBuf chunk;
    uint32_t nrec;        /* records in the open chunk */
    uint32_t max_records; /* a chunk is closed when it holds this many (at least 1) */
} FlRecordioWriter;

void fl_recordio_writer_init(FlRecordioWriter *w, uint32_t max_records);
void fl_recordio_writer_fini(FlRecordioWriter *w);
/* Appends a record (its bytes are copied); a record of 2^32 bytes or more is an error. */
FlStatus fl_recordio_writer_add(FlErr *e, FlRecordioWriter *w, const void *rec, size_t len) FL_WARN_UNUSED;
/* Closes the open chunk (nothing when it is empty, as Fluid writes no empty chunk). */
void fl_recordio_writer_flush(FlRecordioWriter *w);

/* A scan of a file held in memory (borrowed: it must outlive the scanner). */
typedef struct FlRecordioScanner {
    const unsigned char *p;
    size_t len;
    size_t pos;       /* the next chunk's header */
    size_t rec;       /* the next record of the open chunk */
    size_t chunk_end; /* the end of the open chunk's payload */
    size_t chunk_at;  /* its header's byte, for messages */
    uint32_t left;    /* records left in it */
} FlRecordioScanner;

void fl_recordio_scanner_init(FlRecordioScanner *s, const void *data, size_t len);
/* The next record: *ok = true, *rec and *len its bytes (inside the file), *at its byte offset; at
 * the end of the file *ok = false. A chunk is checked whole (checksum, records within it, no
 * bytes after them) when the scan enters it. */
FlStatus fl_recordio_next(FlErr *e, FlRecordioScanner *s, const unsigned char **rec, size_t *len, size_t *at,
                          bool *ok) FL_WARN_UNUSED;

#endif
