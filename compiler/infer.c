/* infer.c: shape and dtype inference, one function per op family.
 *
 * Each rule reads its inputs through in1()/ins(), computes an FlShape and sets the outputs with
 * set_out(). A dim < 0 is unknown (the batch dimension): dims_agree() lets it match anything and
 * merge() keeps the known side, so -1 propagates and no check fails on an unknown dim. The
 * dispatch in fl_infer_op switches over every FlOpId without a default, so a new op in ops.def
 * fails to compile (-Wswitch) until it has a rule.
 */
#include "compiler/infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/rules.h"
#include "compiler/ops.h"

typedef struct Shape {
    int nd;
    int64_t d[FL_IR_MAX_DIMS];
} Shape;

typedef struct Ctx {
    FlProgram *p;
    FlBlock *b;
    FlOpDesc *op;
    const FlOpInfo *info;
    FlErr *e;
    const char *t; /* op type, for messages */
    char sbuf[4][128];
    int nsbuf;
} Ctx;

/* ---- shapes ---- */

static Shape shape_of(const FlVarDesc *v) {
    Shape s = {.nd = v->ndim};
    for (int i = 0; i < v->ndim; i++) s.d[i] = v->shape[i];
    return s;
}

static Shape shape1(int64_t n) { return (Shape){.nd = 1, .d = {n}}; }

/* "[-1, 13]" in one of a few rotating buffers of the context (enough for one message). */
static const char *sstr(Ctx *c, const Shape *s) {
    char *buf = c->sbuf[c->nsbuf++ % 4];
    size_t n = 0, cap = sizeof c->sbuf[0];
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < s->nd && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)s->d[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

static bool dims_agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }
static int64_t merge(int64_t a, int64_t b) { return a >= 0 ? a : b; }

static bool shapes_agree(const Shape *a, const Shape *b) {
    if (a->nd != b->nd) return false;
    for (int i = 0; i < a->nd; i++)
        if (!dims_agree(a->d[i], b->d[i])) return false;
    return true;
}

/* Saturating arithmetic on dims and attribute values (user input: never C's signed overflow). */
static int64_t smul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r;
}
static int64_t sadd(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b < 0 ? INT64_MIN : INT64_MAX) : r;
}

/* Product of dims [from, to); -1 if any is unknown. */
static int64_t prod(const Shape *s, int from, int to) {
    int64_t n = 1;
    for (int i = from; i < to; i++) {
        if (s->d[i] < 0) return -1;
        n = smul(n, s->d[i]);
    }
    return n;
}

static bool is_float(FlDType t) { return t == FL_DT_FLOAT32 || t == FL_DT_FLOAT64; }
static const char *dt(FlDType t) { return fl_dtype_name(t); }

/* ---- inputs and outputs ---- */

static FlStatus lookup(Ctx *c, const char *dir, const char *slot, const char *name,
                       FlVarDesc **v) {
    *v = fl_ir_var_lookup(c->p, c->b, name);
    if (!*v) return fl_err(c->e, "%s: %s %s names undeclared var '%s'", c->t, dir, slot, name);
    return FL_OK;
}

static FlStatus in1(Ctx *c, const char *slot, FlVarDesc **v) {
    const char *name = fl_ir_op_input1(c->op, slot);
    if (!name) return fl_err(c->e, "%s: missing input %s", c->t, slot);
    return lookup(c, "input", slot, name, v);
}

/* An optional input: *v = NULL when absent. */
static FlStatus in_opt(Ctx *c, const char *slot, FlVarDesc **v) {
    *v = NULL;
    const char *name = fl_ir_op_input1(c->op, slot);
    return name ? lookup(c, "input", slot, name, v) : FL_OK;
}

static bool skip_arg(const char *name) { return fl_rule_is_empty(name); }

/* Sets every var of output slot `slot` (absent slot: nothing to do). */
static FlStatus set_out(Ctx *c, const char *slot, FlDType t, const Shape *s) {
    FlSlot *sl = fl_ir_op_output(c->op, slot);
    if (!sl) return FL_OK;
    for (size_t i = 0; i < sl->nargs; i++) {
        if (skip_arg(sl->args[i])) continue;
        FlVarDesc *v;
        if (lookup(c, "output", slot, sl->args[i], &v)) return FL_ERROR;
        v->dtype = t;
        fl_ir_var_set_shape(v, s->nd, s->d);
    }
    return FL_OK;
}

static FlStatus set_like(Ctx *c, const char *slot, const FlVarDesc *src) {
    Shape s = shape_of(src);
    return set_out(c, slot, src->dtype, &s);
}

static FlStatus pass_through(Ctx *c, const char *in, const char *out) {
    FlVarDesc *x;
    if (in1(c, in, &x)) return FL_ERROR;
    return set_like(c, out, x);
}

static int64_t iattr(Ctx *c, const char *name) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    if (a && a->type == FL_ATTR_INT) return a->i;
    if (a && a->type == FL_ATTR_BOOL) return a->i;
    return ai ? ai->dflt.i : 0;
}

static const char *sattr(Ctx *c, const char *name) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    if (a && a->type == FL_ATTR_STRING) return a->s;
    return ai && ai->dflt.s ? ai->dflt.s : "";
}

/* An ints attribute: *n values (the default when absent). Returns NULL if required and absent
 * after setting the error. */
static const int64_t *intsattr(Ctx *c, const char *name, size_t *n, bool *ok) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    *ok = true;
    if (a && (a->type == FL_ATTR_INTS || a->type == FL_ATTR_BLOCKS)) {
        *n = a->n;
        return a->ints;
    }
    if (a) {
        *ok = false;
        fl_err(c->e, "%s: attribute '%s' must be a list of ints", c->t, name);
        return NULL;
    }
    if (!ai || ai->required) {
        *ok = false;
        fl_err(c->e, "%s: missing attribute '%s'", c->t, name);
        return NULL;
    }
    *n = ai->dflt.n;
    return ai->dflt.ints;
}

static FlStatus check_dtype(Ctx *c, FlDType t) {
    if ((unsigned)t >= FL_DT_COUNT) return fl_err(c->e, "%s: unknown dtype %d", c->t, (int)t);
    return FL_OK;
}

/* Normalises a possibly negative axis into [0, nd). */
static FlStatus norm_axis(Ctx *c, int64_t axis, int nd, const Shape *s, int *out) {
    int64_t a = axis < 0 ? sadd(axis, nd) : axis;
    if (a < 0 || a >= nd)
        return fl_err(c->e, "%s: axis %lld is out of range for %s", c->t, (long long)axis,
                      sstr(c, s));
    *out = (int)a;
    return FL_OK;
}

/* ---- constants and copies ---- */

static FlStatus infer_fill(Ctx *c) {
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "shape", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n > FL_IR_MAX_DIMS)
        return fl_err(c->e, "%s: shape has %zu dims (at most %d)", c->t, n, FL_IR_MAX_DIMS);
    Shape s = {.nd = (int)n};
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < -1 || dims[i] == 0)
            return fl_err(c->e, "%s: shape dim %zu is %lld (expected a positive size or -1)", c->t,
                          i, (long long)dims[i]);
        s.d[i] = dims[i];
    }
    FlDType t = (FlDType)iattr(c, "dtype");
    if (check_dtype(c, t)) return FL_ERROR;
    return set_out(c, "Out", t, &s);
}

static FlStatus infer_assign_value(Ctx *c) {
    if (infer_fill(c)) return FL_ERROR;
    const FlAttr *a = fl_ir_op_attr(c->op, "values");
    if (!a || a->type != FL_ATTR_FLOATS) return fl_err(c->e, "%s: attribute 'values' must be a list of numbers", c->t);
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "shape", &n, &ok);
    int64_t numel = 1;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < 0 || numel > INT64_MAX / (dims[i] ? dims[i] : 1))
            return fl_err(c->e, "%s: shape dim %zu is %lld (a known size is needed)", c->t, i, (long long)dims[i]);
        numel *= dims[i];
    }
    if ((size_t)numel != a->n)
        return fl_err(c->e, "%s: shape holds %lld values but %zu are given", c->t, (long long)numel, a->n);
    return FL_OK;
}

static FlStatus infer_cast(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    FlDType t = (FlDType)iattr(c, "out_dtype");
    if (check_dtype(c, t)) return FL_ERROR;
    Shape s = shape_of(x);
    return set_out(c, "Out", t, &s);
}

/* ---- linear algebra ---- */

static FlStatus infer_mul(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    Shape x = shape_of(xv), y = shape_of(yv);
    int64_t xn = iattr(c, "x_num_col_dims"), yn = iattr(c, "y_num_col_dims");
    if (xn < 1 || xn >= x.nd)
        return fl_err(c->e, "%s: x_num_col_dims is %lld but the input X %s needs it in 1..%d",
                      c->t, (long long)xn, sstr(c, &x), x.nd - 1);
    if (yn < 1 || yn >= y.nd)
        return fl_err(c->e, "%s: y_num_col_dims is %lld but the weight Y %s needs it in 1..%d",
                      c->t, (long long)yn, sstr(c, &y), y.nd - 1);
    if (xv->dtype != yv->dtype)
        return fl_err(c->e, "%s: the input is %s but the weight is %s", c->t, dt(xv->dtype),
                      dt(yv->dtype));
    int64_t cols = prod(&x, (int)xn, x.nd), rows = prod(&y, 0, (int)yn);
    if (!dims_agree(cols, rows))
        return fl_err(c->e, "%s: the input has %lld columns but the weight has %lld rows (X %s, Y %s)",
                      c->t, (long long)cols, (long long)rows, sstr(c, &x), sstr(c, &y));
    Shape out = {0};
    for (int i = 0; i < xn; i++) out.d[out.nd++] = x.d[i];
    for (int i = (int)yn; i < y.nd; i++) {
        if (out.nd == FL_IR_MAX_DIMS) return fl_err(c->e, "%s: the result has too many dims", c->t);
        out.d[out.nd++] = y.d[i];
    }
    return set_out(c, "Out", xv->dtype, &out);
}

static FlStatus infer_lookup_table(Ctx *c) {
    FlVarDesc *wv, *iv;
    if (in1(c, "W", &wv) || in1(c, "Ids", &iv)) return FL_ERROR;
    Shape w = shape_of(wv), ids = shape_of(iv);
    if (w.nd != 2)
        return fl_err(c->e, "%s: the table must be 2-D (rows, width), found %s", c->t, sstr(c, &w));
    if (iv->dtype != FL_DT_INT64)
        return fl_err(c->e, "%s: the ids must be int64, found %s", c->t, dt(iv->dtype));
    if (ids.nd == 0) return fl_err(c->e, "%s: the ids have no dims", c->t);
    /* [N, 1] -> [N, width]; [N] -> [N, width] */
    Shape out = ids;
    if (ids.d[ids.nd - 1] == 1 && ids.nd > 1) out.d[out.nd - 1] = w.d[1];
    else if (out.nd < FL_IR_MAX_DIMS) out.d[out.nd++] = w.d[1];
    else return fl_err(c->e, "%s: the result has too many dims", c->t);
    int64_t pad = iattr(c, "padding_idx");
    if (pad < -1 || (w.d[0] >= 0 && pad >= w.d[0]))
        return fl_err(c->e, "%s: padding_idx %lld is not a row of the table %s", c->t,
                      (long long)pad, sstr(c, &w));
    return set_out(c, "Out", wv->dtype, &out);
}

/* distributed_lookup_table: Ids -> Out, as lookup_table with a table of
 * [sum(height_sections), width] and dtype `dtype` that the trainer does not hold; one table
 * name and pserver per section. */
static FlStatus infer_distributed_lookup_table(Ctx *c) {
    FlVarDesc *iv;
    if (in1(c, "Ids", &iv)) return FL_ERROR;
    Shape ids = shape_of(iv);
    if (iv->dtype != FL_DT_INT64) return fl_err(c->e, "%s: the ids must be int64, found %s", c->t, dt(iv->dtype));
    if (ids.nd == 0) return fl_err(c->e, "%s: the ids have no dims", c->t);
    size_t nsec, nep;
    bool ok, ok2;
    const int64_t *sec = intsattr(c, "height_sections", &nsec, &ok), *ep = intsattr(c, "epmap", &nep, &ok2);
    if (!ok || !ok2) return FL_ERROR;
    const FlAttr *names = fl_ir_op_attr(c->op, "table_names");
    size_t nn = names && names->type == FL_ATTR_STRINGS ? names->n : 0;
    if (nsec == 0 || nsec != nep || nsec != nn)
        return fl_err(c->e, "%s: %zu height_sections, %zu epmap entries and %zu table_names (one of each per block of the "
                      "table, at least one)", c->t, nsec, nep, nn);
    int64_t height = 0;
    for (size_t k = 0; k < nsec; k++) {
        if (sec[k] < 1 || ep[k] < 0)
            return fl_err(c->e, "%s: block %zu has %lld rows on pserver %lld (blocks have rows, pservers are >= 0)", c->t,
                          k, (long long)sec[k], (long long)ep[k]);
        height = sadd(height, sec[k]);
    }
    int64_t w = iattr(c, "width"), pad = iattr(c, "padding_idx");
    if (w < 1) return fl_err(c->e, "%s: width is %lld (the table's row length, >= 1)", c->t, (long long)w);
    if (pad < -1 || pad >= height)
        return fl_err(c->e, "%s: padding_idx %lld is not a row of the table (%lld rows)", c->t, (long long)pad,
                      (long long)height);
    FlDType t = (FlDType)iattr(c, "dtype");
    if (check_dtype(c, t)) return FL_ERROR;
    if (t != FL_DT_FLOAT32 && t != FL_DT_FLOAT64)
        return fl_err(c->e, "%s: the table must be float32 or float64, found %s", c->t, dt(t));
    Shape out = ids;
    if (ids.d[ids.nd - 1] == 1 && ids.nd > 1) out.d[out.nd - 1] = w;
    else if (out.nd < FL_IR_MAX_DIMS) out.d[out.nd++] = w;
    else return fl_err(c->e, "%s: the result has too many dims", c->t);
    return set_out(c, "Out", t, &out);
}

/* distributed_lookup_grad_rows: Ids, Out@GRAD -> W@GRAD, a SelectedRows [height, width]. */
static FlStatus infer_distributed_lookup_grad_rows(Ctx *c) {
    FlVarDesc *iv, *gv;
    if (in1(c, "Ids", &iv) || in1(c, "Out@GRAD", &gv)) return FL_ERROR;
    if (iv->dtype != FL_DT_INT64) return fl_err(c->e, "%s: the ids must be int64, found %s", c->t, dt(iv->dtype));
    Shape g = shape_of(gv);
    int64_t h = iattr(c, "height");
    if (h < 1) return fl_err(c->e, "%s: height is %lld (the table's rows, >= 1)", c->t, (long long)h);
    if (g.nd < 2) return fl_err(c->e, "%s: Out@GRAD %s must have a row length", c->t, sstr(c, &g));
    Shape out = {.nd = 2, .d = {h, g.d[g.nd - 1]}};
    if (set_out(c, "W@GRAD", gv->dtype, &out)) return FL_ERROR;
    FlVarDesc *o;
    FlSlot *os = fl_ir_op_output(c->op, "W@GRAD");
    if (os && os->nargs == 1 && !skip_arg(os->args[0]) && lookup(c, "output", "W@GRAD", os->args[0], &o) == FL_OK)
        o->kind = FL_VAR_SELECTED_ROWS;
    return FL_OK;
}

/* numpy broadcasting of a and b into out; false if they cannot be broadcast. */
static bool broadcast(const Shape *a, const Shape *b, Shape *out) {
    int nd = a->nd > b->nd ? a->nd : b->nd;
    out->nd = nd;
    for (int i = 0; i < nd; i++) {
        int ia = a->nd - nd + i, ib = b->nd - nd + i;
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (da == 1) out->d[i] = db;
        else if (db == 1) out->d[i] = da;
        else if (da < 0) out->d[i] = db; /* unknown vs n > 1: it can only be n (or 1) */
        else if (db < 0) out->d[i] = da;
        else if (da == db) out->d[i] = da;
        else return false;
    }
    return true;
}

