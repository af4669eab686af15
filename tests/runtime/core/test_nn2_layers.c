/* test_nn2_layers.c: Fluid layers run as programs, against plain references: layers.auc over
 * several fed batches (global and sliding-window AUC against a brute-force pair count),
 * accuracy's correct/total vars, cross_entropy's ignore_index, batch_norm's NHWC layout,
 * label_smooth, scaled_dot_product_attention's forward values, and fluid.metrics. */
#include "tests/runtime/core/ct.h"

#include <math.h>

#include "runtime/rng.h"

#define HEAD "import fluid\nfrom fluid import layers, nets\n"

/* Runs one step with the feeds and fetches (each fetch tensor replaced). */
static void run(Ct *c, const FlFeed *feeds, size_t nf, FlFetch *f, size_t n) {
    FlErr e = {{0}};
    for (size_t i = 0; i < n; i++) fl_tensor_fini(&f[i].tensor);
    CT_OK(fl_executor_run(c->ex, c->scope, feeds, nf, f, n, &e), &e);
}

/* AUC by counting pairs: a positive ranked above a negative counts 1, a tie 1/2 (ranks are the
 * bins the op uses: floor(p * T)). */
static double brute_auc(const double *p, const int *lab, int n, int T) {
    double good = 0, pairs = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (!lab[i] || lab[j]) continue;
            long bi = (long)(p[i] * T), bj = (long)(p[j] * T);
            good += bi > bj ? 1 : bi == bj ? 0.5 : 0;
            pairs++;
        }
    return pairs ? good / pairs : 0;
}

/* layers.auc over x [N, 2] and lab [N, 1] with the arguments ARGS */
#define AUC_PROGRAM(ARGS)                                                                                  \
    HEAD "x = layers.data(name=\"x\", shape=[2])\n"                                                        \
         "lab = layers.data(name=\"lab\", shape=[1], dtype=\"int64\")\n"                                   \
         "auc, batch_auc, stats = layers.auc(x, lab, " ARGS ")\n"

/* Feeds B rows: x [B, 2] = (1 - p, p) as float32 (pred[i] becomes what the op bins), lab [B, 1]
 * = labs; fetches f. */
static void feed_binary(Ct *c, double *pred, const int *labs, int B, FlFetch *f, size_t nf) {
    double xv[2 * 64], lv[64];
    CU_ASSERT_FATAL(B <= 64);
    for (int i = 0; i < B; i++) xv[2 * i] = 1 - pred[i], xv[2 * i + 1] = pred[i], lv[i] = labs[i];
    FlTensor xt = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){B, 2}, xv);
    FlTensor lt = ct_tensor(FL_DT_INT64, 2, (int64_t[]){B, 1}, lv);
    for (int i = 0; i < B; i++) pred[i] = fl_tensor_get(&xt, 2 * i + 1);
    FlFeed feeds[2] = {{"x", &xt}, {"lab", &lt}};
    run(c, feeds, 2, f, nf);
    fl_tensor_fini(&xt);
    fl_tensor_fini(&lt);
}

/* PR AUC from the rows: for each distinct bin from the highest, the rows at or above it give a
 * (recall, precision) point; trapezoids from (0, 1) through them. */
static double brute_pr_auc(const double *p, const int *lab, int n, int T) {
    double area = 0, rec0 = 0, prec0 = 1, npos = 0;
    for (int i = 0; i < n; i++) npos += lab[i];
    for (long t = T; t >= 0 && npos > 0; t--) {
        double tp = 0, sel = 0, here = 0;
        for (int i = 0; i < n; i++) {
            long b = (long)(p[i] * T);
            here += b == t;
            if (b >= t) sel++, tp += lab[i];
        }
        if (!here) continue;
        area += (tp / npos - rec0) * (tp / sel + prec0) / 2;
        rec0 = tp / npos, prec0 = tp / sel;
    }
    return area;
}

