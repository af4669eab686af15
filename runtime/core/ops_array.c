/* ops_array.c: tensor arrays (write_to_array, read_from_array, lod_array_length, is_empty) and beam
 * search (beam_search, beam_search_decode; kernels in runtime/kernels/beam.c).
 *
 * A tensor array var holds a TArray object: a list of tensor references, each element written or
 * not. Like a tensor in a var, an array is never changed once a var holds it: write_to_array builds
 * a new array (the element references copied, one replaced) and swaps it in, so a reader holding
 * the old one sees it unchanged. A var that holds nothing is the empty array. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_beam.h"

typedef struct TArray {
    atomic_int refs;
    int64_t n;
    FlTensor *items; /* n */
    bool *set;       /* n: element i was written */
} TArray;

static void tarray_retain(void *p) { atomic_fetch_add(&((TArray *)p)->refs, 1); }
static void tarray_release(void *p) {
    TArray *a = p;
    if (!a || atomic_fetch_sub(&a->refs, 1) != 1) return;
    for (int64_t i = 0; i < a->n; i++) fl_tensor_fini(&a->items[i]);
    free(a->items);
    free(a->set);
    free(a);
}

TArray *fl_array_retain(FlVar *v) { return v ? fl_var_retain_object(v, tarray_retain) : NULL; }
void fl_array_release(TArray *a) { tarray_release(a); }
int64_t fl_array_len(const TArray *a) { return a ? a->n : 0; }
const FlTensor *fl_array_at(const TArray *a, int64_t i) { return a && i >= 0 && i < a->n && a->set[i] ? &a->items[i] : NULL; }

TArray *fl_array_empty(void) {
    TArray *a = calloc(1, sizeof *a);
    if (a) atomic_init(&a->refs, 1);
    return a;
}

void fl_array_set(FlVar *v, TArray *a) { fl_var_set_object(v, a, tarray_release); }

/* The array the arg's var holds (a reference: release it), NULL for the empty array. */
static TArray *array_get(FlScope *s, const ArgRef *a) {
    FlVar *v = fl_exec_var_read(s, a);
    return v ? fl_var_retain_object(v, tarray_retain) : NULL;
}

static FlStatus in_tensor(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *a, FlTensor *t) {
    FlVar *v = fl_exec_var_read(s, a);
    if (!v || !fl_var_get_tensor(v, t)) return fl_exec_op_error(rc, op, "input '%s' has no value", a->name);
    return FL_OK;
}

/* The index input I: an int64 [1] >= 0. */
static FlStatus read_index(RunCtx *rc, const ExecOp *op, FlScope *s, int slot, int64_t *i) {
    FlTensor t = FL_TENSOR_INIT;
    const ArgRef *a = fl_exec_in_args(op, slot);
    if (in_tensor(rc, op, s, a, &t)) return FL_ERROR;
    bool ok = t.dtype == FL_DT_INT64 && fl_tensor_numel(&t) == 1;
    if (ok) *i = fl_tensor_get_int(&t, 0);
    FlShapeStr sh = fl_tensor_shape(&t);
    FlDType dt = t.dtype;
    fl_tensor_fini(&t);
    if (!ok) return fl_exec_op_error(rc, op, "the index I '%s' must be an int64 [1], found %s %s", a->name, fl_dtype_name(dt), sh.s);
    if (*i < 0) return fl_exec_op_error(rc, op, "the index I '%s' is %lld (an array index is >= 0)", a->name, (long long)*i);
    return FL_OK;
}

/* Var ov gets a new array: the one it holds with element i set to x (taking x's reference). */
static FlStatus array_put(RunCtx *rc, const ExecOp *op, FlVar *ov, int64_t i, FlTensor *x) {
    if (i > (int64_t)1 << 40) {
        fl_tensor_fini(x);
        return fl_exec_op_error(rc, op, "the index I is %lld, too large for an array", (long long)i);
    }
    TArray *old = fl_var_retain_object(ov, tarray_retain);
    int64_t n = old && old->n > i ? old->n : i + 1;
    TArray *a = calloc(1, sizeof *a);
    if (a) a->items = calloc((size_t)n, sizeof *a->items), a->set = calloc((size_t)n, sizeof *a->set);
    if (!a || !a->items || !a->set) {
        if (a) free(a->items), free(a->set), free(a);
        tarray_release(old);
        fl_tensor_fini(x);
        return fl_exec_op_error(rc, op, "out of memory for an array of %lld elements", (long long)n);
    }
    atomic_init(&a->refs, 1);
    a->n = n;
    for (int64_t k = 0; k < n; k++) fl_tensor_init(&a->items[k]);
    for (int64_t k = 0; old && k < old->n; k++)
        if (old->set[k] && k != i) fl_tensor_ref(&a->items[k], &old->items[k]), a->set[k] = true;
    a->items[i] = *x; /* takes x's reference */
    a->set[i] = true;
    fl_tensor_init(x);
    tarray_release(old);
    fl_var_set_object(ov, a, tarray_release);
    return FL_OK;
}

