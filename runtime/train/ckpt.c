/* ckpt.c: the checkpoints of a run that trains (ckpt.h): names, the last complete one, pruning
 * and the TRAIN file.
 *
 * The TRAIN file is text, one "key value..." line each, so that a person can read where a run
 * stands; doubles are written with 17 significant digits (%.17g), which read back exactly, and
 * counts as integers.
 */
#define _GNU_SOURCE
#include "runtime/train/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_FILE "TRAIN"
#define STATE_HEAD "fluidc training state 1"
#define MAX_FIGURES 4096
#define MAX_TRAINERS 4096

char *fl_ckpt_path(const char *dir, int64_t step) {
    FlBuf b = {0};
    fl_buf_printf(&b, "%s/step-%lld", dir, (long long)step);
    return b.data;
}

/* The step of a name "step-N" (N decimal, no sign, no leading zero), else -1; with `tmp`, the
 * name of an unfinished write "step-N.tmp.PID" gives N too. */
static int64_t name_step(const char *n, bool tmp) {
    if (strncmp(n, "step-", 5) != 0) return -1;
    const char *p = n + 5, *q = p;
    int64_t v = 0;
    while (*q >= '0' && *q <= '9' && q - p < 18) v = v * 10 + (*q++ - '0');
    if (q == p || (*p == '0' && q - p > 1)) return -1;
    if (*q == 0) return v;
    return tmp && !strncmp(q, ".tmp.", 5) ? v : -1;
}

FlStatus fl_ckpt_prepare(const char *dir, bool resume, FlErr *e) {
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        if (errno != ENOENT || mkdir(dir, 0777) != 0)
            return fl_err(e, "--checkpoint: cannot make '%s': %s", dir, strerror(errno));
        return FL_OK;
    }
    if (!S_ISDIR(sb.st_mode)) return fl_err(e, "--checkpoint: '%s' exists and is not a directory", dir);
    if (access(dir, W_OK) != 0) return fl_err(e, "--checkpoint: cannot write in '%s': %s", dir, strerror(errno));
    char *last = NULL;
    int64_t step;
    if (fl_ckpt_latest(dir, &last, &step, e) != FL_OK) return FL_ERROR;
    FlStatus st = FL_OK;
    if (last && !resume)
        st = fl_err(e, "--checkpoint: '%s' holds the checkpoints of another run (the last after step %lld); give "
                    "--resume to go on with it, or another directory", dir, (long long)step);
    free(last);
    return st;
}

FlStatus fl_ckpt_latest(const char *dir, char **path, int64_t *step, FlErr *e) {
    *path = NULL;
    *step = -1;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? FL_OK : fl_err(e, "--checkpoint: cannot read '%s': %s", dir, strerror(errno));
    for (struct dirent *ent; (ent = readdir(d));) {
        int64_t s = name_step(ent->d_name, false);
        if (s > *step) *step = s;
    }
    closedir(d);
    if (*step >= 0) *path = fl_ckpt_path(dir, *step);
    return FL_OK;
}

void fl_ckpt_prune(const char *dir, int64_t newest) {
    DIR *d = opendir(dir);
    if (!d) return;
    FL_VEC(int64_t) done = {0};
    FL_VEC(char *) unfinished = {0};
    for (struct dirent *ent; (ent = readdir(d));) {
        int64_t s = name_step(ent->d_name, false);
        if (s >= 0 && s <= newest) FL_VEC_PUSH(&done, s);
        else if ((s = name_step(ent->d_name, true)) >= 0 && s < newest) FL_VEC_PUSH(&unfinished, fl_xstrdup(ent->d_name));
    }
    closedir(d);
    FlBuf p = {0};
    for (size_t i = 0; i < done.len; i++) {
        size_t newer = 0; /* the checkpoints up to `newest` that are newer than this one */
        for (size_t k = 0; k < done.len; k++) newer += done.data[k] > done.data[i];
        if (newer < FL_CKPT_KEEP) continue;
        char *path = fl_ckpt_path(dir, done.data[i]);
        fl_params_remove(path);
        free(path);
    }
    for (size_t i = 0; i < unfinished.len; i++) {
        p.len = 0;
        fl_buf_printf(&p, "%s/%s", dir, unfinished.data[i]);
        fl_params_remove(fl_buf_str(&p));
        free(unfinished.data[i]);
    }
    fl_buf_free(&p);
    FL_VEC_FREE(&done);
    FL_VEC_FREE(&unfinished);
}

