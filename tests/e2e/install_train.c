/* install_train.c: a program built against an INSTALLED fluidc (test_install.sh) that trains a
 * .flp with the training driver (runtime/train/train.h) for the epochs given and prints one line
 * per epoch ("epoch E/N train loss L"). It exercises the installed headers beyond api.h and the
 * parts of libfluidc.a that link MPI and zlib (the trainer, the data readers).
 *
 *   usage: install_train PROGRAM.flp EPOCHS
 */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/api.h"
#include "runtime/train/train.h"

static void on_epoch(void *ctx, const FlTrainEpoch *ep) {
    (void)ctx;
    printf("epoch %lld/%lld train loss %.4f\n", (long long)ep->epoch, (long long)ep->epochs, ep->train[0]);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PROGRAM.flp EPOCHS\n", argv[0]);
        return 2;
    }
    FlErr err;
    FlLoadedProgram *prog = NULL;
    FlExecutor *ex = NULL;
    FlScope *scope = NULL;
    FlTrainer *tr = NULL;
    int rc = 1;
    if (fl_program_load(argv[1], &prog, &err) || fl_executor_new(prog, NULL, &ex, &err)) goto fail;
    scope = fl_scope_new(NULL);
    if (fl_executor_run_startup(ex, scope, &err) || fl_train_new(prog, ex, scope, NULL, &tr, &err)) goto fail;
    FlTrainOptions o = FL_TRAIN_OPTIONS_INIT;
    o.epochs = atoll(argv[2]);
    FlTrainHooks h = {.epoch = on_epoch};
    if (fl_train_run(tr, &o, &h, &err)) goto fail;
    rc = 0;
fail:
    if (rc) fprintf(stderr, "%s\n", fl_error_message(&err));
    fl_train_free(tr);
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    return rc;
}
