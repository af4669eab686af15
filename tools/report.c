/* report.c: flrun's curves, TensorBoard events and profiler tables (report.h).
 *
 * How: the curves keep the log's rows in memory (a few doubles a step) and are drawn once, at
 * the end; the event file gets each step's scalars as they come. The profiler is on for the
 * whole run (--profile: from the report's making to its finish) or for the training (a region);
 * its table names the process, and a job's tables travel to trainer 0 as text.
 */
#define _GNU_SOURCE
#include "tools/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "compiler/ops.h"
#include "runtime/core/dist.h"
#include "tools/curves.h"
#include "tools/tfevents.h"

struct FlReport {
    FlReportOptions o;
    FlProf *prof;      /* NULL: nothing profiled */
    FlProfSort sort;
    bool region;       /* on with the training (the run spec's profile), not the whole run */
    char *profile_path; /* the region's profile_path, or NULL */
    /* the process that writes the log (fl_report_open) */
    bool open;
    FlCurves curves;
    FlEvents *events;
    FL_VEC(char *) tags; /* "train/<figure>" then "test/<figure>", per fetch */
    size_t nfig;
    const FlTrainer *tr;
    FlMpi *mpi;
    const char *lr;    /* the learning rate's var, or NULL */
    int lr_from;       /* -1: fetched by this process's steps (FlTrainOptions.watch); else the
                          pserver (role index) that holds it */
};

FlStatus fl_report_new(const FlReportOptions *o, FlReport **out, FlErr *e) {
    *out = NULL;
    const FlProfileSpec *spec = o->spec && o->spec->present ? o->spec : NULL;
    FlProfSort sort = FL_PROF_SORT_TOTAL;
    if (o->profile_sort && !strcmp(o->profile_sort, "none")) sort = FL_PROF_SORT_DEFAULT;
    else if (o->profile_sort && !fl_prof_sort_parse(o->profile_sort, &sort))
        return fl_err(e, "--profile-sort needs calls, total, max, min, ave or none (Fluid's None: the order of "
                      "first ends), found '%s'", o->profile_sort);
    else if (!o->profile_sort && spec && !fl_prof_sort_parse(spec->sorted_key, &sort))
        return fl_err(e, "the program's profiler sorted_key '%s' is not one of this flrun's", spec->sorted_key);
    if (o->profile_sort && !o->profile && !spec)
        return fl_err(e, "--profile-sort sorts the profiler's table: give --profile too (or profile a region of the "
                      "program with fluid.profiler)");
    FlReport *r = fl_xcalloc(1, sizeof *r);
    r->o = *o;
    r->sort = sort;
    if (o->profile || spec) {
        r->prof = fl_prof_new();
        r->region = !o->profile;
        if (o->profile) fl_prof_start(r->prof);
    }
    r->profile_path = spec && spec->path ? fl_xstrdup(spec->path) : NULL;
    r->o.spec = NULL; /* borrowed only for the call */
    *out = r;
    return FL_OK;
}

void fl_report_free(FlReport *r) {
    if (!r) return;
    fl_events_abandon(r->events); /* a failed run's: what was written stays */
    if (r->open) fl_curves_fini(&r->curves);
    for (size_t i = 0; i < r->tags.len; i++) free(r->tags.data[i]);
    FL_VEC_FREE(&r->tags);
    fl_prof_free(r->prof);
    free(r->profile_path);
    free(r);
}

FlProf *fl_report_prof(const FlReport *r) { return r->prof; }

const char *fl_report_profile_path(const FlReport *r) { return r->profile_path; }

void fl_report_train_begin(FlReport *r) {
    if (r->prof && r->region) fl_prof_start(r->prof);
}

void fl_report_train_end(FlReport *r) {
    if (r->prof && r->region) fl_prof_stop(r->prof);
}

/* ---------------------------------------------------------------- the learning rate */

