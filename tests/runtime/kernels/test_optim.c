/* test_optim.c: the elementwise optimizers of fl_kernel_optim (adagrad, decayed_adagrad, rmsprop
 * plain and centered, adamax, adadelta, ftrl, lars_momentum, lamb) against a float64 reference of each
 * update rule written out here element by element, over 10 steps of random gradients; the
 * float32 kernel follows the same reference closely; in-place and separate outputs agree; bad
 * inputs give their errors. average_accumulates (ModelAverage's sums) against the plain mean of
 * the params of its windows, across window restarts and the 16384th update's move of sum_1. */
#include "tests/runtime/kernels/kt.h"

#define N 7
#define STEPS 10

typedef struct Ref {
    double p[N], s[3][N], bp; /* parameter, states, adamax's Beta1Pow */
} Ref;

/* One step of rule on r (the reference, in plain double arithmetic). */
static void ref_step(FlOptimRule rule, Ref *r, const double *g, double lr, const double *hp) {
    if (rule == FL_OPTIM_LARS_MOMENTUM) {
        double pn = 0, gn = 0;
        for (int i = 0; i < N; i++) {
            pn += r->p[i] * r->p[i];
            gn += g[i] * g[i];
        }
        pn = sqrt(pn);
        gn = sqrt(gn);
        if (pn > 0 && gn > 0) lr = lr * hp[1] * pn / (gn + hp[2] * pn);
    }
    if (rule == FL_OPTIM_LAMB) { /* the moments, r, the norms, then the step */
        double rv[N], pn = 0, rn = 0;
        for (int i = 0; i < N; i++) {
            r->s[0][i] = hp[0] * r->s[0][i] + (1 - hp[0]) * g[i];
            r->s[1][i] = hp[1] * r->s[1][i] + (1 - hp[1]) * g[i] * g[i];
            rv[i] = r->s[0][i] / (sqrt(r->s[1][i]) + hp[2]) + hp[3] * r->p[i];
            pn += r->p[i] * r->p[i];
            rn += rv[i] * rv[i];
        }
        double ratio = pn > 0 && rn > 0 ? sqrt(pn) / sqrt(rn) : 1;
        for (int i = 0; i < N; i++) r->p[i] -= lr * ratio * rv[i];
        return;
    }
    for (int i = 0; i < N; i++) {
        double *p = &r->p[i], *a = &r->s[0][i], *b = &r->s[1][i], *c = &r->s[2][i], gi = g[i];
        switch (rule) {
        case FL_OPTIM_ADAGRAD:
            *a += gi * gi;
            *p -= lr * gi / (sqrt(*a) + hp[0]);
            break;
        case FL_OPTIM_DECAYED_ADAGRAD:
            *a = hp[1] * *a + (1 - hp[1]) * gi * gi;
            *p -= lr * gi / (sqrt(*a) + hp[0]);
            break;
        case FL_OPTIM_RMSPROP: /* a: moment, b: mean square, c: mean grad */
            *b = hp[0] * *b + (1 - hp[0]) * gi * gi;
            if (hp[3] != 0) {
                *c = hp[0] * *c + (1 - hp[0]) * gi;
                *a = hp[2] * *a + lr * gi / sqrt(*b - *c * *c + hp[1]);
            } else {
                *a = hp[2] * *a + lr * gi / sqrt(*b + hp[1]);
            }
            *p -= *a;
            break;
        case FL_OPTIM_ADAMAX:
            *a = hp[0] * *a + (1 - hp[0]) * gi;
            *b = fmax(hp[1] * *b + hp[2], fabs(gi));
            *p -= lr / (1 - r->bp) * *a / *b;
            break;
        case FL_OPTIM_ADADELTA: {
            *a = hp[0] * *a + (1 - hp[0]) * gi * gi;
            double d = -sqrt((*b + hp[1]) / (*a + hp[1])) * gi;
            *b = hp[0] * *b + (1 - hp[0]) * d * d;
            *p += lr * d;
            break;
        }
        case FL_OPTIM_FTRL: {
            double acc = *a + gi * gi;
            double now = pow(acc, -hp[2]), was = pow(*a, -hp[2]);
            *b += gi - (now - was) / lr * *p;
            double sg = *b > 0 ? 1 : *b < 0 ? -1 : 0;
            *p = fabs(*b) > hp[0] ? (hp[0] * sg - *b) / (now / lr + 2 * hp[1]) : 0;
            *a = acc;
            break;
        }
        case FL_OPTIM_LARS_MOMENTUM:
            *a = hp[0] * *a + lr * (gi + hp[2] * *p);
            *p -= *a;
            break;
        case FL_OPTIM_LAMB:
        case FL_OPTIM_COUNT: break;
        }
    }
    if (rule == FL_OPTIM_ADAMAX) r->bp *= hp[0];
}