FlStatus fl_ckpt_write_state(const char *ckpt, const FlTrainState *s, FlErr *e) {
    FlBuf b = {0}, path = {0};
    fl_buf_printf(&b, STATE_HEAD "\nstep %lld\nepoch %lld\nbatch %lld\nseed %llu\nglobal_batch %lld\nrows %lld\n",
                  (long long)s->step, (long long)s->epoch, (long long)s->batch, (unsigned long long)s->seed,
                  (long long)s->global_batch, (long long)s->rows);
    fl_buf_printf(&b, "epoch_rows %.17g\nepoch_sums %zu", s->epoch_rows, s->nfetch);
    for (size_t i = 0; i < s->nfetch; i++) fl_buf_printf(&b, " %.17g", s->epoch_sums[i]);
    fl_buf_printf(&b, "\nruns %d", s->trainers);
    for (int t = 0; t < s->trainers; t++) fl_buf_printf(&b, " %llu", (unsigned long long)s->runs[t]);
    fl_buf_putc(&b, '\n');
    fl_buf_printf(&path, "%s/" STATE_FILE, ckpt);
    FlStatus st = fl_write_file(fl_buf_str(&path), b.data, b.len, e);
    fl_buf_free(&b);
    fl_buf_free(&path);
    return st;
}

void fl_ckpt_state_fini(FlTrainState *s) {
    free(s->epoch_sums);
    free(s->runs);
    memset(s, 0, sizeof *s);
}

/* A number of a line: *p moves past it and the blank after it. */
static bool take_u64(char **p, unsigned long long *out) {
    char *end;
    errno = 0;
    if (**p < '0' || **p > '9') return false;
    *out = strtoull(*p, &end, 10);
    if (errno || (*end != ' ' && *end != 0)) return false;
    *p = *end ? end + 1 : end;
    return true;
}
static bool take_double(char **p, double *out) {
    char *end;
    errno = 0;
    *out = strtod(*p, &end);
    if (errno || end == *p || (*end != ' ' && *end != 0)) return false;
    *p = *end ? end + 1 : end;
    return true;
}

/* Line `key ...` of the state into out: one number, or (epoch_sums, runs) a count and as many. */
static bool read_line(char *l, const char *key, FlTrainState *out) {
    size_t k = strlen(key);
    if (strncmp(l, key, k) != 0 || l[k] != ' ') return false;
    char *p = l + k + 1;
    unsigned long long u = 0, c = 0;
    bool ok = true;
    if (!strcmp(key, "epoch_rows")) {
        ok = take_double(&p, &out->epoch_rows);
    } else if (!strcmp(key, "epoch_sums")) {
        ok = take_u64(&p, &c) && c <= MAX_FIGURES;
        out->epoch_sums = fl_xcalloc(ok ? c + 1 : 1, sizeof(double));
        out->nfetch = ok ? c : 0;
        for (size_t i = 0; ok && i < c; i++) ok = take_double(&p, &out->epoch_sums[i]);
    } else if (!strcmp(key, "runs")) {
        ok = take_u64(&p, &c) && c >= 1 && c <= MAX_TRAINERS;
        out->runs = fl_xcalloc(ok ? c + 1 : 1, sizeof *out->runs);
        out->trainers = ok ? (int)c : 0;
        for (size_t i = 0; ok && i < c; i++) ok = take_u64(&p, &u), out->runs[i] = u;
    } else {
        ok = take_u64(&p, &u) && u <= INT64_MAX;
        if (!strcmp(key, "step")) out->step = (int64_t)u;
        else if (!strcmp(key, "epoch")) out->epoch = (int64_t)u;
        else if (!strcmp(key, "batch")) out->batch = (int64_t)u;
        else if (!strcmp(key, "seed")) out->seed = u;
        else if (!strcmp(key, "global_batch")) out->global_batch = (int64_t)u;
        else out->rows = (int64_t)u;
    }
    return ok && *p == 0;
}

