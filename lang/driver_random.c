/* driver_random.c: numpy.random in a script (docs/driver.md, "Fetched values"): the driver's own
 * random stream, ops of the driver (compiler/ops/random.def). The native module `_random` (used
 * by stdlib/numpy.fl):
 *
 *   draw(kind, low, high, size, dtype)   numpy.random.uniform/rand/random/randn/normal/randint:
 *                                        a random_draw of the stream (size None: a number)
 *   seed(value)                          numpy.random.seed(value): a random_state into the stream
 *
 * The stream is the driver var STREAM (int64 [2]), which a random_state at the start of the
 * driver's global block makes from the run's seed (flrun --seed) the first time a script draws or
 * seeds; each draw and seed runs when the driver gets there, so a loop draws new numbers each
 * iteration and numpy.random.seed(n) starts the same numbers again.
 */
#include <string.h>

#include "lang/eval_impl.h"

#define STREAM "numpy_random.stream"

/* The stream var, made the first time (the driver is current). */
static FlValue *stream(Ctx *c, FlSpan sp) {
    FlBlock *g = fl_ir_block(c->b.main, 0);
    if (fl_ir_var_find(g, STREAM)) return fl_v_var(c, STREAM);
    FlVarDesc *d = fl_ev_new_var(c, g, STREAM, sp);
    d->stop_gradient = true;
    FlOpDesc *op = fl_ir_op_insert(g, 0, "random_state");
    op->loc = fl_ev_loc(c, sp);
    fl_ir_op_add_output(op, "Out", STREAM);
    return fl_ev_infer(c, g, op, sp) ? fl_v_var(c, STREAM) : c->error;
}

/* size (None, an int, or a list or tuple of ints) as a shape into out. */
static bool size_shape(Ctx *c, FlValue *size, FlValue *out, FlSpan sp) {
    if (size->kind == VK_NONE) return true;
    if (size->kind == VK_INT) {
        fl_v_list_push(c, out, size);
        return size->i >= 0 || !fl_ev_error(c, sp, "numpy.random: a negative size (%lld)", (long long)size->i);
    }
    if (!fl_v_is_seq(size)) {
        fl_ev_error(c, sp, "numpy.random: size is an int or a tuple of ints, found %s", fl_v_type_name(size));
        return false;
    }
    if (size->list.len > 8) {
        fl_ev_error(c, sp, "numpy.random: size has %zu dims (at most 8)", size->list.len);
        return false;
    }
    for (size_t i = 0; i < size->list.len; i++) {
        int64_t n;
        if (!fl_ev_want_int(c, size->list.items[i], "a dim of numpy.random's size", sp, &n)) return false;
        if (n < 0) {
            fl_ev_error(c, sp, "numpy.random: a negative dim in size (%lld)", (long long)n);
            return false;
        }
        fl_v_list_push(c, out, fl_v_int(c, n));
    }
    return true;
}

static bool number(Ctx *c, FlValue *v, const char *what, FlSpan sp) {
    if (v->kind == VK_INT || v->kind == VK_FLOAT || v->kind == VK_BOOL) return true;
    fl_ev_error(c, sp, "numpy.random: %s is a number known when the script compiles here, found %s", what,
                fl_v_type_name(v));
    return false;
}

static double num(const FlValue *v) { return v->kind == VK_FLOAT ? v->f : (double)(v->kind == VK_INT ? v->i : v->b); }

static FlValue *r_draw(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("draw", "kind low high size dtype", 5);
    (void)self;
    if (!fl_ev_want_str(c, v[0], "kind", a->span) || !number(c, v[1], "low", a->span) ||
        !number(c, v[2], "high", a->span))
        return c->error;
    FlDType dt;
    if (!fl_ev_driver_dtype(c, v[4], &dt, a->span)) return c->error;
    FlValue *shape = fl_v_list(c, VK_LIST);
    if (!size_shape(c, v[3], shape, a->span)) return c->error;
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    FlValue *st = stream(c, a->span), *r = st;
    if (st->kind != VK_ERROR) {
        const char *names[7] = {"State", "StateOut", "kind", "shape", "low", "high", "dtype"};
        FlValue *vals[7] = {st, st, v[0], shape, fl_v_float(c, num(v[1])), fl_v_float(c, num(v[2])),
                            fl_v_int(c, dt)};
        CallArgs oa = {.kwnames = names, .kwvals = vals, .nkw = 7, .span = a->span};
        r = fl_ev_op(c, "random_draw", &oa, a->span);
        if (r->kind == VK_TUPLE) r = r->list.items[0];
    }
    fl_ev_driver_leave(c, &sw);
    return r;
}

static FlValue *r_seed(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("seed", "value", 1);
    (void)self;
    int64_t value = -1;
    if (v[0]->kind != VK_NONE) {
        if (!fl_ev_want_int(c, v[0], "numpy.random.seed's seed", a->span, &value)) return c->error;
        if (value < 0 || value > 0xffffffffLL)
            return fl_ev_error(c, a->span, "numpy.random.seed(%lld): the seed must be between 0 and 2**32 - 1",
                               (long long)value);
    }
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    FlValue *st = stream(c, a->span), *r = st;
    if (st->kind != VK_ERROR) {
        const char *names[2] = {"Out", "value"};
        FlValue *vals[2] = {st, fl_v_int(c, value)};
        CallArgs oa = {.kwnames = names, .kwvals = vals, .nkw = 2, .span = a->span};
        r = fl_ev_op(c, "random_state", &oa, a->span);
    }
    fl_ev_driver_leave(c, &sw);
    return r->kind == VK_ERROR ? r : c->none;
}

static const NativeFn random_fns[] = {
    {"draw", r_draw},
    {"seed", r_seed},
};

void fl_ev_driver_random_install(Ctx *c) { fl_ev_module_of_fns(c, "_random", random_fns, FL_ARRAY_LEN(random_fns)); }