static int nstates(FlOptimRule rule, const double *hp) {
    switch (rule) {
    case FL_OPTIM_ADAGRAD:
    case FL_OPTIM_DECAYED_ADAGRAD:
    case FL_OPTIM_LARS_MOMENTUM: return 1;
    case FL_OPTIM_RMSPROP: return hp[3] != 0 ? 3 : 2;
    case FL_OPTIM_ADAMAX:
    case FL_OPTIM_ADADELTA:
    case FL_OPTIM_FTRL:
    case FL_OPTIM_LAMB: return 2;
    case FL_OPTIM_COUNT: break;
    }
    return 0;
}

/* Runs rule for STEPS steps in dtype dt (in place when in_place) and compares with the
 * reference after every step: |kernel - ref| <= tol * (1 + |ref|). */
static void check_rule(FlOptimRule rule, const double *hp, double lr, double s_init, FlDType dt,
                       bool in_place, double tol) {
    FlRng rng;
    fl_rng_init(&rng, 42 + (uint64_t)rule);
    int64_t ne[1] = {N};
    int ns = nstates(rule, hp);
    Ref r = {.bp = hp[0]};
    FlTensor p = kt_rand(&rng, dt, 1, ne, -1, 1), st[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    for (int i = 0; i < N; i++) r.p[i] = fl_tensor_get(&p, i);
    for (int k = 0; k < 3; k++) {
        st[k] = kt_rand(&rng, dt, 1, ne, 0, 0);
        for (int i = 0; i < N; i++) {
            fl_tensor_set(&st[k], i, k == 0 ? s_init : 0);
            r.s[k][i] = k == 0 ? s_init : 0;
        }
    }
    FlTensor lrt = KT_T(dt, KT_SHAPE(1), lr), bp = KT_T(dt, KT_SHAPE(1), hp[0]);
    char what[96];
    snprintf(what, sizeof what, "%s %s%s", fl_optim_rule_name(rule), dt == FL_DT_FLOAT32 ? "f32" : "f64",
             in_place ? " in place" : "");
    for (int step = 0; step < STEPS; step++) {
        FlTensor g = kt_rand_away(&rng, dt, 1, ne, 0.05, 2);
        double gv[N];
        for (int i = 0; i < N; i++) gv[i] = fl_tensor_get(&g, i);
        /* the reference reads the gradient at the kernel's precision */
        ref_step(rule, &r, gv, dt == FL_DT_FLOAT32 ? (double)(float)lr : lr, hp);
        FlTensor po = FL_TENSOR_INIT, so[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT}, bpo = FL_TENSOR_INIT;
        FlTensor *outs[3] = {in_place ? &st[0] : &so[0], in_place ? &st[1] : &so[1], in_place ? &st[2] : &so[2]};
        const FlTensor *ins[3] = {&st[0], &st[1], &st[2]};
        KT_OK(fl_kernel_optim(KE, rule, &p, &g, &lrt, ins, &bp, hp, in_place ? &p : &po, outs,
                              in_place ? &bp : &bpo));
        if (!in_place) {
            fl_tensor_fini(&p);
            p = po;
            for (int k = 0; k < ns; k++) {
                fl_tensor_fini(&st[k]);
                st[k] = so[k];
            }
            if (rule == FL_OPTIM_ADAMAX) {
                fl_tensor_fini(&bp);
                bp = bpo;
            } else {
                fl_tensor_fini(&bpo);
            }
        }
        for (int i = 0; i < N; i++) {
            double got = fl_tensor_get(&p, i);
            if (!(fabs(got - r.p[i]) <= tol * (1 + fabs(r.p[i])))) {
                fprintf(stderr, "\n%s: step %d element %d: param %.12g, reference %.12g\n", what, step, i, got, r.p[i]);
                CU_FAIL("parameter differs from the reference");
                step = STEPS;
                break;
            }
            for (int k = 0; k < ns; k++) {
                double sv = fl_tensor_get(&st[k], i);
                if (!(fabs(sv - r.s[k][i]) <= tol * (1 + fabs(r.s[k][i])))) {
                    fprintf(stderr, "\n%s: step %d element %d: state %d %.12g, reference %.12g\n", what, step, i, k, sv, r.s[k][i]);
                    CU_FAIL("state differs from the reference");
                    step = STEPS;
                    break;
                }
            }
        }
        if (rule == FL_OPTIM_ADAMAX) CU_ASSERT(fabs(fl_tensor_get(&bp, 0) - r.bp) <= tol);
        fl_tensor_fini(&g);
    }
    FlTensor all[] = {p, st[0], st[1], st[2], lrt, bp};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void check_all_modes(FlOptimRule rule, const double *hp, double lr, double s_init) {
    check_rule(rule, hp, lr, s_init, FL_DT_FLOAT64, false, 1e-12);
    check_rule(rule, hp, lr, s_init, FL_DT_FLOAT64, true, 1e-12);
    check_rule(rule, hp, lr, s_init, FL_DT_FLOAT32, true, 2e-4);
}

static void test_adagrad(void) {
    check_all_modes(FL_OPTIM_ADAGRAD, (double[]){1e-6, 0, 0, 0}, 0.1, 0);
    check_all_modes(FL_OPTIM_ADAGRAD, (double[]){1e-6, 0, 0, 0}, 0.1, 0.5); /* initial_accumulator_value */
}
static void test_decayed_adagrad(void) {
    check_all_modes(FL_OPTIM_DECAYED_ADAGRAD, (double[]){1e-6, 0.95, 0, 0}, 0.05, 0);
}
static void test_rmsprop(void) {
    check_all_modes(FL_OPTIM_RMSPROP, (double[]){0.95, 1e-6, 0, 0}, 0.01, 0);
    check_all_modes(FL_OPTIM_RMSPROP, (double[]){0.9, 1e-6, 0.8, 0}, 0.01, 0);   /* momentum */
    check_all_modes(FL_OPTIM_RMSPROP, (double[]){0.9, 1e-6, 0.5, 1}, 0.01, 0);   /* centered */
}
static void test_adamax(void) {
    check_all_modes(FL_OPTIM_ADAMAX, (double[]){0.9, 0.999, 1e-8, 0}, 0.002, 0);
}
static void test_adadelta(void) {
    check_all_modes(FL_OPTIM_ADADELTA, (double[]){0.95, 1e-6, 0, 0}, 1.0, 0);
    check_all_modes(FL_OPTIM_ADADELTA, (double[]){0.9, 1e-4, 0, 0}, 0.5, 0);
}
static void test_ftrl(void) {
    check_all_modes(FL_OPTIM_FTRL, (double[]){0.0, 0.0, -0.5, 0}, 0.1, 0);
    check_all_modes(FL_OPTIM_FTRL, (double[]){0.05, 0.1, -0.5, 0}, 0.1, 0);  /* l1 shrinks to 0 */
    check_all_modes(FL_OPTIM_FTRL, (double[]){0.01, 0.01, -0.7, 0}, 0.2, 0.1); /* other lr_power */
}
static void test_lars_momentum(void) {
    check_all_modes(FL_OPTIM_LARS_MOMENTUM, (double[]){0.9, 0.001, 0.0005, 0}, 1.0, 0);
    check_all_modes(FL_OPTIM_LARS_MOMENTUM, (double[]){0.5, 0.1, 0.01, 0}, 0.3, 0);
}

static void test_lamb(void) {
    check_all_modes(FL_OPTIM_LAMB, (double[]){0.9, 0.999, 1e-6, 0.01}, 0.01, 0);
    check_all_modes(FL_OPTIM_LAMB, (double[]){0.5, 0.9, 1e-3, 0}, 0.3, 0);   /* no weight decay */
    check_all_modes(FL_OPTIM_LAMB, (double[]){0.0, 0.0, 0.1, 2.0}, 1.0, 0);  /* no memory, large decay */
}

static void test_errors(void) {
    FlTensor p = KT_T(FL_DT_FLOAT64, KT_SHAPE(2), 1, 2), g3 = KT_T(FL_DT_FLOAT64, KT_SHAPE(3), 1, 2, 3);
    FlTensor m = KT_T(FL_DT_FLOAT64, KT_SHAPE(2), 0, 0), u = KT_T(FL_DT_FLOAT64, KT_SHAPE(2), 0, 0);
    FlTensor lr = KT_T(FL_DT_FLOAT64, KT_SHAPE(1), 0.1), lr0 = KT_T(FL_DT_FLOAT64, KT_SHAPE(1), 0);
    FlTensor one = KT_T(FL_DT_FLOAT64, KT_SHAPE(1), 1), g = KT_T(FL_DT_FLOAT64, KT_SHAPE(2), 1, 1);
    const FlTensor *st[3] = {&m, &u, NULL};
    FlTensor *so[3] = {&m, &u, NULL};
    double hp[4] = {0.9, 0.999, 1e-8, 0};
    FlErr e;
    CU_ASSERT_EQUAL(fl_kernel_optim(&e, FL_OPTIM_ADAGRAD, &p, &g3, &lr, st, NULL, hp, &p, so, NULL), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "adagrad: Param [2] and Grad [3] must have the same shape");
    CU_ASSERT_EQUAL(fl_kernel_optim(&e, FL_OPTIM_ADAMAX, &p, &g, &lr, st, &one, hp, &p, so, NULL), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "adamax: Beta1Pow is 1, so 1 - Beta1Pow divides by zero");
    CU_ASSERT_EQUAL(fl_kernel_optim(&e, FL_OPTIM_FTRL, &p, &g, &lr0, st, NULL, hp, &p, so, NULL), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "ftrl: the learning rate is 0 (ftrl divides by it)");
    const FlTensor *st_bad[3] = {&g3, &u, NULL};
    CU_ASSERT_EQUAL(fl_kernel_optim(&e, FL_OPTIM_ADADELTA, &p, &g, &lr, st_bad, NULL, hp, &p, so, NULL), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "adadelta: Param [2] and AvgSquaredGrad [3] must have the same shape");
    /* a failed call leaves its inputs alone */
    CU_ASSERT_EQUAL(fl_tensor_get(&p, 0), 1);
    CU_ASSERT_EQUAL(fl_tensor_get(&m, 0), 0);
    FlTensor all[] = {p, g3, m, u, lr, lr0, one, g};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

/* ---- average_accumulates (ModelAverage) ----
 * The reference keeps every param it was given and the two windows' bounds: the average is the
 * plain mean of the params from the start of the last completed window (0 before any) to now,
 * whatever the kernel did with its three sums. */
#define AVG_STEPS 60
typedef struct AvgRef {
    double p[AVG_STEPS][N];
    int64_t n, prev, cur; /* params held; the last completed window's start; the current one's */
    int64_t updates;      /* num_updates */
} AvgRef;

static void avg_ref_step(AvgRef *r, const FlTensor *param, double rate, int64_t min_w, int64_t max_w) {
    for (int i = 0; i < N; i++) r->p[r->n][i] = fl_tensor_get(param, i);
    r->n++;
    r->updates++;
    int64_t acc = r->n - r->cur;
    double w = floor((double)r->updates * rate);
    if (acc >= min_w && (double)acc >= fmin((double)max_w, w)) {
        r->prev = r->cur;
        r->cur = r->n;
    }
}

/* Steps the kernel from counters (0, 0, updates0) with random params; after each step the
 * average from its sums and counters is the reference's. Returns how many steps moved sum_1
 * into sum_2 without restarting (so the caller knows the shuffle was crossed). */
static int check_average(FlDType dt, bool in_place, double rate, int64_t min_w, int64_t max_w, int64_t updates0,
                         double tol) {
    static AvgRef r;
    memset(&r, 0, sizeof r);
    r.updates = updates0;
    FlRng rng;
    fl_rng_init(&rng, 7);
    FlTensor s[3], c[3], so[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT},
                         co[3] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    for (int k = 0; k < 3; k++) {
        s[k] = kt_rand(&rng, dt, 1, (int64_t[]){N}, 0, 0);
        c[k] = KT_T(FL_DT_INT64, KT_SHAPE(1), k == 2 ? (double)updates0 : 0);
    }
    int shuffles = 0;
    for (int step = 0; step < AVG_STEPS; step++) {
        FlTensor p = kt_rand(&rng, dt, 1, (int64_t[]){N}, -2, 2);
        avg_ref_step(&r, &p, rate, min_w, max_w);
        const FlTensor *si[3] = {&s[0], &s[1], &s[2]}, *ci[3] = {&c[0], &c[1], &c[2]};
        FlTensor *sout[3], *cout[3];
        for (int k = 0; k < 3; k++) {
            sout[k] = in_place ? &s[k] : &so[k];
            cout[k] = in_place ? &c[k] : &co[k];
        }
        KT_OK(fl_kernel_average_accumulates(KE, &p, si, ci, rate, min_w, max_w, sout, cout));
        if (!in_place)
            for (int k = 0; k < 3; k++) {
                fl_tensor_fini(&s[k]);
                fl_tensor_fini(&c[k]);
                s[k] = so[k];
                c[k] = co[k];
                so[k] = co[k] = (FlTensor)FL_TENSOR_INIT;
            }
        int64_t acc = (int64_t)fl_tensor_get(&c[0], 0), old = (int64_t)fl_tensor_get(&c[1], 0);
        CU_ASSERT_EQUAL(acc, r.n - r.cur);
        CU_ASSERT_EQUAL(old, r.cur - r.prev);
        CU_ASSERT_EQUAL((int64_t)fl_tensor_get(&c[2], 0), r.updates);
        if (r.updates % FL_AVERAGE_MAX_ACCUMULATES == 0 && acc > 0) {
            shuffles++;
            for (int i = 0; i < N; i++) CU_ASSERT_EQUAL(fl_tensor_get(&s[0], i), 0);
        }
        for (int i = 0; i < N; i++) {
            double ref = 0;
            for (int64_t t = r.prev; t < r.n; t++) ref += r.p[t][i];
            ref /= (double)(r.n - r.prev);
            double got = (fl_tensor_get(&s[0], i) + fl_tensor_get(&s[1], i) + fl_tensor_get(&s[2], i)) /
                         (double)(acc + old);
            if (!(fabs(got - ref) <= tol * (1 + fabs(ref)))) {
                fprintf(stderr, "\naverage_accumulates step %d (num_updates %lld) element %d: %.12g, reference %.12g\n",
                        step, (long long)r.updates, i, got, ref);
                CU_FAIL("the average differs from the reference");
                step = AVG_STEPS;
                break;
            }
        }
        fl_tensor_fini(&p);
    }
    FlTensor all[] = {s[0], s[1], s[2], c[0], c[1], c[2]};
    kt_fini((int)FL_ARRAY_LEN(all), all);
    return shuffles;
}

static void test_average_accumulates(void) {
    for (int m = 0; m < 3; m++) {
        FlDType dt = m == 2 ? FL_DT_FLOAT32 : FL_DT_FLOAT64;
        double tol = m == 2 ? 1e-5 : 1e-12;
        /* windows of min(5, 0.3 * num_updates) params, at least 2: a dozen restarts */
        CU_ASSERT_EQUAL(check_average(dt, m == 1, 0.3, 2, 5, 0, tol), 0);
        /* from num_updates 16360: windows of 5, the 16384th update moves sum_1 into sum_2 mid-window */
        CU_ASSERT_EQUAL(check_average(dt, m == 1, 1.0, 5, 5, 16360, tol), 1);
        /* windows of 4: the 16384th update both moves sum_1 and restarts the window */
        CU_ASSERT_EQUAL(check_average(dt, m == 1, 1.0, 4, 4, 16360, tol), 0);
        /* the rate decides (max 1000): windows grow with num_updates */
        CU_ASSERT_EQUAL(check_average(dt, m == 1, 0.5, 1, 1000, 0, tol), 0);
    }
}

static void test_average_errors(void) {
    FlTensor p = KT_T(FL_DT_FLOAT64, KT_SHAPE(2), 1, 2), s = KT_T(FL_DT_FLOAT64, KT_SHAPE(2), 0, 0);
    FlTensor s3 = KT_T(FL_DT_FLOAT64, KT_SHAPE(3), 0, 0, 0), z = KT_T(FL_DT_INT64, KT_SHAPE(1), 0);
    FlTensor f = KT_T(FL_DT_FLOAT32, KT_SHAPE(1), 0), neg = KT_T(FL_DT_INT64, KT_SHAPE(1), -1);
    FlTensor o[6] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    FlTensor *so[3] = {&o[0], &o[1], &o[2]}, *co[3] = {&o[3], &o[4], &o[5]};
    const FlTensor *sums[3] = {&s, &s, &s}, *bad_sums[3] = {&s, &s3, &s};
    const FlTensor *counts[3] = {&z, &z, &z}, *float_count[3] = {&z, &f, &z}, *neg_count[3] = {&z, &z, &neg};
    KT_ERR(fl_kernel_average_accumulates(KE, &p, sums, counts, 0.1, 5, 4, so, co),
           "average_accumulates: min_average_window 5 is larger than max_average_window 4");
    KT_ERR(fl_kernel_average_accumulates(KE, &p, bad_sums, counts, 0.1, 1, 4, so, co),
           "average_accumulates: Param [2] and in_sum_2 [3] must have the same shape");
    KT_ERR(fl_kernel_average_accumulates(KE, &p, sums, float_count, 0.1, 1, 4, so, co),
           "average_accumulates: in_old_num_accumulates must be an int64 tensor of one element");
    KT_ERR(fl_kernel_average_accumulates(KE, &p, sums, neg_count, 0.1, 1, 4, so, co),
           "average_accumulates: in_num_updates is negative (-1)");
    for (int k = 0; k < 6; k++) CU_ASSERT(!fl_tensor_has_data(&o[k]));
    FlTensor all[] = {p, s, s3, z, f, neg};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

int main(void) {
    static const KtCase cases[] = {
        KT_TEST(test_adagrad),  KT_TEST(test_decayed_adagrad), KT_TEST(test_rmsprop),
        KT_TEST(test_adamax),   KT_TEST(test_adadelta),        KT_TEST(test_ftrl),
        KT_TEST(test_lars_momentum), KT_TEST(test_lamb), KT_TEST(test_errors), KT_TEST(test_average_accumulates),
        KT_TEST(test_average_errors),
    };
    return kt_run("optim", cases, (int)FL_ARRAY_LEN(cases));
}
