/* api.c: the embedding API (runtime/api.h) over the IR reader, the executor and scopes. A loaded
 * program owns its bundle; an executor holds one prepared FlExec per program (startup, main). */
#include "runtime/api.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/ir/ir.h"
#include "compiler/ir/train_driver.h"
#include "runtime/core/driver.h"
#include "runtime/core/exec.h"
#include "runtime/core/scope.h"
#include "runtime/params.h"

struct FlLoadedProgram {
    FlBundle *bundle;
    FlNamedTensors model_params; /* an inference model's parameters, read by fl_program_load */
};

struct FlExecutor {
    FlExec *startup, *main;
    FlExec *driver; /* NULL when the bundle has none */
    FlExec **programs; /* the bundle's named programs, prepared (Bundle.programs' order) */
    const char **names; /* their names (borrowed from the bundle) */
    size_t nprograms;
    FlPar *par; /* the kernels' pool of both programs; NULL with threads <= 1 */
    const FlBundle *bundle; /* the program's (its readers); borrowed */
    const FlNamedTensors *model_params; /* an inference model's parameters (the program's); borrowed */
    uint64_t seed;          /* FlExecutorOptions.seed: the driver's readers shuffle with it */
};

/* An inference model's parameters (the persistable tensor vars of its main program) from the
 * checkpoint in dir, each checked against its declaration, into p. */
static FlStatus read_model_params(FlLoadedProgram *p, const char *dir, const char *path, FlErr *err) {
    const FlBlock *g = fl_ir_block(p->bundle->main, 0);
    FlErr e;
    for (size_t i = 0; i < g->vars.len; i++) {
        const FlVarDesc *d = g->vars.data[i];
        if (!d->persistable || d->kind != FL_VAR_DENSE) continue;
        FlNamedTensor nt = {.name = d->name, .t = FL_TENSOR_INIT};
        FlStatus st = fl_params_read(dir, d, &nt.t, &e);
        FL_VEC_PUSH(&p->model_params, nt);
        if (st != FL_OK) return fl_err(err, "inference model '%s': %s", path, fl_params_msg(e.msg));
    }
    return FL_OK;
}

FlStatus fl_program_load(const char *path, FlLoadedProgram **out, FlErr *err) {
    *out = NULL;
    FlBundle *b = NULL;
    FlPlan *plan = NULL;
    struct stat sb;
    bool dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    FlBuf file = {0};
    fl_buf_printf(&file, dir ? "%s/__model__" : "%s", path);
    if (dir && stat(fl_buf_str(&file), &sb) != 0) {
        fl_buf_free(&file);
        return fl_err(err, "%s: a directory without an inference model (no __model__ in it: "
                      "fluid.io.save_inference_model writes one)", path);
    }
    FlStatus st = fl_ir_read(fl_buf_str(&file), &b, &plan, err);
    if (st == FL_OK && plan)
        st = fl_err(err, "%s: a distributed plan, not a program: run it with flrun under mpirun", path);
    /* a file written before the driver was kept in it (format 2): fluid.train's driver, built now */
    FlErr de;
    if (st == FL_OK && fl_ir_bundle_add_train_driver(b, FL_LOC_NONE, &de) != FL_OK)
        st = fl_err(err, "%s: fluid.train's driver: %s", path, de.msg);
    else if (st == FL_OK && dir && !b->inference)
        st = fl_err(err, "%s: its __model__ is a compiled program but not an inference model (it names no feeds "
                    "and targets)", path);
    if (st == FL_OK) {
        *out = fl_program_from_bundle_take(b);
        b = NULL;
        if ((*out)->bundle->inference) { /* the parameters sit beside the model file */
            char *d = fl_path_dir(fl_buf_str(&file));
            st = read_model_params(*out, d, path, err);
            free(d);
        }
        if (st != FL_OK) {
            fl_program_free(*out);
            *out = NULL;
        }
    }
    fl_ir_bundle_free(b);
    fl_ir_plan_free(plan);
    fl_buf_free(&file);
    return st;
}

FlLoadedProgram *fl_program_from_bundle_take(FlBundle *bundle) {
    FlLoadedProgram *p = fl_xcalloc(1, sizeof *p);
    p->bundle = bundle;
    return p;
}

void fl_program_free(FlLoadedProgram *p) {
    if (!p) return;
    fl_params_free(&p->model_params);
    fl_ir_bundle_free(p->bundle);
    free(p);
}

const FlBundle *fl_program_bundle(const FlLoadedProgram *p) { return p->bundle; }