static void test_auc_pr(void) {
    Ct c = ct_open("auc_pr.fl", AUC_PROGRAM("curve=\"PR\", num_thresholds=30"));
    enum { B = 8, STEPS = 3 };
    double pred[STEPS * B];
    int labs[STEPS * B];
    FlRng r;
    fl_rng_init(&r, 5);
    FlFetch f[1] = {{"auc_1.tmp_0", FL_TENSOR_INIT}};
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < B; i++) {
            int k = s * B + i;
            labs[k] = fl_rng_uniform(&r) < 0.4;
            pred[k] = labs[k] ? 0.2 + 0.8 * fl_rng_uniform(&r) : 0.8 * fl_rng_uniform(&r);
        }
        feed_binary(&c, pred + s * B, labs + s * B, B, f, 1);
        double want = brute_pr_auc(pred, labs, (s + 1) * B, 30);
        CU_ASSERT(want > 0.3 && want < 1); /* a curve, not a corner */
        CT_NEAR(fl_tensor_get(&f[0].tensor, 0), want, 1e-12);
    }
    fl_tensor_fini(&f[0].tensor);
    ct_close(&c);
}

static void test_auc(void) {
    Ct c = ct_open("auc.fl", AUC_PROGRAM("num_thresholds=20, slide_steps=2"));
    enum { B = 6, STEPS = 4 };
    double pred[STEPS * B];
    int labs[STEPS * B];
    FlRng r;
    fl_rng_init(&r, 21);
    FlFetch f[2] = {{"auc_1.tmp_0", FL_TENSOR_INIT}, {"auc_0.tmp_0", FL_TENSOR_INIT}};
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < B; i++) {
            int k = s * B + i;
            labs[k] = fl_rng_uniform(&r) < 0.5;
            /* positives lean high, with overlap; some exact bin ties */
            pred[k] = labs[k] ? 0.3 + 0.7 * fl_rng_uniform(&r) : 0.7 * fl_rng_uniform(&r);
            if (i == 0) pred[k] = 0.5;
        }
        feed_binary(&c, pred + s * B, labs + s * B, B, f, 2);
        CU_ASSERT_EQUAL(f[0].tensor.dtype, FL_DT_FLOAT64);
        double whole = brute_auc(pred, labs, (s + 1) * B, 20);
        int first = s > 0 ? (s - 1) * B : 0;
        double window = brute_auc(pred + first, labs + first, (s + 1) * B - first, 20);
        CT_NEAR(fl_tensor_get(&f[0].tensor, 0), whole, 1e-12);
        CT_NEAR(fl_tensor_get(&f[1].tensor, 0), window, 1e-12);
    }
    /* the global counts hold every row once */
    double total = 0;
    for (int b = 0; b <= 20; b++) total += ct_get(c.scope, "auc_stat_pos_0", b) + ct_get(c.scope, "auc_stat_neg_0", b);
    CT_NEAR(total, STEPS * B, 0);
    fl_tensor_fini(&f[0].tensor);
    fl_tensor_fini(&f[1].tensor);
    ct_close(&c);
}