static FlStatus infer_matmul(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    Shape x = shape_of(xv), y = shape_of(yv);
    if (x.nd == 0 || y.nd == 0)
        return fl_err(c->e, "%s: operands must have at least one dim (X %s, Y %s)", c->t,
                      sstr(c, &x), sstr(c, &y));
    if (xv->dtype != yv->dtype)
        return fl_err(c->e, "%s: dtype mismatch: %s and %s", c->t, dt(xv->dtype), dt(yv->dtype));
    bool tx = iattr(c, "transpose_X") != 0, ty = iattr(c, "transpose_Y") != 0;
    int64_t m = 1, kx, ky, n = 1;
    if (x.nd == 1) kx = x.d[0];
    else {
        m = x.d[x.nd - 2], kx = x.d[x.nd - 1];
        if (tx) m = x.d[x.nd - 1], kx = x.d[x.nd - 2];
    }
    if (y.nd == 1) ky = y.d[0];
    else {
        ky = y.d[y.nd - 2], n = y.d[y.nd - 1];
        if (ty) ky = y.d[y.nd - 1], n = y.d[y.nd - 2];
    }
    if (!dims_agree(kx, ky))
        return fl_err(c->e, "%s: the left operand has %lld columns but the right one has %lld rows "
                      "(X %s%s, Y %s%s)", c->t, (long long)kx, (long long)ky, sstr(c, &x),
                      tx ? " transposed" : "", sstr(c, &y), ty ? " transposed" : "");
    Shape bx = {.nd = x.nd > 2 ? x.nd - 2 : 0}, by = {.nd = y.nd > 2 ? y.nd - 2 : 0}, out;
    memcpy(bx.d, x.d, sizeof(int64_t) * (size_t)bx.nd);
    memcpy(by.d, y.d, sizeof(int64_t) * (size_t)by.nd);
    if (!broadcast(&bx, &by, &out))
        return fl_err(c->e, "%s: batch dims of X %s and Y %s cannot be broadcast", c->t,
                      sstr(c, &x), sstr(c, &y));
    if (x.nd >= 2) out.d[out.nd++] = m;
    if (y.nd >= 2) out.d[out.nd++] = n;
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", xv->dtype, &out);
}

/* ---- elementwise ---- */

static FlStatus broadcast_xy(Ctx *c, const FlVarDesc *xv, const FlVarDesc *yv, Shape *out) {
    Shape x = shape_of(xv), y = shape_of(yv);
    int64_t axis = fl_ir_op_attr(c->op, "axis") ? iattr(c, "axis") : -1;
    if (axis == -1) {
        if (!broadcast(&x, &y, out))
            return fl_err(c->e, "%s: shapes %s and %s cannot be broadcast", c->t, sstr(c, &x),
                          sstr(c, &y));
        return FL_OK;
    }
    /* Paddle's rule: Y (without trailing 1s) matches the dims of X starting at axis. */
    int ny = y.nd;
    while (ny > 0 && y.d[ny - 1] == 1) ny--;
    if (axis < 0 || axis > x.nd - ny)
        return fl_err(c->e, "%s: axis %lld is out of range for shapes %s and %s", c->t,
                      (long long)axis, sstr(c, &x), sstr(c, &y));
    for (int i = 0; i < ny; i++)
        if (y.d[i] != 1 && !dims_agree(x.d[axis + i], y.d[i]))
            return fl_err(c->e, "%s: shapes %s and %s cannot be broadcast at axis %lld", c->t,
                          sstr(c, &x), sstr(c, &y), (long long)axis);
    *out = x;
    return FL_OK;
}

static FlStatus infer_binary(Ctx *c, bool logical_out) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    if (xv->dtype != yv->dtype)
        return fl_err(c->e, "dtype mismatch: %s and %s", dt(xv->dtype), dt(yv->dtype));
    Shape out;
    if (broadcast_xy(c, xv, yv, &out)) return FL_ERROR;
    return set_out(c, "Out", logical_out ? FL_DT_BOOL : xv->dtype, &out);
}

static FlStatus infer_logical(Ctx *c, bool unary) {
    FlVarDesc *xv, *yv = NULL;
    if (in1(c, "X", &xv) || (!unary && in1(c, "Y", &yv))) return FL_ERROR;
    if (xv->dtype != FL_DT_BOOL || (yv && yv->dtype != FL_DT_BOOL))
        return fl_err(c->e, "%s: operands must be bool, found %s", c->t,
                      dt(xv->dtype != FL_DT_BOOL ? xv->dtype : yv->dtype));
    if (unary) {
        Shape s = shape_of(xv);
        return set_out(c, "Out", FL_DT_BOOL, &s);
    }
    Shape x = shape_of(xv), y = shape_of(yv), out;
    if (!broadcast(&x, &y, &out))
        return fl_err(c->e, "%s: shapes %s and %s cannot be broadcast", c->t, sstr(c, &x),
                      sstr(c, &y));
    return set_out(c, "Out", FL_DT_BOOL, &out);
}

/* ---- reductions and losses ---- */

static FlStatus infer_softmax(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    Shape s = shape_of(x);
    int axis = 0;
    if (s.nd > 0 && norm_axis(c, iattr(c, "axis"), s.nd, &s, &axis)) return FL_ERROR;
    return set_out(c, "Out", x->dtype, &s);
}

static FlStatus infer_cross_entropy(Ctx *c) {
    FlVarDesc *xv, *lv;
    if (in1(c, "X", &xv) || in1(c, "Label", &lv)) return FL_ERROR;
    Shape x = shape_of(xv), l = shape_of(lv);
    if (x.nd < 1) return fl_err(c->e, "%s: the input must have at least one dim", c->t);
    if (!is_float(xv->dtype))
        return fl_err(c->e, "%s: the input must be float32 or float64, found %s", c->t,
                      dt(xv->dtype));
    bool soft = iattr(c, "soft_label") != 0;
    if (soft) {
        if (lv->dtype != xv->dtype)
            return fl_err(c->e, "%s: a soft label must be %s like the input, found %s", c->t,
                          dt(xv->dtype), dt(lv->dtype));
        if (!shapes_agree(&x, &l))
            return fl_err(c->e, "%s: a soft label must have the input's shape (X %s, Label %s)",
                          c->t, sstr(c, &x), sstr(c, &l));
    } else {
        if (lv->dtype != FL_DT_INT64)
            return fl_err(c->e, "%s: the label must be int64, found %s", c->t, dt(lv->dtype));
        /* [N, 1] (or [N]) against X [N, D] */
        bool shape_ok = (l.nd == x.nd && l.d[l.nd - 1] == 1) || l.nd == x.nd - 1 ||
                        (l.nd == x.nd && l.d[l.nd - 1] < 0);
        if (!shape_ok)
            return fl_err(c->e, "%s: the label must have shape [N, 1] for the input X %s, found %s",
                          c->t, sstr(c, &x), sstr(c, &l));
        for (int i = 0; i < x.nd - 1; i++)
            if (!dims_agree(x.d[i], l.d[i]))
                return fl_err(c->e, "%s: the input has %lld rows but the label has %lld (X %s, Label %s)",
                              c->t, (long long)x.d[i], (long long)l.d[i], sstr(c, &x), sstr(c, &l));
    }
    Shape y = x;
    for (int i = 0; i < x.nd - 1; i++) y.d[i] = merge(x.d[i], l.d[i]);
    y.d[y.nd - 1] = 1;
    return set_out(c, "Y", xv->dtype, &y);
}

static FlStatus infer_reduce(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "dim", &n, &ok);
    if (!ok) return FL_ERROR;
    bool keep = iattr(c, "keep_dim") != 0, all = iattr(c, "reduce_all") != 0;
    bool reduced[FL_IR_MAX_DIMS] = {0};
    if (all || x.nd == 0) {
        for (int i = 0; i < x.nd; i++) reduced[i] = true;
    } else {
        for (size_t k = 0; k < n; k++) {
            int a = 0;
            if (norm_axis(c, dims[k], x.nd, &x, &a)) return FL_ERROR;
            reduced[a] = true;
        }
    }
    Shape out = {0};
    for (int i = 0; i < x.nd; i++) {
        if (!reduced[i]) out.d[out.nd++] = x.d[i];
        else if (keep) out.d[out.nd++] = 1;
    }
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", xv->dtype, &out);
}

/* allreduce: Out[i] is like X[i], a float tensor. */
static FlStatus infer_allreduce(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X"), *os = fl_ir_op_output(c->op, "Out");
    size_t nx = xs ? xs->nargs : 0, no = os ? os->nargs : 0;
    if (nx != no) return fl_err(c->e, "%s: %zu inputs X but %zu outputs Out (one per input)", c->t, nx, no);
    for (size_t i = 0; i < nx; i++) {
        FlVarDesc *x, *o;
        if (lookup(c, "input", "X", xs->args[i], &x) || lookup(c, "output", "Out", os->args[i], &o)) return FL_ERROR;
        if (!is_float(x->dtype))
            return fl_err(c->e, "%s: X '%s' is %s; only float tensors are reduced", c->t, x->name, dt(x->dtype));
        if (o == x) continue;
        o->dtype = x->dtype;
        fl_ir_var_set_shape(o, x->ndim, x->shape);
    }
    return FL_OK;
}

static FlStatus infer_sum(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    if (!xs || xs->nargs == 0) return fl_err(c->e, "%s: no inputs to add", c->t);
    FlVarDesc *first;
    if (lookup(c, "input", "X", xs->args[0], &first)) return FL_ERROR;
    Shape out = shape_of(first);
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        if (v->dtype != first->dtype)
            return fl_err(c->e, "%s: dtype mismatch: %s and %s", c->t, dt(first->dtype),
                          dt(v->dtype));
        Shape s = shape_of(v);
        if (!shapes_agree(&out, &s))
            return fl_err(c->e, "%s: inputs differ in shape (%s and %s)", c->t, sstr(c, &out),
                          sstr(c, &s));
        for (int k = 0; k < out.nd; k++) out.d[k] = merge(out.d[k], s.d[k]);
    }
    /* SelectedRows in, SelectedRows out; one dense input makes the sum dense */
    bool rows = true;
    for (size_t i = 0; i < xs->nargs; i++) {
        FlVarDesc *v = fl_ir_var_lookup(c->p, c->b, xs->args[i]);
        rows = rows && v && v->kind == FL_VAR_SELECTED_ROWS;
    }
    FlSlot *os = fl_ir_op_output(c->op, "Out");
    for (size_t i = 0; os && i < os->nargs; i++) {
        FlVarDesc *o = skip_arg(os->args[i]) ? NULL : fl_ir_var_lookup(c->p, c->b, os->args[i]);
        if (o && (o->kind == FL_VAR_DENSE || o->kind == FL_VAR_SELECTED_ROWS))
            o->kind = rows ? FL_VAR_SELECTED_ROWS : FL_VAR_DENSE;
    }
    return set_out(c, "Out", first->dtype, &out);
}

/* ---- shape ops ---- */

static FlStatus infer_concat(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    if (!xs || xs->nargs == 0) return fl_err(c->e, "%s: no inputs to join", c->t);
    FlVarDesc *first;
    if (lookup(c, "input", "X", xs->args[0], &first)) return FL_ERROR;
    Shape out = shape_of(first);
    int axis = 0;
    if (norm_axis(c, iattr(c, "axis"), out.nd, &out, &axis)) return FL_ERROR;
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->dtype != first->dtype)
            return fl_err(c->e, "%s: dtype mismatch: %s and %s", c->t, dt(first->dtype),
                          dt(v->dtype));
        if (s.nd != out.nd)
            return fl_err(c->e, "%s: inputs differ in rank (%s and %s)", c->t, sstr(c, &out),
                          sstr(c, &s));
        for (int k = 0; k < s.nd; k++) {
            if (k == axis) {
                out.d[k] = out.d[k] < 0 || s.d[k] < 0 ? -1 : sadd(out.d[k], s.d[k]);
            } else if (!dims_agree(out.d[k], s.d[k])) {
                Shape f = shape_of(first);
                return fl_err(c->e, "%s: inputs differ in dim %d (%s and %s)", c->t, k,
                              sstr(c, &f), sstr(c, &s));
            } else {
                out.d[k] = merge(out.d[k], s.d[k]);
            }
        }
    }
    return set_out(c, "Out", first->dtype, &out);
}

/* sparse_decay: X a SelectedRows of Param's shape and dtype; Out one like X. */
static FlStatus infer_sparse_decay(Ctx *c) {
    FlVarDesc *xv = NULL, *pv = NULL;
    if (in1(c, "X", &xv) || in1(c, "Param", &pv)) return FL_ERROR;
    if (!xv || !pv) return fl_err(c->e, "%s: X and Param are required", c->t);
    if (xv->kind != FL_VAR_SELECTED_ROWS)
        return fl_err(c->e, "%s: X '%s' must be a SelectedRows (a sparse gradient)", c->t, xv->name);
    Shape x = shape_of(xv), p = shape_of(pv);
    bool fits = xv->dtype == pv->dtype && x.nd == p.nd;
    for (int k = 0; fits && k < x.nd; k++) fits = dims_agree(x.d[k], p.d[k]);
    if (!fits)
        return fl_err(c->e, "%s: X '%s' %s is not the gradient of Param '%s' %s", c->t, xv->name, sstr(c, &x),
                      pv->name, sstr(c, &p));
    const char *on = fl_ir_op_output1(c->op, "Out");
    FlVarDesc *o;
    if (!on || skip_arg(on)) return fl_err(c->e, "%s: output Out is required", c->t);
    if (lookup(c, "output", "Out", on, &o)) return FL_ERROR;
    o->dtype = xv->dtype;
    o->kind = FL_VAR_SELECTED_ROWS;
    fl_ir_var_set_shape(o, x.nd, x.d);
    return FL_OK;
}

/* split_selected_rows: X a SelectedRows [H, ...]; Out[k] SelectedRows [height_sections[k], ...]
 * with the sections adding up to H (when H is known). */
static FlStatus infer_split_selected_rows(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    if (xv->kind != FL_VAR_SELECTED_ROWS)
        return fl_err(c->e, "%s: X '%s' must be a SelectedRows (a sparse gradient)", c->t, xv->name);
    Shape x = shape_of(xv);
    if (x.nd < 1) return fl_err(c->e, "%s: X '%s' has no rows to split", c->t, xv->name);
    FlSlot *outs = fl_ir_op_output(c->op, "Out");
    size_t nout = outs ? outs->nargs : 0, nsec;
    bool ok;
    const int64_t *sec = intsattr(c, "height_sections", &nsec, &ok);
    if (!ok) return FL_ERROR;
    if (nsec == 0 || nsec != nout)
        return fl_err(c->e, "%s: %zu height_sections but %zu outputs (one section per output, at least one)", c->t,
                      nsec, nout);
    int64_t total = 0;
    for (size_t k = 0; k < nsec; k++) {
        if (sec[k] < 0)
            return fl_err(c->e, "%s: height_sections[%zu] is %lld; sections are row counts >= 0", c->t, k,
                          (long long)sec[k]);
        total = sadd(total, sec[k]);
    }
    if (x.d[0] >= 0 && total != x.d[0])
        return fl_err(c->e, "%s: height_sections add up to %lld but X '%s' has height %lld", c->t, (long long)total,
                      xv->name, (long long)x.d[0]);
    for (size_t k = 0; k < nout; k++) {
        if (skip_arg(outs->args[k])) continue;
        FlVarDesc *o;
        if (lookup(c, "output", "Out", outs->args[k], &o)) return FL_ERROR;
        Shape s = x;
        s.d[0] = sec[k];
        o->dtype = xv->dtype;
        o->kind = FL_VAR_SELECTED_ROWS;
        fl_ir_var_set_shape(o, s.nd, s.d);
    }
    return FL_OK;
}