/* The LearningRate input of the first optimizer op of p (any block), or NULL. */
static const char *lr_var(const FlProgram *p) {
    for (size_t k = 0; k < p->blocks.len; k++) {
        const FlBlock *b = p->blocks.data[k];
        for (size_t i = 0; i < b->ops.len; i++)
            if ((fl_ops_flags(b->ops.data[i]) & FL_OPF_OPTIMIZE) && fl_ir_op_input1(b->ops.data[i], "LearningRate"))
                return fl_ir_op_input1(b->ops.data[i], "LearningRate");
    }
    return NULL;
}

/* Where the learning rate is: this process's program (a local run, allreduce trainers), else the
 * first pserver of the plan whose program updates with it. */
static void find_lr(FlReport *r, const FlBundle *bundle, const FlPlan *plan) {
    r->lr = lr_var(bundle->main);
    r->lr_from = -1;
    for (size_t k = 0; !r->lr && plan && k < plan->roles.len; k++) {
        const FlBundle *b = plan->roles.data[k];
        if (b && !strcmp(b->role, "pserver") && (r->lr = lr_var(b->main))) r->lr_from = (int)b->role_index;
    }
}

/* The learning rate after a step: fetched by the step itself (a var of this process's program,
 * FlTrainOptions.watch), or asked from its pserver. */
static FlStatus read_lr(FlReport *r, const FlTrainStep *s, double *out, FlErr *e) {
    if (r->lr_from < 0) {
        *out = s->watched[0];
        return FL_OK;
    }
    FlTensor t = FL_TENSOR_INIT;
    FlErr why;
    FlDist *d = fl_mpi_dist(r->mpi);
    FlStatus st = d->recv(d, r->lr_from, r->lr, &t, &why);
    if (st == FL_OK) *out = fl_tensor_numel(&t) > 0 && fl_tensor_has_data(&t) ? fl_tensor_get(&t, 0) : NAN;
    fl_tensor_fini(&t);
    return st == FL_OK ? FL_OK : fl_err(e, "--tensorboard: reading the learning rate '%s': %s", r->lr, why.msg);
}

/* ---------------------------------------------------------------- the log's process */

static double wall_now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

/* The run's name in a picture: the program's file name without its extension, and a job's
 * shape. */
