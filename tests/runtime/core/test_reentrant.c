/* test_reentrant.c: many threads run ONE executor on ONE scope at once, with no thread-unique
 * names: each gets the results of its own feeds; training threads and predicting threads mix
 * and every prediction is made from whole parameter tensors. Label `concurrency` (TSan). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "tests/runtime/core/ct.h"

#include "runtime/rng.h"

enum { THREADS = 8, RUNS = 150 };

typedef struct Job {
    Ct *c;
    int id;
    int bad;
    double ref[4][2]; /* expected outputs for the 4 inputs (computed single-threaded) */
} Job;

static const char *mlp_src = "from fluid import layers\n"
                             "x = layers.data(name=\"x\", shape=[3], dtype=\"float32\")\n"
                             "h = layers.fc(x, size=8, act=\"tanh\")\n"
                             "y = layers.fc(h, size=2, act=\"sigmoid\")\n";
#define OUT_VAR "sigmoid_0.tmp_0"

static void input(int k, double *v) {
    for (int j = 0; j < 3; j++) v[j] = (k + 1) * 0.3 - j * 0.2;
}

static void run_one(Ct *c, int k, double out[2], FlErr *e, FlStatus *st) {
    double v[3];
    input(k, v);
    FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){1, 3}, v);
    FlFeed f = {"x", &x};
    FlFetch o = {OUT_VAR, FL_TENSOR_INIT};
    *st = fl_executor_run(c->ex, c->scope, &f, 1, &o, 1, e);
    if (*st == FL_OK) {
        out[0] = fl_tensor_get(&o.tensor, 0);
        out[1] = fl_tensor_get(&o.tensor, 1);
    }
    fl_tensor_fini(&o.tensor);
    fl_tensor_fini(&x);
}

static void *predictor(void *p) {
    Job *j = p;
    FlErr e;
    for (int r = 0; r < RUNS; r++) {
        int k = (j->id + r) % 4;
        double out[2];
        FlStatus st;
        run_one(j->c, k, out, &e, &st);
        if (st != FL_OK || out[0] != j->ref[k][0] || out[1] != j->ref[k][1]) j->bad++;
    }
    return NULL;
}

static void test_many_predictors(void) {
    Ct c = ct_open("mlp.fl", mlp_src);
    Job jobs[THREADS];
    double ref[4][2];
    FlErr e;
    for (int k = 0; k < 4; k++) {
        FlStatus st;
        run_one(&c, k, ref[k], &e, &st);
        CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    }
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (Job){.c = &c, .id = i};
        memcpy(jobs[i].ref, ref, sizeof ref);
        pthread_create(&th[i], NULL, predictor, &jobs[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(jobs[i].bad, 0);
    }
    ct_close(&c);
}

/* ---- training while predicting: y = x . w + b with w [2, 1]; predictors feed the rows
 * (1, 0), (0, 1), (0, 0) and recover (w0, w1) = (p0 - p2, p1 - p2): a whole w tensor of some
 * training step. A torn w (w0 of one step, w1 of another) would match no step. ---- */
enum { STEPS = 300, PRED = 3, PRUNS = 200 };
static const char *lin_src = "from fluid import layers, optimizer\n"
                             "x = layers.data(name=\"x\", shape=[2], dtype=\"float32\")\n"
                             "y = layers.data(name=\"y\", shape=[1], dtype=\"float32\")\n"
                             "pred = layers.fc(x, size=1)\n"
                             "loss = layers.mean(layers.square_error_cost(pred, y))\n"
                             "optimizer.SGD(learning_rate=0.05).minimize(loss)\n";

typedef struct Train {
    Ct *c;
    double hist[STEPS + 1][2];
    int nhist;
    int err;
} Train;

typedef struct Pred {
    Ct *c;
    double got[PRUNS][2];
    int n;
    int err;
} Pred;

static void *trainer(void *p) {
    Train *t = p;
    FlErr e;
    FlRng r;
    fl_rng_init(&r, 3);
    for (int s = 0; s < STEPS; s++) {
        double xv[4 * 2], yv[4];
        for (int i = 0; i < 8; i++) xv[i] = fl_rng_uniform(&r) * 2 - 1;
        for (int i = 0; i < 4; i++) yv[i] = fl_rng_uniform(&r) * 20 - 10; /* noise: w keeps moving */
        FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){4, 2}, xv);
        FlTensor y = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){4, 1}, yv);
        FlFeed f[2] = {{"x", &x}, {"y", &y}};
        if (fl_executor_run(t->c->ex, t->c->scope, f, 2, NULL, 0, &e) != FL_OK) t->err++;
        FlTensor w = FL_TENSOR_INIT;
        if (fl_scope_get_tensor(t->c->scope, "fc_0.w_0", &w, &e) == FL_OK) {
            t->hist[t->nhist][0] = fl_tensor_get(&w, 0);
            t->hist[t->nhist][1] = fl_tensor_get(&w, 1);
            t->nhist++;
        }
        fl_tensor_fini(&w);
        fl_tensor_fini(&x);
        fl_tensor_fini(&y);
    }
    return NULL;
}