FlStatus fl_ckpt_read_state(const char *ckpt, FlTrainState *out, FlErr *e) {
    memset(out, 0, sizeof *out);
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/" STATE_FILE, ckpt);
    size_t len;
    char *text = fl_read_regular_file(fl_buf_str(&path), &len, e);
    if (!text) {
        fl_buf_free(&path);
        return FL_ERROR;
    }
    static const char *keys[] = {"step", "epoch", "batch", "seed", "global_batch", "rows", "epoch_rows", "epoch_sums", "runs"};
    FlStatus st = FL_OK;
    int line = 0;
    for (char *l = text, *nl; st == FL_OK && *l; l = nl + 1, line++) {
        nl = strchr(l, '\n');
        if (!nl) {
            st = fl_err(e, "%s:%d: the line does not end", fl_buf_str(&path), line + 1);
            break;
        }
        *nl = 0;
        if (line == 0) {
            if (strcmp(l, STATE_HEAD) != 0)
                st = fl_err(e, "%s:1: not a training state ('%s'; expected '%s')", fl_buf_str(&path), l, STATE_HEAD);
        } else if (line > (int)FL_ARRAY_LEN(keys)) {
            st = fl_err(e, "%s:%d: an unexpected line", fl_buf_str(&path), line + 1);
        } else if (!read_line(l, keys[line - 1], out)) {
            st = fl_err(e, "%s:%d: expected '%s' and its value%s, found '%s'", fl_buf_str(&path), line + 1,
                        keys[line - 1], line >= 8 ? "s (a count first)" : "", l);
        }
    }
    if (st == FL_OK && line != (int)FL_ARRAY_LEN(keys) + 1)
        st = fl_err(e, "%s: the training state ends after %d lines (expected %zu)", fl_buf_str(&path), line,
                    FL_ARRAY_LEN(keys) + 1);
    free(text);
    fl_buf_free(&path);
    if (st != FL_OK) fl_ckpt_state_fini(out);
    return st;
}

/* ---------------------------------------------------------------- stopping */

static void stop_path(const char *dir, const char *name, FlBuf *out) { fl_buf_printf(out, "%s/%s", dir, name); }

FlStatus fl_ckpt_ask_stop(const char *dir, FlErr *e) {
    FlBuf p = {0};
    stop_path(dir, "STOP", &p);
    FlStatus st = fl_write_file(fl_buf_str(&p), "", 0, e);
    fl_buf_free(&p);
    return st;
}

bool fl_ckpt_take_stop(const char *dir) {
    FlBuf a = {0}, b = {0};
    stop_path(dir, "STOP", &a);
    stop_path(dir, "STOPPED", &b);
    bool took = rename(fl_buf_str(&a), fl_buf_str(&b)) == 0;
    fl_buf_free(&a);
    fl_buf_free(&b);
    return took;
}

bool fl_ckpt_stopped(const char *dir) {
    FlBuf p = {0};
    stop_path(dir, "STOPPED", &p);
    bool was = remove(fl_buf_str(&p)) == 0;
    fl_buf_free(&p);
    return was;
}

void fl_ckpt_clear_stop(const char *dir) {
    FlBuf p = {0};
    stop_path(dir, "STOP", &p);
    remove(fl_buf_str(&p));
    p.len = 0;
    stop_path(dir, "STOPPED", &p);
    remove(fl_buf_str(&p));
    fl_buf_free(&p);
}

/* ---------------------------------------------------------------- the writer */

struct FlCkptWriter {
    char *dir;
    pthread_t thread;
    bool running; /* a write was started and not waited for */
    /* the write in progress (the thread's alone while running) */
    FlNamedTensors v;
    FlTrainState st;
    char *log;
    size_t log_len;
    FlStatus status;
    FlErr err;
    /* figures */
    int written;
    double seconds, longest;
};

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A failing part of a checkpoint's write: params.c says "--save: ..." of its own. */
static FlStatus write_error(FlCkptWriter *w, const char *path) {
    char msg[sizeof w->err.msg];
    snprintf(msg, sizeof msg, "%s", strncmp(w->err.msg, "--save: ", 8) ? w->err.msg : w->err.msg + 8);
    return fl_err(&w->err, "--checkpoint: the checkpoint after step %lld ('%s'): %s", (long long)w->st.step, path, msg);
}

