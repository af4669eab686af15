/* ops_random.c: the driver's random stream (compiler/ops/random.def), numpy.random in a script.
 * A stream is an int64 [2] tensor, [key, count]: random_state makes one, random_draw takes the
 * next numbers from it and writes it back advanced. The numbers are the counter-based ones of
 * uniform_random and gaussian_random (element k of a draw is element count + k of the key's
 * sequence), so a stream gives the same numbers for the same key, whatever ran between. */
#include <math.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/rng.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

typedef enum DrawKind { DRAW_UNIFORM, DRAW_NORMAL, DRAW_RANDINT } DrawKind;

static FlStatus put_state(FlErr *e, uint64_t key, int64_t count, FlTensor *out) {
    int64_t two = 2;
    FlTensor t = FL_TENSOR_INIT;
    if (fl_tensor_alloc(e, &t, FL_DT_INT64, 1, &two)) return FL_ERROR;
    int64_t *v = fl_tensor_data(&t);
    v[0] = (int64_t)key;
    v[1] = count;
    if (out) {
        fl_tensor_fini(out);
        *out = t;
    } else {
        fl_tensor_fini(&t);
    }
    return FL_OK;
}

/* a.i[0] = value (numpy.random.seed's, or -1) */
static FlStatus prep_random_state(ExecOp *op, FlErr *e) {
    op->a.i[0] = fl_exec_attr_int(op, "value");
    (void)e;
    return FL_OK;
}
static FlStatus run_random_state(OpCall *c) {
    uint64_t key = c->op->seed;
    if (c->op->a.i[0] >= 0) { /* numpy.random.seed(value): the same key for the same value */
        uint64_t x = (uint64_t)c->op->a.i[0] + 0x5bd1e995ULL;
        key = fl_rng_splitmix64(&x);
        if (key == 0) key = 1;
    }
    return put_state(c->e, key, 0, OUT(FL_OUT_random_state_Out));
}
FL_ADAPTER(random_state, prep_random_state, run_random_state);

/* a.i = {kind, dtype}, a.f = {low, high}, the shape */
static FlStatus prep_random_draw(ExecOp *op, FlErr *e) {
    const char *k = fl_exec_attr_string(op, "kind");
    op->a.i[0] = strcmp(k, "uniform") == 0 ? DRAW_UNIFORM : strcmp(k, "normal") == 0 ? DRAW_NORMAL : DRAW_RANDINT;
    op->a.i[1] = fl_exec_attr_int(op, "dtype");
    op->a.f[0] = fl_exec_attr_float(op, "low");
    op->a.f[1] = fl_exec_attr_float(op, "high");
    return fl_exec_attr_shape(op, "shape", e);
}
static FlStatus run_random_draw(OpCall *c) {
    const PAttrs *a = &c->op->a;
    const FlTensor *st = IN(FL_IN_random_draw_State);
    if (st->dtype != FL_DT_INT64 || fl_tensor_numel(st) != 2)
        return fl_err(c->e, "random_draw: State is not a random stream (int64 [2])");
    const int64_t *sv = fl_tensor_data(st);
    uint64_t key = (uint64_t)sv[0];
    int64_t count = sv[1];
    FlTensor r = FL_TENSOR_INIT;
    FlStatus rc = FL_OK;
    switch ((DrawKind)a->i[0]) {
    case DRAW_UNIFORM:
        rc = fl_kernel_uniform_random(c->e, a->nshape, a->shape, a->f[0], a->f[1], key, count, (FlDType)a->i[1], &r);
        break;
    case DRAW_NORMAL:
        rc = fl_kernel_gaussian_random(c->e, a->nshape, a->shape, a->f[0], a->f[1], key, count, (FlDType)a->i[1], &r);
        break;
    case DRAW_RANDINT: { /* floor of a uniform draw in [low, high) */
        FlTensor u = FL_TENSOR_INIT;
        rc = fl_kernel_uniform_random(c->e, a->nshape, a->shape, a->f[0], a->f[1], key, count, FL_DT_FLOAT64, &u);
        if (rc == FL_OK) rc = fl_tensor_alloc(c->e, &r, (FlDType)a->i[1], a->nshape, a->shape);
        if (rc == FL_OK) {
            const double *p = fl_tensor_data(&u);
            int64_t n = fl_tensor_numel(&u);
            for (int64_t k = 0; k < n; k++) {
                double v = floor(p[k]);
                if (v >= a->f[1]) v = a->f[1] - 1; /* a float rounded up to high */
                if (a->i[1] == FL_DT_INT32) ((int32_t *)fl_tensor_data(&r))[k] = (int32_t)v;
                else ((int64_t *)fl_tensor_data(&r))[k] = (int64_t)v;
            }
        }
        fl_tensor_fini(&u);
        break;
    }
    }
    if (rc == FL_OK) rc = put_state(c->e, key, count + fl_tensor_numel(&r), OUT(FL_OUT_random_draw_StateOut));
    if (rc == FL_OK) {
        FlTensor *out = OUT(FL_OUT_random_draw_Out);
        if (out) {
            fl_tensor_fini(out);
            *out = r;
            fl_tensor_init(&r);
        }
    }
    fl_tensor_fini(&r);
    return rc;
}
FL_ADAPTER(random_draw, prep_random_draw, run_random_draw);
