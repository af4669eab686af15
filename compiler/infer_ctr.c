/* infer_ctr.c: the shape rules of the CTR feature ops, hash and cvm (continuous_value_model), and
 * of merge_selected_rows and get_tensor_from_selected_rows
 * (compiler/ops/ctr.def; adapters runtime/core/ops_ctr.c; kernels runtime/kernels/ctr.c). */
#include "compiler/infer_impl.h"

/* hash: X int [N, K] -> Out [N, num_hash, 1], X's dtype (Fluid's op takes rank 2 alone). */
FlStatus fl_infer_hash(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_int_in(c, x, "X")) return FL_ERROR;
    Shape s = shape_of(x);
    if (s.nd != 2) return fl_err(c->e, "%s: X must be [N, K] (a row of ids per instance), found %s", c->t, sstr(c, &s));
    int64_t nh = iattr(c, "num_hash"), mod = iattr(c, "mod_by");
    if (nh < 1) return fl_err(c->e, "%s: num_hash must be >= 1, found %lld", c->t, (long long)nh);
    if (mod < 1) return fl_err(c->e, "%s: mod_by (the hash size) must be >= 1, found %lld", c->t, (long long)mod);
    if (x->dtype == FL_DT_INT32 && mod > INT32_MAX + 1LL)
        return fl_err(c->e, "%s: mod_by %lld does not fit X's int32 (hashes below it would wrap); give an int64 X",
                      c->t, (long long)mod);
    Shape o = {.nd = 3, .d = {s.d[0], nh, 1}};
    return set_out(c, "Out", x->dtype, &o);
}

/* cvm (continuous_value_model): X [N, D] float (D >= 2), CVM [M, 2] of X's dtype -> Y [N, D] (use_cvm)
 * or [N, D - 2]. */
FlStatus fl_infer_cvm(Ctx *c) {
    FlVarDesc *x, *cvm;
    if (in1(c, "X", &x) || need_float_in(c, x, "X") || in1(c, "CVM", &cvm) || need_offsets(c, "XLod", true))
        return FL_ERROR;
    Shape s = shape_of(x), cs = shape_of(cvm);
    if (s.nd != 2 || (s.d[1] >= 0 && s.d[1] < 2))
        return fl_err(c->e, "%s: X must be [N, D] with D >= 2 (a show and a click column first), found %s", c->t,
                      sstr(c, &s));
    if (cvm->dtype != x->dtype || cs.nd != 2 || !dims_agree(cs.d[1], 2))
        return fl_err(c->e, "%s: CVM must be %s [N, 2] (show, click), found %s %s", c->t, dt(x->dtype), dt(cvm->dtype),
                      sstr(c, &cs));
    Shape o = s;
    if (!iattr(c, "use_cvm") && o.d[1] >= 0) o.d[1] -= 2;
    return set_out(c, "Y", x->dtype, &o);
}

/* X must be a SelectedRows (a table's sparse gradient). */
static FlStatus need_rows(Ctx *c, FlVarDesc **x) {
    if (in1(c, "X", x)) return FL_ERROR;
    if ((*x)->kind != FL_VAR_SELECTED_ROWS)
        return fl_err(c->e, "%s: X '%s' must be a SelectedRows (the gradient of an embedding with is_sparse=True), "
                            "found a dense tensor", c->t, (*x)->name);
    return FL_OK;
}

/* merge_selected_rows: a SelectedRows like X. */
FlStatus fl_infer_merge_selected_rows(Ctx *c) {
    FlVarDesc *x, *o;
    if (need_rows(c, &x)) return FL_ERROR;
    const char *on = fl_ir_op_output1(c->op, "Out");
    if (!on || skip_arg(on)) return fl_err(c->e, "%s: output Out is required", c->t);
    if (lookup(c, "output", "Out", on, &o)) return FL_ERROR;
    Shape s = shape_of(x);
    if (set_out(c, "Out", x->dtype, &s)) return FL_ERROR;
    o->kind = FL_VAR_SELECTED_ROWS;
    return FL_OK;
}

/* get_tensor_from_selected_rows: X's value block, dense [-1, X's row shape]. */
FlStatus fl_infer_get_tensor_from_selected_rows(Ctx *c) {
    FlVarDesc *x;
    if (need_rows(c, &x)) return FL_ERROR;
    Shape s = shape_of(x);
    if (s.nd >= 1) s.d[0] = -1;
    return set_out(c, "Out", x->dtype, &s);
}