static void *lin_predictor(void *p) {
    Pred *q = p;
    FlErr e;
    double xv[6] = {1, 0, 0, 1, 0, 0};
    FlTensor x = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){3, 2}, xv);
    for (int r = 0; r < PRUNS; r++) {
        FlFeed f = {"x", &x};
        FlFetch o = {"elementwise_add_0.tmp_0", FL_TENSOR_INIT};
        if (fl_executor_predict(q->c->ex, q->c->scope, &f, 1, &o, 1, &e) != FL_OK) {
            q->err++;
            continue;
        }
        double p0 = fl_tensor_get(&o.tensor, 0), p1 = fl_tensor_get(&o.tensor, 1),
               p2 = fl_tensor_get(&o.tensor, 2);
        if (!isfinite(p0) || !isfinite(p1) || !isfinite(p2)) q->err++;
        q->got[q->n][0] = p0 - p2;
        q->got[q->n][1] = p1 - p2;
        q->n++;
        fl_tensor_fini(&o.tensor);
    }
    fl_tensor_fini(&x);
    return NULL;
}

static void test_train_while_predicting(void) {
    Ct c = ct_open("lin.fl", lin_src);
    static Train t;
    static Pred q[PRED];
    memset(&t, 0, sizeof t);
    t.c = &c;
    t.hist[0][0] = ct_get(c.scope, "fc_0.w_0", 0);
    t.hist[0][1] = ct_get(c.scope, "fc_0.w_0", 1);
    t.nhist = 1;
    pthread_t th[PRED + 1];
    pthread_create(&th[0], NULL, trainer, &t);
    for (int i = 0; i < PRED; i++) {
        memset(&q[i], 0, sizeof q[i]);
        q[i].c = &c;
        pthread_create(&th[i + 1], NULL, lin_predictor, &q[i]);
    }
    for (int i = 0; i <= PRED; i++) pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(t.err, 0);
    CU_ASSERT_EQUAL(t.nhist, STEPS + 1);
    int unmatched = 0;
    for (int i = 0; i < PRED; i++) {
        CU_ASSERT_EQUAL(q[i].err, 0);
        for (int r = 0; r < q[i].n; r++) {
            bool found = false;
            for (int s = 0; s < t.nhist && !found; s++)
                found = fabs(q[i].got[r][0] - t.hist[s][0]) < 1e-4 &&
                        fabs(q[i].got[r][1] - t.hist[s][1]) < 1e-4;
            if (!found) unmatched++;
        }
    }
    CU_ASSERT_EQUAL(unmatched, 0);
    ct_close(&c);
}

/* ---- sparse training while readers hold the table: an is_sparse embedding trained with
 * Adagrad by two threads at once (Hogwild), whose rows are written in place whenever nobody
 * but the var holds the table (docs/embedding.md, "In-place row updates"), while readers take
 * the table (and its Adagrad moment) and predict: every tensor a reader holds keeps its values
 * bit for bit for as long as it holds it. TSan (label concurrency) sees any write racing a
 * read. ---- */
enum { EV = 64, ED = 8, ESTEPS = 200, EREADERS = 3, EBATCH = 16 };
static const char *emb_src = "from fluid import layers, optimizer\n"
                             "ids = layers.data(name=\"ids\", shape=[1], dtype=\"int64\")\n"
                             "y = layers.data(name=\"y\", shape=[1], dtype=\"float32\")\n"
                             "emb = layers.embedding(ids, size=[64, 8], is_sparse=True)\n"
                             "pred = layers.fc(emb, size=1)\n"
                             "loss = layers.mean(layers.square_error_cost(pred, y))\n"
                             "optimizer.Adagrad(learning_rate=0.1).minimize(loss)\n";
#define EMB_W "embedding_0.w_0"
#define EMB_M "embedding_0.w_0_moment_0"
#define EMB_OUT "elementwise_add_0.tmp_0"

typedef struct EmbJob {
    Ct *c;
    int id;
    atomic_int *stop, *ready; /* ready: readers holding their first tensor */
    int err, held;
} EmbJob;

