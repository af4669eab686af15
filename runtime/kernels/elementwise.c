/* elementwise.c: binary elementwise ops with broadcasting, their gradients, comparisons and
 * logical ops.
 *
 * Broadcasting is planned once per call (kbcast_plan): both operands are padded to the output's
 * rank, a broadcast dim gets stride 0, and dims that are contiguous in X, Y and Out alike are
 * merged. The op then runs over innermost runs (kbcast_run) with one typed loop per op and
 * dtype. Gradients walk the same plan and accumulate into dX / dY at the operand's offsets, so a
 * broadcast operand's gradient is summed over the dims it was broadcast along. */
#include "runtime/kernels/kernels_impl.h"

#include <tgmath.h>

#include "runtime/kernels/par.h"

/* Output elements a chunk must have to be worth a hand-over to another thread (measured:
 * docs/kernels.md, "Threads"). */
enum { EW_GRAIN = 1 << 15 };

/* ---- broadcasting plan ---- */

FlStatus kbcast_plan(FlErr *e, const char *op, const FlTensor *x, const FlTensor *y, int axis,
                     KBcast *b) {
    int nx = x->ndim, ny = y->ndim, nd;
    int64_t px[FL_MAX_DIMS], py[FL_MAX_DIMS], po[FL_MAX_DIMS];
    if (axis == -1) {
        nd = nx > ny ? nx : ny;
        for (int i = 0; i < nd; i++) {
            int ix = i - (nd - nx), iy = i - (nd - ny);
            px[i] = ix >= 0 ? x->ne[ix] : 1;
            py[i] = iy >= 0 ? y->ne[iy] : 1;
            if (px[i] != py[i] && px[i] != 1 && py[i] != 1)
                return fl_err(e, "%s: X %s and Y %s cannot be broadcast together: dim %d of the "
                                 "result would be both %lld and %lld",
                              op, fl_tensor_shape(x).s, fl_tensor_shape(y).s, i,
                              (long long)px[i], (long long)py[i]);
            po[i] = px[i] == 1 ? py[i] : px[i];
        }
    } else {
        int nyt = ny;
        while (nyt > 0 && y->ne[nyt - 1] == 1) nyt--; /* Paddle trims Y's trailing 1s */
        if (axis < 0 || axis + nyt > nx)
            return fl_err(e, "%s: X %s and Y %s: axis %d is out of range (Y's dims must fit in "
                             "X's starting at axis)",
                          op, fl_tensor_shape(x).s, fl_tensor_shape(y).s, axis);
        nd = nx;
        for (int i = 0; i < nd; i++) {
            px[i] = po[i] = x->ne[i];
            py[i] = (i >= axis && i < axis + nyt) ? y->ne[i - axis] : 1;
            if (py[i] != px[i] && py[i] != 1)
                return fl_err(e, "%s: X %s and Y %s with axis %d: Y's dim %d (%lld) differs "
                                 "from X's dim %d (%lld)",
                              op, fl_tensor_shape(x).s, fl_tensor_shape(y).s, axis, i - axis,
                              (long long)py[i], i, (long long)px[i]);
        }
    }
    b->ondim = nd;
    for (int i = 0; i < FL_MAX_DIMS; i++) b->one[i] = i < nd ? po[i] : 1;
    /* contiguous strides of the padded operands, 0 where broadcast; dims of size 1 dropped */
    int64_t sx = 1, sy = 1, ne[FL_MAX_DIMS], ax[FL_MAX_DIMS], ay[FL_MAX_DIMS];
    int m = 0;
    for (int i = nd - 1; i >= 0; i--) { /* collected innermost first */
        if (po[i] != 1) {
            ne[m] = po[i];
            ax[m] = px[i] == 1 ? 0 : sx;
            ay[m] = py[i] == 1 ? 0 : sy;
            m++;
        }
        sx *= px[i];
        sy *= py[i];
    }
    /* merge dim k+1 (outer) into dim k (inner) when contiguous for both operands */
    int64_t mne[FL_MAX_DIMS], msx[FL_MAX_DIMS], msy[FL_MAX_DIMS];
    int k = -1;
    for (int i = 0; i < m; i++) {
        if (k >= 0 && ax[i] == msx[k] * mne[k] && ay[i] == msy[k] * mne[k]) {
            mne[k] *= ne[i];
            continue;
        }
        k++;
        mne[k] = ne[i], msx[k] = ax[i], msy[k] = ay[i];
    }
    b->nd = k + 1;
    for (int i = 0; i < b->nd; i++) { /* back to outermost first */
        b->ne[i] = mne[k - i];
        b->sx[i] = msx[k - i];
        b->sy[i] = msy[k - i];
    }
    return FL_OK;
}