static void test_accuracy_counts_and_ignore(void) {
    Ct c = ct_open("acc.fl", HEAD "p = layers.data(name=\"p\", shape=[3])\n"
                                  "lab = layers.data(name=\"lab\", shape=[1], dtype=\"int64\")\n"
                                  "cor = layers.fill_constant(shape=[1], dtype=\"int64\", value=0)\n"
                                  "tot = layers.fill_constant(shape=[1], dtype=\"int64\", value=0)\n"
                                  "acc = layers.accuracy(p, lab, k=1, correct=cor, total=tot)\n"
                                  "ce = layers.cross_entropy(p, lab, ignore_index=2)\n"
                                  "sm = layers.label_smooth(layers.fill_constant(shape=[2, 4], dtype=\"float32\", value=1.0), epsilon=0.2)\n");
    double pv[] = {0.2, 0.5, 0.3, 0.6, 0.1, 0.3, 0.1, 0.1, 0.8, 0.3, 0.3, 0.4}, lv[] = {1, 1, 2, 2};
    FlTensor pt = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){4, 3}, pv), lt = ct_tensor(FL_DT_INT64, 2, (int64_t[]){4, 1}, lv);
    FlFeed feeds[2] = {{"p", &pt}, {"lab", &lt}};
    FlFetch f[5] = {{"cor", FL_TENSOR_INIT}, {"tot", FL_TENSOR_INIT}, {"acc", FL_TENSOR_INIT}, {"ce", FL_TENSOR_INIT},
                    {"sm", FL_TENSOR_INIT}};
    /* the stdlib names its outputs; find them by the program's own names */
    f[0].name = "fill_constant_0.tmp_0";
    f[1].name = "fill_constant_1.tmp_0";
    f[2].name = "accuracy_0.tmp_0";
    f[3].name = "cross_entropy_0.tmp_0";
    f[4].name = "scale_0.tmp_0";
    run(&c, feeds, 2, f, 5);
    CT_NEAR(fl_tensor_get(&f[0].tensor, 0), 3, 0); /* rows 0, 2 and 3 pick their label */
    CT_NEAR(fl_tensor_get(&f[1].tensor, 0), 4, 0);
    CT_NEAR(fl_tensor_get(&f[2].tensor, 0), 0.75, 1e-7);
    CT_NEAR(fl_tensor_get(&f[3].tensor, 0), -log(0.5), 1e-6);
    CT_NEAR(fl_tensor_get(&f[3].tensor, 1), -log(0.1), 1e-6);
    CT_NEAR(fl_tensor_get(&f[3].tensor, 2), 0, 0); /* label 2 is ignored */
    CT_NEAR(fl_tensor_get(&f[3].tensor, 3), 0, 0);
    CT_NEAR(fl_tensor_get(&f[4].tensor, 0), 0.8 + 0.2 / 4, 1e-7);
    for (int i = 0; i < 5; i++) fl_tensor_fini(&f[i].tensor);
    fl_tensor_fini(&pt);
    fl_tensor_fini(&lt);
    ct_close(&c);
}

/* batch_norm over NHWC equals batch_norm over the NCHW transpose, transposed back; both in
 * training mode (batch statistics) and the running mean they update. */
static void test_batch_norm_nhwc(void) {
    Ct c = ct_open("bn.fl", HEAD "x = layers.data(name=\"x\", shape=[2, 3, 2, 4], append_batch_size=False)\n"
                                 "a = layers.batch_norm(x, data_layout=\"NHWC\", name=\"bn_a\")\n"
                                 "t = layers.batch_norm(layers.transpose(x, [0, 3, 1, 2]), name=\"bn_b\")\n"
                                 "b = layers.transpose(t, [0, 2, 3, 1])\n");
    FlRng r;
    fl_rng_init(&r, 5);
    double xv[48];
    for (int i = 0; i < 48; i++) xv[i] = 4 * fl_rng_uniform(&r) - 2 + (i % 4); /* per-channel offsets */
    FlTensor xt = ct_tensor(FL_DT_FLOAT32, 4, (int64_t[]){2, 3, 2, 4}, xv);
    FlFeed feed = {"x", &xt};
    FlFetch f[2] = {{"transpose_1.tmp_0", FL_TENSOR_INIT}, {"transpose_3.tmp_0", FL_TENSOR_INIT}};
    run(&c, &feed, 1, f, 2);
    CU_ASSERT_TRUE(fl_tensor_same_shape(&f[0].tensor, &xt));
    CU_ASSERT_TRUE(fl_tensor_same_shape(&f[1].tensor, &xt));
    double mean0 = 0;
    for (int i = 0; i < 48; i++) {
        CT_NEAR(fl_tensor_get(&f[0].tensor, i), fl_tensor_get(&f[1].tensor, i), 1e-6);
        if (i % 4 == 0) mean0 += fl_tensor_get(&f[0].tensor, i) / 12;
    }
    CT_NEAR(mean0, 0, 1e-6); /* channel 0 (the last dim) is normalised */
    for (int ch = 0; ch < 4; ch++) CT_NEAR(ct_get(c.scope, "bn_a.w_1", ch), ct_get(c.scope, "bn_b.w_1", ch), 1e-6);
    fl_tensor_fini(&f[0].tensor);
    fl_tensor_fini(&f[1].tensor);
    fl_tensor_fini(&xt);
    ct_close(&c);
}

