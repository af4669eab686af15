/* ops_tensorfile.c: the adapters of compiler/ops/tensorfile.def, ops of the driver:
 *
 *   scope_set  X, Scope? -> (): the scope's var `name` (or its parents') set to a copy of X, which
 *              must have the dtype and shape of the tensor the var holds (Fluid's
 *              scope.find_var(name).get_tensor().set(x, place))
 *   read_file  -> Out: the values of a file from a byte offset on (numpy.fromfile)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/driver.h"
#include "runtime/core/exec_impl.h"

/* ---------------------------------------------------------------- scope_set */

static FlStatus run_scope_set(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlDriverHost *h = fl_driver_need_host(rc, op, s);
    if (!h) return FL_ERROR;
    FlScope *sc;
    int ns = fl_exec_nin(op, FL_IN_scope_set_Scope);
    if (fl_driver_arg_scope(rc, op, s, ns > 0 ? fl_exec_in_args(op, FL_IN_scope_set_Scope) : NULL, h->root, &sc))
        return FL_ERROR;
    const char *name = fl_exec_attr_string(op, "name");
    FlVar *v = fl_scope_find(sc, name), *xv = fl_exec_var_read(s, fl_exec_in_args(op, FL_IN_scope_set_X));
    FlTensor cur = FL_TENSOR_INIT, x = FL_TENSOR_INIT, copy = FL_TENSOR_INIT;
    FlStatus st = FL_OK;
    if (!v) st = fl_exec_op_error(rc, op, "the scope has no var '%s' to set (run the program that makes it first)", name);
    else if (!fl_var_get_tensor(v, &cur)) st = fl_exec_op_error(rc, op, "the scope's var '%s' holds no tensor to set", name);
    else if (!xv || !fl_var_get_tensor(xv, &x)) st = fl_exec_op_error(rc, op, "the value to set '%s' to is not computed", name);
    else if (x.dtype != cur.dtype || !fl_tensor_same_shape(&x, &cur)) {
        FlShapeStr a = fl_tensor_shape(&cur), b = fl_tensor_shape(&x);
        st = fl_exec_op_error(rc, op, "the var '%s' is %s %s, but the value set to it is %s %s (set() takes an array of "
                              "the var's dtype and shape)", name, fl_dtype_name(cur.dtype), a.s, fl_dtype_name(x.dtype), b.s);
    } else if (fl_tensor_copy(rc->e, &copy, &x) == FL_OK) fl_var_take_tensor(v, &copy);
    else st = FL_ERROR;
    fl_tensor_fini(&cur);
    fl_tensor_fini(&x);
    fl_tensor_fini(&copy);
    fl_scope_release(sc);
    return st;
}
FL_CONTROL_ADAPTER(scope_set, NULL, run_scope_set);

/* ---------------------------------------------------------------- read_file */

static FlStatus run_read_file(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const char *path = fl_exec_attr_string(op, "path");
    FlDType dt = (FlDType)fl_exec_attr_int(op, "dtype");
    int64_t off = fl_exec_attr_int(op, "offset"), count = fl_exec_attr_int(op, "count");
    size_t es = fl_dtype_size(dt);
    FILE *f = fopen(path, "rb");
    if (!f) return fl_exec_op_error(rc, op, "cannot read '%s': %s", path, strerror(errno));
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    FlStatus st = FL_OK;
    if (size < 0) st = fl_exec_op_error(rc, op, "cannot read '%s': %s", path, strerror(errno));
    else if (off > size)
        st = fl_exec_op_error(rc, op, "'%s' holds %ld bytes: the offset %lld is past its end", path, size, (long long)off);
    int64_t n = st ? 0 : (size - off) / (int64_t)es;
    if (st == FL_OK && count >= 0) {
        if (count > n)
            st = fl_exec_op_error(rc, op, "'%s' holds %lld %s values after byte %lld, not the %lld asked for", path,
                                  (long long)n, fl_dtype_name(dt), (long long)off, (long long)count);
        n = count;
    }
    FlTensor t = FL_TENSOR_INIT;
    if (st == FL_OK && fl_tensor_alloc_uninit(rc->e, &t, dt, 1, &n) != FL_OK) st = FL_ERROR;
    if (st == FL_OK && n > 0 &&
        (fseek(f, (long)off, SEEK_SET) != 0 || fread(fl_tensor_data(&t), es, (size_t)n, f) != (size_t)n))
        st = fl_exec_op_error(rc, op, "cannot read '%s': %s", path, ferror(f) ? strerror(errno) : "it ends early");
    fclose(f);
    if (st == FL_OK) fl_var_take_tensor(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_read_file_Out)), &t);
    fl_tensor_fini(&t);
    return st;
}
FL_CONTROL_ADAPTER(read_file, NULL, run_read_file);