FlStatus fl_executor_new(const FlLoadedProgram *p, const FlExecutorOptions *opt, FlExecutor **out,
                         FlErr *err) {
    *out = NULL;
    int threads = opt ? opt->threads : 0;
    if (threads < 0 || threads > FL_PAR_MAX_THREADS)
        return fl_err(err, "executor: kernel threads %d out of range (0 to %d)", threads, FL_PAR_MAX_THREADS);
    FlExecutor *ex = fl_xcalloc(1, sizeof *ex);
    FlErr e2;
    if (threads > 1 && !(ex->par = fl_par_new(threads, &e2))) {
        fl_err(err, "executor: %s", e2.msg);
        goto fail;
    }
    FlExecOptions o = {.seed = opt ? opt->seed : 0, .par = ex->par, .trace = opt ? opt->trace : NULL,
                      .prof = opt ? opt->prof : NULL};
    const FlBundle *b = p->bundle;
    ex->bundle = b;
    ex->model_params = &p->model_params;
    ex->seed = o.seed;
    const char *const *src = (const char *const *)b->source_paths.data;
    size_t ns = b->source_paths.len;
    if (fl_exec_new(b->startup, src, ns, &o, &ex->startup, &e2) != FL_OK) {
        fl_err(err, "startup %s", e2.msg);
        goto fail;
    }
    if (fl_exec_new(b->main, src, ns, &o, &ex->main, &e2) != FL_OK) {
        fl_err(err, "main %s", e2.msg);
        goto fail;
    }
    ex->programs = fl_xcalloc(b->programs.len + 1, sizeof *ex->programs);
    ex->names = fl_xcalloc(b->programs.len + 1, sizeof *ex->names);
    for (; ex->nprograms < b->programs.len; ex->nprograms++) {
        const FlNamedProgram *np = &b->programs.data[ex->nprograms];
        ex->names[ex->nprograms] = np->name;
        if (fl_exec_new(np->program, src, ns, &o, &ex->programs[ex->nprograms], &e2) != FL_OK) {
            fl_err(err, "program '%s' %s", np->name, e2.msg);
            goto fail;
        }
    }
    if (b->driver && fl_exec_new(b->driver, src, ns, &o, &ex->driver, &e2) != FL_OK) {
        fl_err(err, "driver %s", e2.msg);
        goto fail;
    }
    *out = ex;
    return FL_OK;
fail:
    fl_executor_free(ex);
    return FL_ERROR;
}

void fl_executor_free(FlExecutor *ex) {
    if (!ex) return;
    fl_exec_free(ex->driver); /* first: its goroutines may still run the others */
    fl_exec_free(ex->startup);
    fl_exec_free(ex->main);
    for (size_t i = 0; i < ex->nprograms; i++) fl_exec_free(ex->programs[i]);
    free(ex->programs);
    free(ex->names);
    fl_par_free(ex->par);
    free(ex);
}

FlStatus fl_executor_run_startup(FlExecutor *ex, FlScope *scope, FlErr *err) {
    if (fl_exec_run(ex->startup, scope, NULL, 0, NULL, NULL, 0, 0, err) != FL_OK) return FL_ERROR;
    for (size_t i = 0; i < ex->model_params->len; i++) /* an inference model: its saved parameters */
        fl_scope_set_tensor(scope, ex->model_params->data[i].name, &ex->model_params->data[i].t);
    return FL_OK;
}

bool fl_executor_has_driver(const FlExecutor *ex) { return ex->driver != NULL; }

/* Runs the prepared driver drv on scope, its programs ex's (fl_executor_run_driver_exit). */
static FlStatus run_driver(FlExecutor *ex, FlExec *drv, FlScope *scope, int *exit_code, FlErr *err) {
    *exit_code = 0;
    FlDriverExit done = {.code = 0};
    atomic_init(&done.exited, false);
    FlDriverHost h = {.root = scope, .startup = ex->startup, .main = ex->main, .exit = &done, .bundle = ex->bundle,
                      .seed = ex->seed, .names = ex->names, .programs = ex->programs, .nprograms = ex->nprograms};
    FlScope *ds = fl_driver_scope(scope, &h);
    FlStatus st = fl_exec_run(drv, ds, NULL, 0, NULL, NULL, 0, 0, err);
    fl_scope_release(ds);
    if (atomic_load(&done.exited)) { /* an exit op ended it: its code, not the error that unwound the run */
        *exit_code = done.code;
        return FL_OK;
    }
    return st;
}

FlStatus fl_executor_run_driver_exit(FlExecutor *ex, FlScope *scope, int *exit_code, FlErr *err) {
    *exit_code = 0;
    if (!ex->driver) return fl_err(err, "the program has no driver (run its startup, then its main program)");
    return run_driver(ex, ex->driver, scope, exit_code, err);
}