/* softmax(Q K^T / sqrt(3)) V, written out. */
static void test_attention_values(void) {
    Ct c = ct_open("att.fl", HEAD "q = layers.data(name=\"q\", shape=[2, 3], dtype=\"float64\")\n"
                                  "k = layers.data(name=\"k\", shape=[4, 3], dtype=\"float64\")\n"
                                  "v = layers.data(name=\"v\", shape=[4, 2], dtype=\"float64\")\n"
                                  "out = nets.scaled_dot_product_attention(q, k, v)\n");
    FlRng r;
    fl_rng_init(&r, 6);
    double qv[12], kv[24], vv[16];
    for (int i = 0; i < 12; i++) qv[i] = 2 * fl_rng_uniform(&r) - 1;
    for (int i = 0; i < 24; i++) kv[i] = 2 * fl_rng_uniform(&r) - 1;
    for (int i = 0; i < 16; i++) vv[i] = 2 * fl_rng_uniform(&r) - 1;
    FlTensor qt = ct_tensor(FL_DT_FLOAT64, 3, (int64_t[]){2, 2, 3}, qv), kt = ct_tensor(FL_DT_FLOAT64, 3, (int64_t[]){2, 4, 3}, kv),
             vt = ct_tensor(FL_DT_FLOAT64, 3, (int64_t[]){2, 4, 2}, vv);
    FlFeed feeds[3] = {{"q", &qt}, {"k", &kt}, {"v", &vt}};
    FlFetch f = {"matmul_1.tmp_0", FL_TENSOR_INIT};
    run(&c, feeds, 3, &f, 1);
    CU_ASSERT_EQUAL(fl_tensor_numel(&f.tensor), 8);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 2; i++) {
            double w[4], s = 0;
            for (int j = 0; j < 4; j++) {
                double d = 0;
                for (int h = 0; h < 3; h++) d += qv[(b * 2 + i) * 3 + h] * kv[(b * 4 + j) * 3 + h];
                w[j] = exp(d / sqrt(3.0));
                s += w[j];
            }
            for (int o = 0; o < 2; o++) {
                double want = 0;
                for (int j = 0; j < 4; j++) want += w[j] / s * vv[(b * 4 + j) * 2 + o];
                CT_NEAR(fl_tensor_get(&f.tensor, (b * 2 + i) * 2 + o), want, 1e-12);
            }
        }
    fl_tensor_fini(&f.tensor);
    fl_tensor_fini(&qt);
    fl_tensor_fini(&kt);
    fl_tensor_fini(&vt);
    ct_close(&c);
}

/* fluid.metrics over fed batches: Accuracy's weighted mean, Precision and Recall (through a
 * CompositeMetric) and Auc against counts made here from the fetched predictions. */
