/* infer_imgsel.c: the shape rules of random_crop and similarity_focus (compiler/ops/imgsel.def;
 * adapters runtime/core/ops_imgsel.c; kernels runtime/kernels/imgsel.c). */
#include "compiler/infer_impl.h"

/* random_crop: X [d..., e...] (any numeric dtype) -> [d..., shape], shape k >= 1 sizes of the last k
 * dims, each in [1, e]; Seed (optional) one int64 value -> SeedOut like it. */
FlStatus fl_infer_random_crop(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || check_dtype(c, x->dtype)) return FL_ERROR;
    Shape s = shape_of(x);
    size_t k = 0;
    bool ok;
    const int64_t *sh = intsattr(c, "shape", &k, &ok);
    if (!ok) return FL_ERROR;
    if (k < 1 || (int)k > s.nd)
        return fl_err(c->e, "%s: shape must give the sizes of 1 to %d of X %s's last dims, found %zu", c->t, s.nd,
                      sstr(c, &s), k);
    Shape o = s;
    for (size_t i = 0; i < k; i++) {
        int64_t e = s.d[s.nd - (int)k + (int)i];
        if (sh[i] < 1 || (e >= 0 && sh[i] > e))
            return fl_err(c->e, "%s: shape[%zu] = %lld must be in [1, %lld], the size of X %s's dim %d", c->t, i,
                          (long long)sh[i], (long long)e, sstr(c, &s), s.nd - (int)k + (int)i);
        o.d[s.nd - (int)k + (int)i] = sh[i];
    }
    FlVarDesc *seed = NULL;
    if (in_opt(c, "Seed", &seed)) return FL_ERROR;
    if (seed) {
        Shape ss = shape_of(seed);
        int64_t n = prod(&ss, 0, ss.nd);
        if (seed->dtype != FL_DT_INT64 || (n >= 0 && n != 1))
            return fl_err(c->e, "%s: Seed '%s' must be one int64 value, found %s %s", c->t, seed->name, dt(seed->dtype),
                          sstr(c, &ss));
        if (set_out(c, "SeedOut", FL_DT_INT64, &ss)) return FL_ERROR;
    }
    return set_out(c, "Out", x->dtype, &o);
}

/* similarity_focus: X float [N, A, B, C], axis 1..3, indexes non-empty within X's dim axis; Out like
 * X. */
FlStatus fl_infer_similarity_focus(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_float_in(c, x, "X")) return FL_ERROR;
    Shape s = shape_of(x);
    if (s.nd != 4) return fl_err(c->e, "%s: X must be [N, A, B, C], found %s", c->t, sstr(c, &s));
    int64_t axis = iattr(c, "axis");
    if (axis < 1 || axis > 3) return fl_err(c->e, "%s: axis must be 1, 2 or 3, found %lld", c->t, (long long)axis);
    size_t n = 0;
    bool ok;
    const int64_t *ix = intsattr(c, "indexes", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n == 0) return fl_err(c->e, "%s: indexes must name at least one index along axis %lld", c->t, (long long)axis);
    for (size_t i = 0; i < n; i++)
        if (ix[i] < 0 || (s.d[axis] >= 0 && ix[i] >= s.d[axis]))
            return fl_err(c->e, "%s: indexes[%zu] = %lld is outside [0, %lld), X %s's dim %lld", c->t, i,
                          (long long)ix[i], (long long)s.d[axis], sstr(c, &s), (long long)axis);
    return set_like(c, "Out", x);
}
