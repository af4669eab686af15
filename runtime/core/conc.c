/* conc.c: the executor's goroutine lifecycle, under the op adapters of ops_chan.c: which
 * scheduler a run uses (the one attached to the caller's scope, else the executor's own, made on
 * first use), attaching the calling thread for a run, goroutine records (GoCtx) and their report
 * labels, starting a goroutine on a body function, and keeping a goroutine's error for the run
 * that ends next.
 *
 * Records: every goroutine (and the attached calling thread) has a label that the scheduler
 * prints in deadlock reports and leak listings; before each blocking op may block, its owner
 * points it at that op's location (ExecOp.where, written at prepare and never after;
 * fl_conc_set_where), so a report names the line each goroutine waits at. Labels are never
 * rewritten in place, only swapped (an atomic pointer in the scheduler): a report printed
 * while a goroutine moves on reads the old or the new text, never a torn one.
 *
 * Errors: a goroutine's error (or a parallel_for iteration's) is Go's panic (fl_conc_panic): kept
 * on the executor and returned by the run in progress, which it ends at once; errors that only
 * say the goroutine was woken by a deadlock, a scheduler shutdown or another goroutine's panic
 * (fl_conc_is_abort) are not kept.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/conc.h"
#include "runtime/core/exec_impl.h"

typedef struct GoCtx GoCtx;
struct GoCtx {
    GoCtx *next_free, *next_all;
    RunCtx rc;          /* a copy of the starting run's, with e and label of its own */
    const ExecOp *op;
    FlConcBody body;
    void (*done)(void *arg);
    void *arg;          /* the body's; released by done */
    FlErr err;
    ConcLabel label;
};

struct FlExecConc {
    pthread_mutex_t mu;
    FlSched *own;  /* made on first use when the caller's scope has no scheduler */
    bool own_failed;
    GoCtx *free_list, *all;
    char *err;     /* a goroutine's error that no run has returned yet */
};

/* ---------------------------------------------------------------- hooks */

void fl_conc_attach(FlScope *root, FlSched *s) { fl_var_set_object(fl_scope_var(root, FL_SCHED_VAR), s, NULL); }

FlSched *fl_conc_find(FlScope *s) {
    FlVar *v = fl_scope_find(s, FL_SCHED_VAR);
    return v ? fl_var_get_object(v) : NULL;
}

void fl_conc_prepare(FlExec *ex) {
    if (ex->conc) return;
    ex->conc = fl_xcalloc(1, sizeof *ex->conc);
    pthread_mutex_init(&ex->conc->mu, NULL);
}

void fl_conc_free(FlExec *ex) {
    FlExecConc *c = ex->conc;
    if (!c) return;
    fl_sched_free(c->own);
    for (GoCtx *g = c->all, *next; g; g = next) {
        next = g->next_all;
        free(g);
    }
    free(c->err);
    pthread_mutex_destroy(&c->mu);
    free(c);
    ex->conc = NULL;
}

static FlSched *own_sched(FlExec *ex) {
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    if (!c->own && !c->own_failed) {
        FlErr e;
        FlSchedConfig cfg = {.stack_size = FL_CONC_STACK_SIZE, .seed = ex->opt.seed};
        c->own = fl_sched_new(&cfg, &e);
        c->own_failed = c->own == NULL;
    }
    FlSched *s = c->own;
    pthread_mutex_unlock(&c->mu);
    return s;
}

void fl_conc_run_begin(FlExec *ex, FlScope *scope, RunCtx *rc, ConcRun *cr) {
    FlSched *s = fl_conc_find(scope);
    if (!s) s = own_sched(ex);
    rc->sched = s;
    if (!s || fl_go_id() != 0) return;
    fl_sched_attach(s, "main program");
    cr->attached = true;
    cr->label.owner = fl_go_id();
    rc->label = &cr->label;
}

FlStatus fl_conc_run_end(FlExec *ex, RunCtx *rc, ConcRun *cr, FlStatus st) {
    if (cr->attached) fl_sched_detach(rc->sched);
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    char *err = c->err;
    c->err = NULL;
    pthread_mutex_unlock(&c->mu);
    if (err) {
        fl_err(rc->e, "%s", err);
        free(err);
        return FL_ERROR;
    }
    return st;
}

void fl_conc_set_where(RunCtx *rc, const ExecOp *op) {
    ConcLabel *l = rc->label;
    if (!l || l->owner != fl_go_id() || l->op == op) return; /* owner is set before the run */
    l->op = op;
    if (op->where[0]) fl_sched_set_label(op->where);
}

FlStatus fl_conc_need_sched(RunCtx *rc, const ExecOp *op) {
    return rc->sched ? FL_OK : fl_exec_op_error(rc, op, "no goroutine scheduler could be started");
}

/* ---------------------------------------------------------------- goroutine records */

static GoCtx *ctx_get(FlExec *ex) {
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    GoCtx *g = c->free_list;
    if (g) {
        c->free_list = g->next_free;
    } else {
        g = fl_xcalloc(1, sizeof *g);
        g->next_all = c->all;
        c->all = g;
    }
    pthread_mutex_unlock(&c->mu);
    GoCtx *keep = g->next_all;
    memset(g, 0, sizeof *g);
    g->next_all = keep;
    return g;
}

static void ctx_put(FlExec *ex, GoCtx *g) {
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    g->next_free = c->free_list;
    c->free_list = g;
    pthread_mutex_unlock(&c->mu);
}

bool fl_conc_is_abort(RunCtx *rc, const char *msg) {
    return fl_sched_deadlock_report(rc->sched) || strstr(msg, "goroutine abandoned") ||
           strstr(msg, FL_SCHED_PANIC_MSG);
}

void fl_conc_panic(RunCtx *rc, const char *msg) {
    FlExec *ex = rc->ex;
    FlExecConc *c = ex->conc;
    pthread_mutex_lock(&c->mu);
    if (!c->err) c->err = fl_xstrdup(msg);
    pthread_mutex_unlock(&c->mu);
    atomic_store(&ex->panic, true);
    fl_sched_panic(rc->sched);
}

/* A goroutine failed: Go's panic, unless its error only says it was woken by a deadlock, a
 * shutdown or another goroutine's panic. */
static void go_failed(GoCtx *g) {
    if (!fl_conc_is_abort(&g->rc, g->err.msg)) fl_conc_panic(&g->rc, g->err.msg);
}

static void go_main(void *arg) {
    GoCtx *g = arg;
    g->label.owner = fl_go_id();
    g->rc.e = &g->err;
    g->rc.label = &g->label;
    if (g->body(&g->rc, g->op, g->arg) != FL_OK) go_failed(g);
    g->done(g->arg);
    ctx_put(g->rc.ex, g);
}

FlStatus fl_conc_go(RunCtx *rc, const ExecOp *op, FlConcBody body, void (*done)(void *arg), void *arg) {
    GoCtx *g = ctx_get(rc->ex);
    g->rc = *rc;
    g->rc.iteration = false; /* a goroutine started by a parallel_for iteration is not one */
    g->op = op;
    g->body = body;
    g->done = done;
    g->arg = arg;
    g->label.op = op;
    FlErr e;
    if (fl_go(rc->sched, go_main, g, op->where[0] ? op->where : "goroutine", &e) == FL_OK) return FL_OK;
    done(arg);
    ctx_put(rc->ex, g);
    return fl_exec_op_error(rc, op, "%s", e.msg);
}