/* ---- write_to_array: X I -> Out (the array) ---- */
static FlStatus run_write(RunCtx *rc, const ExecOp *op, FlScope *s) {
    int64_t i;
    if (read_index(rc, op, s, FL_IN_write_to_array_I, &i)) return FL_ERROR;
    FlTensor x = FL_TENSOR_INIT;
    if (in_tensor(rc, op, s, fl_exec_in_args(op, FL_IN_write_to_array_X), &x)) return FL_ERROR;
    return array_put(rc, op, fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_write_to_array_Out)), i, &x);
}
FL_CONTROL_ADAPTER(write_to_array, NULL, run_write);

/* ---- read_from_array: X (the array) I -> Out ---- */
static FlStatus run_read(RunCtx *rc, const ExecOp *op, FlScope *s) {
    int64_t i;
    if (read_index(rc, op, s, FL_IN_read_from_array_I, &i)) return FL_ERROR;
    const ArgRef *xa = fl_exec_in_args(op, FL_IN_read_from_array_X);
    TArray *a = array_get(s, xa);
    int64_t n = a ? a->n : 0;
    if (i >= n || !a->set[i]) {
        tarray_release(a);
        return fl_exec_op_error(rc, op, "index %lld of the array '%s' was never written (its length is %lld)",
                                (long long)i, xa->name, (long long)n);
    }
    fl_var_set_tensor(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_read_from_array_Out)), &a->items[i]);
    tarray_release(a);
    return FL_OK;
}
FL_CONTROL_ADAPTER(read_from_array, NULL, run_read);

/* The gradients. An array's gradient X@GRAD is an array of gradients, built in place as the
 * gradient ops run (last read first): read_from_array_grad adds Out@GRAD into element I of it,
 * write_to_array_grad takes element I as the gradient of the X written there (zeros when no
 * read reached it). */

/* The op's output in slot `slot` (a gradient op's X@GRAD), NULL when it makes none. */
static const ArgRef *grad_out(const ExecOp *op, int slot) {
    const ArgRef *ga = fl_exec_nout(op, slot) == 1 ? fl_exec_out_args(op, slot) : NULL;
    return ga && ga->idx >= 0 ? ga : NULL;
}

/* Adds g (taking its reference) into element i of the gradient array ga (g alone when the element
 * has none yet). */
static FlStatus grad_add(RunCtx *rc, const ExecOp *op, FlScope *s, const ArgRef *ga, int64_t i, FlTensor *gp) {
    FlTensor g = *gp, sum = FL_TENSOR_INIT;
    fl_tensor_init(gp);
    FlVar *gv = fl_exec_var_write(s, ga);
    TArray *have = fl_var_retain_object(gv, tarray_retain);
    bool add = have && i < have->n && have->set[i];
    FlStatus st = FL_OK;
    if (add && (!fl_tensor_same_shape(&have->items[i], &g) || have->items[i].dtype != g.dtype))
        st = fl_exec_op_error(rc, op, "the gradient of element %lld of '%s' is %s, the element's earlier gradient %s",
                              (long long)i, ga->name, fl_tensor_shape(&g).s, fl_tensor_shape(&have->items[i]).s);
    else if (add)
        st = fl_kernel_sum(rc->e, (const FlTensor *const[]){&have->items[i], &g}, 2, &sum);
    else
        fl_tensor_ref(&sum, &g);
    tarray_release(have);
    fl_tensor_fini(&g);
    if (st) {
        fl_tensor_fini(&sum);
        return st;
    }
    return array_put(rc, op, gv, i, &sum);
}

