/* test_optim.c: the elementwise optimizers of fl_kernel_optim (adagrad, decayed_adagrad, rmsprop
 * plain and centered, adamax, adadelta, ftrl, lars_momentum) against a float64 reference of each
 * update rule written out here element by element, over 10 steps of random gradients; the
 * float32 kernel follows the same reference closely; in-place and separate outputs agree; bad
 * inputs give their errors. */
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
    case FL_OPTIM_FTRL: return 2;
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

int main(void) {
    static const KtCase cases[] = {
        KT_TEST(test_adagrad),  KT_TEST(test_decayed_adagrad), KT_TEST(test_rmsprop),
        KT_TEST(test_adamax),   KT_TEST(test_adadelta),        KT_TEST(test_ftrl),
        KT_TEST(test_lars_momentum), KT_TEST(test_errors),
    };
    return kt_run("optim", cases, (int)FL_ARRAY_LEN(cases));
}
