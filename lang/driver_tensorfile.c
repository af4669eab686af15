/* driver_tensorfile.c: a scope's tensors and files on the driver (docs/driver.md, "Fetched
 * values"), as Paddle's book label_semantic_roles uses them to set its frozen word embedding:
 *
 *   t = fluid.global_scope().find_var('emb').get_tensor()
 *   t.set(numpy.fromfile(path, dtype=numpy.float32, offset=16).reshape(h, w), place)
 *
 * get_tensor() gives a driver var read by a scope_var op (driver_values.c); its set(array, place)
 * appends a scope_set op of the same var and scope (compiler/ops/tensorfile.def), which checks
 * the array's dtype and shape against the var's when it runs. numpy.fromfile is a read_file op
 * (a driver array's reshape(...) is driver_values.c's). */
#include <string.h>

#include "lang/eval_impl.h"

/* The scope_var op of the driver whose Out is var `name`, else NULL. */
static const FlOpDesc *scope_var_op(Ctx *c, const char *name) {
    const FlProgram *p = c->bundle->driver;
    for (size_t b = 0; p && b < p->blocks.len; b++)
        for (size_t i = 0; i < p->blocks.data[b]->ops.len; i++) {
            const FlOpDesc *op = p->blocks.data[b]->ops.data[i];
            const char *out = strcmp(op->type, "scope_var") == 0 ? fl_ir_op_output1(op, "Out") : NULL;
            if (out && strcmp(out, name) == 0) return op;
        }
    return NULL;
}

/* t.set(array, place): the scope's var that get_tensor() read, set to array (a driver array, a
 * fetched value, numbers) when the driver gets there. place is a Place (CPUPlace; CUDAPlace means
 * the CPU here, as for the executor). */
FlValue *fl_ev_driver_m_set(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("set", "array place", 2);
    const FlOpDesc *sv = scope_var_op(c, self->var.name);
    if (!sv)
        return fl_ev_error(c, a->span, "set(array, place) sets a scope's var: it is a method of "
                           "fluid.global_scope().find_var(name).get_tensor()'s value, not of '%s'", self->var.name);
    if (v[1]->kind != VK_RECORD || !v[1]->rec.type || !strstr(v[1]->rec.type, "Place"))
        return fl_ev_error(c, a->span, "set(array, place): place is fluid.CPUPlace() (or CUDAPlace), found %s",
                           fl_v_type_name(v[1]));
    FlValue *x = v[0], *dt = NULL;
    if (x->kind == VK_RECORD && !x->rec.cls && x->rec.type && strcmp(x->rec.type, "ndarray") == 0 && x->rec.attrs) {
        dt = fl_map_find_str(&x->rec.attrs->map, "_dtype"); /* numpy.array(numbers, dtype): driver.c's record */
        x = fl_map_find_str(&x->rec.attrs->map, "_value");
    }
    if (!fl_ev_is_driver_var(c, x)) {
        x = fl_ev_driver_const(c, x, a->span);
        FlVarDesc *xd = x->kind == VK_VAR ? fl_ev_var_desc(c, x) : NULL;
        if (xd && dt && dt->kind == VK_INT && (FlDType)dt->i != xd->dtype) {
            const char *cn[3] = {"X", "in_dtype", "out_dtype"};
            FlValue *cv[3] = {x, fl_v_int(c, xd->dtype), dt};
            x = fl_ev_driver_kwop(c, "cast", cn, cv, 3, a->span);
        }
    }
    if (x->kind == VK_ERROR) return x;
    const FlAttr *na = fl_ir_op_attr(sv, "name");
    const char *scope = fl_ir_op_input1(sv, "Scope");
    const char *names[3] = {"X", "name", "Scope"};
    FlValue *vals[3] = {x, fl_v_cstr(c, na->s), scope ? fl_v_var(c, scope) : NULL};
    FlValue *r = fl_ev_driver_kwop(c, "scope_set", names, vals, scope ? 3 : 2, a->span);
    return r->kind == VK_ERROR ? r : c->none;
}

/* numpy.fromfile(file, dtype=float, count=-1, sep='', offset=0) of a path (as the run sees it,
 * relative to its working folder as Python's) or of a file open(path, 'rb') gave (offset counting
 * from its position, which moves past the values: driver_file.c): a read_file op. sep (text) is
 * refused. */
FlValue *fl_ev_driver_fromfile(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("fromfile", "file dtype count sep offset", 5);
    FlValue *f = fl_ev_is_file(v[0]) ? v[0] : NULL;
    const char *fpath = NULL;
    int64_t fpos = 0;
    if (f && !fl_ev_file_read_at(c, f, "numpy.fromfile(f)", a->span, &fpath, &fpos)) return c->error;
    if (f) v[0] = fl_v_cstr(c, fpath);
    if (v[0]->kind != VK_STR || !v[0]->str.s[0])
        return fl_ev_error(c, a->span, "numpy.fromfile(file, ...): file is a path known when the script compiles (a "
                           "str), found %s", v[0]->kind == VK_STR ? "''" : fl_v_type_name(v[0]));
    FlDType dt;
    if (!fl_ev_driver_dtype(c, v[1], &dt, a->span)) return c->error;
    if (dt == FL_DT_BOOL) return fl_ev_error(c, a->span, "numpy.fromfile: bool values are not read (float32, float64, int32, int64)");
    if (v[2]->kind != VK_INT || v[2]->i < -1)
        return fl_ev_error(c, a->span, "numpy.fromfile: count is a number of values or -1 (all), found %s",
                           v[2]->kind == VK_INT ? "a negative int" : fl_v_type_name(v[2]));
    if (v[3]->kind != VK_STR || v[3]->str.s[0])
        return fl_ev_error(c, a->span, "numpy.fromfile(sep=...): a text file's values are not read here; a binary "
                           "file's are (sep='')");
    if (v[4]->kind != VK_INT || v[4]->i < 0)
        return fl_ev_error(c, a->span, "numpy.fromfile: offset is a number of bytes (an int, 0 or more), found %s",
                           fl_v_type_name(v[4]));
    const char *names[4] = {"path", "dtype", "count", "offset"};
    FlValue *vals[4] = {v[0], fl_v_int(c, dt), v[2], fl_v_int(c, fpos + v[4]->i)};
    FlValue *r = fl_ev_driver_kwop(c, "read_file", names, vals, 4, a->span);
    /* a file object's position moves past what was read: numpy's offset counts from it */
    if (f && r->kind != VK_ERROR) fl_ev_file_moved(c, f, v[2]->i < 0 ? -1 : fpos + v[4]->i + v[2]->i * (int64_t)fl_dtype_size(dt));
    return r;
}