/* ---- read_from_array_grad: X I Out Out@GRAD -> X@GRAD ---- */
static FlStatus run_read_grad(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const ArgRef *ga = grad_out(op, FL_OUT_read_from_array_grad_X_GRAD);
    if (!ga) return FL_OK;
    int64_t i;
    if (read_index(rc, op, s, FL_IN_read_from_array_grad_I, &i)) return FL_ERROR;
    FlTensor g = FL_TENSOR_INIT;
    if (in_tensor(rc, op, s, fl_exec_in_args(op, FL_IN_read_from_array_grad_Out_GRAD), &g)) return FL_ERROR;
    return grad_add(rc, op, s, ga, i, &g);
}
FL_CONTROL_ADAPTER(read_from_array_grad, NULL, run_read_grad);

/* ---- write_to_array_grad: X I Out Out@GRAD -> X@GRAD ---- */
static FlStatus run_write_grad(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const ArgRef *ga = grad_out(op, FL_OUT_write_to_array_grad_X_GRAD);
    if (!ga) return FL_OK;
    int64_t i;
    if (read_index(rc, op, s, FL_IN_write_to_array_grad_I, &i)) return FL_ERROR;
    FlTensor x = FL_TENSOR_INIT, g = FL_TENSOR_INIT;
    if (in_tensor(rc, op, s, fl_exec_in_args(op, FL_IN_write_to_array_grad_X), &x)) return FL_ERROR;
    const ArgRef *aa = fl_exec_in_args(op, FL_IN_write_to_array_grad_Out_GRAD);
    TArray *a = fl_exec_nin(op, FL_IN_write_to_array_grad_Out_GRAD) == 1 ? array_get(s, aa) : NULL;
    FlStatus st = FL_OK;
    if (a && i < a->n && a->set[i]) {
        if (!fl_tensor_same_shape(&a->items[i], &x) || a->items[i].dtype != x.dtype)
            st = fl_exec_op_error(rc, op, "element %lld of '%s' is %s, the X written there %s", (long long)i, aa->name,
                                  fl_tensor_shape(&a->items[i]).s, fl_tensor_shape(&x).s);
        else
            fl_tensor_ref(&g, &a->items[i]);
    } else
        st = fl_tensor_alloc_like(rc->e, &g, &x, x.dtype);
    tarray_release(a);
    fl_tensor_fini(&x);
    if (st == FL_OK) fl_var_take_tensor(fl_exec_var_write(s, ga), &g);
    fl_tensor_fini(&g);
    return st;
}
FL_CONTROL_ADAPTER(write_to_array_grad, NULL, run_write_grad);

/* Writes an int64 [1] or bool [1] value to the op's first output. */
static FlStatus out_scalar(RunCtx *rc, const ExecOp *op, FlScope *s, FlDType dt, int64_t v) {
    FlTensor t = FL_TENSOR_INIT;
    int64_t one = 1;
    FlErr e;
    if (fl_tensor_alloc_uninit(&e, &t, dt, 1, &one)) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_tensor_set(&t, 0, (double)v);
    fl_var_take_tensor(fl_exec_var_write(s, &op->args[op->nin]), &t);
    return FL_OK;
}

/* ---- lod_array_length: X (the array) -> Out int64 [1] ---- */
static FlStatus run_length(RunCtx *rc, const ExecOp *op, FlScope *s) {
    TArray *a = array_get(s, fl_exec_in_args(op, FL_IN_lod_array_length_X));
    int64_t n = a ? a->n : 0;
    tarray_release(a);
    return out_scalar(rc, op, s, FL_DT_INT64, n);
}
FL_CONTROL_ADAPTER(lod_array_length, NULL, run_length);

/* ---- is_empty: X -> Out bool [1] ---- */
static FlStatus run_is_empty(OpCall *c) {
    const FlTensor *x = fl_call_in(c, FL_IN_is_empty_X);
    FlTensor *out = fl_call_out(c, FL_OUT_is_empty_Out);
    int64_t one = 1;
    if (!out) return FL_OK;
    if (fl_tensor_alloc_uninit(c->e, out, FL_DT_BOOL, 1, &one)) return FL_ERROR;
    fl_tensor_set(out, 0, !x || !fl_tensor_has_data(x) || fl_tensor_numel(x) == 0);
    return FL_OK;
}
FL_ADAPTER(is_empty, NULL, run_is_empty);

/* ---- tensor_array_to_tensor: X (the array) -> Out (its elements concatenated along axis),
 * OutIndex (int32 [n]: each one's size along axis); a.i[0] axis ---- */

/* The elements of the array X as a list (borrowed from *a, which the caller releases), every one
 * written. */