FlStatus fl_executor_run_driver_program(FlExecutor *ex, const FlProgram *driver, FlScope *scope, int *exit_code,
                                        FlErr *err) {
    *exit_code = 0;
    /* its own ops are neither traced nor profiled: the programs it runs are, as when run directly */
    FlExecOptions o = {.seed = ex->seed};
    FlExec *drv;
    FlErr e2;
    const FlBundle *b = ex->bundle;
    if (fl_exec_new(driver, (const char *const *)b->source_paths.data, b->source_paths.len, &o, &drv, &e2) != FL_OK)
        return fl_err(err, "driver %s", e2.msg);
    FlStatus st = run_driver(ex, drv, scope, exit_code, err);
    fl_exec_free(drv);
    return st;
}

FlStatus fl_executor_run_driver(FlExecutor *ex, FlScope *scope, FlErr *err) {
    int code;
    if (fl_executor_run_driver_exit(ex, scope, &code, err) != FL_OK) return FL_ERROR;
    if (code) return fl_err(err, "the driver ended with sys.exit(%d)", code);
    return FL_OK;
}

#define STACK_N 16

static FlStatus run(FlExecutor *ex, FlScope *scope, const FlFeed *feeds, size_t nfeeds,
                    FlFetch *fetches, size_t nfetches, unsigned flags, FlErr *err) {
    FlExecFeed fst[STACK_N];
    const char *nst[STACK_N];
    FlTensor tst[STACK_N];
    FlExecFeed *f = nfeeds > STACK_N ? fl_xcalloc(nfeeds, sizeof *f) : fst;
    const char **names = nfetches > STACK_N ? fl_xcalloc(nfetches, sizeof *names) : nst;
    FlTensor *ts = nfetches > STACK_N ? fl_xcalloc(nfetches, sizeof *ts) : tst;
    for (size_t i = 0; i < nfeeds; i++) f[i] = (FlExecFeed){feeds[i].name, feeds[i].tensor};
    for (size_t i = 0; i < nfetches; i++) {
        names[i] = fetches[i].name;
        fl_tensor_init(&ts[i]);
    }
    FlStatus st = fl_exec_run(ex->main, scope, f, nfeeds, names, ts, nfetches, flags, err);
    if (st == FL_OK)
        for (size_t i = 0; i < nfetches; i++) {
            fl_tensor_fini(&fetches[i].tensor);
            fetches[i].tensor = ts[i]; /* moves the reference */
        }
    if (f != fst) free(f);
    if (names != nst) free(names);
    if (ts != tst) free(ts);
    return st;
}

FlStatus fl_executor_run(FlExecutor *ex, FlScope *scope, const FlFeed *feeds, size_t nfeeds,
                         FlFetch *fetches, size_t nfetches, FlErr *err) {
    return run(ex, scope, feeds, nfeeds, fetches, nfetches, 0, err);
}

FlStatus fl_executor_predict(FlExecutor *ex, FlScope *scope, const FlFeed *feeds, size_t nfeeds,
                             FlFetch *fetches, size_t nfetches, FlErr *err) {
    return run(ex, scope, feeds, nfeeds, fetches, nfetches, FL_EXEC_PREDICT, err);
}

uint64_t fl_executor_runs(const FlExecutor *ex) { return fl_exec_runs(ex->main); }
void fl_executor_set_runs(FlExecutor *ex, uint64_t runs) { fl_exec_set_runs(ex->main, runs); }

/* t = a new tensor holding a copy of data (dtype's element type, numel(ne) elements). */
static FlStatus from_raw(FlErr *err, FlTensor *t, FlDType dtype, int ndim, const int64_t *ne,
                         const void *data) {
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_alloc(err, &r, dtype, ndim, ne) != FL_OK) return FL_ERROR;
    memcpy(fl_tensor_data(&r), data, fl_tensor_nbytes(&r));
    fl_tensor_fini(t);
    *t = r;
    return FL_OK;
}

FlStatus fl_tensor_from_floats(FlErr *err, FlTensor *t, int ndim, const int64_t *ne,
                               const float *data) {
    return from_raw(err, t, FL_DT_FLOAT32, ndim, ne, data);
}

FlStatus fl_tensor_from_int64s(FlErr *err, FlTensor *t, int ndim, const int64_t *ne,
                               const int64_t *data) {
    return from_raw(err, t, FL_DT_INT64, ndim, ne, data);
}

FlStatus fl_tensor_to_floats(FlErr *err, const FlTensor *t, float *dst, size_t n) {
    if (!fl_tensor_has_data(t)) return fl_err(err, "the tensor is empty");
    int64_t m = fl_tensor_numel(t);
    if ((size_t)m > n)
        return fl_err(err, "the tensor %s has %lld elements, more than the %zu given",
                      fl_tensor_shape(t).s, (long long)m, n);
    if (t->dtype == FL_DT_FLOAT32) memcpy(dst, fl_tensor_data(t), (size_t)m * sizeof(float));
    else
        for (int64_t i = 0; i < m; i++) dst[i] = (float)fl_tensor_get(t, i);
    return FL_OK;
}

const char *fl_error_message(const FlErr *err) { return err ? err->msg : ""; }