static void run_label(const FlReport *r, FlBuf *out) {
    const char *base = strrchr(r->o.program, '/');
    base = base && base[1] ? base + 1 : r->o.program;
    const char *dot = strrchr(base, '.');
    fl_buf_append(out, base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
    if (r->mpi && fl_mpi_pservers(r->mpi)) fl_buf_printf(out, " (P=%d T=%d)", fl_mpi_pservers(r->mpi), fl_mpi_trainers(r->mpi));
    else if (r->mpi) fl_buf_printf(out, " (T=%d allreduce)", fl_mpi_trainers(r->mpi));
}

FlStatus fl_report_open(FlReport *r, const FlTrainer *tr, const FlBundle *bundle, FlMpi *mpi, const FlPlan *plan,
                        FlErr *e) {
    FL_ASSERT(!r->open);
    const char *what = r->o.plot ? "--plot" : "--tensorboard";
    if ((r->o.plot || r->o.tensorboard) && !bundle->run.present)
        return fl_err(e, "%s: the program has no run spec (fluid.train): it runs once and trains nothing to show", what);
    r->tr = tr;
    r->mpi = mpi;
    size_t n = fl_train_fetch_count(tr), loss = fl_train_loss_index(tr);
    /* the log's order: the loss, then the other fetches */
    const char **names = fl_xcalloc(n + 1, sizeof *names);
    size_t k = 0;
    if (n) names[k++] = fl_train_fetch_name(tr, loss);
    for (size_t i = 0; i < n; i++)
        if (i != loss) names[k++] = fl_train_fetch_name(tr, i);
    FlBuf label = {0};
    run_label(r, &label);
    fl_curves_init(&r->curves, fl_buf_str(&label), names, n);
    fl_buf_free(&label);
    r->open = true;
    r->nfig = n;
    for (int test = 0; test < 2; test++)
        for (size_t i = 0; i < n; i++) {
            FlBuf t = {0};
            fl_buf_printf(&t, "%s/%s", test ? "test" : "train", names[i]);
            FL_VEC_PUSH(&r->tags, t.data);
        }
    free(names);
    if (!r->o.tensorboard) return FL_OK;
    find_lr(r, bundle, plan);
    return fl_events_open(r->o.tensorboard, &r->events, e);
}

void fl_report_watch(const FlReport *r, FlTrainOptions *to) {
    bool mine = r->events && r->lr && r->lr_from < 0;
    to->watch = mine ? &r->lr : NULL;
    to->nwatch = mine ? 1 : 0;
}

FlStatus fl_report_row(FlReport *r, const char *phase, int64_t epoch, int64_t step, const double *v, FlErr *e) {
    size_t n = r->nfig, loss = fl_train_loss_index(r->tr);
    double *ordered = fl_xcalloc(n + 1, sizeof *ordered); /* the log's order, as the tags */
    size_t k = 0;
    if (n) ordered[k++] = v[loss];
    for (size_t i = 0; i < n; i++)
        if (i != loss) ordered[k++] = v[i];
    bool test = !strcmp(phase, "test");
    fl_curves_add(&r->curves, test, epoch, step, ordered);
    FlStatus st = FL_OK;
    if (r->events && n)
        st = fl_events_scalars(r->events, step, wall_now(), (const char *const *)r->tags.data + (test ? n : 0), ordered,
                               n, e);
    free(ordered);
    return st;
}

FlStatus fl_report_step(FlReport *r, const FlTrainStep *s, FlErr *e) {
    if (!r->events) return FL_OK;
    const char *tags[2] = {"samples_per_second", "learning_rate"};
    double v[2] = {s->seconds > 0 ? s->rows / s->seconds : 0, 0};
    size_t n = 1;
    if (r->lr) {
        if (read_lr(r, s, &v[1], e) != FL_OK) return FL_ERROR;
        n = 2;
    }
    return fl_events_scalars(r->events, s->step, wall_now(), tags, v, n, e);
}

/* ---------------------------------------------------------------- the end */

static FlStatus print_profile(FlReport *r, FlMpi *mpi, FlErr *e) {
    fl_prof_stop(r->prof);
    FlBuf who = {0}, table = {0}, all = {0};
    if (mpi) {
        bool server = fl_mpi_role(mpi) == FL_MPI_PSERVER;
        fl_buf_printf(&who, "rank %d (%s %d) on %s", fl_mpi_rank(mpi), server ? "pserver" : "trainer",
                      fl_mpi_index(mpi), fl_mpi_host(mpi));
    } else {
        fl_buf_printf(&who, "flrun %s", r->o.program);
    }
    fl_prof_table(r->prof, r->sort, fl_buf_str(&who), &table);
    FlStatus st = FL_OK;
    if (mpi) st = fl_mpi_gather_bytes(mpi, "the profiler's tables", NULL, fl_buf_str(&table), table.len, &all, e);
    else fl_buf_append(&all, fl_buf_str(&table), table.len);
    if (st == FL_OK && (!mpi || fl_mpi_is_lead(mpi))) {
        fputs(fl_buf_str(&all), stdout);
        fflush(stdout);
    }
    fl_buf_free(&who);
    fl_buf_free(&table);
    fl_buf_free(&all);
    return st;
}

FlStatus fl_report_finish(FlReport *r, FlMpi *mpi, bool lead, FlErr *e) {
    if (r->prof && print_profile(r, mpi, e) != FL_OK) return FL_ERROR;
    if (lead && r->open && r->o.plot) {
        FlBuf svg = {0};
        fl_curves_svg(&r->curves, 1, r->curves.label, &svg);
        FlErr why;
        FlStatus st = fl_write_file(r->o.plot, svg.data, svg.len, &why);
        fl_buf_free(&svg);
        if (st != FL_OK) return fl_err(e, "--plot: %s", why.msg);
    }
    FlEvents *ev = r->events;
    r->events = NULL;
    return fl_events_close(ev, e);
}
