/* ops_pending.c: the ops of later issues (none left: goroutines, channels and select are in
 * ops_chan.c, the parameter-server ops in ops_dist.c).
 * They are prepared like every op (so a program using them loads and the rest of it can be
 * inspected) and fail when run with "op 'go' is not supported by this runtime yet". The hook for
 * an implementation: delete the op's line here and define fl_adapter_<op> (a compute or control
 * adapter, see exec_impl.h) in its own ops_<area>.c. */
#include "runtime/core/exec_impl.h"

__attribute__((unused)) static FlStatus run_unsupported(RunCtx *rc, const ExecOp *op, FlScope *s) {
    (void)s;
    return fl_exec_op_error(rc, op, "op '%s' is not supported by this runtime yet", op->desc->type);
}

#define PENDING(id) FL_CONTROL_ADAPTER(id, NULL, run_unsupported)