static FlStatus infer_split(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int axis = 0;
    if (norm_axis(c, iattr(c, "axis"), x.nd, &x, &axis)) return FL_ERROR;
    FlSlot *outs = fl_ir_op_output(c->op, "Out");
    size_t nout = outs ? outs->nargs : 0;
    size_t nsec;
    bool ok;
    const int64_t *sec = intsattr(c, "sections", &nsec, &ok);
    if (!ok) return FL_ERROR;
    int64_t num = iattr(c, "num"), dim = x.d[axis];
    if (nsec == 0) {
        if (num <= 0) num = (int64_t)nout;
        if (num <= 0) return fl_err(c->e, "%s: nothing to split into (no outputs)", c->t);
        if ((size_t)num != nout)
            return fl_err(c->e, "%s: num is %lld but there are %zu outputs", c->t, (long long)num,
                          nout);
        if (dim >= 0 && dim % num != 0)
            return fl_err(c->e, "%s: dim %d of size %lld cannot be split into %lld equal parts (X %s)",
                          c->t, axis, (long long)dim, (long long)num, sstr(c, &x));
        Shape s = x;
        s.d[axis] = dim < 0 ? -1 : dim / num;
        return set_out(c, "Out", xv->dtype, &s);
    }
    if (nsec != nout)
        return fl_err(c->e, "%s: %zu sections but %zu outputs", c->t, nsec, nout);
    int64_t known = 0;
    int unknown = -1;
    for (size_t k = 0; k < nsec; k++) {
        if (sec[k] < 0) {
            if (unknown >= 0 || sec[k] != -1)
                return fl_err(c->e, "%s: sections may hold one -1, found %lld at %zu", c->t,
                              (long long)sec[k], k);
            unknown = (int)k;
        } else {
            known = sadd(known, sec[k]);
        }
    }
    int64_t inferred = -1;
    if (dim >= 0) {
        if (unknown < 0 && known != dim)
            return fl_err(c->e, "%s: sections add up to %lld but dim %d has size %lld (X %s)", c->t,
                          (long long)known, axis, (long long)dim, sstr(c, &x));
        if (unknown >= 0 && known > dim)
            return fl_err(c->e, "%s: sections add up to %lld, more than dim %d's size %lld (X %s)",
                          c->t, (long long)known, axis, (long long)dim, sstr(c, &x));
        inferred = dim - known;
    }
    for (size_t k = 0; k < nsec; k++) {
        if (skip_arg(outs->args[k])) continue;
        FlVarDesc *v;
        if (lookup(c, "output", "Out", outs->args[k], &v)) return FL_ERROR;
        Shape s = x;
        s.d[axis] = (int)k == unknown ? inferred : sec[k];
        v->dtype = xv->dtype;
        fl_ir_var_set_shape(v, s.nd, s.d);
    }
    return FL_OK;
}

static FlStatus infer_reshape(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "shape", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n == 0 || n > FL_IR_MAX_DIMS)
        return fl_err(c->e, "%s: the new shape must have 1 to %d dims, found %zu", c->t,
                      FL_IR_MAX_DIMS, n);
    Shape out = {.nd = (int)n};
    int infer_at = -1;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] == 0) {
            if ((int)i >= x.nd)
                return fl_err(c->e, "%s: shape[%zu] is 0 (copy) but X %s has only %d dims", c->t,
                              i, sstr(c, &x), x.nd);
            out.d[i] = x.d[i];
        } else if (dims[i] == -1) {
            if (infer_at >= 0)
                return fl_err(c->e, "%s: the new shape may hold one -1, found two", c->t);
            infer_at = (int)i;
            out.d[i] = -1;
        } else if (dims[i] < 0) {
            return fl_err(c->e, "%s: shape[%zu] is %lld", c->t, i, (long long)dims[i]);
        } else {
            out.d[i] = dims[i];
        }
    }
    /* Known parts and unknown counts; an unknown dim of the result (other than infer_at) can
     * only be a copy of one of X's, so when the counts agree every unknown is accounted for. */
    int64_t xk = 1, ok_ = 1;
    int xu = 0, ou = 0;
    for (int i = 0; i < x.nd; i++) {
        if (x.d[i] < 0) xu++;
        else xk = smul(xk, x.d[i]);
    }
    for (int i = 0; i < out.nd; i++) {
        if (i == infer_at) continue;
        if (out.d[i] < 0) ou++;
        else if (__builtin_mul_overflow(ok_, out.d[i], &ok_))
            return fl_err(c->e, "%s: the shape %s has more elements than an int64 holds", c->t, sstr(c, &out));
    }
    if (xu == ou) {
        if (infer_at >= 0) {
            if (ok_ == 0 || xk % ok_ != 0)
                return fl_err(c->e, "%s: cannot reshape X %s into %s", c->t, sstr(c, &x),
                              sstr(c, &out));
            out.d[infer_at] = xk / ok_;
        } else if (xk != ok_) {
            return fl_err(c->e, "%s: cannot reshape X %s (%lld%s elements) into %s (%lld%s)", c->t,
                          sstr(c, &x), (long long)xk, xu ? " x batch" : "", sstr(c, &out),
                          (long long)ok_, ou ? " x batch" : "");
        }
    }
    return set_out(c, "Out", xv->dtype, &out);
}

static FlStatus infer_transpose(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    bool ok;
    const int64_t *perm = intsattr(c, "axis", &n, &ok);
    if (!ok) return FL_ERROR;
    bool seen[FL_IR_MAX_DIMS] = {0};
    bool good = n == (size_t)x.nd;
    for (size_t i = 0; good && i < n; i++) {
        if (perm[i] < 0 || perm[i] >= x.nd || seen[perm[i]]) good = false;
        else seen[perm[i]] = true;
    }
    if (!good) {
        Shape p = {.nd = n <= FL_IR_MAX_DIMS ? (int)n : FL_IR_MAX_DIMS};
        for (int i = 0; i < p.nd; i++) p.d[i] = perm[i];
        return fl_err(c->e, "%s: axis %s is not a permutation of the %d dims of X %s", c->t,
                      sstr(c, &p), x.nd, sstr(c, &x));
    }
    Shape out = {.nd = x.nd};
    for (int i = 0; i < x.nd; i++) out.d[i] = x.d[perm[i]];
    return set_out(c, "Out", xv->dtype, &out);
}

/* ---- classification helpers ---- */

static FlStatus infer_argmax(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = {0};
    int axis = 0;
    if (x.nd == 0) return fl_err(c->e, "%s: the input has no dims", c->t);
    if (norm_axis(c, iattr(c, "axis"), x.nd, &x, &axis)) return FL_ERROR;
    for (int i = 0; i < x.nd; i++)
        if (i != axis) out.d[out.nd++] = x.d[i];
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", FL_DT_INT64, &out);
}

static FlStatus infer_top_k(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t k = iattr(c, "k");
    if (x.nd == 0) return fl_err(c->e, "%s: the input has no dims", c->t);
    if (k < 1) return fl_err(c->e, "%s: k must be at least 1, found %lld", c->t, (long long)k);
    int64_t last = x.d[x.nd - 1];
    if (last >= 0 && k > last)
        return fl_err(c->e, "%s: k is %lld but the input's last dim has size %lld (X %s)", c->t,
                      (long long)k, (long long)last, sstr(c, &x));
    Shape out = x;
    out.d[out.nd - 1] = k;
    if (set_out(c, "Out", xv->dtype, &out)) return FL_ERROR;
    return set_out(c, "Indices", FL_DT_INT64, &out);
}

static FlStatus infer_accuracy(Ctx *c) {
    FlVarDesc *ov, *iv, *lv;
    if (in1(c, "Out", &ov) || in1(c, "Indices", &iv) || in1(c, "Label", &lv)) return FL_ERROR;
    if (iv->dtype != FL_DT_INT64)
        return fl_err(c->e, "%s: the indices must be int64, found %s", c->t, dt(iv->dtype));
    if (lv->dtype != FL_DT_INT64)
        return fl_err(c->e, "%s: the label must be int64, found %s", c->t, dt(lv->dtype));
    Shape i = shape_of(iv), l = shape_of(lv);
    if (i.nd > 0 && l.nd > 0 && !dims_agree(i.d[0], l.d[0]))
        return fl_err(c->e, "%s: the prediction has %lld rows but the label has %lld (Indices %s, Label %s)",
                      c->t, (long long)i.d[0], (long long)l.d[0], sstr(c, &i), sstr(c, &l));
    Shape one = shape1(1);
    if (set_out(c, "Accuracy", FL_DT_FLOAT32, &one) || set_out(c, "Correct", FL_DT_INT64, &one) ||
        set_out(c, "Total", FL_DT_INT64, &one))
        return FL_ERROR;
    return FL_OK;
}

/* ---- convolution and pooling ---- */

/* A 2-int attribute (strides, paddings, dilations, ksize). */
static FlStatus pair_attr(Ctx *c, const char *name, int64_t v[2]) {
    size_t n;
    bool ok;
    const int64_t *a = intsattr(c, name, &n, &ok);
    if (!ok) return FL_ERROR;
    if (n != 2)
        return fl_err(c->e, "%s: %s must hold 2 values (height, width), found %zu", c->t, name, n);
    v[0] = a[0], v[1] = a[1];
    return FL_OK;
}

/* Output size of a sliding window; -1 if in is unknown; sets *empty if it would be < 1. */
static int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil,
                          bool *empty) {
    if (in < 0 || k < 0) return -1;
    int64_t span = sadd(smul(d, k - 1), 1), padded = sadd(in, smul(2, p));
    int64_t o = padded < span ? 0 : (ceil ? sadd(padded - span, s - 1) : padded - span) / s + 1;
    if (padded < span || o < 1) *empty = true;
    return o;
}

static FlStatus infer_conv2d(Ctx *c) {
    FlVarDesc *iv, *fv;
    if (in1(c, "Input", &iv) || in1(c, "Filter", &fv)) return FL_ERROR;
    Shape in = shape_of(iv), f = shape_of(fv);
    if (in.nd != 4)
        return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, &in));
    if (f.nd != 4)
        return fl_err(c->e, "%s: the filter must be 4-D (M, C/groups, kh, kw), found %s", c->t,
                      sstr(c, &f));
    if (iv->dtype != fv->dtype)
        return fl_err(c->e, "%s: the input is %s but the filter is %s", c->t, dt(iv->dtype),
                      dt(fv->dtype));
    int64_t st[2], pd[2], dl[2], g = iattr(c, "groups");
    if (pair_attr(c, "strides", st) || pair_attr(c, "paddings", pd) ||
        pair_attr(c, "dilations", dl))
        return FL_ERROR;
    for (int i = 0; i < 2; i++)
        if (st[i] < 1 || dl[i] < 1 || pd[i] < 0)
            return fl_err(c->e, "%s: strides and dilations must be positive and paddings "
                          "non-negative", c->t);
    if (g < 1) return fl_err(c->e, "%s: groups must be at least 1, found %lld", c->t, (long long)g);
    if (in.d[1] >= 0 && f.d[1] >= 0 && in.d[1] != smul(f.d[1], g))
        return fl_err(c->e, "%s: the input has %lld channels but the filter expects %lld (groups %lld) "
                      "(Input %s, Filter %s)", c->t, (long long)in.d[1], (long long)smul(f.d[1], g),
                      (long long)g, sstr(c, &in), sstr(c, &f));
    if (f.d[0] >= 0 && f.d[0] % g != 0)
        return fl_err(c->e, "%s: %lld filters cannot be divided into %lld groups", c->t,
                      (long long)f.d[0], (long long)g);
    Shape out = {.nd = 4, .d = {in.d[0], f.d[0]}};
    for (int i = 0; i < 2; i++) {
        bool empty = false;
        out.d[2 + i] = window_out(in.d[2 + i], f.d[2 + i], st[i], pd[i], dl[i], false, &empty);
        if (empty)
            return fl_err(c->e, "%s: the output would be empty: input %s, filter %s, stride %lld, "
                          "padding %lld, dilation %lld", c->t, sstr(c, &in), sstr(c, &f),
                          (long long)st[i], (long long)pd[i], (long long)dl[i]);
    }
    return set_out(c, "Output", iv->dtype, &out);
}

static FlStatus infer_pool2d(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd != 4)
        return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, &x));
    const char *type = sattr(c, "pooling_type");
    if (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0)
        return fl_err(c->e, "%s: pooling_type must be 'max' or 'avg', found '%s'", c->t, type);
    Shape out = x;
    if (iattr(c, "global_pooling")) {
        out.d[2] = out.d[3] = 1;
        return set_out(c, "Out", xv->dtype, &out);
    }
    int64_t k[2], st[2], pd[2];
    if (pair_attr(c, "ksize", k) || pair_attr(c, "strides", st) || pair_attr(c, "paddings", pd))
        return FL_ERROR;
    for (int i = 0; i < 2; i++) {
        if (k[i] < 1 || st[i] < 1 || pd[i] < 0)
            return fl_err(c->e, "%s: ksize and strides must be positive and paddings non-negative",
                          c->t);
        bool empty = false;
        out.d[2 + i] = window_out(x.d[2 + i], k[i], st[i], pd[i], 1, iattr(c, "ceil_mode") != 0, &empty);
        if (empty)
            return fl_err(c->e, "%s: the output would be empty: input %s, ksize %lld, stride %lld, "
                          "padding %lld", c->t, sstr(c, &x), (long long)k[i], (long long)st[i],
                          (long long)pd[i]);
    }
    return set_out(c, "Out", xv->dtype, &out);
}

static FlStatus infer_batch_norm(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd < 2 || x.nd > 5)
        return fl_err(c->e, "%s: the input must have 2 to 5 dims (N, C, ...), found %s", c->t,
                      sstr(c, &x));
    int64_t ch = x.d[1];
    static const char *const params[] = {"Scale", "Bias", "Mean", "Variance"};
    for (size_t i = 0; i < FL_ARRAY_LEN(params); i++) {
        FlVarDesc *v;
        if (in1(c, params[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (s.nd != 1 || !dims_agree(s.d[0], ch))
            return fl_err(c->e, "%s: the input has %lld channels but %s has shape %s", c->t,
                          (long long)ch, params[i], sstr(c, &s));
    }
    Shape cs = shape1(ch);
    if (set_like(c, "Y", xv) || set_out(c, "MeanOut", xv->dtype, &cs) ||
        set_out(c, "VarianceOut", xv->dtype, &cs) || set_out(c, "SavedMean", xv->dtype, &cs) ||
        set_out(c, "SavedVariance", xv->dtype, &cs))
        return FL_ERROR;
    return FL_OK;
}

/* ---- layers: parametrised activations, batch-size fills, reductions, indexing, padding ---- */

static double fattr(Ctx *c, const char *name) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    if (a && a->type == FL_ATTR_FLOAT) return a->f;
    if (a && (a->type == FL_ATTR_INT || a->type == FL_ATTR_BOOL)) return (double)a->i;
    return ai ? ai->dflt.f : 0;
}

static FlStatus need_float_in(Ctx *c, const FlVarDesc *v, const char *slot) {
    if (is_float(v->dtype)) return FL_OK;
    return fl_err(c->e, "%s: %s must be float32 or float64, found %s", c->t, slot, dt(v->dtype));
}

static FlStatus need_int_in(Ctx *c, const FlVarDesc *v, const char *slot) {
    if (v->dtype == FL_DT_INT32 || v->dtype == FL_DT_INT64) return FL_OK;
    return fl_err(c->e, "%s: %s must be int32 or int64, found %s", c->t, slot, dt(v->dtype));
}

static FlStatus infer_float_unary(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_float_in(c, x, "X")) return FL_ERROR;
    return set_like(c, "Out", x);
}