static FlStatus array_elems(RunCtx *rc, const ExecOp *op, FlScope *s, int slot, TArray **a, const FlTensor ***xs) {
    const ArgRef *xa = fl_exec_in_args(op, slot);
    *a = array_get(s, xa);
    *xs = NULL;
    int64_t n = *a ? (*a)->n : 0;
    if (n == 0) return fl_exec_op_error(rc, op, "the array '%s' has no element", xa->name);
    if (n > INT32_MAX) return fl_exec_op_error(rc, op, "the array '%s' has %lld elements", xa->name, (long long)n);
    for (int64_t k = 0; k < n; k++)
        if (!(*a)->set[k])
            return fl_exec_op_error(rc, op, "element %lld of the array '%s' was never written", (long long)k, xa->name);
    *xs = fl_xcalloc((size_t)n, sizeof **xs);
    for (int64_t k = 0; k < n; k++) (*xs)[k] = &(*a)->items[k];
    return FL_OK;
}

/* use_stack: views[k] = element k with a dim of 1 inserted at axis (of the result's rank, negative
 * from its end), xs[k] pointed at it; the elements must be of one shape. */
static FlStatus stack_views(RunCtx *rc, const ExecOp *op, const TArray *a, const FlTensor **xs, FlTensor *views,
                            int *axis) {
    const FlTensor *x0 = xs[0];
    int ax = *axis < 0 ? *axis + x0->ndim + 1 : *axis;
    if (ax < 0 || ax > x0->ndim || x0->ndim >= FL_MAX_DIMS)
        return fl_exec_op_error(rc, op, "axis %d is out of range for stacking elements of %d dims", *axis, x0->ndim);
    for (int64_t k = 0; k < a->n; k++) {
        if (!fl_tensor_same_shape(xs[k], x0))
            return fl_exec_op_error(rc, op, "use_stack: element %lld is %s, element 0 %s (stacked elements are of one "
                                    "shape)", (long long)k, fl_tensor_shape(xs[k]).s, fl_tensor_shape(x0).s);
        int64_t ne[FL_MAX_DIMS];
        for (int d = 0, j = 0; d <= x0->ndim; d++) ne[d] = d == ax ? 1 : xs[k]->ne[j++];
        if (fl_tensor_view(rc->e, &views[k], xs[k], 0, x0->ndim + 1, ne)) return FL_ERROR;
        xs[k] = &views[k];
    }
    *axis = ax;
    return FL_OK;
}

static FlStatus run_array_to_tensor(RunCtx *rc, const ExecOp *op, FlScope *s) {
    TArray *a;
    const FlTensor **xs;
    FlTensor out = FL_TENSOR_INIT, index = FL_TENSOR_INIT, *views = NULL;
    int axis = (int)op->a.i[0];
    FlStatus st = array_elems(rc, op, s, FL_IN_tensor_array_to_tensor_X, &a, &xs);
    if (st == FL_OK && op->a.b[0]) {
        views = fl_xcalloc((size_t)a->n, sizeof *views);
        for (int64_t k = 0; k < a->n; k++) fl_tensor_init(&views[k]);
        st = stack_views(rc, op, a, xs, views, &axis);
    }
    if (st == FL_OK) st = fl_kernel_concat(rc->e, xs, (int)a->n, axis, &out);
    if (st == FL_OK) st = fl_tensor_alloc(rc->e, &index, FL_DT_INT32, 1, &a->n);
    if (st == FL_OK) {
        int ax = axis < 0 ? axis + out.ndim : axis;
        for (int64_t k = 0; k < a->n; k++) ((int32_t *)fl_tensor_data(&index))[k] = fl_sat_i32_of(xs[k]->ne[ax]);
        fl_var_take_tensor(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_tensor_array_to_tensor_Out)), &out);
        const ArgRef *ia = grad_out(op, FL_OUT_tensor_array_to_tensor_OutIndex);
        if (ia) fl_var_take_tensor(fl_exec_var_write(s, ia), &index);
    }
    for (int64_t k = 0; views && k < a->n; k++) fl_tensor_fini(&views[k]);
    free(views);
    free(xs);
    tarray_release(a);
    fl_tensor_fini(&out);
    fl_tensor_fini(&index);
    return st;
}

static FlStatus prep_array_to_tensor(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "axis");
    op->a.b[0] = fl_exec_attr_bool(op, "use_stack");
    return FL_OK;
}
FL_CONTROL_ADAPTER(tensor_array_to_tensor, prep_array_to_tensor, run_array_to_tensor);