static void *write_main(void *arg) {
    FlCkptWriter *w = arg;
    double t0 = mono_now();
    char *path = fl_ckpt_path(w->dir, w->st.step);
    struct stat sb;
    /* the same step's checkpoint of an earlier attempt of the job (a restart goes on from the
     * last one it finds, and a dying attempt may have put a later one in place meanwhile) */
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) fl_params_remove(path);
    FlParamsSaving *sv = NULL;
    FlStatus st = fl_params_write_begin(path, &w->v, &sv, &w->err);
    if (st == FL_OK) st = fl_ckpt_write_state(fl_params_saving_dir(sv), &w->st, &w->err);
    if (st == FL_OK && w->log) {
        FlBuf lp = {0};
        fl_buf_printf(&lp, "%s/log.csv", fl_params_saving_dir(sv));
        st = fl_write_file(fl_buf_str(&lp), w->log, w->log_len, &w->err);
        fl_buf_free(&lp);
    }
    if (st == FL_OK) {
        st = fl_params_write_end(sv, &w->err);
        sv = NULL;
    }
    fl_params_write_abandon(sv);
    if (st == FL_OK) {
        fl_ckpt_prune(w->dir, w->st.step);
        double dt = mono_now() - t0;
        w->written++;
        w->seconds += dt;
        if (dt > w->longest) w->longest = dt;
    } else {
        write_error(w, path);
    }
    w->status = st;
    free(path);
    fl_params_free(&w->v);
    return NULL;
}

FlCkptWriter *fl_ckpt_writer_new(const char *dir) {
    FlCkptWriter *w = fl_xcalloc(1, sizeof *w);
    w->dir = fl_xstrdup(dir);
    return w;
}

FlStatus fl_ckpt_writer_wait(FlCkptWriter *w, FlErr *e) {
    if (!w->running) return FL_OK;
    pthread_join(w->thread, NULL);
    w->running = false;
    fl_ckpt_state_fini(&w->st);
    free(w->log);
    w->log = NULL;
    if (w->status != FL_OK && e) *e = w->err;
    return w->status;
}

FlStatus fl_ckpt_writer_start(FlCkptWriter *w, FlNamedTensors *v, const FlTrainState *st, const char *log,
                              size_t log_len, FlErr *e) {
    FlStatus s = fl_ckpt_writer_wait(w, e);
    if (s != FL_OK) {
        fl_params_free(v);
        return s;
    }
    w->v = *v;
    memset(v, 0, sizeof *v);
    w->st = *st;
    w->st.epoch_sums = fl_xcalloc(st->nfetch + 1, sizeof(double));
    memcpy(w->st.epoch_sums, st->epoch_sums, st->nfetch * sizeof(double));
    w->st.runs = fl_xcalloc((size_t)st->trainers + 1, sizeof *w->st.runs);
    memcpy(w->st.runs, st->runs, (size_t)st->trainers * sizeof *w->st.runs);
    w->log = log ? fl_xstrndup(log, log_len) : NULL;
    w->log_len = log_len;
    w->status = FL_OK;
    if (pthread_create(&w->thread, NULL, write_main, w) != 0) { /* no thread: write it now */
        write_main(w);
        s = w->status;
        if (s != FL_OK && e) *e = w->err;
        fl_ckpt_state_fini(&w->st);
        free(w->log);
        w->log = NULL;
        return s;
    }
    w->running = true;
    return FL_OK;
}

void fl_ckpt_writer_stats(const FlCkptWriter *w, int *written, double *seconds, double *longest) {
    *written = w->written;
    *seconds = w->seconds;
    *longest = w->longest;
}

void fl_ckpt_writer_free(FlCkptWriter *w) {
    if (!w) return;
    if (fl_ckpt_writer_wait(w, NULL) != FL_OK) { /* its error was the caller's to ask for */ }
    free(w->dir);
    free(w);
}