static FlStatus infer_prelu(Ctx *c) {
    FlVarDesc *xv, *av;
    if (in1(c, "X", &xv) || in1(c, "Alpha", &av) || need_float_in(c, xv, "X")) return FL_ERROR;
    if (av->dtype != xv->dtype)
        return fl_err(c->e, "%s: Alpha is %s but X is %s", c->t, dt(av->dtype), dt(xv->dtype));
    Shape x = shape_of(xv), a = shape_of(av);
    const char *mode = sattr(c, "mode");
    int64_t want;
    if (strcmp(mode, "all") == 0) {
        want = 1;
    } else if (strcmp(mode, "channel") == 0) {
        if (x.nd < 2) return fl_err(c->e, "%s: mode 'channel' needs X of rank >= 2, found %s", c->t, sstr(c, &x));
        want = x.d[1];
    } else if (strcmp(mode, "element") == 0) {
        want = prod(&x, 1, x.nd);
    } else {
        return fl_err(c->e, "%s: mode must be 'all', 'channel' or 'element', found '%s'", c->t, mode);
    }
    int64_t have = prod(&a, 0, a.nd);
    if (!dims_agree(have, want))
        return fl_err(c->e, "%s: mode '%s' needs %lld alpha values for X %s, found Alpha %s", c->t, mode,
                      (long long)want, sstr(c, &x), sstr(c, &a));
    return set_like(c, "Out", xv);
}

/* fill_constant_batch_size_like, uniform_random_batch_size_like */
static FlStatus infer_batch_size_like(Ctx *c) {
    FlVarDesc *iv;
    if (in1(c, "Input", &iv)) return FL_ERROR;
    Shape in = shape_of(iv);
    size_t n;
    bool ok;
    const int64_t *dims = intsattr(c, "shape", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n == 0 || n > FL_IR_MAX_DIMS)
        return fl_err(c->e, "%s: shape must have 1 to %d dims, found %zu", c->t, FL_IR_MAX_DIMS, n);
    int64_t idx = iattr(c, "input_dim_idx"), odx = iattr(c, "output_dim_idx");
    if (idx < 0 || idx >= in.nd)
        return fl_err(c->e, "%s: input_dim_idx %lld is not a dim of the input %s", c->t, (long long)idx,
                      sstr(c, &in));
    if (odx < 0 || (size_t)odx >= n)
        return fl_err(c->e, "%s: output_dim_idx %lld is not a dim of shape (%zu dims)", c->t, (long long)odx, n);
    Shape s = {.nd = (int)n};
    for (size_t i = 0; i < n; i++) {
        if ((int64_t)i != odx && dims[i] < 1 && dims[i] != -1)
            return fl_err(c->e, "%s: shape dim %zu is %lld (expected a positive size)", c->t, i, (long long)dims[i]);
        s.d[i] = dims[i];
    }
    /* a LoD Input's batch is its number of sequences, known at run time */
    s.d[odx] = idx == 0 && fl_ir_op_input1(c->op, "InputLod") ? -1 : in.d[idx];
    FlDType t = (FlDType)iattr(c, "dtype");
    if (check_dtype(c, t)) return FL_ERROR;
    if (c->info->id == FL_OPID_uniform_random_batch_size_like) {
        if (!is_float(t)) return fl_err(c->e, "%s: dtype must be float32 or float64, found %s", c->t, dt(t));
        if (fattr(c, "min") > fattr(c, "max"))
            return fl_err(c->e, "%s: min %g is above max %g", c->t, fattr(c, "min"), fattr(c, "max"));
    }
    return set_out(c, "Out", t, &s);
}

/* An ints attribute (its default when absent; an empty default gives n 0); false after the
 * error when it is required and absent or not a list. */
static bool ints_get(Ctx *c, const char *name, const int64_t **v, size_t *n) {
    bool ok;
    *n = 0;
    *v = intsattr(c, name, n, &ok);
    if (!ok) *n = 0;
    return ok;
}

static FlStatus infer_slice(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "Input", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = x;
    size_t na, ns, ne;
    const int64_t *axes, *st, *en;
    if (!ints_get(c, "axes", &axes, &na) || !ints_get(c, "starts", &st, &ns) || !ints_get(c, "ends", &en, &ne))
        return FL_ERROR;
    if (na != ns || na != ne)
        return fl_err(c->e, "%s: axes, starts and ends must have one length, found %zu, %zu and %zu", c->t, na, ns, ne);
    bool seen[FL_IR_MAX_DIMS] = {0};
    for (size_t k = 0; k < na; k++) {
        int a = 0;
        if (norm_axis(c, axes[k], x.nd, &x, &a)) return FL_ERROR;
        if (seen[a]) return fl_err(c->e, "%s: axis %d is listed twice", c->t, a);
        seen[a] = true;
        int64_t d = x.d[a];
        if (d < 0) continue; /* the batch dim: known at run time */
        int64_t s = st[k] < 0 ? sadd(st[k], d) : st[k], e = en[k] < 0 ? sadd(en[k], d) : en[k];
        s = s < 0 ? 0 : s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        if (e <= s)
            return fl_err(c->e, "%s: the slice [%lld:%lld] of dim %d (size %lld) is empty", c->t, (long long)st[k],
                          (long long)en[k], a, (long long)d);
        out.d[a] = e - s;
    }
    return set_out(c, "Out", xv->dtype, &out);
}

/* Index [N] or [N, 1] of int32/int64: *n = N. */
static FlStatus index_rows(Ctx *c, const FlVarDesc *iv, const char *slot, int64_t *n) {
    if (need_int_in(c, iv, slot)) return FL_ERROR;
    Shape s = shape_of(iv);
    if (!(s.nd == 1 || (s.nd == 2 && dims_agree(s.d[1], 1))))
        return fl_err(c->e, "%s: %s must have shape [N] or [N, 1], found %s", c->t, slot, sstr(c, &s));
    *n = s.d[0];
    return FL_OK;
}

static FlStatus infer_gather(Ctx *c) {
    FlVarDesc *xv, *iv;
    if (in1(c, "X", &xv) || in1(c, "Index", &iv)) return FL_ERROR;
    Shape x = shape_of(xv), out = x;
    if (x.nd < 1) return fl_err(c->e, "%s: X has no dims", c->t);
    if (index_rows(c, iv, "Index", &out.d[0])) return FL_ERROR;
    return set_out(c, "Out", xv->dtype, &out);
}

static FlStatus infer_scatter(Ctx *c) {
    FlVarDesc *xv, *iv, *uv;
    if (in1(c, "X", &xv) || in1(c, "Ids", &iv) || in1(c, "Updates", &uv)) return FL_ERROR;
    Shape x = shape_of(xv), u = shape_of(uv), want = x;
    if (x.nd < 1) return fl_err(c->e, "%s: X has no dims", c->t);
    if (index_rows(c, iv, "Ids", &want.d[0])) return FL_ERROR;
    if (uv->dtype != xv->dtype)
        return fl_err(c->e, "%s: Updates is %s but X is %s", c->t, dt(uv->dtype), dt(xv->dtype));
    if (!shapes_agree(&u, &want))
        return fl_err(c->e, "%s: Updates must have shape %s (one row per id, X %s), found %s", c->t, sstr(c, &want),
                      sstr(c, &x), sstr(c, &u));
    return set_like(c, "Out", xv);
}

static FlStatus infer_expand(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    const int64_t *t;
    if (!ints_get(c, "expand_times", &t, &n)) return FL_ERROR;
    if ((int)n != x.nd)
        return fl_err(c->e, "%s: expand_times has %zu values but X %s has %d dims", c->t, n, sstr(c, &x), x.nd);
    for (int i = 0; i < x.nd; i++) {
        if (t[i] < 1) return fl_err(c->e, "%s: expand_times[%d] is %lld (expected >= 1)", c->t, i, (long long)t[i]);
        x.d[i] = x.d[i] < 0 ? -1 : smul(x.d[i], t[i]);
    }
    return set_out(c, "Out", xv->dtype, &x);
}

static FlStatus infer_squeeze(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = {0};
    size_t n;
    const int64_t *axes;
    if (!ints_get(c, "axes", &axes, &n)) return FL_ERROR;
    bool drop[FL_IR_MAX_DIMS] = {0};
    for (size_t k = 0; k < n; k++) {
        int a = 0;
        if (norm_axis(c, axes[k], x.nd, &x, &a)) return FL_ERROR;
        if (x.d[a] > 1)
            return fl_err(c->e, "%s: dim %d of X %s has size %lld; only a size-1 dim can be squeezed", c->t, a,
                          sstr(c, &x), (long long)x.d[a]);
        drop[a] = true;
    }
    for (int i = 0; i < x.nd; i++)
        if (!(n ? drop[i] : x.d[i] == 1)) out.d[out.nd++] = x.d[i];
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Out", xv->dtype, &out);
}

static FlStatus infer_unsqueeze(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = x;
    size_t n;
    const int64_t *axes;
    if (!ints_get(c, "axes", &axes, &n)) return FL_ERROR;
    for (size_t k = 0; k < n; k++) {
        if (out.nd == FL_IR_MAX_DIMS) return fl_err(c->e, "%s: the result would have more than %d dims", c->t, FL_IR_MAX_DIMS);
        int64_t a = axes[k] < 0 ? sadd(axes[k], out.nd + 1) : axes[k];
        if (a < 0 || a > out.nd)
            return fl_err(c->e, "%s: axis %lld is out of range for a result of rank %d", c->t, (long long)axes[k],
                          out.nd + 1);
        memmove(&out.d[a + 1], &out.d[a], sizeof(int64_t) * (size_t)(out.nd - a));
        out.d[a] = 1;
        out.nd++;
    }
    return set_out(c, "Out", xv->dtype, &out);
}

static FlStatus infer_flatten(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t axis = iattr(c, "axis");
    if (axis < 0 || axis > x.nd)
        return fl_err(c->e, "%s: axis %lld is out of range 0..%d for X %s", c->t, (long long)axis, x.nd, sstr(c, &x));
    Shape out = {.nd = 2, .d = {prod(&x, 0, (int)axis), prod(&x, (int)axis, x.nd)}};
    return set_out(c, "Out", xv->dtype, &out);
}

static FlStatus infer_stack(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    if (!xs || xs->nargs == 0) return fl_err(c->e, "%s: no inputs to stack", c->t);
    FlVarDesc *first;
    if (lookup(c, "input", "X", xs->args[0], &first)) return FL_ERROR;
    Shape s0 = shape_of(first);
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->dtype != first->dtype)
            return fl_err(c->e, "%s: dtype mismatch: %s and %s", c->t, dt(first->dtype), dt(v->dtype));
        if (!shapes_agree(&s0, &s))
            return fl_err(c->e, "%s: inputs differ in shape (%s and %s)", c->t, sstr(c, &s0), sstr(c, &s));
        for (int k = 0; k < s.nd; k++) s0.d[k] = merge(s0.d[k], s.d[k]);
    }
    if (s0.nd == FL_IR_MAX_DIMS) return fl_err(c->e, "%s: the result would have more than %d dims", c->t, FL_IR_MAX_DIMS);
    int64_t axis = iattr(c, "axis");
    int64_t a = axis < 0 ? sadd(axis, s0.nd + 1) : axis;
    if (a < 0 || a > s0.nd)
        return fl_err(c->e, "%s: axis %lld is out of range for inputs %s", c->t, (long long)axis, sstr(c, &s0));
    memmove(&s0.d[a + 1], &s0.d[a], sizeof(int64_t) * (size_t)(s0.nd - a));
    s0.d[a] = (int64_t)xs->nargs;
    s0.nd++;
    return set_out(c, "Y", first->dtype, &s0);
}

static FlStatus infer_unstack(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int a = 0;
    if (norm_axis(c, iattr(c, "axis"), x.nd, &x, &a)) return FL_ERROR;
    FlSlot *ys = fl_ir_op_output(c->op, "Y");
    size_t ny = ys ? ys->nargs : 0;
    int64_t num = iattr(c, "num");
    if (num <= 0) num = x.d[a];
    if (num <= 0)
        return fl_err(c->e, "%s: dim %d of X %s is unknown: give num", c->t, a, sstr(c, &x));
    if (x.d[a] >= 0 && num != x.d[a])
        return fl_err(c->e, "%s: num is %lld but dim %d of X %s has size %lld", c->t, (long long)num, a, sstr(c, &x),
                      (long long)x.d[a]);
    if ((size_t)num != ny) return fl_err(c->e, "%s: num is %lld but there are %zu outputs", c->t, (long long)num, ny);
    Shape out = {0};
    for (int i = 0; i < x.nd; i++)
        if (i != a) out.d[out.nd++] = x.d[i];
    if (out.nd == 0) out = shape1(1);
    return set_out(c, "Y", xv->dtype, &out);
}

static FlStatus infer_clip(Ctx *c) {
    if (fattr(c, "min") > fattr(c, "max"))
        return fl_err(c->e, "%s: min %g is above max %g", c->t, fattr(c, "min"), fattr(c, "max"));
    return infer_float_unary(c);
}

static FlStatus infer_clip_by_norm(Ctx *c) {
    if (!(fattr(c, "max_norm") > 0)) return fl_err(c->e, "%s: max_norm must be > 0, found %g", c->t, fattr(c, "max_norm"));
    return infer_float_unary(c);
}

static FlStatus infer_pad(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    size_t n;
    const int64_t *p;
    if (!ints_get(c, "paddings", &p, &n)) return FL_ERROR;
    if (n != 2 * (size_t)x.nd)
        return fl_err(c->e, "%s: paddings must hold 2 values per dim of X %s (%d), found %zu", c->t, sstr(c, &x),
                      2 * x.nd, n);
    for (int i = 0; i < x.nd; i++) {
        if (p[2 * i] < 0 || p[2 * i + 1] < 0)
            return fl_err(c->e, "%s: paddings of dim %d are %lld and %lld (expected >= 0)", c->t, i,
                          (long long)p[2 * i], (long long)p[2 * i + 1]);
        x.d[i] = x.d[i] < 0 ? -1 : sadd(x.d[i], sadd(p[2 * i], p[2 * i + 1]));
    }
    return set_out(c, "Out", xv->dtype, &x);
}

static FlStatus infer_crop(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in_opt(c, "Y", &yv)) return FL_ERROR;
    Shape x = shape_of(xv), out;
    size_t no, ns;
    const int64_t *off, *sh;
    if (!ints_get(c, "offsets", &off, &no)) return FL_ERROR;
    if (no && no != (size_t)x.nd)
        return fl_err(c->e, "%s: offsets has %zu values but X %s has %d dims", c->t, no, sstr(c, &x), x.nd);
    if (yv) {
        out = shape_of(yv);
        if (out.nd != x.nd)
            return fl_err(c->e, "%s: Y %s and X %s differ in rank", c->t, sstr(c, &out), sstr(c, &x));
    } else {
        if (!ints_get(c, "shape", &sh, &ns)) return FL_ERROR;
        if (ns != (size_t)x.nd)
            return fl_err(c->e, "%s: shape has %zu values but X %s has %d dims", c->t, ns, sstr(c, &x), x.nd);
        out.nd = x.nd;
        for (int i = 0; i < x.nd; i++) out.d[i] = sh[i];
    }
    for (int i = 0; i < x.nd; i++) {
        int64_t o = no ? off[i] : 0;
        if (o < 0) return fl_err(c->e, "%s: offset %lld of dim %d is negative", c->t, (long long)o, i);
        if (out.d[i] <= 0) out.d[i] = x.d[i] < 0 ? -1 : x.d[i] - o;
        if (x.d[i] >= 0 && out.d[i] >= 0 && (out.d[i] < 1 || sadd(o, out.d[i]) > x.d[i]))
            return fl_err(c->e, "%s: a block of size %lld at offset %lld does not fit in dim %d of X %s", c->t,
                          (long long)out.d[i], (long long)o, i, sstr(c, &x));
    }
    return set_out(c, "Out", xv->dtype, &out);
}

static FlStatus infer_one_hot(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv) || need_int_in(c, xv, "X")) return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd < 1 || !dims_agree(x.d[x.nd - 1], 1))
        return fl_err(c->e, "%s: X must have shape [..., 1], found %s", c->t, sstr(c, &x));
    int64_t depth = iattr(c, "depth");
    if (depth < 1) return fl_err(c->e, "%s: depth must be >= 1, found %lld", c->t, (long long)depth);
    x.d[x.nd - 1] = depth;
    return set_out(c, "Out", FL_DT_FLOAT32, &x);
}

