/* train_predict.c: one thread trains a linear model (train.fl: pred = x . w + b, w [2, 1]) on
 * synthetic data while four others predict with the same parameters, all through ONE executor
 * and ONE scope.
 *
 * The check that would catch a torn read: predictors feed the rows (1, 0), (0, 1), (0, 0), so
 * that (p0 - p2, p1 - p2) is the w the prediction used. The trainer records every w it produced;
 * afterwards each recovered w must equal one recorded w (both of its elements from the same
 * step). A w read half-way through an update (one element old, one new) would match none, since
 * the noisy targets keep w moving by far more than the tolerance at every step. Predictions must
 * also be finite, and the loss must have dropped.
 *
 *   usage: embed_train_predict train.flp
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/api.h"
#include "runtime/rng.h"

enum { STEPS = 400, PREDICTORS = 4, PREDICTIONS = 300, BATCH = 8 };

typedef struct Shared {
    FlExecutor *ex;
    FlScope *scope;
    float hist[STEPS + 1][2]; /* every w the trainer made (written by the trainer only) */
    int nhist;
    float first_loss, last_loss;
    int errors;
} Shared;

typedef struct Predictor {
    Shared *sh;
    float got[PREDICTIONS][2];
    int n, errors;
    FlErr err;
} Predictor;

static int read_w(Shared *sh, float w[2], FlErr *err) {
    FlTensor t = FL_TENSOR_INIT;
    int rc = fl_scope_get_tensor(sh->scope, "fc_0.w_0", &t, err) || fl_tensor_to_floats(err, &t, w, 2);
    fl_tensor_fini(&t);
    return rc;
}

static void *trainer(void *arg) {
    Shared *sh = arg;
    FlErr err;
    FlRng rng;
    fl_rng_init(&rng, 1);
    for (int s = 0; s < STEPS; s++) {
        float xv[BATCH * 2], yv[BATCH];
        for (int i = 0; i < BATCH; i++) {
            xv[2 * i] = (float)(fl_rng_uniform(&rng) * 2 - 1);
            xv[2 * i + 1] = (float)(fl_rng_uniform(&rng) * 2 - 1);
            /* y = 2 x0 - 3 x1 + 0.5, plus noise that keeps the parameters moving */
            yv[i] = 2 * xv[2 * i] - 3 * xv[2 * i + 1] + 0.5f + (float)(fl_rng_uniform(&rng) - 0.5);
        }
        FlTensor x = FL_TENSOR_INIT, y = FL_TENSOR_INIT;
        FlFetch loss = {"mean_0.tmp_0", FL_TENSOR_INIT};
        int64_t nx[2] = {BATCH, 2}, ny[2] = {BATCH, 1};
        float l = NAN;
        if (fl_tensor_from_floats(&err, &x, 2, nx, xv) || fl_tensor_from_floats(&err, &y, 2, ny, yv) ||
            fl_executor_run(sh->ex, sh->scope, (FlFeed[]){{"x", &x}, {"y", &y}}, 2, &loss, 1, &err) ||
            fl_tensor_to_floats(&err, &loss.tensor, &l, 1) || read_w(sh, sh->hist[sh->nhist], &err)) {
            fprintf(stderr, "trainer: %s\n", fl_error_message(&err));
            sh->errors++;
        } else {
            sh->nhist++;
        }
        if (s == 0) sh->first_loss = l;
        sh->last_loss = l;
        fl_tensor_fini(&loss.tensor);
        fl_tensor_fini(&x);
        fl_tensor_fini(&y);
    }
    return NULL;
}

static void *predictor(void *arg) {
    Predictor *p = arg;
    float rows[6] = {1, 0, 0, 1, 0, 0};
    int64_t ne[2] = {3, 2};
    FlTensor x = FL_TENSOR_INIT;
    if (fl_tensor_from_floats(&p->err, &x, 2, ne, rows)) {
        p->errors++;
        return NULL;
    }
    for (int k = 0; k < PREDICTIONS; k++) {
        FlFeed feed = {"x", &x};
        FlFetch pred = {"elementwise_add_0.tmp_0", FL_TENSOR_INIT};
        float v[3];
        /* predict: only the ops `pred` needs run, no label needed, nothing is updated */
        if (fl_executor_predict(p->sh->ex, p->sh->scope, &feed, 1, &pred, 1, &p->err) ||
            fl_tensor_to_floats(&p->err, &pred.tensor, v, 3) || !isfinite(v[0]) ||
            !isfinite(v[1]) || !isfinite(v[2])) {
            p->errors++;
        } else {
            p->got[p->n][0] = v[0] - v[2];
            p->got[p->n][1] = v[1] - v[2];
            p->n++;
        }
        fl_tensor_fini(&pred.tensor);
    }
    fl_tensor_fini(&x);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s train.flp\n", argv[0]);
        return 2;
    }
    FlErr err;
    FlLoadedProgram *prog = NULL;
    FlExecutor *ex = NULL;
    if (fl_program_load(argv[1], &prog, &err) || fl_executor_new(prog, NULL, &ex, &err)) {
        fprintf(stderr, "%s\n", fl_error_message(&err));
        fl_program_free(prog);
        return 1;
    }
    static Shared sh;
    static Predictor pr[PREDICTORS];
    sh.ex = ex;
    sh.scope = fl_scope_new(NULL);
    int bad = 0;
    if (fl_executor_run_startup(ex, sh.scope, &err) || read_w(&sh, sh.hist[0], &err)) {
        fprintf(stderr, "%s\n", fl_error_message(&err));
        bad++;
        goto done;
    }
    sh.nhist = 1;
    pthread_t th[PREDICTORS + 1];
    pthread_create(&th[0], NULL, trainer, &sh);
    for (int i = 0; i < PREDICTORS; i++) {
        pr[i].sh = &sh;
        pthread_create(&th[i + 1], NULL, predictor, &pr[i]);
    }
    for (int i = 0; i <= PREDICTORS; i++) pthread_join(th[i], NULL);

    bad += sh.errors;
    int unmatched = 0, total = 0;
    for (int i = 0; i < PREDICTORS; i++) {
        if (pr[i].errors) fprintf(stderr, "predictor %d: %s\n", i, fl_error_message(&pr[i].err));
        bad += pr[i].errors;
        for (int k = 0; k < pr[i].n; k++, total++) {
            int found = 0;
            for (int s = 0; s < sh.nhist && !found; s++)
                found = fabsf(pr[i].got[k][0] - sh.hist[s][0]) < 1e-4f &&
                        fabsf(pr[i].got[k][1] - sh.hist[s][1]) < 1e-4f;
            unmatched += !found;
        }
    }
    if (unmatched) fprintf(stderr, "%d of %d predictions used a w no training step made\n", unmatched, total);
    if (!(sh.last_loss < sh.first_loss)) {
        fprintf(stderr, "the loss did not drop: %g -> %g\n", sh.first_loss, sh.last_loss);
        bad++;
    }
    bad += unmatched;
    if (!bad)
        printf("%d training steps (loss %.3f -> %.3f) and %d predictions from %d threads; every "
               "prediction used a whole parameter tensor\n",
               sh.nhist - 1, sh.first_loss, sh.last_loss, total, PREDICTORS);
done:
    fl_scope_free(sh.scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    return bad ? 1 : 0;
}