static FlStatus emb_step(Ct *c, FlRng *r, bool train, FlErr *e) {
    double iv[EBATCH], yv[EBATCH];
    for (int i = 0; i < EBATCH; i++) {
        iv[i] = (double)(fl_rng_next(r) % EV);
        yv[i] = fl_rng_uniform(r) * 2 - 1;
    }
    FlTensor ids = ct_tensor(FL_DT_INT64, 2, (int64_t[]){EBATCH, 1}, iv);
    FlTensor y = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){EBATCH, 1}, yv);
    FlFeed f[2] = {{"ids", &ids}, {"y", &y}};
    FlFetch o = {EMB_OUT, FL_TENSOR_INIT};
    FlStatus st = train ? fl_executor_run(c->ex, c->scope, f, 2, NULL, 0, e)
                        : fl_executor_predict(c->ex, c->scope, f, 1, &o, 1, e);
    fl_tensor_fini(&o.tensor);
    fl_tensor_fini(&ids);
    fl_tensor_fini(&y);
    return st;
}

static void *emb_trainer(void *p) {
    EmbJob *j = p;
    FlErr e;
    FlRng r;
    fl_rng_init(&r, 11 + (uint64_t)j->id);
    /* train only once every reader holds a tensor, or a busy machine could
       run all the steps before a reader is scheduled and nothing is tested */
    while (atomic_load(j->ready) < EREADERS) sched_yield();
    for (int s = 0; s < ESTEPS; s++)
        if (emb_step(j->c, &r, true, &e) != FL_OK) j->err++;
    return NULL;
}

static void *emb_reader(void *p) {
    EmbJob *j = p;
    FlErr e;
    FlRng r;
    fl_rng_init(&r, 101 + (uint64_t)j->id);
    static double snap[EREADERS][EV * ED];
    while (!atomic_load(j->stop)) {
        const char *name = j->held % 2 ? EMB_M : EMB_W;
        FlTensor h = FL_TENSOR_INIT;
        if (fl_scope_get_tensor(j->c->scope, name, &h, &e) != FL_OK || fl_tensor_numel(&h) != EV * ED) {
            j->err++;
            fl_tensor_fini(&h);
            if (j->held == 0) atomic_fetch_add(j->ready, 1);
            break;
        }
        for (int i = 0; i < EV * ED; i++) snap[j->id][i] = fl_tensor_get(&h, i);
        if (j->held == 0) atomic_fetch_add(j->ready, 1);
        if (emb_step(j->c, &r, false, &e) != FL_OK) j->err++; /* the trainers go on meanwhile */
        sched_yield();
        for (int i = 0; i < EV * ED; i++)
            if (fl_tensor_get(&h, i) != snap[j->id][i]) j->err++;
        fl_tensor_fini(&h);
        j->held++;
    }
    return NULL;
}

static void test_sparse_train_while_holding(void) {
    Ct c = ct_open("emb.fl", emb_src);
    atomic_int stop = 0, ready = 0;
    EmbJob jobs[2 + EREADERS];
    pthread_t th[2 + EREADERS];
    for (int i = 0; i < 2 + EREADERS; i++) {
        jobs[i] = (EmbJob){.c = &c, .id = i < 2 ? i : i - 2, .stop = &stop, .ready = &ready};
        pthread_create(&th[i], NULL, i < 2 ? emb_trainer : emb_reader, &jobs[i]);
    }
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    atomic_store(&stop, 1);
    int held = 0;
    for (int i = 2; i < 2 + EREADERS; i++) {
        pthread_join(th[i], NULL);
        held += jobs[i].held;
        CU_ASSERT_EQUAL(jobs[i].err, 0);
    }
    CU_ASSERT_EQUAL(jobs[0].err + jobs[1].err, 0);
    CU_ASSERT_TRUE(held > 0);
    /* alone, a step writes the table and its moment in place */
    FlErr e;
    FlRng r;
    fl_rng_init(&r, 7);
    const char *names[2] = {EMB_W, EMB_M};
    for (int n = 0; n < 2; n++) {
        FlTensor t = FL_TENSOR_INIT;
        CT_OK(fl_scope_get_tensor(c.scope, names[n], &t, &e), &e);
        const FlBuffer *b = t.buf;
        fl_tensor_fini(&t);
        CT_OK(emb_step(&c, &r, true, &e), &e);
        CT_OK(fl_scope_get_tensor(c.scope, names[n], &t, &e), &e);
        CU_ASSERT_PTR_EQUAL(t.buf, b);
        fl_tensor_fini(&t);
    }
    ct_close(&c);
}

int main(void) {
    static const CtCase cases[] = {
        CT_TEST(test_many_predictors),
        CT_TEST(test_train_while_predicting),
        CT_TEST(test_sparse_train_while_holding),
    };
    return ct_run("reentrancy", cases, (int)FL_ARRAY_LEN(cases));
}
