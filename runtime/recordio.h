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
 * feed var in order. Chunks are written and read without compression (Compressor.NoCompress) or
 * with Snappy (Compressor.Snappy, Fluid's default), whose payload is the payload above in the
 * framing of the snappystream library that Fluid writes it with:
 *
 *     snappy  = "snappy" and a zero byte; then block*
 *     block   = a flag byte (1 Snappy-compressed, 0 stored), the length of its data (uint16,
 *               big-endian), the masked CRC-32C of its uncompressed bytes (uint32, big-endian;
 *               the framing format's mask: rotated right by 15 bits plus 0xa282ead8); its data
 *
 * The writer cuts the payload into blocks of 32768 bytes (the last shorter), each compressed with
 * Snappy's raw format and stored as it is when that saves less than an eighth, as Fluid's writer
 * does. The checksum in the chunk header is over the framed bytes. Gzip, which Fluid's own writer
 * does not implement, is an error saying so.
 *
 * Errors: a message in e naming the byte of the file where it goes wrong (a chunk header cut
 * short, another magic number, a checksum that does not match, a record running past its chunk,
 * bytes left in a chunk after its records; in a Snappy chunk a block cut short or damaged, by the
 * block's byte). Nothing is shared: no thread-safety needed.
 */
#ifndef FL_RECORDIO_H
#define FL_RECORDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define FL_RECORDIO_MAGIC 0x01020304u
#define FL_RECORDIO_HEADER 20
#define FL_RECORDIO_SNAPPY_BLOCK 32768 /* a Snappy chunk's blocks: at most this many bytes before compression */

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
    FlRecordioCompressor compressor; /* NO_COMPRESS or SNAPPY */
} FlRecordioWriter;

/* A writer of chunks of at most max_records records (0 counts as 1) compressed by compressor
 * (FL_RECORDIO_NO_COMPRESS or FL_RECORDIO_SNAPPY; another is a bug). */
void fl_recordio_writer_init(FlRecordioWriter *w, uint32_t max_records, FlRecordioCompressor compressor);
void fl_recordio_writer_fini(FlRecordioWriter *w);
/* Appends a record (its bytes are copied); a record of 2^32 bytes or more is an error. */
FlStatus fl_recordio_writer_add(FlErr *e, FlRecordioWriter *w, const void *rec, size_t len) FL_WARN_UNUSED;
/* Closes the open chunk (nothing when it is empty, as Fluid writes no empty chunk). */
void fl_recordio_writer_flush(FlRecordioWriter *w);

/* A scan of a file held in memory (borrowed: it must outlive the scanner). The payload of a Snappy
 * chunk is uncompressed into plain, which the scanner owns (init/fini). */
typedef struct FlRecordioScanner {
    const unsigned char *p;
    size_t len;
    size_t pos;        /* the next chunk's header */
    const unsigned char *body; /* the open chunk's payload: in the file, or plain's bytes */
    size_t rec;        /* the next record of the open chunk, in body */
    size_t chunk_at;   /* its header's byte, for messages */
    uint32_t left;     /* records left in it */
    bool snappy;       /* whether the open chunk is Snappy-compressed */
    FlBuf plain;       /* a Snappy chunk's uncompressed payload */
} FlRecordioScanner;

void fl_recordio_scanner_init(FlRecordioScanner *s, const void *data, size_t len);
void fl_recordio_scanner_fini(FlRecordioScanner *s);
/* The next record: *ok = true, *rec and *len its bytes, *at its byte offset in the file; at the
 * end of the file *ok = false. A record of a chunk without compression lies in the file; one of a
 * Snappy chunk in the scanner's plain buffer (valid until the next call), and its *at is its
 * chunk's header's byte. A chunk is checked whole (checksum, each Snappy block, records within
 * it, no bytes after them) when the scan enters it. */
FlStatus fl_recordio_next(FlErr *e, FlRecordioScanner *s, const unsigned char **rec, size_t *len, size_t *at,
                          bool *ok) FL_WARN_UNUSED;

#endif