static void test_metrics(void) {
    Ct c = ct_open("metrics.fl", HEAD "x = layers.data(name=\"x\", shape=[2])\n"
                                      "lab = layers.data(name=\"lab\", shape=[1], dtype=\"int64\")\n"
                                      "p = layers.softmax(x)\n"
                                      "acc = layers.accuracy(p, lab)\n"
                                      "m = fluid.metrics.Accuracy()\n"
                                      "m.update(acc, 5)\n"
                                      "a = m.eval()\n"
                                      "cm = fluid.metrics.CompositeMetric()\n"
                                      "cm.add_metric(fluid.metrics.Precision())\n"
                                      "cm.add_metric(fluid.metrics.Recall())\n"
                                      "cm.update(layers.split(p, 2, dim=1)[1], lab)\n"
                                      "pr, rc = cm.eval()\n"
                                      "au = fluid.metrics.Auc(\"auc\", num_thresholds=50)\n"
                                      "au.update(p, lab)\n"
                                      "roc = au.eval()\n");
    enum { B = 5, STEPS = 3 };
    FlRng r;
    fl_rng_init(&r, 31);
    double probs[STEPS * B], accs = 0;
    int labs[STEPS * B], tp = 0, fp = 0, fn = 0;
    FlFetch f[6] = {{"accuracy_0.tmp_0", FL_TENSOR_INIT}, {"elementwise_div_0.tmp_0", FL_TENSOR_INIT},
                    {"elementwise_div_1.tmp_0", FL_TENSOR_INIT}, {"elementwise_div_2.tmp_0", FL_TENSOR_INIT},
                    {"auc_0.tmp_0", FL_TENSOR_INIT}, {"softmax_0.tmp_0", FL_TENSOR_INIT}};
    for (int s = 0; s < STEPS; s++) {
        double xv[2 * B], lv[B];
        for (int i = 0; i < B; i++) {
            int k = s * B + i;
            labs[k] = fl_rng_uniform(&r) < 0.5;
            double z = 4 * fl_rng_uniform(&r) - 2 + (labs[k] ? 0.8 : -0.8);
            xv[2 * i] = 0, xv[2 * i + 1] = fabs(z) < 0.05 ? 0.3 : z, lv[i] = labs[k];
        }
        FlTensor xt = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){B, 2}, xv);
        FlTensor lt = ct_tensor(FL_DT_INT64, 2, (int64_t[]){B, 1}, lv);
        FlFeed feeds[2] = {{"x", &xt}, {"lab", &lt}};
        run(&c, feeds, 2, f, 6);
        accs += fl_tensor_get(&f[0].tensor, 0);
        for (int i = 0; i < B; i++) {
            int k = s * B + i;
            probs[k] = fl_tensor_get(&f[5].tensor, 2 * i + 1);
            bool pred = probs[k] > 0.5;
            tp += pred && labs[k], fp += pred && !labs[k], fn += !pred && labs[k];
        }
        CT_NEAR(fl_tensor_get(&f[1].tensor, 0), accs / (s + 1), 1e-7); /* equal weights: the mean */
        CT_NEAR(fl_tensor_get(&f[2].tensor, 0), tp + fp ? (double)tp / (tp + fp) : 0, 1e-12);
        CT_NEAR(fl_tensor_get(&f[3].tensor, 0), tp + fn ? (double)tp / (tp + fn) : 0, 1e-12);
        CT_NEAR(fl_tensor_get(&f[4].tensor, 0), brute_auc(probs, labs, (s + 1) * B, 50), 1e-12);
        fl_tensor_fini(&xt);
        fl_tensor_fini(&lt);
    }
    CU_ASSERT_TRUE(tp > 0 && fp + fn > 0); /* the data exercise every count */
    for (int i = 0; i < 6; i++) fl_tensor_fini(&f[i].tensor);
    ct_close(&c);
}

int main(void) {
    static const CtCase tc[] = {
        CT_TEST(test_auc),
        CT_TEST(test_auc_pr),
        CT_TEST(test_accuracy_counts_and_ignore),
        CT_TEST(test_batch_norm_nhwc),
        CT_TEST(test_attention_values),
        CT_TEST(test_metrics),
    };
    return ct_run("nn2 layers", tc, (int)FL_ARRAY_LEN(tc));
}
