/* test_kernel_threads.c: the kernels' thread pool (runtime/kernels/par.h) and the kernels on it.
 * The pool really runs chunks on two threads; a chunk's nested kernels stay serial; bad sizes
 * are errors; kernels with a pool of 2 give the same bits run to run, the same bits as serially
 * where the cut cannot change a result (element-wise, optimizer updates, sums, conv2d's im2col
 * path over images, softmax and its gradient over rows, a bias' gradient over columns, an LSTM
 * step's gates over rows) and the same within
 * float rounding where it can (GEMM blocks, oneDNN's team of 2); and many threads sharing one
 * pool at once get exactly the results a lone thread gets (labelled concurrency: TSan runs it). */
#include <pthread.h>
#include <time.h>

#include "runtime/kernels/kernels_rnn.h"
#include "runtime/kernels/par.h"
#include "tests/runtime/kernels/kt.h"

#define F FL_DT_FLOAT32
static FlRng rng;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Chunk 0 waits (up to 20 s) until chunk 1 has started: only a second thread can start it. */
typedef struct TwoCtx {
    pthread_t who[2];
    atomic_int started[2];
    int width_inside, nested_order[3], nested_n;
    bool timed_out;
} TwoCtx;

static void nested_chunk(void *arg, int c) {
    TwoCtx *t = arg;
    t->nested_order[t->nested_n++] = c; /* serial, in order, on this thread */
}

static void two_chunk(void *arg, int c) {
    TwoCtx *t = arg;
    t->who[c] = pthread_self();
    atomic_store(&t->started[c], 1);
    if (c == 0) {
        double t0 = now();
        while (!atomic_load(&t->started[1]))
            if (now() - t0 > 20) {
                t->timed_out = true;
                break;
            }
        t->width_inside = fl_par_width();
        fl_par_run(3, nested_chunk, t);
    }
}