/* ---- layer norm, fused losses, lrn, transposed convolution, interpolation ---- */

static FlStatus need_float(Ctx *c, const char *what, const FlVarDesc *v) {
    if (is_float(v->dtype)) return FL_OK;
    return fl_err(c->e, "%s: %s must be float32 or float64, found %s", c->t, what, dt(v->dtype));
}

static FlStatus infer_layer_norm(Ctx *c) {
    FlVarDesc *xv, *sv, *bv;
    if (in1(c, "X", &xv) || in_opt(c, "Scale", &sv) || in_opt(c, "Bias", &bv)) return FL_ERROR;
    if (need_float(c, "the input", xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t begin = iattr(c, "begin_norm_axis");
    if (begin < 1 || begin >= x.nd)
        return fl_err(c->e, "%s: begin_norm_axis %lld must be in [1, %d) for the input %s", c->t,
                      (long long)begin, x.nd, sstr(c, &x));
    int64_t rows = prod(&x, 0, (int)begin), width = prod(&x, (int)begin, x.nd);
    const FlVarDesc *ps[2] = {sv, bv};
    for (int i = 0; i < 2; i++) {
        if (!ps[i]) continue;
        Shape s = shape_of(ps[i]);
        if (ps[i]->dtype != xv->dtype || !dims_agree(prod(&s, 0, s.nd), width))
            return fl_err(c->e, "%s: %s %s %s must be %s with %lld elements (the input %s from dim %lld)",
                          c->t, i ? "Bias" : "Scale", sstr(c, &s), dt(ps[i]->dtype), dt(xv->dtype),
                          (long long)width, sstr(c, &x), (long long)begin);
    }
    Shape r = shape1(rows);
    return set_like(c, "Y", xv) || set_out(c, "Mean", xv->dtype, &r) ||
                   set_out(c, "Variance", xv->dtype, &r)
               ? FL_ERROR
               : FL_OK;
}

static FlStatus infer_softmax_xent(Ctx *c) {
    FlVarDesc *xv, *lv;
    if (in1(c, "Logits", &xv) || in1(c, "Label", &lv)) return FL_ERROR;
    if (need_float(c, "the logits", xv)) return FL_ERROR;
    Shape x = shape_of(xv), l = shape_of(lv);
    if (x.nd < 1) return fl_err(c->e, "%s: the logits must have at least one dim", c->t);
    if (iattr(c, "soft_label")) {
        if (lv->dtype != xv->dtype || !shapes_agree(&x, &l))
            return fl_err(c->e, "%s: a soft label must be %s of the logits' shape %s, found %s %s", c->t,
                          dt(xv->dtype), sstr(c, &x), dt(lv->dtype), sstr(c, &l));
    } else {
        if (lv->dtype != FL_DT_INT64)
            return fl_err(c->e, "%s: the label must be int64, found %s", c->t, dt(lv->dtype));
        bool ok = l.nd == x.nd && (l.d[l.nd - 1] == 1 || l.d[l.nd - 1] < 0);
        for (int i = 0; ok && i < x.nd - 1; i++) ok = dims_agree(x.d[i], l.d[i]);
        if (!ok)
            return fl_err(c->e, "%s: the label must have shape [N, 1] for the logits %s, found %s", c->t,
                          sstr(c, &x), sstr(c, &l));
    }
    Shape loss = x;
    for (int i = 0; i < x.nd - 1; i++) loss.d[i] = merge(x.d[i], l.d[i]);
    loss.d[loss.nd - 1] = 1;
    return set_like(c, "Softmax", xv) || set_out(c, "Loss", xv->dtype, &loss) ? FL_ERROR : FL_OK;
}

static FlStatus infer_cos_sim(Ctx *c) {
    FlVarDesc *xv, *yv;
    if (in1(c, "X", &xv) || in1(c, "Y", &yv)) return FL_ERROR;
    if (need_float(c, "X", xv)) return FL_ERROR;
    Shape x = shape_of(xv), y = shape_of(yv);
    bool ok = xv->dtype == yv->dtype && x.nd >= 2 && y.nd == x.nd &&
              dims_agree(prod(&x, 1, x.nd), prod(&y, 1, y.nd)) && (y.d[0] == 1 || dims_agree(x.d[0], y.d[0]));
    if (!ok)
        return fl_err(c->e, "%s: Y must have the shape and dtype of X or one row (X %s %s, Y %s %s)", c->t,
                      sstr(c, &x), dt(xv->dtype), sstr(c, &y), dt(yv->dtype));
    Shape o = {.nd = 2, .d = {y.d[0] == 1 ? x.d[0] : merge(x.d[0], y.d[0]), 1}};
    Shape yn = {.nd = 2, .d = {y.d[0] == 1 ? 1 : o.d[0], 1}};
    return set_out(c, "Out", xv->dtype, &o) || set_out(c, "XNorm", xv->dtype, &o) ||
                   set_out(c, "YNorm", xv->dtype, &yn)
               ? FL_ERROR
               : FL_OK;
}

static FlStatus infer_image_op(Ctx *c, FlVarDesc **xv, Shape *x) {
    if (in1(c, "X", xv) || need_float(c, "the input", *xv)) return FL_ERROR;
    *x = shape_of(*xv);
    if (x->nd != 4)
        return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W), found %s", c->t, sstr(c, x));
    return FL_OK;
}

static FlStatus infer_lrn(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    if (infer_image_op(c, &xv, &x)) return FL_ERROR;
    if (iattr(c, "n") < 1) return fl_err(c->e, "%s: n must be >= 1, found %lld", c->t, (long long)iattr(c, "n"));
    return set_like(c, "Out", xv) || set_like(c, "MidOut", xv) ? FL_ERROR : FL_OK;
}

static FlStatus infer_interp(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    if (infer_image_op(c, &xv, &x)) return FL_ERROR;
    int64_t h = iattr(c, "out_h"), w = iattr(c, "out_w");
    if (h < 1 || w < 1 || h > INT32_MAX || w > INT32_MAX)
        return fl_err(c->e, "%s: out_h and out_w must be positive, found %lld and %lld", c->t, (long long)h,
                      (long long)w);
    if (fl_ir_op_attr(c->op, "align_mode") && iattr(c, "align_mode") != 0 && iattr(c, "align_mode") != 1)
        return fl_err(c->e, "%s: align_mode must be 0 or 1, found %lld", c->t, (long long)iattr(c, "align_mode"));
    x.d[2] = h, x.d[3] = w;
    return set_out(c, "Out", xv->dtype, &x);
}

static FlStatus infer_conv2d_transpose(Ctx *c) {
    FlVarDesc *iv, *fv;
    if (in1(c, "Input", &iv) || in1(c, "Filter", &fv)) return FL_ERROR;
    Shape in = shape_of(iv), f = shape_of(fv);
    if (in.nd != 4 || f.nd != 4 || iv->dtype != fv->dtype || need_float(c, "the input", iv))
        return fl_err(c->e, "%s: the input must be 4-D (N, C, H, W) and the filter 4-D (C, M/groups, kh, kw) "
                      "of one float dtype, found %s %s and %s %s", c->t, sstr(c, &in), dt(iv->dtype),
                      sstr(c, &f), dt(fv->dtype));
    int64_t st[2], pd[2], dl[2], g = iattr(c, "groups");
    if (pair_attr(c, "strides", st) || pair_attr(c, "paddings", pd) || pair_attr(c, "dilations", dl))
        return FL_ERROR;
    if (g < 1) return fl_err(c->e, "%s: groups must be at least 1, found %lld", c->t, (long long)g);
    if (!dims_agree(in.d[1], f.d[0]))
        return fl_err(c->e, "%s: the input has %lld channels but the filter's dim 0 is %lld (Input %s, Filter %s)",
                      c->t, (long long)in.d[1], (long long)f.d[0], sstr(c, &in), sstr(c, &f));
    if (in.d[1] >= 0 && in.d[1] % g != 0)
        return fl_err(c->e, "%s: %lld input channels cannot be divided into %lld groups", c->t,
                      (long long)in.d[1], (long long)g);
    Shape out = {.nd = 4, .d = {in.d[0], f.d[1] < 0 ? -1 : smul(f.d[1], g), -1, -1}};
    for (int i = 0; i < 2; i++) {
        if (st[i] < 1 || dl[i] < 1 || pd[i] < 0)
            return fl_err(c->e, "%s: strides and dilations must be positive and paddings non-negative", c->t);
        if (in.d[2 + i] < 0 || f.d[2 + i] < 0) continue;
        int64_t o = sadd(sadd(smul(in.d[2 + i] - 1, st[i]), -smul(2, pd[i])), sadd(smul(dl[i], f.d[2 + i] - 1), 1));
        if (o < 1)
            return fl_err(c->e, "%s: the output would be empty: input %s, filter %s, stride %lld, padding %lld",
                          c->t, sstr(c, &in), sstr(c, &f), (long long)st[i], (long long)pd[i]);
        out.d[2 + i] = o;
    }
    return set_out(c, "Output", iv->dtype, &out);
}

static FlStatus infer_auc(Ctx *c) {
    FlVarDesc *pv, *lv, *sp, *sn;
    if (in1(c, "Predict", &pv) || in1(c, "Label", &lv) || in1(c, "StatPos", &sp) || in1(c, "StatNeg", &sn))
        return FL_ERROR;
    if (need_float(c, "the prediction", pv)) return FL_ERROR;
    Shape p = shape_of(pv), l = shape_of(lv);
    if (p.nd != 2 || l.nd < 1 || !dims_agree(p.d[0], l.d[0]) || (lv->dtype != FL_DT_INT64 && lv->dtype != FL_DT_INT32))
        return fl_err(c->e, "%s: the prediction must be [N, classes] and the label int [N, 1], found %s and %s %s", c->t,
                      sstr(c, &p), sstr(c, &l), dt(lv->dtype));
    if (strcmp(sattr(c, "curve"), "ROC") != 0)
        return fl_err(c->e, "%s: curve '%s' is not supported (ROC only)", c->t, sattr(c, "curve"));
    int64_t nt = iattr(c, "num_thresholds"), steps = iattr(c, "slide_steps");
    if (nt < 1 || nt > (1 << 24) || steps < 0)
        return fl_err(c->e, "%s: num_thresholds must be in [1, 2^24] and slide_steps >= 0, found %lld and %lld", c->t,
                      (long long)nt, (long long)steps);
    const FlVarDesc *st[2] = {sp, sn};
    for (int i = 0; i < 2; i++) {
        Shape s = shape_of(st[i]);
        if (st[i]->dtype != FL_DT_INT64 || s.nd != 2 || s.d[0] != (steps ? steps : 1) || s.d[1] != nt + 1)
            return fl_err(c->e, "%s: %s must be int64 [%lld, %lld], found %s %s", c->t, i ? "StatNeg" : "StatPos",
                          (long long)(steps ? steps : 1), (long long)(nt + 1), dt(st[i]->dtype), sstr(c, &s));
    }
    Shape one = shape1(1);
    return set_out(c, "AUC", FL_DT_FLOAT64, &one) || set_like(c, "StatPosOut", sp) || set_like(c, "StatNegOut", sn)
               ? FL_ERROR
               : FL_OK;
}

/* ---- sequence labelling (linear_chain_crf, crf_decoding, chunk_eval) ---- */

/* An int tags var of `rows` rows: [rows, 1] or [rows]. */
static FlStatus crf_tags(Ctx *c, const char *slot, const FlVarDesc *v, int64_t rows) {
    Shape s = shape_of(v);
    if (need_int_in(c, v, slot)) return FL_ERROR;
    if (!((s.nd == 2 && dims_agree(s.d[1], 1)) || s.nd == 1) || !dims_agree(s.d[0], rows))
        return fl_err(c->e, "%s: %s must be [%lld, 1] (a tag per row), found %s", c->t, slot, (long long)rows,
                      sstr(c, &s));
    return FL_OK;
}

/* Emission [T, K] (float), Transition [K + 2, K] of its dtype, int64 offsets; *x the emission. */
static FlStatus crf_inputs(Ctx *c, FlVarDesc **x, Shape *xs) {
    FlVarDesc *wv, *lodv;
    if (in1(c, "Emission", x) || in1(c, "Transition", &wv) || in1(c, "EmissionLod", &lodv)) return FL_ERROR;
    if (need_float_in(c, *x, "Emission")) return FL_ERROR;
    *xs = shape_of(*x);
    Shape w = shape_of(wv);
    if (xs->nd != 2 || xs->d[1] == 0)
        return fl_err(c->e, "%s: Emission must be [T, K] (a score per row and tag), found %s", c->t, sstr(c, xs));
    int64_t K = xs->d[1];
    if (wv->dtype != (*x)->dtype || w.nd != 2 || !dims_agree(w.d[1], K) || !dims_agree(w.d[0], K < 0 ? -1 : K + 2))
        return fl_err(c->e, "%s: Transition must be %s [K + 2, K] for Emission %s, found %s %s", c->t,
                      dt((*x)->dtype), sstr(c, xs), dt(wv->dtype), sstr(c, &w));
    Shape l = shape_of(lodv);
    if (lodv->dtype != FL_DT_INT64 || l.nd != 1)
        return fl_err(c->e, "%s: EmissionLod must be int64 offsets [nseq + 1], found %s %s", c->t, dt(lodv->dtype),
                      sstr(c, &l));
    return FL_OK;
}

static FlStatus infer_linear_chain_crf(Ctx *c) {
    FlVarDesc *x, *lv, *wv;
    Shape xs;
    if (crf_inputs(c, &x, &xs) || in1(c, "Label", &lv) || in1(c, "Transition", &wv) ||
        crf_tags(c, "Label", lv, xs.d[0]))
        return FL_ERROR;
    Shape ll = {.nd = 2, .d = {-1, 1}};
    return set_like(c, "Alpha", x) || set_like(c, "EmissionExps", x) || set_like(c, "TransitionExps", wv) ||
                   set_out(c, "LogLikelihood", x->dtype, &ll)
               ? FL_ERROR
               : FL_OK;
}

static FlStatus infer_crf_decoding(Ctx *c) {
    FlVarDesc *x, *lv;
    Shape xs;
    if (crf_inputs(c, &x, &xs) || in_opt(c, "Label", &lv) || (lv && crf_tags(c, "Label", lv, xs.d[0])))
        return FL_ERROR;
    Shape p = {.nd = 2, .d = {xs.d[0], 1}};
    return set_out(c, "ViterbiPath", FL_DT_INT64, &p);
}

static FlStatus infer_chunk_eval(Ctx *c) {
    FlVarDesc *iv, *lv, *io, *lo;
    if (in1(c, "Inference", &iv) || in1(c, "Label", &lv) || in1(c, "InferenceLod", &io) || in1(c, "LabelLod", &lo))
        return FL_ERROR;
    Shape is = shape_of(iv);
    if (is.nd < 1 || crf_tags(c, "Inference", iv, is.d[0]) || crf_tags(c, "Label", lv, is.d[0])) return FL_ERROR;
    const char *scheme = sattr(c, "chunk_scheme");
    if (strcmp(scheme, "IOB") != 0 && strcmp(scheme, "IOE") != 0 && strcmp(scheme, "IOBES") != 0 &&
        strcmp(scheme, "plain") != 0)
        return fl_err(c->e, "%s: chunk_scheme must be IOB, IOE, IOBES or plain, found '%s'", c->t, scheme);
    if (iattr(c, "num_chunk_types") < 1)
        return fl_err(c->e, "%s: num_chunk_types must be >= 1, found %lld", c->t, (long long)iattr(c, "num_chunk_types"));
    Shape one = shape1(1);
    return set_out(c, "Precision", FL_DT_FLOAT32, &one) || set_out(c, "Recall", FL_DT_FLOAT32, &one) ||
                   set_out(c, "F1Score", FL_DT_FLOAT32, &one) || set_out(c, "NumInferChunks", FL_DT_INT64, &one) ||
                   set_out(c, "NumLabelChunks", FL_DT_INT64, &one) ||
                   set_out(c, "NumCorrectChunks", FL_DT_INT64, &one)
               ? FL_ERROR
               : FL_OK;
}

/* ---- misc ---- */

static FlStatus infer_increment(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t n = prod(&x, 0, x.nd);
    if (n > 1)
        return fl_err(c->e, "%s: X must have one element, found shape %s", c->t, sstr(c, &x));
    return set_like(c, "Out", xv);
}

/* ---- sequences (LoD offsets: int64 vectors) ---- */

static FlStatus need_offsets(Ctx *c, const char *slot, bool optional) {
    FlVarDesc *v;
    if (optional ? in_opt(c, slot, &v) : in1(c, slot, &v)) return FL_ERROR;
    if (!v || (v->dtype == FL_DT_INT64 && v->ndim == 1)) return FL_OK;
    Shape s = shape_of(v);
    return fl_err(c->e, "%s: %s must be the int64 offsets [nseq + 1] of a LoD tensor, found %s %s", c->t, slot,
                  dt(v->dtype), sstr(c, &s));
}

/* Out: X's shape with an unknown dim 0 (one row per sequence, or the expanded rows). */
static FlStatus set_rows_unknown(Ctx *c, const char *slot, const FlVarDesc *xv, FlDType t) {
    Shape o = shape_of(xv);
    o.d[0] = -1;
    return set_out(c, slot, t, &o);
}

/* X with at least one dim. */
static FlStatus seq_x(Ctx *c, FlVarDesc **xv, Shape *x) {
    if (in1(c, "X", xv)) return FL_ERROR;
    *x = shape_of(*xv);
    if (x->nd < 1) return fl_err(c->e, "%s: X must have at least one dim, found %s", c->t, sstr(c, x));
    return FL_OK;
}

static FlStatus infer_sequence_pool(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    if (seq_x(c, &xv, &x) || need_offsets(c, "XLod", false) || need_float_in(c, xv, "X")) return FL_ERROR;
    const char *pt = sattr(c, "pooltype");
    static const char *const types[] = {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"};
    bool ok = false;
    for (size_t i = 0; i < FL_ARRAY_LEN(types); i++) ok |= strcmp(pt, types[i]) == 0;
    if (!ok) return fl_err(c->e, "%s: pooltype must be AVERAGE, SUM, SQRT, MAX, LAST or FIRST, found '%s'", c->t, pt);
    if (fl_ir_op_output1(c->op, "MaxIndex") && strcmp(pt, "MAX") != 0)
        return fl_err(c->e, "%s: MaxIndex is made by pooltype MAX only, found '%s'", c->t, pt);
    return set_rows_unknown(c, "Out", xv, xv->dtype) || set_rows_unknown(c, "MaxIndex", xv, FL_DT_INT32);
}

static FlStatus infer_sequence_softmax(Ctx *c) {
    FlVarDesc *xv;
    Shape x;
    if (seq_x(c, &xv, &x) || need_offsets(c, "XLod", false) || need_float_in(c, xv, "X")) return FL_ERROR;
    if (!(x.nd == 1 || (x.nd == 2 && dims_agree(x.d[1], 1))))
        return fl_err(c->e, "%s: X must be [T] or [T, 1], found %s", c->t, sstr(c, &x));
    return set_like(c, "Out", xv);
}

static FlStatus infer_sequence_conv(Ctx *c) {
    FlVarDesc *xv, *fv;
    Shape x;
    if (seq_x(c, &xv, &x) || need_offsets(c, "XLod", false) || need_float_in(c, xv, "X") || in1(c, "Filter", &fv))
        return FL_ERROR;
    int64_t len = iattr(c, "contextLength"), stride = iattr(c, "contextStride");
    if (len < 1) return fl_err(c->e, "%s: contextLength must be >= 1, found %lld", c->t, (long long)len);
    if (stride != 1) return fl_err(c->e, "%s: contextStride must be 1, found %lld", c->t, (long long)stride);
    Shape f = shape_of(fv);
    if (x.nd != 2) return fl_err(c->e, "%s: X must be [T, D], found %s", c->t, sstr(c, &x));
    if (fv->dtype != xv->dtype || f.nd != 2 || !dims_agree(f.d[0], x.d[1] < 0 ? -1 : smul(len, x.d[1])))
        return fl_err(c->e, "%s: Filter must be %s [contextLength * D, N] for X %s, found %s %s", c->t,
                      dt(xv->dtype), sstr(c, &x), dt(fv->dtype), sstr(c, &f));
    Shape o = {.nd = 2, .d = {x.d[0], f.d[1]}};
    return set_out(c, "Out", xv->dtype, &o);
}

/* sequence_expand and sequence_expand_as (whose XLod and OutLod are absent). */
static FlStatus infer_sequence_expand(Ctx *c) {
    FlVarDesc *xv;
    Shape x, lod = shape1(-1);
    if (seq_x(c, &xv, &x) || need_offsets(c, "XLod", true) || need_offsets(c, "YLod", false)) return FL_ERROR;
    return set_rows_unknown(c, "Out", xv, xv->dtype) || set_out(c, "OutLod", FL_DT_INT64, &lod);
}

static FlStatus infer_sequence_mask(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv) || need_int_in(c, xv, "X")) return FL_ERROR;
    Shape y = shape_of(xv);
    int64_t maxlen = iattr(c, "maxlen"), odt = iattr(c, "out_dtype");
    if (odt < 0 || odt >= FL_DT_COUNT) return fl_err(c->e, "%s: out_dtype %lld is not a dtype", c->t, (long long)odt);
    if (y.nd >= FL_IR_MAX_DIMS) return fl_err(c->e, "%s: X %s has too many dims to add one", c->t, sstr(c, &y));
    y.d[y.nd++] = maxlen < 0 ? -1 : maxlen;
    return set_out(c, "Y", (FlDType)odt, &y);
}