/* tensor_array_to_tensor_grad: X Out OutIndex Out@GRAD -> X@GRAD, the slice of Out@GRAD that came
 * from each element added into that element's gradient */
static FlStatus run_array_to_tensor_grad(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const ArgRef *ga = grad_out(op, FL_OUT_tensor_array_to_tensor_grad_X_GRAD);
    if (!ga) return FL_OK;
    TArray *a;
    const FlTensor **xs;
    FlTensor g = FL_TENSOR_INIT, *parts = NULL, **pp = NULL, *views = NULL;
    int axis = (int)op->a.i[0];
    FlStatus st = array_elems(rc, op, s, FL_IN_tensor_array_to_tensor_grad_X, &a, &xs);
    if (st == FL_OK && op->a.b[0]) {
        views = fl_xcalloc((size_t)a->n, sizeof *views);
        for (int64_t k = 0; k < a->n; k++) fl_tensor_init(&views[k]);
        st = stack_views(rc, op, a, xs, views, &axis);
    }
    if (st == FL_OK) st = in_tensor(rc, op, s, fl_exec_in_args(op, FL_IN_tensor_array_to_tensor_grad_Out_GRAD), &g);
    if (st == FL_OK) {
        parts = fl_xcalloc((size_t)a->n, sizeof *parts);
        pp = fl_xcalloc((size_t)a->n, sizeof *pp);
        for (int64_t k = 0; k < a->n; k++) fl_tensor_init(&parts[k]), pp[k] = &parts[k];
        st = fl_kernel_concat_grad(rc->e, xs, (int)a->n, &g, axis, pp);
        for (int64_t k = 0; k < a->n && st == FL_OK; k++) {
            FlTensor el = FL_TENSOR_INIT; /* stacked: the element's own shape back */
            const FlTensor *x = &a->items[k];
            if (views && fl_tensor_view(rc->e, &el, &parts[k], 0, x->ndim, x->ne)) st = FL_ERROR;
            if (views && st == FL_OK) fl_tensor_fini(&parts[k]), parts[k] = el, fl_tensor_init(&el);
            fl_tensor_fini(&el);
            if (st == FL_OK) st = grad_add(rc, op, s, ga, k, &parts[k]);
        }
        for (int64_t k = 0; k < a->n; k++) fl_tensor_fini(&parts[k]);
    }
    for (int64_t k = 0; views && k < a->n; k++) fl_tensor_fini(&views[k]);
    free(views);
    free(parts);
    free(pp);
    free(xs);
    fl_tensor_fini(&g);
    tarray_release(a);
    return st;
}
FL_CONTROL_ADAPTER(tensor_array_to_tensor_grad, prep_array_to_tensor, run_array_to_tensor_grad);

/* ---- beam_search ---- */
static FlStatus prep_beam(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "beam_size");
    op->a.i[1] = fl_exec_attr_int(op, "end_id");
    op->a.b[0] = fl_exec_attr_bool(op, "is_accumulated");
    if (op->a.i[0] < 1) return fl_err(e, "attribute 'beam_size' must be at least 1, found %lld", (long long)op->a.i[0]);
    if (fl_exec_attr_int(op, "level") != 0)
        return fl_err(e, "attribute 'level' must be 0, found %lld", (long long)fl_exec_attr_int(op, "level"));
    return FL_OK;
}
static FlStatus run_beam(OpCall *c) {
    const FlTensor *sc = fl_call_in(c, FL_IN_beam_search_scores);
    const int64_t *soff, *poff;
    int64_t nsrc, npfx;
    if (fl_exec_check_lod(c->e, fl_call_in(c, FL_IN_beam_search_ScoresLod), sc && sc->ndim ? sc->ne[0] : -1, "ScoresLod",
                          &poff, &npfx) ||
        fl_exec_check_lod(c->e, fl_call_in(c, FL_IN_beam_search_ScoresSrcLod), npfx, "ScoresSrcLod", &soff, &nsrc))
        return FL_ERROR;
    const PAttrs *a = &c->op->a;
    return fl_kernel_beam_search(c->e, fl_call_in(c, FL_IN_beam_search_pre_ids), fl_call_in(c, FL_IN_beam_search_pre_scores),
                                 fl_call_in(c, FL_IN_beam_search_ids), sc, soff, nsrc, poff, npfx, a->i[0], a->i[1], a->b[0],
                                 fl_call_out(c, FL_OUT_beam_search_selected_ids),
                                 fl_call_out(c, FL_OUT_beam_search_selected_scores),
                                 fl_call_out(c, FL_OUT_beam_search_parent_idx), fl_call_out(c, FL_OUT_beam_search_OutSrcLod),
                                 fl_call_out(c, FL_OUT_beam_search_OutLod));
}
FL_ADAPTER(beam_search, prep_beam, run_beam);

