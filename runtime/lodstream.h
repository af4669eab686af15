/* lodstream.h: Fluid's LoDTensor stream format, read and written (the bytes of a file of Fluid's
 * save op, which fluid.layers.load reads, and of each tensor in a RecordIO record).
 *
 * One LoDTensor, all integers little-endian:
 *
 *     uint32  LoD version, 0
 *     uint64  number of LoD levels L
 *     L times: uint64 byte size of the level (8 per offset), then its offsets as uint64
 *     uint32  tensor version, 0
 *     int32   byte size of the TensorDesc message that follows
 *     bytes   TensorDesc (protobuf): field 1 data_type (varint, Fluid's VarType.Type),
 *             field 2 dims (int64 varints, one field each; a packed field is read too)
 *     bytes   the values, row-major, product(dims) of them
 *
 * Levels are outermost first, each a vector of offsets starting at 0 and never decreasing; an
 * outer level's last offset is the number of sequences of the level inside it, the innermost
 * level's last offset the tensor's number of rows (dims[0]). The reader checks all of it, so
 * what it returns is a LoD tensor the executor can use.
 *
 * Dtypes: Fluid's BOOL, INT32, INT64, FP32, FP64, FP16, UINT8 and INT8 map to the project's
 * bool, int32, int64, float32, float64, float16, uint8 and int8 (the values' bytes as they are:
 * a float16 is its binary16 bits); INT16 and SIZE_T have no tensors here and are an error naming
 * the dtype. A bool holds the bytes 0 and 1 only.
 *
 * Errors: a message in e that says what is wrong and at which byte (never an abort): a stream
 * that ends early, a version other than 0, a malformed TensorDesc, an unknown dtype, a shape of
 * more than FL_MAX_DIMS dims or negative dims, offsets that do not cut the tensor.
 * Thread-safety: none needed (no shared state).
 */
#ifndef FL_LODSTREAM_H
#define FL_LODSTREAM_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "base/base.h"
#include "runtime/tensor.h"

#define FL_LODSTREAM_MAX_LEVELS 8

/* A tensor and its LoD levels (each an int64 vector of offsets, outermost first). The struct owns
 * one reference to each tensor's buffer: fl_lodtensor_fini releases them. */
typedef struct FlLodTensor {
    FlTensor t;
    int nlevels;
    FlTensor lod[FL_LODSTREAM_MAX_LEVELS];
} FlLodTensor;

void fl_lodtensor_init(FlLodTensor *lt);
void fl_lodtensor_fini(FlLodTensor *lt); /* releases every tensor; lt may be NULL */

/* Reads one LoDTensor from data[0, len) into *out (initialised by the caller, filled on success,
 * left empty on error); *used receives the bytes it took (the stream may go on after it). The
 * message names the byte offset at which the stream is wrong, counted from base (the offset of
 * data in a larger file, 0 for a whole file). */
FlStatus fl_lodstream_read(FlErr *e, const void *data, size_t len, size_t base, size_t *used, FlLodTensor *out)
    FL_WARN_UNUSED;

/* Appends the stream form of t and its nlevels offset vectors lod[] (int64; NULL when nlevels is
 * 0) to out, as Fluid's save op writes it. Errors: an empty tensor, nlevels above
 * FL_LODSTREAM_MAX_LEVELS or offsets that are not int64 vectors. */
FlStatus fl_lodstream_write(FlErr *e, FlBuf *out, const FlTensor *t, int nlevels, const FlTensor *lod) FL_WARN_UNUSED;

/* fl_lodstream_write without the values (t's bytes, which the caller writes after it). */
FlStatus fl_lodstream_write_head(FlErr *e, FlBuf *out, const FlTensor *t, int nlevels, const FlTensor *lod) FL_WARN_UNUSED;

/* The size in bytes of the LoDTensor that starts at f's position (`base` bytes into the file, for
 * messages), from its header alone (its offsets and values are skipped, not read or checked: a
 * reader of them uses fl_lodstream_read); f is left past its header. Errors: a header that ends
 * early or is malformed (as fl_lodstream_read says), a TensorDesc over 4096 bytes (fluidc's are a
 * few bytes), a size beyond int64. */
FlStatus fl_lodstream_size(FlErr *e, FILE *f, size_t base, uint64_t *size) FL_WARN_UNUSED;

/* Fluid's VarType.Type number of a dtype (FP32 = 5, ...), as the TensorDesc holds it. */
int fl_lodstream_vartype(FlDType dt);

#endif
