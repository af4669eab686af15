/* backward.h: append_backward, Paddle Fluid's algorithm.
 *
 * fl_backward_append appends to block 0 the gradient ops of every op that lies on a path from a
 * parameter to the loss, in reverse order:
 *   - first `fill_constant` loss@GRAD = 1 (the loss's shape and dtype);
 *   - for each such op (last first) its gradient op: "<type>_grad" (ops.c derives the slots),
 *     with the forward op's attributes and loc; an output whose gradient nothing produced gets
 *     one from `fill_zeros_like`;
 *   - the gradient of var x is "x@GRAD", a var of block 0 with x's dtype and shape; when several
 *     ops use x, their partial gradients are "x@GRAD@RENAME@0", "...@1", ... added up by a `sum`
 *     op into x@GRAD right after the last of them;
 *   - a gradient output that nothing needs (an input that does not depend on a parameter, a
 *     stop_gradient var, a non-float var) is left out, or named FL_BACKWARD_EMPTY in a list slot
 *     to keep the positions; kernels skip such outputs;
 *   - FL_GRAD_STOP ops and stop_gradient vars end paths silently; an FL_GRAD_NONE op on a path
 *     is an error.
 * Every appended op passes fl_infer_op. Runs in time linear in the size of block 0.
 *
 * Ownership: r's strings are owned by r (fl_backward_result_fini frees them).
 */
#ifndef FL_BACKWARD_H
#define FL_BACKWARD_H

#include "base/base.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/rules.h"

#define FL_GRAD_SUFFIX FL_RULE_GRAD_SUFFIX
#define FL_BACKWARD_EMPTY FL_RULE_EMPTY /* a gradient output slot position nobody needs */

typedef struct FlParamGrad {
    char *param, *grad;
} FlParamGrad;

typedef struct FlBackwardResult {
    FL_VEC(FlParamGrad) pairs;
} FlBackwardResult;

/* Appends to block 0 of p the gradient ops of every op that the loss depends on, in reverse
 * order. params: the parameters to differentiate (NULL/0 = every trainable var of block 0).
 * Fills r (zero-initialised by the caller) with (param, grad var name) pairs in the parameters'
 * order of creation, for each parameter the loss depends on (others are left out).
 * Errors (the user's): no such loss or parameter; a loss that is not float32/float64 or has more
 * than one element; a path through an op with no gradient ("cannot differentiate through
 * 'argmax' (it has no gradient)"), for which *where (if not NULL) is set to the op's loc (to the
 * loss var's loc for loss errors). Nothing is appended when such an error is found. */
FlStatus fl_backward_append(FlProgram *p, const char *loss, const char *const *params,
                            size_t nparams, FlBackwardResult *r, FlErr *e,
                            FlLoc *where) FL_WARN_UNUSED;
void fl_backward_result_fini(FlBackwardResult *r);

#endif