/* ---- tensor arrays and beam search ---- */

static FlStatus need_array(Ctx *c, const char *dir, const char *slot, FlVarDesc **v) {
    const char *name = *dir == 'i' ? fl_ir_op_input1(c->op, slot) : fl_ir_op_output1(c->op, slot);
    if (!name) return fl_err(c->e, "%s: missing %s %s", c->t, dir, slot);
    if (lookup(c, dir, slot, name, v)) return FL_ERROR;
    if ((*v)->kind == FL_VAR_TENSOR_ARRAY) return FL_OK;
    return fl_err(c->e, "%s: %s %s '%s' is not a tensor array", c->t, dir, slot, name);
}

static FlStatus need_index(Ctx *c) {
    FlVarDesc *i;
    if (in1(c, "I", &i)) return FL_ERROR;
    Shape s = shape_of(i);
    int64_t n = prod(&s, 0, s.nd);
    if (i->kind == FL_VAR_DENSE && i->dtype == FL_DT_INT64 && (n == 1 || n < 0)) return FL_OK;
    return fl_err(c->e, "%s: the index I must be an int64 [1], found %s %s", c->t, dt(i->dtype), sstr(c, &s));
}

/* write_to_array: the array's elements take X's dtype; its shape is the first element's, with -1
 * where later elements differ. */
static FlStatus infer_write_to_array(Ctx *c) {
    FlVarDesc *x, *a;
    if (in1(c, "X", &x) || need_index(c) || need_array(c, "output", "Out", &a)) return FL_ERROR;
    if (x->kind != FL_VAR_DENSE) return fl_err(c->e, "%s: X '%s' is not a tensor", c->t, x->name);
    if (a->dtype != x->dtype)
        return fl_err(c->e, "%s: X '%s' is %s, the array '%s' holds %s", c->t, x->name, dt(x->dtype), a->name,
                      dt(a->dtype));
    Shape xs = shape_of(x), as = shape_of(a);
    if (a->ndim == 0) return fl_ir_var_set_shape(a, xs.nd, xs.d), FL_OK;
    if (as.nd != xs.nd) return fl_ir_var_set_shape(a, 0, NULL), FL_OK; /* elements of any rank */
    for (int k = 0; k < as.nd; k++)
        if (as.d[k] != xs.d[k]) as.d[k] = -1;
    fl_ir_var_set_shape(a, as.nd, as.d);
    return FL_OK;
}

static FlStatus infer_read_from_array(Ctx *c) {
    FlVarDesc *a;
    if (need_array(c, "input", "X", &a) || need_index(c)) return FL_ERROR;
    Shape s = shape_of(a);
    return set_out(c, "Out", a->dtype, &s);
}

static FlStatus infer_array_scalar(Ctx *c, FlDType t) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    if (c->info->id == FL_OPID_lod_array_length && x->kind != FL_VAR_TENSOR_ARRAY)
        return fl_err(c->e, "%s: X '%s' is not a tensor array", c->t, x->name);
    Shape one = shape1(1);
    return set_out(c, "Out", t, &one);
}

static FlStatus infer_beam_search(Ctx *c) {
    FlVarDesc *pid, *psc, *ids, *sc;
    if (in1(c, "pre_ids", &pid) || in1(c, "pre_scores", &psc) || in_opt(c, "ids", &ids) || in1(c, "scores", &sc) ||
        need_offsets(c, "ScoresSrcLod", false) || need_offsets(c, "ScoresLod", false))
        return FL_ERROR;
    if (pid->dtype != FL_DT_INT64) return fl_err(c->e, "%s: pre_ids must be int64, found %s", c->t, dt(pid->dtype));
    if (ids && ids->dtype != FL_DT_INT64) return fl_err(c->e, "%s: ids must be int64, found %s", c->t, dt(ids->dtype));
    if (psc->dtype != FL_DT_FLOAT32 || sc->dtype != FL_DT_FLOAT32)
        return fl_err(c->e, "%s: pre_scores and scores must be float32, found %s and %s", c->t, dt(psc->dtype),
                      dt(sc->dtype));
    if (iattr(c, "beam_size") < 1)
        return fl_err(c->e, "%s: beam_size must be at least 1, found %lld", c->t, (long long)iattr(c, "beam_size"));
    if (iattr(c, "level") != 0)
        return fl_err(c->e, "%s: level must be 0 (the source level), found %lld", c->t, (long long)iattr(c, "level"));
    Shape col = {.nd = 2, .d = {-1, 1}}, v = shape1(-1);
    return set_out(c, "selected_ids", FL_DT_INT64, &col) || set_out(c, "selected_scores", FL_DT_FLOAT32, &col) ||
           set_out(c, "parent_idx", FL_DT_INT32, &v) || set_out(c, "OutSrcLod", FL_DT_INT64, &v) ||
           set_out(c, "OutLod", FL_DT_INT64, &v);
}

static FlStatus infer_beam_search_decode(Ctx *c) {
    FlVarDesc *ids = NULL, *sc = NULL, *l0 = NULL, *l1 = NULL;
    if (need_array(c, "input", "Ids", &ids) || need_array(c, "input", "Scores", &sc) ||
        need_array(c, "input", "IdsSrcLod", &l0) || need_array(c, "input", "IdsLod", &l1))
        return FL_ERROR;
    if (ids->dtype != FL_DT_INT64) return fl_err(c->e, "%s: Ids must hold int64, found %s", c->t, dt(ids->dtype));
    if (sc->dtype != FL_DT_FLOAT32) return fl_err(c->e, "%s: Scores must hold float32, found %s", c->t, dt(sc->dtype));
    if (iattr(c, "beam_size") < 1)
        return fl_err(c->e, "%s: beam_size must be at least 1, found %lld", c->t, (long long)iattr(c, "beam_size"));
    Shape v = shape1(-1);
    return set_out(c, "SentenceIds", FL_DT_INT64, &v) || set_out(c, "SentenceScores", FL_DT_FLOAT32, &v) ||
           set_out(c, "OutSrcLod", FL_DT_INT64, &v) || set_out(c, "OutLod", FL_DT_INT64, &v);
}

/* ---- channels ---- */

/* A value sent on a channel must be of its element dtype and, when the channel declares a shape,
 * of that shape (-1 dims on either side agree with any size; the executor checks the rest at
 * run time). */
static FlStatus check_send(Ctx *c, const char *chan, const char *val) {
    FlVarDesc *cd = chan ? fl_ir_var_lookup(c->p, c->b, chan) : NULL;
    FlVarDesc *vd = val ? fl_ir_var_lookup(c->p, c->b, val) : NULL;
    if (!cd || !vd || cd->kind != FL_VAR_CHANNEL) return FL_OK;
    /* a channel of channels (elem_chans) carries channels one level less deep */
    int want = cd->elem_chans, got = vd->kind == FL_VAR_CHANNEL ? vd->elem_chans + 1 : 0;
    Shape cs = shape_of(cd), vs = shape_of(vd);
    bool ok = vd->dtype == cd->dtype && want == got;
    if (ok && cs.nd > 0 && vs.nd > 0) ok = shapes_agree(&cs, &vs);
    if (ok) return FL_OK;
    static const char chans[] = "chan chan chan chan chan chan chan chan chan ";
    int nw = want > 9 ? 9 : want, ng = got > 9 ? 9 : got;
    return fl_err(c->e, "%s: channel '%s' carries %.*s%s %s, but the value '%s' is %.*s%s %s", c->t, chan, 5 * nw,
                  chans, dt(cd->dtype), cs.nd ? sstr(c, &cs) : "(any shape)", val, 5 * ng, chans, dt(vd->dtype),
                  vs.nd || !ng ? sstr(c, &vs) : "(any shape)");
}

static FlStatus infer_select_sends(Ctx *c) {
    FlAttr *kinds = fl_ir_op_attr(c->op, "case_kinds"), *chans = fl_ir_op_attr(c->op, "case_channels");
    FlAttr *vars = fl_ir_op_attr(c->op, "case_vars");
    if (!kinds || !chans || !vars) return FL_OK; /* the validator reports a malformed select */
    for (size_t i = 0; i < kinds->n && i < chans->n && i < vars->n; i++)
        if (kinds->ints[i] == 1 && check_send(c, chans->strs[i], vars->strs[i])) return FL_ERROR;
    return FL_OK;
}

/* Optimizer: each "<State>Out" is shaped like "<State>"; Grad agrees with Param. */
static FlStatus infer_optimizer(Ctx *c) {
    FlVarDesc *pv, *gv;
    if (in1(c, "Param", &pv) || in1(c, "Grad", &gv)) return FL_ERROR;
    Shape ps = shape_of(pv), gs = shape_of(gv);
    if (!shapes_agree(&ps, &gs))
        return fl_err(c->e, "%s: the gradient %s of '%s' does not match the parameter's shape %s",
                      c->t, sstr(c, &gs), pv->name, sstr(c, &ps));
    for (int i = 0; i < c->info->nouts; i++) {
        const char *out = c->info->outs[i].name;
        size_t len = strlen(out);
        FL_ASSERT(len > 3 && strcmp(out + len - 3, "Out") == 0);
        char in[64];
        size_t n = len - 3 < sizeof in ? len - 3 : sizeof in - 1;
        memcpy(in, out, n);
        in[n] = 0;
        FlVarDesc *v;
        if (in_opt(c, in, &v)) return FL_ERROR;
        if (v && set_like(c, out, v)) return FL_ERROR;
    }
    return FL_OK;
}

/* average_accumulates: the sums are shaped and typed as param, the counters int64 [1]; every
 * output is its input. */
