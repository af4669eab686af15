/* ops_lodfile.c: the adapter of compiler/ops/lodfile.def:
 *
 *   load  -> Out, Lod*: the LoDTensor of a file in the stream format of Fluid's save op
 *         (runtime/lodstream.c), checked against Out's declaration, and its LoD levels; with
 *         load_as_fp16 the tensor is first cast to float16 (whatever its dtype, as Fluid's)
 *
 * The file is read whole and parsed in memory; nothing is written to Out or its offsets unless
 * the whole file is a tensor Out can hold.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/lodstream.h"

/* Whether the file's shape is one the declaration d admits (-1 dims match any size; a var of
 * unknown rank takes any shape). */
static bool shape_admits(const FlVarDesc *d, const FlTensor *t) {
    if (d->ndim == 0) return true;
    if (d->ndim != t->ndim) return false;
    for (int i = 0; i < d->ndim; i++)
        if (d->shape[i] >= 0 && d->shape[i] != t->ne[i]) return false;
    return true;
}

static FlStatus run_load(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const char *path = fl_exec_attr_string(op, "file_path");
    const ArgRef *oa = fl_exec_out_args(op, FL_OUT_load_Out);
    const FlVarDesc *d = fl_exec_arg_desc(op, oa);
    int nlod = fl_exec_nout(op, FL_OUT_load_Lod);
    FlErr fe = {{0}};
    size_t len = 0, used = 0;
    char *bytes = fl_read_regular_file(path, &len, &fe);
    if (!bytes) return fl_exec_op_error(rc, op, "load of '%s': %s", oa->name, fe.msg);
    FlLodTensor lt;
    fl_lodtensor_init(&lt);
    FlStatus st = FL_OK;
    if (fl_lodstream_read(&fe, bytes, len, 0, &used, &lt))
        st = fl_exec_op_error(rc, op, "'%s' is not a tensor file of Fluid's save op: %s", path, fe.msg);
    else if (fl_exec_attr_bool(op, "load_as_fp16") && lt.t.dtype != FL_DT_FLOAT16 &&
             fl_kernel_cast(&fe, &lt.t, FL_DT_FLOAT16, &lt.t)) /* cast's out may be its x */
        st = fl_exec_op_error(rc, op, "load of '%s' as float16: %s", path, fe.msg);
    else if (used != len)
        st = fl_exec_op_error(rc, op, "'%s' holds %zu bytes after its tensor (a tensor file holds one tensor; a file of "
                              "several vars is read by fluid.io.load_vars)", path, len - used);
    else if (d && lt.t.dtype != d->dtype)
        st = fl_exec_op_error(rc, op, "'%s' holds a %s tensor, but '%s' is declared %s", path,
                              fl_dtype_name(lt.t.dtype), oa->name, fl_dtype_name(d->dtype));
    else if (d && !shape_admits(d, &lt.t)) {
        FlShapeStr a = fl_tensor_shape(&lt.t), b = fl_shape_str(d->ndim, d->shape);
        st = fl_exec_op_error(rc, op, "'%s' holds a tensor of shape %s, but '%s' is declared %s", path, a.s, oa->name,
                              b.s);
    } else if (lt.nlevels != nlod)
        st = fl_exec_op_error(rc, op, "'%s' holds a tensor with %d LoD levels, but '%s' has lod_level %d (declare it "
                              "with lod_level=%d)", path, lt.nlevels, oa->name, nlod, lt.nlevels);
    if (st == FL_OK) {
        fl_var_take_tensor(fl_exec_var_write(s, oa), &lt.t);
        const ArgRef *la = fl_exec_out_args(op, FL_OUT_load_Lod);
        for (int i = 0; i < nlod; i++) fl_var_take_tensor(fl_exec_var_write(s, &la[i]), &lt.lod[i]);
    }
    fl_lodtensor_fini(&lt);
    free(bytes);
    return st;
}
FL_CONTROL_ADAPTER(load, NULL, run_load);
