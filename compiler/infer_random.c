/* infer_random.c: shape rules of the driver's random stream (compiler/ops/random.def): a stream
 * is an int64 [2] var; a draw has the shape and dtype its attributes give. */
#include "compiler/infer_impl.h"

static FlStatus state_out(Ctx *c, const char *slot) {
    Shape s = {.nd = 1, .d = {2}};
    return set_out(c, slot, FL_DT_INT64, &s);
}

FlStatus fl_infer_random_state(Ctx *c) { return state_out(c, "Out"); }

FlStatus fl_infer_random_draw(Ctx *c) {
    FlVarDesc *st;
    if (in1(c, "State", &st)) return FL_ERROR;
    Shape s = shape_of(st);
    if (st->dtype != FL_DT_INT64 || s.nd != 1 || s.d[0] != 2)
        return fl_err(c->e, "random_draw: State '%s' is %s %s, not a random stream (int64 [2], a random_state's)",
                      st->name, fl_dtype_name(st->dtype), sstr(c, &s));
    const char *kind = sattr(c, "kind");
    double low = fattr(c, "low"), high = fattr(c, "high");
    FlDType dt = (FlDType)iattr(c, "dtype");
    if (strcmp(kind, "uniform") == 0 || strcmp(kind, "normal") == 0) {
        if (dt != FL_DT_FLOAT32 && dt != FL_DT_FLOAT64)
            return fl_err(c->e, "random_draw: kind '%s' draws floats, dtype is %s", kind, fl_dtype_name(dt));
        if (strcmp(kind, "normal") == 0 && !(high >= 0))
            return fl_err(c->e, "random_draw: the std of 'normal' (high) is %g, negative", high);
        if (strcmp(kind, "uniform") == 0 && !(low <= high))
            return fl_err(c->e, "random_draw: 'uniform' needs low <= high, found [%g, %g)", low, high);
    } else if (strcmp(kind, "randint") == 0) {
        if (dt != FL_DT_INT64 && dt != FL_DT_INT32)
            return fl_err(c->e, "random_draw: kind 'randint' draws ints, dtype is %s", fl_dtype_name(dt));
        if (!(low < high) || low != (double)(int64_t)low || high != (double)(int64_t)high)
            return fl_err(c->e, "random_draw: 'randint' needs integers low < high, found [%g, %g)", low, high);
    } else {
        return fl_err(c->e, "random_draw: kind '%s' (uniform, normal or randint)", kind);
    }
    size_t n;
    bool ok;
    const int64_t *shape = intsattr(c, "shape", &n, &ok);
    if (!ok) return FL_ERROR;
    if (n > FL_IR_MAX_DIMS) return fl_err(c->e, "random_draw: shape has %zu dims (at most %d)", n, FL_IR_MAX_DIMS);
    Shape out = {.nd = (int)n};
    for (size_t k = 0; k < n; k++) {
        if (shape[k] < 0) return fl_err(c->e, "random_draw: shape[%zu] is %lld, negative", k, (long long)shape[k]);
        out.d[k] = shape[k];
    }
    if (set_out(c, "Out", dt, &out)) return FL_ERROR;
    return state_out(c, "StateOut");
}