static FlStatus infer_average_accumulates(Ctx *c) {
    static const char *const sums[] = {"in_sum_1", "in_sum_2", "in_sum_3"};
    static const char *const counts[] = {"in_num_accumulates", "in_old_num_accumulates", "in_num_updates"};
    FlVarDesc *pv = NULL, *v = NULL;
    if (in1(c, "param", &pv) || need_float_in(c, pv, "param")) return FL_ERROR;
    Shape ps = shape_of(pv);
    for (int i = 0; i < 3; i++) {
        if (in1(c, sums[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->dtype != pv->dtype || !shapes_agree(&s, &ps))
            return fl_err(c->e, "%s: %s is %s %s, not the param's %s %s", c->t, sums[i], sstr(c, &s), dt(v->dtype),
                          sstr(c, &ps), dt(pv->dtype));
    }
    for (int i = 0; i < 3; i++) {
        if (in1(c, counts[i], &v)) return FL_ERROR;
        Shape s = shape_of(v), one = shape1(1);
        if (v->dtype != FL_DT_INT64 || !shapes_agree(&s, &one))
            return fl_err(c->e, "%s: %s must be int64 [1], found %s %s", c->t, counts[i], dt(v->dtype), sstr(c, &s));
    }
    static const char *const outs[] = {"out_sum_1", "out_sum_2", "out_sum_3",
                                       "out_num_accumulates", "out_old_num_accumulates", "out_num_updates"};
    for (int i = 0; i < 6; i++) {
        if (in1(c, i < 3 ? sums[i] : counts[i - 3], &v) || set_like(c, outs[i], v)) return FL_ERROR;
    }
    return FL_OK;
}

static FlStatus infer_list_index(Ctx *c) {
    FlSlot *xs = fl_ir_op_input(c->op, "X");
    if (!xs || xs->nargs == 0) return fl_err(c->e, "%s: the list is empty", c->t);
    FlVarDesc *first;
    if (lookup(c, "input", "X", xs->args[0], &first)) return FL_ERROR;
    Shape f = shape_of(first);
    for (size_t i = 1; i < xs->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", "X", xs->args[i], &v)) return FL_ERROR;
        Shape s = shape_of(v);
        if (v->kind != first->kind || v->dtype != first->dtype || v->elem_chans != first->elem_chans ||
            !shapes_agree(&f, &s))
            return fl_err(c->e, "%s: list elements differ (%s %s and %s %s)", c->t, sstr(c, &f),
                          dt(first->dtype), sstr(c, &s), dt(v->dtype));
    }
    const char *out = fl_ir_op_output1(c->op, "Out");
    if (!out) return FL_OK;
    FlVarDesc *ov;
    if (lookup(c, "output", "Out", out, &ov)) return FL_ERROR;
    ov->kind = first->kind;
    ov->dtype = first->dtype;
    ov->capacity = first->capacity;
    ov->elem_chans = first->elem_chans;
    fl_ir_var_set_shape(ov, f.nd, f.d);
    return FL_OK;
}

/* ---- sequence reshaping (docs/sequences.md): offsets are int64 vectors, the rows they cut are
 * known at run time only ---- */

/* Every var of input slot `slot` is an offsets vector (int64 [n]). */
static FlStatus need_lod_in(Ctx *c, const char *slot) {
    FlSlot *sl = fl_ir_op_input(c->op, slot);
    if (!sl || sl->nargs == 0) return fl_err(c->e, "%s: missing input %s", c->t, slot);
    for (size_t i = 0; i < sl->nargs; i++) {
        FlVarDesc *v;
        if (lookup(c, "input", slot, sl->args[i], &v)) return FL_ERROR;
        if (v->dtype != FL_DT_INT64 || v->ndim != 1)
            return fl_err(c->e, "%s: %s '%s' must be an int64 vector of offsets, found %s %s", c->t, slot, v->name,
                          dt(v->dtype), sstr(c, &(Shape){.nd = v->ndim, .d = {v->ndim ? v->shape[0] : 0}}));
    }
    return FL_OK;
}

/* Out: `rows` rows of X's steps (dims [from, nd) of x), OutLod an offsets vector. */
static FlStatus set_seq_out(Ctx *c, const FlVarDesc *x, int64_t rows, int from) {
    Shape xs = shape_of(x), s = {.nd = 1, .d = {rows}};
    for (int i = from; i < xs.nd; i++) s.d[s.nd++] = xs.d[i];
    if (s.nd == 1) s.d[s.nd++] = 1;
    Shape lod = shape1(-1);
    return set_out(c, "Out", x->dtype, &s) || set_out(c, "OutLod", FL_DT_INT64, &lod) ? FL_ERROR : FL_OK;
}

static FlStatus infer_seqshape(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    Shape xs = shape_of(x);
    switch (c->info->id) {
    case FL_OPID_sequence_concat: {
        FlSlot *xl = fl_ir_op_input(c->op, "X"), *ll = fl_ir_op_input(c->op, "XLod");
        if (need_lod_in(c, "XLod")) return FL_ERROR;
        if (ll->nargs != xl->nargs)
            return fl_err(c->e, "%s: %zu inputs X but %zu offsets XLod", c->t, xl->nargs, ll->nargs);
        if (xs.nd < 1) return fl_err(c->e, "%s: X '%s' has no rows", c->t, x->name);
        Shape lod = shape1(-1);
        return infer_concat(c) || set_out(c, "OutLod", FL_DT_INT64, &lod) ? FL_ERROR : FL_OK;
    }
    case FL_OPID_sequence_reshape: {
        int64_t nd = iattr(c, "new_dim");
        if (need_lod_in(c, "XLod")) return FL_ERROR;
        if (xs.nd != 2) return fl_err(c->e, "%s: X must be a matrix [T, D], found %s", c->t, sstr(c, &xs));
        if (nd < 1) return fl_err(c->e, "%s: new_dim must be >= 1, found %lld", c->t, (long long)nd);
        int64_t n = prod(&xs, 0, 2);
        Shape s = {.nd = 2, .d = {n >= 0 && n % nd == 0 ? n / nd : -1, nd}}, lod = shape1(-1);
        return set_out(c, "Out", x->dtype, &s) || set_out(c, "OutLod", FL_DT_INT64, &lod) ? FL_ERROR : FL_OK;
    }
    case FL_OPID_sequence_slice: {
        FlVarDesc *o, *l;
        if (need_lod_in(c, "XLod") || in1(c, "Offset", &o) || in1(c, "Length", &l) || need_int_in(c, o, "Offset") ||
            need_int_in(c, l, "Length"))
            return FL_ERROR;
        if (xs.nd < 1) return fl_err(c->e, "%s: X '%s' has no rows", c->t, x->name);
        return set_seq_out(c, x, -1, 1);
    }
    case FL_OPID_sequence_pad: {
        FlVarDesc *pv;
        int64_t len = iattr(c, "padded_length");
        if (need_lod_in(c, "XLod") || in1(c, "PadValue", &pv)) return FL_ERROR;
        if (xs.nd < 2 || xs.nd + 1 > FL_IR_MAX_DIMS)
            return fl_err(c->e, "%s: X must have rank 2 to %d, found %s", c->t, FL_IR_MAX_DIMS - 1, sstr(c, &xs));
        if (pv->dtype != x->dtype)
            return fl_err(c->e, "%s: PadValue is %s but X is %s", c->t, dt(pv->dtype), dt(x->dtype));
        if (len < -1) return fl_err(c->e, "%s: padded_length must be -1 or a length, found %lld", c->t, (long long)len);
        Shape s = {.nd = xs.nd + 1, .d = {-1, len}}, n = shape1(-1);
        for (int i = 1; i < xs.nd; i++) s.d[i + 1] = xs.d[i];
        return set_out(c, "Out", x->dtype, &s) || set_out(c, "Length", FL_DT_INT64, &n) ? FL_ERROR : FL_OK;
    }
    case FL_OPID_sequence_unpad: {
        FlVarDesc *l;
        if (in1(c, "Length", &l) || need_int_in(c, l, "Length")) return FL_ERROR;
        if (xs.nd < 2) return fl_err(c->e, "%s: X must be padded sequences [B, L, ...], found %s", c->t, sstr(c, &xs));
        return set_seq_out(c, x, -1, 2);
    }
    case FL_OPID_sequence_enumerate: {
        int64_t w = iattr(c, "win_size");
        if (need_lod_in(c, "XLod") || need_int_in(c, x, "X")) return FL_ERROR;
        if (!(xs.nd == 1 || (xs.nd == 2 && dims_agree(xs.d[1], 1))))
            return fl_err(c->e, "%s: X must be ids [T, 1], found %s", c->t, sstr(c, &xs));
        if (w < 1) return fl_err(c->e, "%s: win_size must be >= 1, found %lld", c->t, (long long)w);
        Shape s = {.nd = 2, .d = {xs.d[0], w}};
        return set_out(c, "Out", x->dtype, &s);
    }
    case FL_OPID_lod_reset:
        if (need_lod_in(c, "TargetLod")) return FL_ERROR;
        return set_like(c, "Out", x);
    default: break;
    }
    FL_UNREACHABLE();
}

/* ---- recurrent layers over sequences ---- */

static FlStatus rnn_act(Ctx *c, const char *name) {
    const char *v = sattr(c, name);
    if (strcmp(v, "sigmoid") == 0 || strcmp(v, "tanh") == 0 || strcmp(v, "relu") == 0 || strcmp(v, "identity") == 0)
        return FL_OK;
    return fl_err(c->e, "%s: %s '%s' is not one of sigmoid, tanh, relu, identity", c->t, name, v);
}

/* A [rows, cols] input of the dtype of Input (rows < 0: any). */
static FlStatus rnn_mat(Ctx *c, const char *slot, const FlVarDesc *v, const FlVarDesc *xv, int64_t rows,
                        int64_t cols) {
    Shape s = shape_of(v);
    if (v->dtype != xv->dtype || s.nd != 2 || !dims_agree(s.d[0], rows) || !dims_agree(s.d[1], cols))
        return fl_err(c->e, "%s: %s must be %s [%lld, %lld], found %s %s", c->t, slot, dt(xv->dtype),
                      (long long)rows, (long long)cols, dt(v->dtype), sstr(c, &s));
    return FL_OK;
}

/* lstm, lstmp (4 gates) and gru (3): Input [T, gates * D] cut by InputLod, Weight [D, gates * D]
 * (lstmp: ProjWeight [D, P], Weight [P, 4D]). */
static FlStatus infer_rnn(Ctx *c, int gates) {
    FlVarDesc *xv, *lv, *wv, *bv, *hv = NULL, *cv = NULL;
    if (in1(c, "Input", &xv) || in1(c, "InputLod", &lv) || in1(c, "Weight", &wv) || in_opt(c, "Bias", &bv))
        return FL_ERROR;
    if (c->info->id != FL_OPID_lstmp && in_opt(c, "H0", &hv)) return FL_ERROR;
    if (c->info->id == FL_OPID_lstm && in_opt(c, "C0", &cv)) return FL_ERROR;
    if (need_float(c, "the input", xv)) return FL_ERROR;
    Shape x = shape_of(xv), l = shape_of(lv);
    if (x.nd != 2 || x.d[1] <= 0 || x.d[1] % gates != 0)
        return fl_err(c->e, "%s: the input must be [T, %d * D] with D known, found %s", c->t, gates, sstr(c, &x));
    if (lv->dtype != FL_DT_INT64 || l.nd != 1)
        return fl_err(c->e, "%s: InputLod must be the int64 offsets [nseq + 1] of the input's sequences, found %s %s",
                      c->t, dt(lv->dtype), sstr(c, &l));
    int64_t D = x.d[1] / gates;
    FlVarDesc *pv = NULL;
    if (c->info->id == FL_OPID_lstmp && in1(c, "ProjWeight", &pv)) return FL_ERROR;
    int64_t P = pv && pv->ndim == 2 ? pv->shape[1] : D;
    if (pv && (P <= 0 || rnn_mat(c, "ProjWeight", pv, xv, D, P)))
        return fl_err(c->e, "%s: ProjWeight must be %s [%lld, P] with P known", c->t, dt(xv->dtype), (long long)D);
    if (rnn_mat(c, "Weight", wv, xv, pv ? P : D, gates * D)) return FL_ERROR;
    if (gates == 4 && !bv) return fl_err(c->e, "%s: missing input Bias", c->t);
    int64_t bcols = gates == 4 && iattr(c, "use_peepholes") ? 7 * D : gates * D;
    if (bv && rnn_mat(c, "Bias", bv, xv, 1, bcols)) return FL_ERROR;
    if (hv && rnn_mat(c, "H0", hv, xv, l.d[0] < 0 ? -1 : l.d[0] - 1, D)) return FL_ERROR;
    if (cv && rnn_mat(c, "C0", cv, xv, l.d[0] < 0 ? -1 : l.d[0] - 1, D)) return FL_ERROR;
    if (rnn_act(c, "gate_activation") ||
        (gates == 4 ? rnn_act(c, "cell_activation") || rnn_act(c, "candidate_activation")
                    : rnn_act(c, "activation")) ||
        (pv && rnn_act(c, "proj_activation")))
        return FL_ERROR;
    Shape h = {.nd = 2, .d = {x.d[0], D}}, r = {.nd = 2, .d = {x.d[0], P}};
    if (set_out(c, "Projection", xv->dtype, &r)) return FL_ERROR;
    return set_out(c, "Hidden", xv->dtype, &h) || set_out(c, "Cell", xv->dtype, &h) ||
                   set_out(c, "ResetHiddenPrev", xv->dtype, &h) || set_like(c, "Gate", xv)
               ? FL_ERROR
               : FL_OK;
}

/* lstm_unit: X [N, 4D], C_prev [N, D]; gru_unit: Input [N, 3D], HiddenPrev [N, D], Weight
 * [D, 3D], Bias [1, 3D]. */
static FlStatus infer_rnn_unit(Ctx *c, bool gru) {
    FlVarDesc *xv, *pv, *wv = NULL, *bv = NULL;
    if (in1(c, gru ? "Input" : "X", &xv) || in1(c, gru ? "HiddenPrev" : "C_prev", &pv)) return FL_ERROR;
    if (gru && (in1(c, "Weight", &wv) || in_opt(c, "Bias", &bv))) return FL_ERROR;
    if (need_float(c, "the input", xv)) return FL_ERROR;
    int gates = gru ? 3 : 4;
    Shape x = shape_of(xv);
    if (x.nd != 2 || x.d[1] <= 0 || x.d[1] % gates != 0)
        return fl_err(c->e, "%s: the input must be [N, %d * D] with D known, found %s", c->t, gates, sstr(c, &x));
    int64_t D = x.d[1] / gates;
    if (rnn_mat(c, gru ? "HiddenPrev" : "C_prev", pv, xv, x.d[0], D) ||
        (wv && rnn_mat(c, "Weight", wv, xv, D, 3 * D)) || (bv && rnn_mat(c, "Bias", bv, xv, 1, 3 * D)))
        return FL_ERROR;
    if (gru && (rnn_act(c, "gate_activation") || rnn_act(c, "activation"))) return FL_ERROR;
    Shape h = {.nd = 2, .d = {merge(x.d[0], pv->shape[0]), D}};
    return set_out(c, "Hidden", xv->dtype, &h) || set_out(c, "ResetHiddenPrev", xv->dtype, &h) ||
                   set_out(c, "C", xv->dtype, &h) || set_out(c, "H", xv->dtype, &h) || set_like(c, "Gate", xv)
               ? FL_ERROR
               : FL_OK;
}

/* A gradient op: "<X>@GRAD" takes the forward var in input slot X (else the first gradient
 * input: dropout_grad's X@GRAD is shaped like Out@GRAD). */
static FlStatus infer_grad(Ctx *c) {
    for (size_t i = 0; i < c->op->outs.len; i++) {
        FlSlot *gs = &c->op->outs.data[i];
        size_t len = strlen(gs->name), sl = sizeof FL_RULE_GRAD_SUFFIX - 1;
        if (!fl_rule_is_grad(gs->name))
            return fl_err(c->e, "%s: output slot '%s' is not a gradient", c->t, gs->name);
        char fwd[64];
        size_t n = len - sl < sizeof fwd ? len - sl : sizeof fwd - 1;
        memcpy(fwd, gs->name, n);
        fwd[n] = 0;
        FlSlot *fs = fl_ir_op_input(c->op, fwd);
        if (!fs) {
            for (size_t k = 0; k < c->op->ins.len && !fs; k++) {
                if (fl_rule_is_grad(c->op->ins.data[k].name))
                    fs = &c->op->ins.data[k];
            }
        }
        if (!fs) return fl_err(c->e, "%s: no forward var for output %s", c->t, gs->name);
        for (size_t k = 0; k < gs->nargs; k++) {
            if (skip_arg(gs->args[k])) continue;
            size_t src = k;
            if (src >= fs->nargs)
                return fl_err(c->e, "%s: output %s has %zu vars but input %s has %zu", c->t,
                              gs->name, gs->nargs, fs->name, fs->nargs);
            FlVarDesc *fv, *gv;
            if (lookup(c, "input", fs->name, fs->args[src], &fv) ||
                lookup(c, "output", gs->name, gs->args[k], &gv))
                return FL_ERROR;
            gv->dtype = fv->dtype;
            fl_ir_var_set_shape(gv, fv->ndim, fv->shape);
            /* an is_sparse lookup's table gradient holds the looked-up rows only; in a step
             * block (DynamicRNN, StaticRNN) it stays dense: the recurrent gradient ops add the
             * steps' gradients up as tensors */
            if (c->info->id == FL_OPID_lookup_table && strcmp(fs->name, "W") == 0)
                gv->kind = iattr(c, "is_sparse") && c->b->idx == 0 ? FL_VAR_SELECTED_ROWS : FL_VAR_DENSE;
        }
    }
    return FL_OK;
}

FlStatus fl_infer_op(FlProgram *p, FlBlock *b, FlOpDesc *op, FlErr *e) {
    Ctx c = {.p = p, .b = b, .op = op, .e = e, .t = op->type};
    c.info = fl_ops_of(op);
    if (!c.info) return fl_err(e, "unknown op '%s'", op->type);
    if (c.info->is_grad) return infer_grad(&c);
    switch (c.info->id) {
    case FL_OPID_assign_value: return infer_assign_value(&c);
    case FL_OPID_fill_constant:
    case FL_OPID_uniform_random:
    case FL_OPID_gaussian_random:
    case FL_OPID_truncated_gaussian_random: return infer_fill(&c);
    case FL_OPID_fill_zeros_like:
    case FL_OPID_assign: return pass_through(&c, "X", "Out");
    case FL_OPID_cast: return infer_cast(&c);
    case FL_OPID_lookup_table: return infer_lookup_table(&c);
    case FL_OPID_distributed_lookup_table: return infer_distributed_lookup_table(&c);
    case FL_OPID_distributed_lookup_grad_rows: return infer_distributed_lookup_grad_rows(&c);
    case FL_OPID_mul: return infer_mul(&c);
    case FL_OPID_matmul: return infer_matmul(&c);
    case FL_OPID_elementwise_add:
    case FL_OPID_elementwise_sub:
    case FL_OPID_elementwise_mul:
    case FL_OPID_elementwise_div:
    case FL_OPID_elementwise_max:
    case FL_OPID_elementwise_min:
    case FL_OPID_elementwise_pow:
    case FL_OPID_elementwise_floordiv:
    case FL_OPID_elementwise_mod: return infer_binary(&c, false);
    case FL_OPID_relu:
    case FL_OPID_sigmoid:
    case FL_OPID_tanh:
    case FL_OPID_exp:
    case FL_OPID_log:
    case FL_OPID_sqrt:
    case FL_OPID_square:
    case FL_OPID_abs:
    case FL_OPID_scale: return pass_through(&c, "X", "Out");
    case FL_OPID_softmax: return infer_softmax(&c);
    case FL_OPID_cross_entropy: return infer_cross_entropy(&c);
    case FL_OPID_mean: {
        FlVarDesc *x;
        if (in1(&c, "X", &x)) return FL_ERROR;
        Shape one = shape1(1);
        return set_out(&c, "Out", x->dtype, &one);
    }
    case FL_OPID_reduce_sum:
    case FL_OPID_reduce_mean: return infer_reduce(&c);
    case FL_OPID_sum: return infer_sum(&c);
    case FL_OPID_concat: return infer_concat(&c);
    case FL_OPID_split: return infer_split(&c);
    case FL_OPID_split_selected_rows: return infer_split_selected_rows(&c);
    case FL_OPID_sparse_decay: return infer_sparse_decay(&c);
    case FL_OPID_reshape: return infer_reshape(&c);
    case FL_OPID_transpose: return infer_transpose(&c);
    case FL_OPID_leaky_relu:
    case FL_OPID_elu:
    case FL_OPID_relu6:
    case FL_OPID_swish:
    case FL_OPID_hard_sigmoid:
    case FL_OPID_brelu:
    case FL_OPID_soft_relu:
    case FL_OPID_softsign:
    case FL_OPID_pow: return infer_float_unary(&c);
    case FL_OPID_prelu: return infer_prelu(&c);
    case FL_OPID_fill_constant_batch_size_like:
    case FL_OPID_uniform_random_batch_size_like: return infer_batch_size_like(&c);
    case FL_OPID_reduce_max:
    case FL_OPID_reduce_min:
    case FL_OPID_reduce_prod: return infer_reduce(&c);
    case FL_OPID_slice: return infer_slice(&c);
    case FL_OPID_gather: return infer_gather(&c);
    case FL_OPID_scatter: return infer_scatter(&c);
    case FL_OPID_expand: return infer_expand(&c);
    case FL_OPID_squeeze: return infer_squeeze(&c);
    case FL_OPID_unsqueeze: return infer_unsqueeze(&c);
    case FL_OPID_flatten: return infer_flatten(&c);
    case FL_OPID_stack: return infer_stack(&c);
    case FL_OPID_unstack: return infer_unstack(&c);
    case FL_OPID_clip: return infer_clip(&c);
    case FL_OPID_clip_by_norm: return infer_clip_by_norm(&c);
    case FL_OPID_pad: return infer_pad(&c);
    case FL_OPID_crop: return infer_crop(&c);
    case FL_OPID_one_hot: return infer_one_hot(&c);
    case FL_OPID_argmax: return infer_argmax(&c);
    case FL_OPID_top_k: return infer_top_k(&c);
    case FL_OPID_write_to_array: return infer_write_to_array(&c);
    case FL_OPID_read_from_array: return infer_read_from_array(&c);
    case FL_OPID_lod_array_length: return infer_array_scalar(&c, FL_DT_INT64);
    case FL_OPID_is_empty: return infer_array_scalar(&c, FL_DT_BOOL);
    case FL_OPID_beam_search: return infer_beam_search(&c);
    case FL_OPID_beam_search_decode: return infer_beam_search_decode(&c);
    case FL_OPID_accuracy: return infer_accuracy(&c);
    case FL_OPID_conv2d: return infer_conv2d(&c);
    case FL_OPID_pool2d: return infer_pool2d(&c);
    case FL_OPID_batch_norm: return infer_batch_norm(&c);
    case FL_OPID_dropout: {
        FlVarDesc *x;
        if (in1(&c, "X", &x)) return FL_ERROR;
        return set_like(&c, "Out", x) || set_like(&c, "Mask", x) ? FL_ERROR : FL_OK;
    }
    case FL_OPID_layer_norm: return infer_layer_norm(&c);
    case FL_OPID_lrn: return infer_lrn(&c);
    case FL_OPID_conv2d_transpose: return infer_conv2d_transpose(&c);
    case FL_OPID_bilinear_interp:
    case FL_OPID_nearest_interp: return infer_interp(&c);
    case FL_OPID_softmax_with_cross_entropy: return infer_softmax_xent(&c);
    case FL_OPID_cos_sim: return infer_cos_sim(&c);
    case FL_OPID_auc: return infer_auc(&c);
    case FL_OPID_linear_chain_crf: return infer_linear_chain_crf(&c);
    case FL_OPID_crf_decoding: return infer_crf_decoding(&c);
    case FL_OPID_chunk_eval: return infer_chunk_eval(&c);
    case FL_OPID_less_than:
    case FL_OPID_less_equal:
    case FL_OPID_greater_than:
    case FL_OPID_greater_equal:
    case FL_OPID_equal:
    case FL_OPID_not_equal: return infer_binary(&c, true);
    case FL_OPID_logical_and:
    case FL_OPID_logical_or: return infer_logical(&c, false);
    case FL_OPID_logical_not: return infer_logical(&c, true);
    case FL_OPID_increment: return infer_increment(&c);
    case FL_OPID_Print: {
        FlVarDesc *x;
        if (in1(&c, "In", &x)) return FL_ERROR;
        return set_like(&c, "Out", x);
    }
    case FL_OPID_sequence_pool: return infer_sequence_pool(&c);
    case FL_OPID_sequence_softmax: return infer_sequence_softmax(&c);
    case FL_OPID_sequence_conv: return infer_sequence_conv(&c);
    case FL_OPID_sequence_expand:
    case FL_OPID_sequence_expand_as: return infer_sequence_expand(&c);
    case FL_OPID_sequence_mask: return infer_sequence_mask(&c);
    case FL_OPID_lstm: return infer_rnn(&c, 4);
    case FL_OPID_lstmp: return infer_rnn(&c, 4);
    case FL_OPID_gru: return infer_rnn(&c, 3);
    case FL_OPID_lstm_unit: return infer_rnn_unit(&c, false);
    case FL_OPID_gru_unit: return infer_rnn_unit(&c, true);
    case FL_OPID_sgd:
    case FL_OPID_momentum:
    case FL_OPID_adam:
    case FL_OPID_adagrad:
    case FL_OPID_decayed_adagrad:
    case FL_OPID_rmsprop:
    case FL_OPID_adamax:
    case FL_OPID_adadelta:
    case FL_OPID_ftrl:
    case FL_OPID_lars_momentum: return infer_optimizer(&c);
    case FL_OPID_average_accumulates: return infer_average_accumulates(&c);
    case FL_OPID_list_index: return infer_list_index(&c);
    case FL_OPID_channel_recv: {
        /* the received value has the channel's element dtype and shape (a channel var's shape is
         * its elements' shape; rank 0 when unknown); Status is a bool [1] */
        const char *ch = fl_ir_op_input1(op, "Channel"), *out = fl_ir_op_output1(op, "Out");
        FlVarDesc *cd = ch ? fl_ir_var_lookup(p, b, ch) : NULL;
        FlVarDesc *od = out ? fl_ir_var_lookup(p, b, out) : NULL;
        if (cd && od && od != cd) fl_ir_var_set_elem(od, cd);
        return FL_OK;
    }
    case FL_OPID_dynamic_rnn: { /* Out: declared by the layer; StepScopes: the runtime's own */
        const char *ss = fl_ir_op_output1(op, "StepScopes");
        FlVarDesc *o;
        if (!ss) return fl_err(c.e, "dynamic_rnn: output StepScopes is missing");
        if (lookup(&c, "output", "StepScopes", ss, &o)) return FL_ERROR;
        o->kind = FL_VAR_RAW;
        o->stop_gradient = true;
        return FL_OK;
    }
    case FL_OPID_while: { /* StepScopes (added by append_backward): the runtime's own */
        const char *ss = fl_ir_op_output1(op, "StepScopes");
        FlVarDesc *o;
        if (!ss) return FL_OK;
        if (lookup(&c, "output", "StepScopes", ss, &o)) return FL_ERROR;
        o->kind = FL_VAR_RAW;
        o->stop_gradient = true;
        return FL_OK;
    }
    /* control, channels, distribution: nothing to infer, never an error */
    case FL_OPID_conditional_block:
    case FL_OPID_parallel_for:
    case FL_OPID_go:
    case FL_OPID_channel_send: return check_send(&c, fl_ir_op_input1(op, "Channel"), fl_ir_op_input1(op, "X"));
    case FL_OPID_select: return infer_select_sends(&c);
    case FL_OPID_panic:
    case FL_OPID_time_sleep: return FL_OK;
    case FL_OPID_time_tick:
    case FL_OPID_time_after: { /* Out: a channel of float32 [1], capacity 1 */
        const char *out = fl_ir_op_output1(op, "Out");
        FlVarDesc *o;
        if (!out) return fl_err(c.e, "time_after: output Out is missing");
        if (lookup(&c, "output", "Out", out, &o)) return FL_ERROR;
        Shape one = shape1(1);
        o->kind = FL_VAR_CHANNEL;
        o->dtype = FL_DT_FLOAT32;
        fl_ir_var_set_shape(o, one.nd, one.d);
        o->capacity = 1;
        o->stop_gradient = true;
        return FL_OK;
    }
    case FL_OPID_channel_nil: { /* Out keeps its declaration: a channel var's element type */
        FlVarDesc *o;
        const char *out = fl_ir_op_output1(op, "Out");
        if (!out) return fl_err(c.e, "channel_nil: output Out is missing");
        if (lookup(&c, "output", "Out", out, &o)) return FL_ERROR;
        return o->kind == FL_VAR_CHANNEL ? FL_OK : fl_err(c.e, "channel_nil: Out '%s' is not a channel", o->name);
    }
    case FL_OPID_channel_len: {
        Shape one = shape1(1);
        return set_out(&c, "Out", FL_DT_INT64, &one);
    }
    case FL_OPID_channel_assign: {
        FlVarDesc *x, *o;
        const char *out = fl_ir_op_output1(op, "Out");
        if (in1(&c, "X", &x)) return FL_ERROR;
        if (!out) return fl_err(c.e, "channel_assign: output Out is missing");
        if (lookup(&c, "output", "Out", out, &o)) return FL_ERROR;
        if (x->kind != FL_VAR_CHANNEL) return fl_err(c.e, "channel_assign: X '%s' is not a channel", x->name);
        if (o != x) { /* the element type and capacity, not where Out is declared */
            bool persist = o->persistable;
            FlLoc loc = o->loc;
            fl_ir_var_copy(o, x);
            o->persistable = persist, o->loc = loc;
        }
        return FL_OK;
    }
    case FL_OPID_channel_create:
    case FL_OPID_channel_close:
    case FL_OPID_split_to_chan:
    case FL_OPID_chan_concat:
    case FL_OPID_send:
    case FL_OPID_recv:
    case FL_OPID_send_barrier:
    case FL_OPID_fetch_barrier:
    case FL_OPID_listen_and_serv: return FL_OK;
    case FL_OPID_allreduce: return infer_allreduce(&c);
    case FL_OPID_sequence_concat:
    case FL_OPID_sequence_reshape:
    case FL_OPID_sequence_slice:
    case FL_OPID_sequence_pad:
    case FL_OPID_sequence_unpad:
    case FL_OPID_sequence_enumerate:
    case FL_OPID_lod_reset: return infer_seqshape(&c);
    case FL_OPID_COUNT: break;
    }
    FL_UNREACHABLE();
}

/* ---- whole programs ---- */

static FlStatus infer_block(FlProgram *p, int idx, bool *done, FlErr *e, FlLoc *where,
                            int depth) {
    if (idx < 0 || (size_t)idx >= p->blocks.len || done[idx]) return FL_OK;
    done[idx] = true;
    FlBlock *b = p->blocks.data[idx];
    for (size_t i = 0; i < b->ops.len; i++) {
        FlOpDesc *op = b->ops.data[i];
        for (size_t k = 0; k < op->attrs.len && depth < 64; k++) {
            const FlAttr *a = &op->attrs.data[k];
            if (a->type == FL_ATTR_BLOCK && infer_block(p, (int)a->i, done, e, where, depth + 1))
                return FL_ERROR;
            if (a->type == FL_ATTR_BLOCKS)
                for (size_t j = 0; j < a->n; j++)
                    if (infer_block(p, (int)a->ints[j], done, e, where, depth + 1)) return FL_ERROR;
        }
        if (fl_infer_op(p, b, op, e)) {
            if (where) *where = op->loc;
            return FL_ERROR;
        }
    }
    return FL_OK;
}

FlStatus fl_infer_program(FlProgram *p, FlErr *e, FlLoc *where) {
    bool *done = fl_xcalloc(p->blocks.len + 1, sizeof(bool));
    FlStatus st = FL_OK;
    for (size_t i = 0; i < p->blocks.len && st == FL_OK; i++)
        st = infer_block(p, (int)i, done, e, where, 0);
    free(done);
    return st;
}
