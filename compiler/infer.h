/* infer.h: shape and dtype inference of ops.
 *
 * Given an op whose input vars carry their dtype and shape, sets the dtype and shape of its
 * output vars (which must already be declared, in the op's block or an ancestor) following the
 * op's semantics in compiler/ops.def (Paddle Fluid's). -1 is the unknown batch dimension: it
 * propagates, and a check that depends on an unknown dim passes.
 *
 * Errors are the user's: the message names the op, says what was expected and what was found
 * and shows the shapes, e.g. "mul: the input has 13 columns but the weight has 12 rows (X [-1,
 * 13], Y [12, 1])". The exception is a dtype mismatch of the two operands of a binary
 * elementwise or comparison op, reported as "dtype mismatch: float32 and int64" (the front end
 * knows the operator). Control, channel and distributed ops are never an error (nothing is
 * inferred for them beyond list_index's pass-through).
 *
 * Gradient ops: every "<X>@GRAD" output takes the dtype and shape of the forward var in the
 * op's input slot X (dropout_grad: of Out@GRAD); outputs named "" or "@EMPTY@" are skipped.
 *
 * Thread-safety: mutates the program's vars; one thread per program.
 */
#ifndef FL_INFER_H
#define FL_INFER_H

#include "base/base.h"
#include "compiler/ir/ir.h"

/* Infers op (an op of block b of p). On error sets e and returns FL_ERROR; the outputs may then
 * be partly updated. */
FlStatus fl_infer_op(FlProgram *p, FlBlock *b, FlOpDesc *op, FlErr *e) FL_WARN_UNUSED;

/* Re-infers every op of every block: block 0 in order, a control op's sub-blocks just before the
 * op itself, then any block no op refers to. On error, *where (if not NULL) receives the failing
 * op's loc. */
FlStatus fl_infer_program(FlProgram *p, FlErr *e, FlLoc *where) FL_WARN_UNUSED;

/* Whether every op of p takes and makes the storage dtypes (float16, int8, uint8) only where the
 * op table allows (FL_OPF_STORAGE), as fl_infer_op checks each op when it is made; for programs
 * rewritten afterwards (QuantizeTranspiler.convert_to_int8's), checked before a run. On the first
 * op that does not, sets e (the op, the var and its dtype) and *where (if not NULL) to its loc. */
FlStatus fl_infer_check_storage(const FlProgram *p, FlErr *e, FlLoc *where) FL_WARN_UNUSED;

#endif