/* ---- beam_search_decode: the arrays Ids IdsSrcLod IdsLod Scores -> sentences ---- */
static FlStatus prep_decode(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "beam_size");
    op->a.i[1] = fl_exec_attr_int(op, "end_id");
    if (op->a.i[0] < 1) return fl_err(e, "attribute 'beam_size' must be at least 1, found %lld", (long long)op->a.i[0]);
    return FL_OK;
}
static FlStatus run_decode(RunCtx *rc, const ExecOp *op, FlScope *s) {
    static const int slots[4] = {FL_IN_beam_search_decode_Ids, FL_IN_beam_search_decode_Scores,
                                 FL_IN_beam_search_decode_IdsSrcLod, FL_IN_beam_search_decode_IdsLod};
    TArray *arr[4] = {0};
    FlBeamStep *steps = NULL;
    FlStatus st = FL_ERROR;
    int64_t n = -1;
    for (int k = 0; k < 4; k++) {
        const ArgRef *a = fl_exec_in_args(op, slots[k]);
        arr[k] = array_get(s, a);
        int64_t m = arr[k] ? arr[k]->n : 0;
        if (k == 0) n = m;
        for (int64_t t = 0; t < m; t++)
            if (!arr[k]->set[t]) {
                fl_exec_op_error(rc, op, "element %lld of the array '%s' was never written (its length is %lld)",
                                 (long long)t, a->name, (long long)m);
                goto done;
            }
        if (m != n) {
            fl_exec_op_error(rc, op, "the array '%s' has %lld elements, Ids '%s' %lld", a->name, (long long)m,
                             fl_exec_in_args(op, slots[0])->name, (long long)n);
            goto done;
        }
    }
    if (n == 0) {
        fl_exec_op_error(rc, op, "the array Ids '%s' is empty (no step of beam search was written)",
                         fl_exec_in_args(op, slots[0])->name);
        goto done;
    }
    steps = calloc((size_t)n, sizeof *steps);
    if (!steps) {
        fl_exec_op_error(rc, op, "out of memory");
        goto done;
    }
    for (int64_t t = 0; t < n; t++) {
        FlBeamStep *sp = &steps[t];
        const FlTensor *ids = &arr[0]->items[t];
        int64_t npfx;
        FlErr le;
        char what[64];
        snprintf(what, sizeof what, "IdsLod[%lld]", (long long)t);
        if (fl_exec_check_lod(&le, &arr[3]->items[t], ids->ndim ? ids->ne[0] : -1, what, &sp->pfx_off, &npfx)) {
            fl_exec_op_error(rc, op, "%s", le.msg);
            goto done;
        }
        snprintf(what, sizeof what, "IdsSrcLod[%lld]", (long long)t);
        if (fl_exec_check_lod(&le, &arr[2]->items[t], npfx, what, &sp->src_off, &sp->nsrc)) {
            fl_exec_op_error(rc, op, "%s", le.msg);
            goto done;
        }
        sp->ids = ids;
        sp->scores = &arr[1]->items[t];
    }
    FlTensor out[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    FlErr ke;
    if (fl_kernel_beam_search_decode(&ke, steps, n, op->a.i[0], op->a.i[1], &out[0], &out[1], &out[2], &out[3])) {
        fl_exec_op_error(rc, op, "%s", ke.msg);
    } else {
        for (int k = 0; k < 4; k++) {
            const ArgRef *oa = &op->args[op->nin + op->out_off[k]];
            if (fl_exec_nout(op, k) && oa->idx >= 0) fl_var_take_tensor(fl_exec_var_write(s, oa), &out[k]);
        }
        st = FL_OK;
    }
    for (int k = 0; k < 4; k++) fl_tensor_fini(&out[k]);
done:
    free(steps);
    for (int k = 0; k < 4; k++) tarray_release(arr[k]);
    return st;
}
FL_CONTROL_ADAPTER(beam_search_decode, prep_decode, run_decode);