static void test_pool_two_threads(void) {
    FlErr e;
    FlPar *p = fl_par_new(2, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(fl_par_threads(p), 2);
    CU_ASSERT_EQUAL(fl_par_width(), 1); /* nothing bound yet */
    FlPar *old = fl_par_bind(p);
    CU_ASSERT_PTR_NULL(old);
    CU_ASSERT_EQUAL(fl_par_width(), 2);
    CU_ASSERT_EQUAL(fl_par_chunks(1000, 1000), 1);      /* too little work */
    CU_ASSERT_EQUAL(fl_par_chunks(1 << 20, 1000), 2);   /* at most the width */
    CU_ASSERT_EQUAL(fl_par_blocks(1 << 20, 1 << 16), 16); /* by the work alone */
    for (int rep = 0; rep < 50; rep++) {
        TwoCtx t = {0};
        fl_par_run(2, two_chunk, &t);
        CU_ASSERT(!t.timed_out);
        CU_ASSERT(atomic_load(&t.started[0]) && atomic_load(&t.started[1]));
        CU_ASSERT(!pthread_equal(t.who[0], t.who[1]));
        CU_ASSERT_EQUAL(t.width_inside, 1);
        CU_ASSERT_EQUAL(t.nested_n, 3);
        CU_ASSERT(t.nested_order[0] == 0 && t.nested_order[1] == 1 && t.nested_order[2] == 2);
    }
    /* enter / leave: the width for a library's own threads, and nothing nested goes parallel */
    CU_ASSERT_EQUAL(fl_par_enter(), 2);
    CU_ASSERT_EQUAL(fl_par_width(), 1);
    CU_ASSERT_EQUAL(fl_par_enter(), 1);
    fl_par_leave();
    fl_par_leave();
    CU_ASSERT_EQUAL(fl_par_width(), 2);
    fl_par_bind(NULL);
    CU_ASSERT_EQUAL(fl_par_enter(), 1);
    fl_par_leave();
    fl_par_free(p);
    fl_par_free(NULL);
}

static void test_pool_sizes(void) {
    FlErr e = {{0}};
    CU_ASSERT_PTR_NULL(fl_par_new(0, &e));
    CU_ASSERT_STRING_EQUAL(e.msg, "kernel threads: 0 is out of range (1 to 256)");
    CU_ASSERT_PTR_NULL(fl_par_new(257, &e));
    CU_ASSERT_STRING_EQUAL(e.msg, "kernel threads: 257 is out of range (1 to 256)");
    FlPar *p = fl_par_new(1, &e); /* no workers: everything serial */
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    fl_par_bind(p);
    CU_ASSERT_EQUAL(fl_par_width(), 1);
    fl_par_bind(NULL);
    fl_par_free(p);
    CU_ASSERT(fl_par_cpus() >= 1);
}

static bool bits_equal(const FlTensor *a, const FlTensor *b) {
    return a->dtype == b->dtype && fl_tensor_same_shape(a, b) &&
           memcmp(fl_tensor_data(a), fl_tensor_data(b), fl_tensor_nbytes(a)) == 0;
}

/* The kernels under test, on the inputs of one case; out[k] receives result k. */
typedef struct Case {
    FlTensor x, w, a, b, img, filt, lr, img64, filt64, bias, lx, lw, lb, cbias;
} Case;
enum { NOUT = 18 };
/* The LSTM's batch: 128 sequences of 1 to 4 steps, D = 64 (a step's gate math, up to 128 x 64
 * units, splits into two chunks; its recurrent GEMM, 128x256x64, stays whole) */
enum { LSEQ = 128, LD = 64 };
static int64_t loff[LSEQ + 1];

static void run_kernels(const Case *c, FlTensor *out) {
    KT_OK(fl_kernel_mul(KE, &c->x, &c->w, 1, 1, &out[0]));                  /* GEMM, cut in blocks */
    KT_OK(fl_kernel_elementwise_add(KE, &c->a, &c->b, -1, &out[1]));        /* element-wise */
    KT_OK(fl_kernel_elementwise_mul(KE, &c->a, &c->b, -1, &out[2]));
    KT_OK(fl_kernel_relu(KE, &c->a, &out[3]));
    KT_OK(fl_kernel_sgd(KE, &c->a, &c->b, &c->lr, &out[4]));                /* optimizer update */
    KT_OK(fl_kernel_mean(KE, &c->a, &out[5]));                              /* a sum */
    FlTensor m2 = FL_TENSOR_INIT, b1 = FL_TENSOR_INIT, b2 = FL_TENSOR_INIT;
    KT_OK(fl_kernel_adam(KE, &c->a, &c->b, &c->lr, &c->a, &c->b, &c->lr, &c->lr, 0.9, 0.999, 1e-8,
                         &out[6], &out[7], &m2, &b1, &b2));
    fl_tensor_fini(&m2);
    fl_tensor_fini(&b1);
    fl_tensor_fini(&b2);
    FlConv2dAttrs ca = {.strides = {1, 1}, .paddings = {1, 1}, .dilations = {1, 1}, .groups = 1};
    KT_OK(fl_kernel_conv2d(KE, &c->img, &c->filt, &ca, &out[8]));           /* oneDNN */
    KT_OK(fl_kernel_conv2d(KE, &c->img64, &c->filt64, &ca, &out[9]));       /* im2col, images in chunks */
    KT_OK(fl_kernel_softmax(KE, &c->a, &out[10]));                          /* rows in chunks */
    KT_OK(fl_kernel_softmax_grad(KE, &out[10], &c->b, &out[11]));
    FlTensor dx = FL_TENSOR_INIT;                                           /* a bias' gradient: */
    KT_OK(fl_kernel_elementwise_add_grad(KE, &c->a, &c->bias, &c->b, 1, &dx, &out[12])); /* columns */
    fl_tensor_fini(&dx);
    FlLstmAttrs la = {true, false, FL_RNN_SIGMOID, FL_RNN_TANH, FL_RNN_TANH, FL_RNN_TANH, 0, 0}; /* gates in chunks */
    KT_OK(fl_kernel_lstm(KE, &c->lx, loff, LSEQ, NULL, NULL, &c->lw, &c->lb, &la, &out[13], &out[14], &out[15]));
    /* a conv's bias [16] against [16, 16, 16, 16] (axis 1): channels in chunks */
    KT_OK(fl_kernel_elementwise_add_grad(KE, &c->img, &c->cbias, &c->img, 1, &dx, &out[16]));
    fl_tensor_fini(&dx);
    const FlTensor *const in3[] = {&c->a, &c->b, &c->a}; /* sum: elements in chunks */
    KT_OK(fl_kernel_sum(KE, in3, 3, &out[17]));
}

static Case make_case(void) {
    Case c;
    c.x = kt_rand(&rng, F, 2, (int64_t[]){64, 784}, -1, 1);
    c.w = kt_rand(&rng, F, 2, (int64_t[]){784, 512}, -1, 1);
    c.a = kt_rand(&rng, F, 2, (int64_t[]){512, 600}, -1, 1);
    c.b = kt_rand(&rng, F, 2, (int64_t[]){512, 600}, 0.1, 1);
    c.img = kt_rand(&rng, F, 4, (int64_t[]){16, 16, 16, 16}, -1, 1);
    c.filt = kt_rand(&rng, F, 4, (int64_t[]){16, 16, 3, 3}, -1, 1);
    c.lr = KT_T(F, KT_SHAPE(1), 0.01);
    c.img64 = kt_rand(&rng, FL_DT_FLOAT64, 4, (int64_t[]){8, 16, 12, 12}, -1, 1);
    c.filt64 = kt_rand(&rng, FL_DT_FLOAT64, 4, (int64_t[]){32, 16, 3, 3}, -1, 1);
    c.bias = kt_rand(&rng, F, 1, (int64_t[]){600}, -1, 1);
    c.cbias = kt_rand(&rng, F, 1, (int64_t[]){16}, -1, 1);
    for (int s = 0; s < LSEQ; s++) loff[s + 1] = loff[s] + 1 + (s * 7 + 3) % 4;
    c.lx = kt_rand(&rng, F, 2, (int64_t[]){loff[LSEQ], 4 * LD}, -1, 1);
    c.lw = kt_rand(&rng, F, 2, (int64_t[]){LD, 4 * LD}, -0.5, 0.5);
    c.lb = kt_rand(&rng, F, 2, (int64_t[]){1, 7 * LD}, -0.5, 0.5);
    return c;
}

static void free_case(Case *c) {
    FlTensor all[] = {c->x, c->w, c->a, c->b, c->img, c->filt, c->lr, c->img64, c->filt64, c->bias,
                      c->lx, c->lw, c->lb, c->cbias};
    kt_fini((int)FL_ARRAY_LEN(all), all);
}

static void test_kernels_on_pool(void) {
    FlErr e;
    Case c = make_case();
    FlTensor serial[NOUT], par1[NOUT], par2[NOUT];
    for (int k = 0; k < NOUT; k++) serial[k] = par1[k] = par2[k] = (FlTensor)FL_TENSOR_INIT;
    run_kernels(&c, serial);
    FlPar *p = fl_par_new(2, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    fl_par_bind(p);
    run_kernels(&c, par1);
    run_kernels(&c, par2);
    fl_par_bind(NULL);
    fl_par_free(p);
    for (int k = 0; k < NOUT; k++) {
        if (!bits_equal(&par1[k], &par2[k])) fprintf(stderr, "\nresult %d: two runs on 2 threads differ\n", k);
        CU_ASSERT(bits_equal(&par1[k], &par2[k]));
        /* element-wise, updates, the sum, im2col's images, softmax's rows, the bias
         * gradient's columns, the LSTM's gate rows, a conv bias' gradient's channels and
         * `sum`'s elements: the same bits as serial */
        bool exact = (k >= 1 && k <= 7) || k >= 9;
        double d = kt_rel_diff(&serial[k], &par1[k]);
        if (exact ? !bits_equal(&serial[k], &par1[k]) : !(d <= 1e-5))
            fprintf(stderr, "\nresult %d: 1 and 2 threads differ by %g\n", k, d);
        CU_ASSERT(exact ? bits_equal(&serial[k], &par1[k]) : d <= 1e-5);
    }
    kt_fini(NOUT, serial);
    kt_fini(NOUT, par1);
    kt_fini(NOUT, par2);
    free_case(&c);
}

/* Four threads share one pool of 2 at once (ops of goroutines): each gets the lone run's bits. */
typedef struct Shared {
    FlPar *p;
    const Case *c;
    FlTensor out[NOUT];
} Shared;

static void *shared_thread(void *arg) {
    Shared *s = arg;
    fl_par_bind(s->p);
    for (int rep = 0; rep < 3; rep++) {
        for (int k = 0; k < NOUT; k++) fl_tensor_fini(&s->out[k]);
        run_kernels(s->c, s->out);
    }
    fl_par_bind(NULL);
    return NULL;
}

static void test_pool_shared(void) {
    FlErr e;
    Case c = make_case();
    FlPar *p = fl_par_new(2, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    FlTensor lone[NOUT];
    for (int k = 0; k < NOUT; k++) lone[k] = (FlTensor)FL_TENSOR_INIT;
    fl_par_bind(p);
    run_kernels(&c, lone);
    fl_par_bind(NULL);
    enum { T = 4 };
    Shared s[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        s[i] = (Shared){.p = p, .c = &c};
        for (int k = 0; k < NOUT; k++) s[i].out[k] = (FlTensor)FL_TENSOR_INIT;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, shared_thread, &s[i]), 0);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++) {
        for (int k = 0; k < NOUT; k++) CU_ASSERT(bits_equal(&lone[k], &s[i].out[k]));
        kt_fini(NOUT, s[i].out);
    }
    fl_par_free(p);
    kt_fini(NOUT, lone);
    free_case(&c);
}

int main(void) {
    fl_rng_init(&rng, 7);
    static const KtCase cases[] = {
        KT_TEST(test_pool_two_threads), KT_TEST(test_pool_sizes), KT_TEST(test_kernels_on_pool),
        KT_TEST(test_pool_shared),
    };
    return kt_run("kernel threads", cases, (int)FL_ARRAY_LEN(cases));
}