/* The runs of the output elements [lo, hi) (0 <= lo < hi <= the output's size), cut at lo and hi:
 * kbcast_run is [0, size), the pool's chunks are parts of it. */
static void bcast_range(const KBcast *b, int64_t lo, int64_t hi, KRunFn fn, void *ctx) {
    int nd = b->nd, last = nd - 1;
    if (nd == 0) {
        if (lo == 0 && hi > 0) fn(ctx, 0, 0, 0, 1, 0, 0);
        return;
    }
    int64_t idx[FL_MAX_DIMS], rem = lo, xo = 0, yo = 0;
    for (int d = last; d >= 0; d--) {
        idx[d] = rem % b->ne[d];
        rem /= b->ne[d];
        xo += idx[d] * b->sx[d];
        yo += idx[d] * b->sy[d];
    }
    for (int64_t oo = lo; oo < hi;) {
        int64_t i0 = idx[last], len = b->ne[last] - i0;
        if (len > hi - oo) len = hi - oo;
        fn(ctx, xo, yo, oo, len, b->sx[last], b->sy[last]);
        oo += len;
        xo -= i0 * b->sx[last]; /* back to the run's start, then on to the next run */
        yo -= i0 * b->sy[last];
        idx[last] = 0;
        int d = last - 1;
        for (; d >= 0; d--) {
            idx[d]++;
            xo += b->sx[d];
            yo += b->sy[d];
            if (idx[d] < b->ne[d]) break;
            xo -= b->sx[d] * b->ne[d];
            yo -= b->sy[d] * b->ne[d];
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

void kbcast_run(const KBcast *b, KRunFn fn, void *ctx) {
    int64_t total = 1;
    for (int i = 0; i < b->nd; i++) total *= b->ne[i];
    if (total > 0) bcast_range(b, 0, total, fn, ctx);
}

typedef struct RangeJob {
    const KBcast *b;
    KRunFn fn;
    void *ctx;
} RangeJob;

static void range_chunk(void *arg, int64_t lo, int64_t hi) {
    const RangeJob *j = arg;
    bcast_range(j->b, lo, hi, j->fn, j->ctx);
}

/* kbcast_run for a forward op (each output element written once, from its own inputs): on the
 * kernel pool in chunks of output elements, which change no result. */
static void bcast_run_par(const KBcast *b, KRunFn fn, void *ctx) {
    int64_t n = 1;
    for (int i = 0; i < b->nd; i++) n *= b->ne[i];
    if (fl_par_chunks(n, EW_GRAIN) == 1) {
        kbcast_run(b, fn, ctx);
        return;
    }
    RangeJob j = {b, fn, ctx};
    fl_par_for(n, EW_GRAIN, range_chunk, &j);
}

/* ---- typed loops ---- */

typedef struct Ctx {
    const void *x, *y, *g;
    void *o, *dx, *dy;
} Ctx;

#define FWD_LOOP(name, T, TO, expr)                                                          \
    static void name(void *c, int64_t xo, int64_t yo, int64_t oo, int64_t n, int64_t sx,      \
                     int64_t sy) {                                                           \
        Ctx *k = c;                                                                          \
        const T *x = (const T *)k->x + xo, *y = (const T *)k->y + yo;                        \
        TO *o = (TO *)k->o + oo;                                                             \
        for (int64_t i = 0; i < n; i++) {                                                    \
            T a = x[i * sx], b = y[i * sy];                                                  \
            (void)a, (void)b;                                                                \
            o[i] = (TO)(expr);                                                               \
        }                                                                                    \
    }

/* Integer arithmetic wraps (kadd_i, kernels_impl.h). Division by -1 is negation, so
 * INT64_MIN / -1 wraps to INT64_MIN (where the CPU's idiv traps), and its remainder is 0, as in
 * Go; division by 0 never gets here (arith rejects it). */
static inline int64_t idiv(int64_t a, int64_t b) { return b == -1 ? ksub_i(0, a) : a / b; }
static inline int64_t ifloordiv(int64_t a, int64_t b) {
    if (b == -1) return ksub_i(0, a);
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t imod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
#define FMOD_PY(a, b) (fmod(a, b) != 0 && ((fmod(a, b) < 0) != ((b) < 0)) ? fmod(a, b) + (b) : fmod(a, b))

/* op name, float expression, integer expression (NONE: float only) */
#define ARITH_OPS(X)                                                                         \
    X(add, a + b, kadd_i(a, b))                                                                \
    X(sub, a - b, ksub_i(a, b))                                                                \
    X(mul, a * b, kmul_i(a, b))                                                                \
    X(div, a / b, idiv(a, b))                                                                \
    X(max, a > b ? a : b, a > b ? a : b)                                                     \
    X(min, a < b ? a : b, a < b ? a : b)                                                     \
    X(pow, pow(a, b), 0)                                                                     \
    X(floordiv, floor(a / b), ifloordiv(a, b))                                               \
    X(mod, FMOD_PY(a, b), imod(a, b))

#define DEF_ARITH(op, ef, ei)                                                                \
    FWD_LOOP(op##_f32, float, float, ef)                                                     \
    FWD_LOOP(op##_f64, double, double, ef)                                                   \
    FWD_LOOP(op##_i32, int32_t, int32_t, ei)                                                 \
    FWD_LOOP(op##_i64, int64_t, int64_t, ei)
ARITH_OPS(DEF_ARITH)

#define ENUM_ARITH(op, ef, ei) OP_##op,
typedef enum { ARITH_OPS(ENUM_ARITH) OP_COUNT } ArithOp;
#define TAB_ARITH(op, ef, ei) {op##_f32, op##_f64, op##_i32, op##_i64},
static const KRunFn arith_tab[OP_COUNT][4] = {ARITH_OPS(TAB_ARITH)};
#define NAME_ARITH(op, ef, ei) "elementwise_" #op,
static const char *const arith_name[OP_COUNT] = {ARITH_OPS(NAME_ARITH)};

#define CMP_OPS(X)                                                                           \
    X(less_than, a < b) X(less_equal, a <= b) X(greater_than, a > b)                         \
    X(greater_equal, a >= b) X(equal, a == b) X(not_equal, a != b)
#define DEF_CMP(op, ex)                                                                      \
    FWD_LOOP(op##_f32, float, uint8_t, ex)                                                   \
    FWD_LOOP(op##_f64, double, uint8_t, ex)                                                  \
    FWD_LOOP(op##_i32, int32_t, uint8_t, ex)                                                 \
    FWD_LOOP(op##_i64, int64_t, uint8_t, ex)
CMP_OPS(DEF_CMP)
FWD_LOOP(and_u8, uint8_t, uint8_t, a && b)
FWD_LOOP(or_u8, uint8_t, uint8_t, a || b)

static int type_index(FlDType t) {
    switch (t) {
    case FL_DT_FLOAT32: return 0;
    case FL_DT_FLOAT64: return 1;
    case FL_DT_INT32: return 2;
    case FL_DT_INT64: return 3;
    case FL_DT_FLOAT16:
    case FL_DT_INT8:
    case FL_DT_UINT8:
    case FL_DT_BOOL:
    case FL_DT_COUNT: break;
    }
    return -1;
}

static bool has_int_zero(const FlTensor *t) {
    int64_t n = fl_tensor_numel(t);
    const void *p = fl_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        if (t->dtype == FL_DT_INT32 ? ((const int32_t *)p)[i] == 0 : ((const int64_t *)p)[i] == 0)
            return true;
    return false;
}

/* Runs fn over the broadcast of x and y into a new tensor of dtype odt. */
static FlStatus run_binary(FlErr *e, const char *op, const FlTensor *x, const FlTensor *y,
                           int axis, FlDType odt, KRunFn fn, FlTensor *out) {
    KBcast b;
    if (kbcast_plan(e, op, x, y, axis, &b)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &r, odt, b.ondim, b.one)) return FL_ERROR; /* every element is written */
    Ctx c = {.x = fl_tensor_data(x), .y = fl_tensor_data(y), .o = fl_tensor_data(&r)};
    bcast_run_par(&b, fn, &c);
    kout(out, &r);
    return FL_OK;
}

/* elementwise_add's fast path (float32 and every other dtype): the same sum per element as
 * add_*, with the runs that broadcasting makes common written as plain loops the compiler
 * vectorises: both operands contiguous (same shapes; and the rows of a bias add, whose merged
 * plan is [rows, cols] with Y's row stride 0), or one operand a single broadcast value. */
#define ADD_FAST_LOOP(name, T, ADD)                                                          \
    static void name(void *c, int64_t xo, int64_t yo, int64_t oo, int64_t n, int64_t sx,      \
                     int64_t sy) {                                                           \
        Ctx *k = c;                                                                          \
        const T *x = (const T *)k->x + xo, *y = (const T *)k->y + yo;                        \
        T *restrict o = (T *)k->o + oo;                                                      \
        if (sx == 1 && sy == 1) {                                                            \
            for (int64_t i = 0; i < n; i++) o[i] = (T)ADD(x[i], y[i]);                       \
        } else if (sx == 1 && sy == 0) {                                                     \
            T b = y[0];                                                                      \
            for (int64_t i = 0; i < n; i++) o[i] = (T)ADD(x[i], b);                          \
        } else if (sx == 0 && sy == 1) {                                                     \
            T a = x[0];                                                                      \
            for (int64_t i = 0; i < n; i++) o[i] = (T)ADD(a, y[i]);                          \
        } else {                                                                             \
            for (int64_t i = 0; i < n; i++) o[i] = (T)ADD(x[i * sx], y[i * sy]);             \
        }                                                                                    \
    }
#define FADD(a, b) ((a) + (b))
ADD_FAST_LOOP(add_fast_f32, float, FADD)
ADD_FAST_LOOP(add_fast_f64, double, FADD)
ADD_FAST_LOOP(add_fast_i32, int32_t, kadd_i)
ADD_FAST_LOOP(add_fast_i64, int64_t, kadd_i)
static const KRunFn add_fast_tab[4] = {add_fast_f32, add_fast_f64, add_fast_i32, add_fast_i64};

static FlStatus arith(FlErr *e, ArithOp op, const FlTensor *x, const FlTensor *y, int axis,
                      FlTensor *out, bool fast) {
    const char *name = arith_name[op];
    if (kneed_num(e, name, "X", x) || kneed_num(e, name, "Y", y) ||
        ksame_dtype(e, name, "X", x, "Y", y))
        return FL_ERROR;
    if (op == OP_pow && kneed_float(e, name, "X", x)) return FL_ERROR;
    if ((op == OP_div || op == OP_floordiv || op == OP_mod) && kis_int(y->dtype) && has_int_zero(y))
        return fl_err(e, "%s: integer division by zero (Y %s holds a 0)", name,
                      fl_tensor_shape(y).s);
    const KRunFn *tab = fast && op == OP_add ? add_fast_tab : arith_tab[op];
    return run_binary(e, name, x, y, axis, x->dtype, tab[type_index(x->dtype)], out);
}

#define DEF_ARITH_API(op, ef, ei)                                                            \
    FlStatus fl_kernel_elementwise_##op(FlErr *e, const FlTensor *x, const FlTensor *y,      \
                                        int axis, FlTensor *out) {                           \
        return arith(e, OP_##op, x, y, axis, out, true);                                     \
    }
ARITH_OPS(DEF_ARITH_API)
FlStatus fl_kernel_elementwise_add_ref(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                       FlTensor *out) {
    return arith(e, OP_add, x, y, axis, out, false);
}

#define DEF_CMP_API(op, ex)                                                                  \
    FlStatus fl_kernel_##op(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,        \
                            FlTensor *out) {                                                 \
        static const KRunFn tab[4] = {op##_f32, op##_f64, op##_i32, op##_i64};               \
        if (kneed_num(e, #op, "X", x) || kneed_num(e, #op, "Y", y) ||                        \
            ksame_dtype(e, #op, "X", x, "Y", y))                                             \
            return FL_ERROR;                                                                 \
        return run_binary(e, #op, x, y, axis, FL_DT_BOOL, tab[type_index(x->dtype)], out);   \
    }
CMP_OPS(DEF_CMP_API)

static FlStatus logical(FlErr *e, const char *op, const FlTensor *x, const FlTensor *y,
                        KRunFn fn, FlTensor *out) {
    FlTensor bx = FL_TENSOR_INIT, by = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (fl_kernel_cast(e, x, FL_DT_BOOL, &bx)) goto fail;
    if (y && fl_kernel_cast(e, y, FL_DT_BOOL, &by)) goto fail;
    if (y) {
        st = run_binary(e, op, &bx, &by, -1, FL_DT_BOOL, fn, out);
    } else {
        uint8_t *p = fl_tensor_data(&bx);
        for (int64_t i = 0, n = fl_tensor_numel(&bx); i < n; i++) p[i] = !p[i];
        kout(out, &bx);
        st = FL_OK;
    }
fail:
    fl_tensor_fini(&bx);
    fl_tensor_fini(&by);
    return st;
}

FlStatus fl_kernel_logical_and(FlErr *e, const FlTensor *x, const FlTensor *y, FlTensor *out) {
    return logical(e, "logical_and", x, y, and_u8, out);
}
FlStatus fl_kernel_logical_or(FlErr *e, const FlTensor *x, const FlTensor *y, FlTensor *out) {
    return logical(e, "logical_or", x, y, or_u8, out);
}
FlStatus fl_kernel_logical_not(FlErr *e, const FlTensor *x, FlTensor *out) {
    return logical(e, "logical_not", x, NULL, NULL, out);
}

/* ---- gradients ---- */

#define GRAD_LOOP(name, T, DX, DY)                                                           \
    static void name(void *c, int64_t xo, int64_t yo, int64_t oo, int64_t n, int64_t sx,      \
                     int64_t sy) {                                                           \
        Ctx *k = c;                                                                          \
        const T *x = (const T *)k->x + xo, *y = (const T *)k->y + yo, *g = (const T *)k->g + oo; \
        T *dx = k->dx ? (T *)k->dx + xo : NULL, *dy = k->dy ? (T *)k->dy + yo : NULL;        \
        for (int64_t i = 0; i < n; i++) {                                                    \
            T a = x[i * sx], b = y[i * sy], go = g[i];                                       \
            (void)a, (void)b;                                                                \
            if (dx) dx[i * sx] += (DX);                                                      \
            if (dy) dy[i * sy] += (DY);                                                      \
        }                                                                                    \
    }

#define GRAD_OPS(X) X(add, go, go) GRAD_OPS_BUT_ADD(X)
#define GRAD_OPS_BUT_ADD(X)                                                                  \
    X(sub, go, -go)                                                                          \
    X(mul, go * b, go * a)                                                                   \
    X(div, go / b, -go * a / (b * b))                                                        \
    X(max, a > b ? go : 0, a > b ? 0 : go)                                                   \
    X(min, a < b ? go : 0, a < b ? 0 : go)                                                   \
    X(pow, go * b * pow(a, b - 1), a > 0 ? go * pow(a, b) * log(a) : 0)
#define DEF_GRAD(op, DX, DY)                                                                 \
    GRAD_LOOP(op##_grad_f32, float, DX, DY)                                                  \
    GRAD_LOOP(op##_grad_f64, double, DX, DY)
GRAD_OPS(DEF_GRAD)

static FlStatus arith_grad(FlErr *e, const char *op, KRunFn f32, KRunFn f64, const FlTensor *x,
                           const FlTensor *y, const FlTensor *dout, int axis, FlTensor *dx,
                           FlTensor *dy) {
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Y", y) ||
        ksame_dtype(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    KBcast b;
    if (kbcast_plan(e, op, x, y, axis, &b)) return FL_ERROR;
    if (dout->ndim != b.ondim || memcmp(dout->ne, b.one, sizeof(int64_t) * (size_t)b.ondim))
        return fl_err(e, "%s: Out@GRAD %s differs from the output shape %s of X %s and Y %s", op,
                      fl_tensor_shape(dout).s, fl_shape_str(b.ondim, b.one).s,
                      fl_tensor_shape(x).s, fl_tensor_shape(y).s);
    FlTensor rx = FL_TENSOR_INIT, ry = FL_TENSOR_INIT;
    if (dx && kalloc_like(e, op, &rx, x)) return FL_ERROR;
    if (dy && kalloc_like(e, op, &ry, y)) {
        fl_tensor_fini(&rx);
        return FL_ERROR;
    }
    Ctx c = {.x = fl_tensor_data(x), .y = fl_tensor_data(y), .g = fl_tensor_data(dout),
             .dx = dx ? fl_tensor_data(&rx) : NULL, .dy = dy ? fl_tensor_data(&ry) : NULL};
    kbcast_run(&b, x->dtype == FL_DT_FLOAT32 ? f32 : f64, &c);
    if (dx) kout(dx, &rx);
    if (dy) kout(dy, &ry);
    return FL_OK;
}

#define DEF_GRAD_API(op, DX, DY)                                                             \
    FlStatus fl_kernel_elementwise_##op##_grad(FlErr *e, const FlTensor *x, const FlTensor *y, \
                                               const FlTensor *dout, int axis, FlTensor *dx, \
                                               FlTensor *dy) {                               \
        return arith_grad(e, "elementwise_" #op "_grad", op##_grad_f32, op##_grad_f64, x, y, \
                          dout, axis, dx, dy);                                               \
    }
GRAD_OPS_BUT_ADD(DEF_GRAD_API) /* add's is below */

/* elementwise_add_grad's fast path. dX = dOut where X is not broadcast (its shape is Out's):
 * then dX shares dOut's buffer (tensors are immutable, as reshape's views are), with no copy.
 * A broadcast operand's gradient is dOut summed over the broadcast dims, accumulated in the
 * same order as the reference loop (add_grad_*), so the results are the same; the common runs
 * (a contiguous row added into a bias' gradient, or a run summed into one element) are plain
 * loops the compiler vectorises. */
#define ADD_ACC_LOOP(name, T, OFF, STRIDE, D)                                                \
    static void name(void *c, int64_t xo, int64_t yo, int64_t oo, int64_t n, int64_t sx,      \
                     int64_t sy) {                                                           \
        Ctx *k = c;                                                                          \
        (void)xo, (void)yo, (void)sx, (void)sy;                                              \
        const T *g = (const T *)k->g + oo;                                                   \
        T *restrict d = (T *)k->D + (OFF);                                                   \
        int64_t s = (STRIDE);                                                                \
        if (s == 1) {                                                                        \
            for (int64_t i = 0; i < n; i++) d[i] += g[i];                                    \
        } else if (s == 0) {                                                                 \
            T acc = d[0];                                                                    \
            for (int64_t i = 0; i < n; i++) acc += g[i];                                     \
            d[0] = acc;                                                                      \
        } else {                                                                             \
            for (int64_t i = 0; i < n; i++) d[i * s] += g[i];                                \
        }                                                                                    \
    }
ADD_ACC_LOOP(add_acc_x_f32, float, xo, sx, dx)
ADD_ACC_LOOP(add_acc_y_f32, float, yo, sy, dy)
ADD_ACC_LOOP(add_acc_x_f64, double, xo, sx, dx)
ADD_ACC_LOOP(add_acc_y_f64, double, yo, sy, dy)

/* A bias' gradient: dOut [rows, cols] summed over its rows into d [cols], on the kernel pool in
 * chunks of columns. Each column is summed over the rows in order by one thread, as the serial
 * loop does, so the cut changes no bit. */
typedef struct ColSumJob {
    bool f32;
    const void *g;
    void *d;
    int64_t rows, cols;
} ColSumJob;

static void col_sum_chunk(void *arg, int64_t lo, int64_t hi) {
    const ColSumJob *j = arg;
    for (int64_t r = 0; r < j->rows; r++) {
        if (j->f32) {
            const float *g = (const float *)j->g + r * j->cols;
            float *restrict d = j->d;
            for (int64_t c = lo; c < hi; c++) d[c] += g[c];
        } else {
            const double *g = (const double *)j->g + r * j->cols;
            double *restrict d = j->d;
            for (int64_t c = lo; c < hi; c++) d[c] += g[c];
        }
    }
}

/* A channel's bias gradient: dOut [outer, cols, run] summed into d [cols] (Y [C] added with
 * axis 1 into X [N, C, H, W]), on the kernel pool in chunks of channels. Each channel is summed
 * over the outer dim, then along its run, in the order add_acc_*_f32's serial loop takes, so the
 * cut changes no bit. */
typedef struct ChanSumJob {
    bool f32;
    const void *g;
    void *d;
    int64_t outer, cols, run;
} ChanSumJob;

static void chan_sum_chunk(void *arg, int64_t lo, int64_t hi) {
    const ChanSumJob *j = arg;
    for (int64_t r = 0; r < j->outer; r++) {
        for (int64_t c = lo; c < hi; c++) {
            int64_t off = (r * j->cols + c) * j->run;
            if (j->f32) {
                const float *g = (const float *)j->g + off;
                float *d = (float *)j->d + c, acc = *d;
                for (int64_t i = 0; i < j->run; i++) acc += g[i];
                *d = acc;
            } else {
                const double *g = (const double *)j->g + off;
                double *d = (double *)j->d + c, acc = *d;
                for (int64_t i = 0; i < j->run; i++) acc += g[i];
                *d = acc;
            }
        }
    }
}

static bool is_out_shape(const FlTensor *t, const KBcast *b) {
    return t->ndim == b->ondim && memcmp(t->ne, b->one, sizeof(int64_t) * (size_t)b->ondim) == 0;
}

FlStatus fl_kernel_elementwise_add_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                                        const FlTensor *dout, int axis, FlTensor *dx,
                                        FlTensor *dy) {
    const char *op = "elementwise_add_grad";
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Y", y) ||
        ksame_dtype(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    KBcast b;
    if (kbcast_plan(e, op, x, y, axis, &b)) return FL_ERROR;
    if (!is_out_shape(dout, &b))
        return fl_err(e, "%s: Out@GRAD %s differs from the output shape %s of X %s and Y %s", op,
                      fl_tensor_shape(dout).s, fl_shape_str(b.ondim, b.one).s,
                      fl_tensor_shape(x).s, fl_tensor_shape(y).s);
    bool f32 = x->dtype == FL_DT_FLOAT32;
    const FlTensor *in[2] = {x, y};
    FlTensor *want[2] = {dx, dy}, r[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
    for (int k = 0; k < 2; k++) {
        if (!want[k]) continue;
        if (is_out_shape(in[k], &b)) {
            fl_tensor_ref(&r[k], dout);
            continue;
        }
        if (kalloc_like(e, op, &r[k], in[k])) { /* zero-filled: the sums start at 0 */
            fl_tensor_fini(&r[0]);
            return FL_ERROR;
        }
        const int64_t *st = k == 0 ? b.sx : b.sy;
        if (b.nd == 2 && st[0] == 0 && st[1] == 1) { /* a bias: [cols] against [rows, cols] */
            ColSumJob j = {f32, fl_tensor_data(dout), fl_tensor_data(&r[k]), b.ne[0], b.ne[1]};
            int64_t grain = b.ne[0] > 0 ? EW_GRAIN / b.ne[0] : EW_GRAIN; /* 0 rows: an empty batch */
            fl_par_for(b.ne[1], grain > 16 ? grain : 16, col_sum_chunk, &j);
            continue;
        }
        if (b.nd == 3 && st[0] == 0 && st[1] == 1 && st[2] == 0) { /* [C] into [N, C, HW] */
            ChanSumJob j = {f32, fl_tensor_data(dout), fl_tensor_data(&r[k]), b.ne[0], b.ne[1],
                            b.ne[2]};
            int64_t per = b.ne[0] * b.ne[2], grain = per > 0 ? EW_GRAIN / per : EW_GRAIN;
            fl_par_for(b.ne[1], grain > 1 ? grain : 1, chan_sum_chunk, &j);
            continue;
        }
        Ctx c = {.g = fl_tensor_data(dout), .dx = k == 0 ? fl_tensor_data(&r[k]) : NULL,
                 .dy = k == 1 ? fl_tensor_data(&r[k]) : NULL};
        kbcast_run(&b, k == 0 ? (f32 ? add_acc_x_f32 : add_acc_x_f64)
                              : (f32 ? add_acc_y_f32 : add_acc_y_f64), &c);
    }
    if (dx) kout(dx, &r[0]);
    if (dy) kout(dy, &r[1]);
    return FL_OK;
}
FlStatus fl_kernel_elementwise_add_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *y,
                                            const FlTensor *dout, int axis, FlTensor *dx,
                                            FlTensor *dy) {
    return arith_grad(e, "elementwise_add_grad", add_grad_f32, add_grad_f64, x, y, dout, axis,
                      dx, dy);
}
