/* pserver.c: the pserver loop (FlDist.serve, run by listen_and_serv): receives gradients and
 * recv requests from every trainer, runs the optimize blocks, answers.
 *
 * How: the loop is single-threaded: it reads every waiting header (any source), stores and
 * weights gradients, runs optimize blocks when a step's gradients are complete (sync) or at once
 * (async), answers GETs (deferring those of a trainer whose gradient is part of an unfinished
 * step), and returns when every trainer sent DONE. In sync mode a payload's receives are posted
 * when its header is read (SRecv: a few pieces at a time, a trainer's payloads in header order)
 * and completed between reads of headers, so GETs are seen, and answered as their blocks
 * complete, while later gradients are still arriving. Received payloads land in recycled,
 * uninitialised buffers (Spare); a block headed by the transpiled sum + scale has them done on
 * receipt (fused mean) and runs from its optimizer op; when that op is element-wise
 * (FlDistUpdate) and the gradient comes in pieces, the block is streamed: each trainer's pieces
 * land in its ring of RECV_WINDOW pieces, and each piece is averaged, applied (in place) and
 * sent back to the waiting GETs as soon as every trainer's piece is in, which frees its slots.
 *
 * Invariants: a sync block collects one step at a time (SBlock.step; a gradient of another step
 * is an error); a GET of a block is answered only once the block's update for the requester's
 * step is done, or piece by piece as a streamed update applies them; a trainer's payloads are
 * received in the order of its headers; no wait lasts longer than the peer timeout without
 * progress (advance, check_stalls).
 */
#include "runtime/mpi/mpi_impl.h"
#include "compiler/ir/rules.h"

#include <stdlib.h>
#include <string.h>


#define RECV_WINDOW 2 /* pieces of one payload the sync server receives at once */

/* A gradient payload of a sync step that travels in pieces, received piece by piece: its
 * receives are posted as soon as its header is read (so a trainer's later headers, its GETs
 * among them, are read meanwhile), at most RECV_WINDOW at a time, and a trainer's payloads in
 * the order of their headers (MPI pairs a sender's data messages with receives in order). */
typedef struct SRecv {
    Hdr h;
    int t, src;
    long gi;
    FlTensor x; /* the payload, filled piece by piece (not in ring mode) */
    char *ring; /* a streamed gradient: its pieces land here in turn (RECV_WINDOW of them) */
    int64_t pieces, posted, done, consumed; /* consumed: pieces the stream has applied */
    MPI_Request req[RECV_WINDOW]; /* pieces [done, posted); piece c at c % RECV_WINDOW */
    double since;                 /* its last progress */
    int64_t trace_t0;             /* with a timeline: when its header was read */
} SRecv;

typedef struct SGrad {
    const char *name;   /* as grad_to_block names it */
    size_t block;
    FlVar **per_trainer; /* "<name>.trainer_t" vars (transpiled sync), else NULL */
    FlVar *var;          /* "<name>" itself */
    bool rows;           /* a SelectedRows gradient (the program declares it one): it comes packed
                          * (F_ROWS), is stored as rows, and the block merges and applies it */
    bool *have;          /* per trainer, this step: its header is in */
    FlTensor acc;        /* hand-written sync: the row-weighted mean so far */
    bool fused;          /* transpiled sync with the block's sum + scale done here (FlDistMean) */
    FlDistMean mean;
    FlTensor *got;       /* fused: per trainer, the gradient (filled as its pieces arrive) */
    double *w;           /* fused: per trainer, its weight T * share (rows_t / rows_global) */
    SRecv **rin;         /* fused: per trainer, the receive still filling got[t], or NULL */
    unsigned char *kind; /* fused: per trainer, this step: GK_* */
    char **ringbuf;      /* fused: per trainer, its ring (RECV_WINDOW pieces), made on first use */
} SGrad;

/* How a fused gradient's trainer sent it this step: not yet, a zero gradient, in pieces that go
 * through its ring (streamed), or whole into got[t]. */
enum { GK_NONE, GK_ZERO, GK_RING, GK_FULL };

typedef struct SBlock {
    size_t need;        /* gradient messages per step (grads x T) */
    size_t hdrs, have;  /* of them, this step: headers read, payloads complete */
    int64_t step;       /* the step being collected; -1: none */
    int64_t done;       /* the last step whose update is done; -1: none yet */
    double since;
    bool *contrib;      /* per trainer */
    size_t skip;        /* leading ops the server does itself (a fused mean) */
    /* A streamed update: a block of one fused gradient whose update is element-wise
     * (FlDistUpdate) takes the pieces of the step's gradient as they arrive from all trainers:
     * averages them, applies them and sends the parameter's updated piece to the trainers
     * waiting for it, while the next pieces are still being received. */
    SGrad *g;           /* the block's one fused gradient whose update is element-wise, or NULL */
    int streaming;      /* this step: 0 undecided, 1 streamed, -1 done whole */
    FlDistUpdate *upd;
    char *meanbuf;      /* one piece of the averaged gradient (made on first use) */
    bool plain;         /* the mean is trainer 0's gradient as received (T = 1, weight 1, no scale) */
    FlDType dt;         /* the gradient's dtype and elements */
    int64_t n;
    int64_t pieces, applied;
} SBlock;

typedef struct SGet {
    int64_t step; /* the requesting trainer's step */
    int src, tag;
    char *name;
    FlVar *var;
    size_t block;   /* the block writing var */
    int64_t sent;   /* a streamed answer: pieces posted; -1: none (answered whole) */
    FlTensor t;     /* a streamed answer: the tensor its pieces come from */
} SGet;

/* A sync LOOKUP held until its block's update of the requester's previous step is done. */
typedef struct SLookup {
    int64_t step;
    int src, tag;
    char *name;
    FlVar *var;
    size_t block;
    FlTensor ids;
} SLookup;

/* A var's writing block, cached per var (Server.writers, keyed by the FlVar pointer's bytes). */
typedef struct SWriter {
    FlVar *v;
    long k; /* -1: no optimize block writes it */
} SWriter;

typedef struct Server {
    FlMpi *m;
    FlDistServer *srv;
    SGrad *g;
    size_t ng;
    SBlock *b;
    size_t nb;
    int64_t lr_step;
    FL_VEC(SGet) gets;
    FL_VEC(SLookup) lookups;
    FlMap grads;   /* SGrad.name -> SGrad */
    FlMap writers; /* FlVar * -> SWriter */
    FL_VEC(SRecv *) recvs; /* sync: payloads being received, in header order */
    bool *blocked;         /* per trainer, scratch of advance() */
} Server;

/* "W@GRAD.block3" -> length of "W@GRAD", or 0 when the name has no .blockK suffix. */
static size_t strip_block(const char *name) { return fl_rule_block_base_len(name, NULL); }

static long find_grad(Server *s, const char *name) {
    SGrad *g = fl_map_find_str(&s->grads, name);
    size_t n;
    if (!g && (n = strip_block(name))) g = fl_map_find(&s->grads, name, n);
    return g ? (long)(g - s->g) : -1;
}

/* The server's var for `name`, or for name minus ".blockK" when the server holds it whole. */
static FlVar *find_var(Server *s, const char *name, const char **resolved, char *tmp, size_t ntmp) {
    FlVar *v = fl_dist_server_var(s->srv, name);
    *resolved = name;
    if (v) return v;
    size_t n = strip_block(name);
    if (!n || n >= ntmp) return NULL;
    memcpy(tmp, name, n);
    tmp[n] = 0;
    *resolved = tmp;
    return fl_dist_server_var(s->srv, tmp);
}

static FlStatus check_float(FlErr *e, const FlTensor *x, const char *name) {
    if (x->dtype == FL_DT_FLOAT32 || x->dtype == FL_DT_FLOAT64) return FL_OK;
    return fl_err(e, "gradient '%s' is %s; gradients must be float32 or float64", name, fl_dtype_name(x->dtype));
}

static FlStatus scale_add(FlErr *e, FlTensor *acc, const FlTensor *x, double w, const char *name) {
    int64_t n = fl_tensor_numel(x);
    if (check_float(e, x, name) != FL_OK) return FL_ERROR;
    if (!fl_tensor_has_data(acc)) {
        if (fl_tensor_alloc_like(e, acc, x, x->dtype) != FL_OK) return FL_ERROR;
        memset(fl_tensor_data(acc), 0, fl_tensor_nbytes(acc));
    }
    if (!fl_tensor_same_shape(acc, x) || acc->dtype != x->dtype)
        return fl_err(e, "gradient '%s': %s %s from one trainer, %s %s from another", name, fl_dtype_name(x->dtype),
                      fl_tensor_shape(x).s, fl_dtype_name(acc->dtype), fl_tensor_shape(acc).s);
    if (x->dtype == FL_DT_FLOAT32) {
        float *a = fl_tensor_data(acc);
        const float *b = fl_tensor_data(x);
        for (int64_t i = 0; i < n; i++) a[i] += (float)w * b[i];
    } else {
        double *a = fl_tensor_data(acc);
        const double *b = fl_tensor_data(x);
        for (int64_t i = 0; i < n; i++) a[i] += w * b[i];
    }
    return FL_OK;
}

static FlStatus scale_in_place(FlErr *e, FlTensor *x, double w, const char *name) {
    if (w == 1.0) return FL_OK;
    if (check_float(e, x, name) != FL_OK) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    if (x->dtype == FL_DT_FLOAT32) {
        float *a = fl_tensor_data(x);
        for (int64_t i = 0; i < n; i++) a[i] *= (float)w;
    } else {
        double *a = fl_tensor_data(x);
        for (int64_t i = 0; i < n; i++) a[i] *= w;
    }
    return FL_OK;
}

static FlStatus reply(Server *s, int src, int tag, const char *name, FlVar *v, FlErr *e) {
    int64_t ts = s->m->trace ? fl_trace_now() : 0;
    FlTensor t = FL_TENSOR_INIT;
    if (!v || !fl_var_get_tensor(v, &t)) {
        char msg[NAME_MAX_LEN + 128];
        snprintf(msg, sizeof msg, "pserver %d holds no value for '%s'", s->m->index, name);
        return flm_post(s->m, src, tag, K_ERROR, 0, name, NULL, msg, 0, e);
    }
    FlStatus st = flm_post(s->m, src, tag, K_PARAM, 0, name, &t, NULL, 0, e);
    if (s->m->trace) flm_span(s->m, "reply param", ts, name, "\"to\":%d,\"bytes\":%zu", src, fl_tensor_nbytes(&t));
    fl_tensor_fini(&t);
    return st;
}

/* Answers a LOOKUP: the rows `ids` (rebased to the block) of the table block v holds. */
static FlStatus reply_rows(Server *s, int src, int tag, const char *name, FlVar *v, const FlTensor *ids, FlErr *e) {
    int64_t ts = s->m->trace ? fl_trace_now() : 0;
    FlTensor t = FL_TENSOR_INIT, out = FL_TENSOR_INIT;
    char msg[NAME_MAX_LEN + 160];
    msg[0] = 0;
    if (!v || !fl_var_get_tensor(v, &t) || t.ndim != 2)
        snprintf(msg, sizeof msg, "pserver %d holds no table block '%s'", s->m->index, name);
    int64_t n = fl_tensor_numel(ids);
    if (!msg[0] && (ids->dtype != FL_DT_INT64 || ids->ndim != 1))
        snprintf(msg, sizeof msg, "the ids asked of '%s' are %s %s, not an int64 vector", name, fl_dtype_name(ids->dtype),
                 fl_tensor_shape(ids).s);
    const int64_t *id = msg[0] ? NULL : fl_tensor_data(ids);
    for (int64_t i = 0; !msg[0] && i < n; i++)
        if (id[i] < 0 || id[i] >= t.ne[0])
            snprintf(msg, sizeof msg, "row %lld asked of '%s' is outside its %lld rows", (long long)id[i], name,
                     (long long)t.ne[0]);
    FlStatus st = FL_OK;
    if (msg[0]) {
        st = flm_post(s->m, src, tag, K_ERROR, 0, name, NULL, msg, 0, e);
    } else {
        int64_t ne[2] = {n, t.ne[1]};
        st = fl_tensor_alloc_uninit(e, &out, t.dtype, 2, ne);
        size_t row = (size_t)t.ne[1] * fl_dtype_size(t.dtype);
        for (int64_t i = 0; st == FL_OK && i < n; i++)
            memcpy((char *)fl_tensor_data(&out) + (size_t)i * row, (const char *)fl_tensor_data(&t) + (size_t)id[i] * row, row);
        if (st == FL_OK) st = flm_post(s->m, src, tag, K_PARAM, 0, name, &out, NULL, 0, e);
    }
    if (s->m->trace) flm_span(s->m, "reply rows", ts, name, "\"to\":%d,\"rows\":%lld", src, (long long)n);
    fl_tensor_fini(&out);
    fl_tensor_fini(&t);
    return st;
}

/* The optimize block writing var v (named name), -1 when none; searched once per var. */
static long block_writing(Server *s, FlVar *v, const char *name) {
    SWriter *w = fl_map_find(&s->writers, (const char *)&v, sizeof v);
    if (w) return w->k;
    w = fl_xcalloc(1, sizeof *w);
    w->v = v;
    w->k = -1;
    for (size_t k = 0; k < s->nb && w->k < 0; k++)
        if (fl_dist_server_block_writes(s->srv, k, name)) w->k = (long)k;
    fl_map_put(&s->writers, (const char *)&w->v, sizeof w->v, w);
    return w->k;
}

/* The lr_block, once per step, before the step's first update. */
static FlStatus run_lr(Server *s, int64_t step, FlErr *e) {
    if (!fl_dist_server_has_lr(s->srv) || step <= s->lr_step) return FL_OK;
    s->lr_step = step;
    return fl_dist_server_run(s->srv, s->nb, e);
}

static FlStatus run_block(Server *s, size_t k, int64_t step, FlErr *e) {
    double t0 = flm_now();
    int64_t ts = s->m->trace ? fl_trace_now() : 0;
    FlStatus st = run_lr(s, step, e);
    if (st == FL_OK) st = fl_dist_server_run_from(s->srv, k, s->b[k].skip, e);
    s->m->compute += flm_now() - t0;
    if (s->m->trace) flm_span(s->m, "update", ts, NULL, "\"block\":%zu,\"step\":%lld", k, (long long)step);
    if (step + 1 > s->m->steps) s->m->steps = step + 1;
    return st;
}

/* The mean's loops, 8 elements at a time in an inner loop of fixed length, which -O2 turns
 * into vector instructions (a loop of unknown length it leaves scalar). */
static void mean_first(float *restrict o, const float *restrict x, float w, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) o[i + k] = w * x[i + k];
    for (; i < n; i++) o[i] = w * x[i];
}
static void mean_add(float *restrict o, const float *restrict x, float w, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) o[i + k] += w * x[i + k];
    for (; i < n; i++) o[i] += w * x[i];
}
static void mean_scale(float *restrict o, float sc, float bi, bool bias_after, int64_t n) {
    int64_t i = 0;
    if (bias_after) {
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; k++) o[i + k] = sc * o[i + k] + bi;
        for (; i < n; i++) o[i] = sc * o[i] + bi;
    } else {
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; k++) o[i + k] = sc * (o[i + k] + bi);
        for (; i < n; i++) o[i] = sc * (o[i] + bi);
    }
}

/* n elements of a fused block's gradient into out from the trainers' src[t]: scale * sum_t w_t *
 * G_t + bias, the transpiled block's sum(G.trainer_t) and scale with the same float operations
 * in the same order. */
static void mean_piece(Server *s, const SGrad *g, FlDType dt, const void *const *src, void *out, int64_t n) {
    int T = s->m->T;
    const FlDistMean *mn = &g->mean;
    if (dt == FL_DT_FLOAT32) {
        float sc = (float)mn->scale, bi = (float)mn->bias;
        /* in chunks that stay in the L1 cache, one trainer at a time, each loop in vector
         * instructions (the loop over the trainers inside the one over the elements ran scalar,
         * a third of a 2 x 2 MLP 784 pserver's time); each element's sum in the same order */
        for (int64_t j0 = 0; j0 < n; j0 += 4096) {
            int64_t m = j0 + 4096 < n ? 4096 : n - j0;
            float *o = (float *)out + j0;
            mean_first(o, (const float *)src[0] + j0, (float)g->w[0], m);
            for (int t = 1; t < T; t++) mean_add(o, (const float *)src[t] + j0, (float)g->w[t], m);
            mean_scale(o, sc, bi, mn->bias_after_scale, m);
        }
    } else {
        double *o = out;
        for (int64_t i = 0; i < n; i++) {
            double a = g->w[0] * ((const double *)src[0])[i];
            for (int t = 1; t < T; t++) a += g->w[t] * ((const double *)src[t])[i];
            o[i] = mn->bias_after_scale ? mn->scale * a + mn->bias : mn->scale * (a + mn->bias);
        }
    }
}

/* A fused block's trainers sent gradients of one float dtype and shape. */
static FlStatus check_same(Server *s, const SGrad *g, FlErr *e) {
    const FlTensor *x0 = &g->got[0];
    for (int t = 0; t < s->m->T; t++) {
        const FlTensor *x = &g->got[t];
        if (check_float(e, x, g->name) != FL_OK) return FL_ERROR;
        if (t && (!fl_tensor_same_shape(x, x0) || x->dtype != x0->dtype))
            return fl_err(e, "gradient '%s': %s %s from one trainer, %s %s from another", g->name, fl_dtype_name(x0->dtype),
                          fl_tensor_shape(x0).s, fl_dtype_name(x->dtype), fl_tensor_shape(x).s);
    }
    return FL_OK;
}

/* The mean is trainer 0's gradient as it came. */
static bool mean_is_plain(const Server *s, const SGrad *g) {
    return s->m->T == 1 && g->w[0] == 1.0 && g->mean.scale == 1.0 && g->mean.bias == 0.0;
}

/* A fused block's whole gradient, into its var. */
static FlStatus fused_mean(Server *s, SGrad *g, FlErr *e) {
    if (check_same(s, g, e) != FL_OK) return FL_ERROR;
    const FlTensor *x0 = &g->got[0];
    FlTensor r = FL_TENSOR_INIT;
    if (mean_is_plain(s, g)) {
        fl_tensor_ref(&r, x0);
    } else {
        if (flm_spare_tensor(s->m, -1, g->name, x0->dtype, x0->ndim, x0->ne, fl_tensor_nbytes(x0), &r, e) != FL_OK)
            return FL_ERROR;
        const void **src = fl_xcalloc((size_t)s->m->T, sizeof *src);
        for (int t = 0; t < s->m->T; t++) src[t] = fl_tensor_data(&g->got[t]);
        mean_piece(s, g, x0->dtype, src, fl_tensor_data(&r), fl_tensor_numel(x0));
        free(src);
    }
    for (int t = 0; t < s->m->T; t++) fl_tensor_fini(&g->got[t]);
    fl_var_take_tensor(g->mean.out, &r);
    return FL_OK;
}

/* Block k's step is done (its update ran): reset it and answer the GETs that waited for it. */
static FlStatus finish_step(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    for (size_t i = 0; i < s->ng; i++) {
        SGrad *g = &s->g[i];
        if (g->block != k) continue;
        memset(g->have, 0, (size_t)s->m->T * sizeof *g->have);
        for (int t = 0; g->got && t < s->m->T; t++) {
            fl_tensor_fini(&g->got[t]);
            g->kind[t] = GK_NONE;
        }
    }
    b->done = b->step;
    b->step = -1;
    b->hdrs = b->have = 0;
    b->streaming = 0;
    memset(b->contrib, 0, (size_t)s->m->T * sizeof *b->contrib);
    size_t keep = 0;
    FlStatus st = FL_OK;
    for (size_t i = 0; i < s->gets.len; i++) {
        SGet *q = &s->gets.data[i];
        if (q->block == k && q->step <= b->done) {
            if (q->sent < 0 && st == FL_OK) st = reply(s, q->src, q->tag, q->name, q->var, e);
            fl_tensor_fini(&q->t);
            free(q->name);
        } else {
            s->gets.data[keep++] = *q;
        }
    }
    s->gets.len = keep;
    keep = 0;
    for (size_t i = 0; i < s->lookups.len; i++) { /* a lookup of step s reads the rows step s - 1 left */
        SLookup *q = &s->lookups.data[i];
        if (q->block == k && q->step - 1 <= b->done) {
            if (st == FL_OK) st = reply_rows(s, q->src, q->tag, q->name, q->var, &q->ids, e);
            fl_tensor_fini(&q->ids);
            free(q->name);
        } else {
            s->lookups.data[keep++] = *q;
        }
    }
    s->lookups.len = keep;
    return st;
}

/* Sync: block k has every gradient of its step: store hand-written and fused means, run. */
static FlStatus complete(Server *s, size_t k, FlErr *e) {
    for (size_t i = 0; i < s->ng; i++) {
        SGrad *g = &s->g[i];
        if (g->block != k) continue;
        if (g->fused && fused_mean(s, g, e) != FL_OK) return FL_ERROR;
        if (!g->per_trainer) fl_var_take_tensor(g->var, &g->acc);
    }
    if (run_block(s, k, s->b[k].step, e) != FL_OK) return FL_ERROR;
    return finish_step(s, k, e);
}

/* A streamed block's GETs of this step: headers, then every piece applied so far. A GET of a
 * var the update does not write in pieces is answered whole when the step is done. */
static FlStatus stream_replies(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    for (size_t i = 0; i < s->gets.len; i++) {
        SGet *q = &s->gets.data[i];
        if (q->block != k || q->step > b->step) continue;
        if (q->sent < 0) {
            if (!fl_dist_update_tensor(b->upd, q->var, &q->t)) continue;
            if (fl_tensor_numel(&q->t) != b->n || q->t.dtype != b->dt) { /* not the pieces applied */
                fl_tensor_fini(&q->t);
                continue;
            }
            if (flm_post_msg(s->m, q->src, q->tag, K_PARAM, 0, q->name, &q->t, NULL, 0, true, 0, e) != FL_OK) return FL_ERROR;
            q->sent = 0;
        }
        for (; q->sent < b->applied; q->sent++)
            if (flm_post_piece(s->m, q->src, q->tag, &q->t, q->sent, e) != FL_OK) return FL_ERROR;
    }
    return FL_OK;
}

/* Block k has every header of its step: when its gradient comes in pieces through the rings,
 * begin the streamed update (else the block runs whole once every payload is in). */
static FlStatus stream_begin(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    SGrad *g = b->g;
    FlMpi *m = s->m;
    b->streaming = -1;
    bool ring = false, full = false;
    for (int t = 0; t < m->T; t++) {
        ring |= g->kind[t] == GK_RING;
        full |= g->kind[t] == GK_FULL;
    }
    if (!ring) return FL_OK;
    if (full)
        return fl_err(e, "gradient '%s' comes in pieces of different sizes from different trainers (give every rank the "
                      "same --piece)", g->name);
    if (check_same(s, g, e) != FL_OK) return FL_ERROR;
    const FlTensor *x0 = &g->got[0]; /* its shape (a ring trainer's whole tensor is never filled) */
    b->dt = x0->dtype;
    b->n = fl_tensor_numel(x0);
    b->plain = mean_is_plain(s, g);
    if (!b->plain && !b->meanbuf) b->meanbuf = fl_xmalloc(m->piece);
    double t0 = flm_now();
    FlStatus st = run_lr(s, b->step, e);
    if (st == FL_OK) st = fl_dist_update_begin(s->srv, k, b->skip, b->n, g->mean.out, b->dt, &b->upd, e);
    m->compute += flm_now() - t0;
    if (st == FL_OK && !b->upd)
        st = fl_err(e, "optimize block %zu cannot apply gradient '%s' piece by piece: its state does not have the "
                    "gradient's shape", k, g->name);
    if (st != FL_OK) return st;
    b->streaming = 1;
    b->pieces = flm_npieces(fl_tensor_nbytes(x0), m->piece);
    b->applied = 0;
    return FL_OK;
}

/* A streamed block: averages and applies the pieces every trainer's gradient has (freeing their
 * ring slots), answers, and ends the step after the last piece, once every payload is in. */
static FlStatus stream(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    SGrad *g = b->g;
    FlMpi *m = s->m;
    int T = m->T;
    int64_t avail = b->pieces;
    for (int t = 0; t < T; t++)
        if (g->rin[t] && g->rin[t]->done < avail) avail = g->rin[t]->done;
    size_t es = fl_dtype_size(b->dt);
    int64_t per = m->piece / (int64_t)es;
    const void *stack[8], **src = T <= 8 ? stack : fl_xcalloc((size_t)T, sizeof *src);
    double t0 = flm_now();
    int64_t ts = m->trace ? fl_trace_now() : 0, applied0 = b->applied;
    FlStatus st = FL_OK;
    for (; st == FL_OK && b->applied < avail; b->applied++) {
        int64_t c = b->applied, i0 = c * per, i1 = i0 + per < b->n ? i0 + per : b->n;
        for (int t = 0; t < T; t++)
            src[t] = g->kind[t] == GK_RING ? g->ringbuf[t] + (size_t)(c % RECV_WINDOW) * m->piece
                                           : (const char *)fl_tensor_data(&g->got[t]) + (size_t)i0 * es;
        const void *gp = src[0];
        if (!b->plain) {
            mean_piece(s, g, b->dt, src, b->meanbuf, i1 - i0);
            gp = b->meanbuf;
        }
        st = fl_dist_update_run(b->upd, i0, i1, gp, e);
        for (int t = 0; t < T; t++)
            if (g->rin[t]) g->rin[t]->consumed = c + 1;
    }
    if (src != stack) free(src);
    m->compute += flm_now() - t0;
    if (m->trace && b->applied > applied0)
        flm_span(m, "update pieces", ts, NULL, "\"block\":%zu,\"step\":%lld,\"pieces\":[%lld,%lld],\"of\":%lld", k,
                 (long long)b->step, (long long)applied0, (long long)b->applied, (long long)b->pieces);
    if (st == FL_OK) st = stream_replies(s, k, e);
    if (st != FL_OK || b->applied < b->pieces || b->have < b->need) return st;
    st = fl_dist_update_end(b->upd, e);
    b->upd = NULL;
    if (b->step + 1 > m->steps) m->steps = b->step + 1;
    return st == FL_OK ? finish_step(s, k, e) : st;
}

/* Something of block k's step came in: stream, or run it whole when complete. */
static FlStatus block_progress(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    if (b->step < 0) return FL_OK;
    if (b->streaming == 0 && b->g && b->hdrs == b->need && stream_begin(s, k, e) != FL_OK) return FL_ERROR;
    if (b->streaming > 0) return stream(s, k, e);
    return b->have == b->need ? complete(s, k, e) : FL_OK;
}

/* Sync: the sender's part of the merged gradient (docs/distributed.md): rows_t / rows_global
 * when the loss is a mean over the batch; when it is a sum (loss_sum), 1, or 0 for an empty
 * share; 1/T without global rows (no reader: every trainer ran the same batch). */
static double share(const Server *s, const Hdr *h) {
    if (h->rows_global <= 0) return 1.0 / s->m->T;
    if (fl_dist_server_loss_sum(s->srv)) return h->rows > 0 ? 1.0 : 0.0;
    return (double)h->rows / (double)h->rows_global;
}

/* A SelectedRows gradient's packed payload x (taken) into var v as rows, its value times w. */
static FlStatus rows_in(FlVar *v, FlTensor *x, double w, const char *name, FlErr *e) {
    FlSelectedRows r, sc;
    fl_rows_init(&r);
    fl_rows_init(&sc);
    FlErr in;
    FlStatus st = fl_rows_unpack(&in, x, &r);
    if (st != FL_OK) st = fl_err(e, "gradient '%s': %s", name, in.msg);
    if (st == FL_OK && w != 1.0) {
        st = fl_rows_scale(e, &r, w, &sc);
        fl_rows_fini(&r);
        r = sc;
    }
    if (st == FL_OK) fl_var_take_rows(v, &r);
    fl_rows_fini(&r);
    fl_tensor_fini(x);
    return st;
}

/* The gradient came as the server expects it: packed rows for a SelectedRows, a tensor else. */
static FlStatus check_kind(Server *s, const SGrad *g, int src, const Hdr *h, const char *name, FlErr *e) {
    bool rows = (h->flags & F_ROWS) != 0;
    if (rows == g->rows) return FL_OK;
    char pn[FLM_PEER_NAME_MAX];
    return fl_err(e, "got gradient '%s' from %s as %s, but this pserver's program declares it %s", name,
                  flm_peer_name(s->m, src, pn, sizeof pn), rows ? "a SelectedRows" : "a dense tensor",
                  g->rows ? "a SelectedRows (a sparse gradient)" : "dense");
}

/* Sync: trainer t's whole gradient x (taken) of entry g is in: weigh and store it. */
static FlStatus payload_in(Server *s, SGrad *g, int t, const Hdr *h, FlTensor *x, FlErr *e) {
    FlMpi *m = s->m;
    FlStatus st = FL_OK;
    double wt = (double)m->TP * share(s, h);
    if (g->rows) { /* G.trainer_t = T * share * G_t as rows; the block merges and scales by 1/T */
        if (!g->per_trainer)
            st = fl_err(e, "gradient '%s' is a SelectedRows: a hand-written sync server takes it only as "
                        "'%s.trainer_t' vars (a transpiled plan's)", g->name, g->name);
        else st = rows_in(g->per_trainer[t], x, wt, g->name, e);
    } else if (g->fused) { /* kept as received; the mean weighs, sums and scales in one pass */
        st = check_float(e, x, g->name);
        fl_tensor_fini(&g->got[t]);
        g->got[t] = *x;
        *x = (FlTensor)FL_TENSOR_INIT;
        g->rin[t] = NULL;
    } else if (g->per_trainer) { /* G.trainer_t = T * share * G_t; the block sums and scales by 1/T */
        st = scale_in_place(e, x, wt, g->name);
        if (st == FL_OK) fl_var_take_tensor(g->per_trainer[t], x);
    } else { /* G = sum_t share_t * G_t */
        st = scale_add(e, &g->acc, x, share(s, h), g->name);
    }
    fl_tensor_fini(x);
    if (st != FL_OK) return FL_ERROR;
    s->b[g->block].have++;
    return block_progress(s, g->block, e);
}

/* A gradient's header. Async: received and applied at once. Sync: the step's bookkeeping now
 * (so that the trainer's GETs of the block wait for it); the payload now when it came inline,
 * else its receive starts (SRecv). */
static FlStatus on_grad(Server *s, int t, int src, const Hdr *h, const char *name, const char *payload, FlErr *e) {
    FlMpi *m = s->m;
    char pn[FLM_PEER_NAME_MAX];
    long gi = find_grad(s, name);
    if (gi < 0)
        return fl_err(e, "got gradient '%s' from %s, which no optimize block of this pserver takes", name,
                      flm_peer_name(m, src, pn, sizeof pn));
    SGrad *g = &s->g[gi];
    FlTensor x = FL_TENSOR_INIT;
    if (check_kind(s, g, src, h, name, e) != FL_OK) return FL_ERROR;
    if (!fl_dist_server_sync(s->srv)) { /* async: apply at once (a zero gradient: nothing to apply) */
        if (flm_take_payload(m, h, name, payload, src, TAG_DATA, &x, e) != FL_OK) return FL_ERROR;
        if ((h->flags & F_ZERO) || (g->rows && h->rows == 0 && h->rows_global > 0)) {
            fl_tensor_fini(&x);
            return FL_OK;
        }
        if (g->rows) {
            if (rows_in(g->var, &x, 1.0, g->name, e) != FL_OK) return FL_ERROR;
        } else {
            fl_var_take_tensor(g->var, &x);
        }
        return run_block(s, g->block, h->step, e);
    }
    SBlock *b = &s->b[g->block];
    if (b->step < 0) {
        b->step = h->step;
        b->since = flm_now();
    } else if (h->step != b->step) {
        return fl_err(e, "got %s's gradient '%s' of step %lld while step %lld is incomplete", flm_peer_name(m, src, pn, sizeof pn), name,
                      (long long)h->step, (long long)b->step);
    }
    if (g->have[t])
        return fl_err(e, "got gradient '%s' twice from %s in step %lld", name, flm_peer_name(m, src, pn, sizeof pn),
                      (long long)h->step);
    g->have[t] = true;
    b->contrib[t] = true;
    b->hdrs++;
    if (g->fused) g->w[t] = (double)m->TP * share(s, h);
    /* a gradient its block streams goes through the trainer's ring: it is averaged and applied
     * piece by piece and never exists whole (x has its shape and no buffer) */
    bool ring = b->g == g && !(h->flags & (F_INLINE | F_ZERO)) && h->nbytes > m->piece && /* two pieces or more */
                h->piece == m->piece;
    int64_t pieces;
    if (flm_payload_tensor(m, h, name, payload, src, ring, &x, &pieces, e) != FL_OK) return FL_ERROR;
    if (g->fused) g->kind[t] = (h->flags & F_ZERO) ? GK_ZERO : ring ? GK_RING : GK_FULL;
    if (pieces == 0) return payload_in(s, g, t, h, &x, e);
    SRecv *r = fl_xcalloc(1, sizeof *r);
    *r = (SRecv){.h = *h, .t = t, .src = src, .gi = gi, .x = x, .pieces = pieces, .since = flm_now(),
                 .trace_t0 = m->trace ? fl_trace_now() : 0};
    FL_VEC_PUSH(&s->recvs, r);
    if (g->fused) {
        fl_tensor_ref(&g->got[t], &r->x);
        g->rin[t] = r;
    }
    if (ring) {
        if (!g->ringbuf[t]) g->ringbuf[t] = fl_xmalloc((size_t)RECV_WINDOW * m->piece);
        r->ring = g->ringbuf[t];
    }
    return block_progress(s, g->block, e);
}

/* Sync: moves the payloads being received on: completes what arrived, posts the next pieces'
 * receives, and hands on what progressed; *moved tells whether anything did. A payload that
 * makes no progress for the timeout is an error naming its sender. */
static FlStatus advance(Server *s, bool *moved, FlErr *e) {
    FlMpi *m = s->m;
    double tn = flm_now();
    memset(s->blocked, 0, (size_t)m->T * sizeof *s->blocked);
    for (size_t i = 0; i < s->recvs.len; i++) {
        SRecv *r = s->recvs.data[i];
        int64_t before = r->done;
        while (r->done < r->posted) {
            int flag = 0;
            MPI_TRY(MPI_Test(&r->req[r->done % RECV_WINDOW], &flag, MPI_STATUS_IGNORE), "receiving");
            if (!flag) break;
            r->done++;
        }
        /* a ring slot is free again once the stream has applied its piece */
        while (!s->blocked[r->t] && r->posted < r->pieces && r->posted - r->done < RECV_WINDOW &&
               (!r->ring || r->posted - r->consumed < RECV_WINDOW)) {
            int64_t c = r->posted;
            char *at = r->ring ? r->ring + (size_t)(c % RECV_WINDOW) * r->h.piece
                               : (char *)fl_tensor_data(&r->x) + (size_t)c * r->h.piece;
            MPI_TRY(MPI_Irecv(at, (int)flm_piece_len(r->h.nbytes, r->h.piece, c), MPI_BYTE, r->src, TAG_DATA, MPI_COMM_WORLD,
                              &r->req[c % RECV_WINDOW]),
                    "posting a receive");
            r->posted++;
        }
        if (r->posted < r->pieces) s->blocked[r->t] = true; /* its later payloads wait their turn */
        bool waits_for_others = r->ring && r->done == r->posted && r->posted - r->consumed >= RECV_WINDOW;
        if (r->done > before) {
            *moved = true;
            r->since = tn;
        } else if (waits_for_others) { /* a full ring: the other trainers' silence is check_stalls' */
            r->since = tn;
        } else if (flm_waited_too_long(m, r->src, tn - r->since)) {
            char pn[FLM_PEER_NAME_MAX];
            return fl_err(e, "receiving '%s': no data from %s for %.0f s " FL_MPI_PEER_TIMEOUT,
                          s->g[r->gi].name, flm_peer_name(m, r->src, pn, sizeof pn), m->timeout);
        }
    }
    size_t keep = 0;
    FlStatus st = FL_OK;
    for (size_t i = 0; i < s->recvs.len; i++) {
        SRecv *r = s->recvs.data[i];
        SGrad *g = &s->g[r->gi];
        if (st != FL_OK || r->done < r->pieces) {
            s->recvs.data[keep++] = r;
            if (st == FL_OK && r->done > 0 && s->b[g->block].streaming > 0) st = stream(s, g->block, e);
            continue;
        }
        if (m->trace)
            flm_span(m, "recv grad pieces", r->trace_t0, g->name, "\"from\":%d,\"pieces\":%lld,\"bytes\":%llu,\"step\":%lld",
                     r->src, (long long)r->pieces, (unsigned long long)r->h.nbytes, (long long)r->h.step);
        st = payload_in(s, g, r->t, &r->h, &r->x, e);
        free(r);
    }
    s->recvs.len = keep;
    return st;
}

static FlStatus on_get(Server *s, int t, int src, const Hdr *h, const char *name, FlErr *e) {
    char tmp[NAME_MAX_LEN + 1];
    const char *res;
    FlVar *v = find_var(s, name, &res, tmp, sizeof tmp);
    if (!v) {
        char msg[NAME_MAX_LEN + 128];
        snprintf(msg, sizeof msg, "pserver %d has no var '%s'", s->m->index, name);
        return flm_post(s->m, src, h->reply_tag, K_ERROR, 0, name, NULL, msg, 0, e);
    }
    long k = block_writing(s, v, res);
    /* Sync: a trainer's request in step s gets the block as updated by step s. It is held while
     * that update is not done: while the trainer's gradient is part of an unfinished step, and
     * also when the request overtook the gradient (a goroutine may recv while another sends),
     * and always while the block's update is streaming (its vars are half updated). */
    if (fl_dist_server_sync(s->srv) && k >= 0 &&
        ((s->b[k].step >= 0 && s->b[k].contrib[t]) || s->b[k].done < h->step || s->b[k].streaming > 0)) {
        SGet q = {.step = h->step, .src = src, .tag = h->reply_tag, .name = fl_xstrdup(name), .var = v,
                  .block = (size_t)k, .sent = -1, .t = FL_TENSOR_INIT};
        FL_VEC_PUSH(&s->gets, q);
        return s->b[k].streaming > 0 ? stream_replies(s, (size_t)k, e) : FL_OK;
    }
    return reply(s, src, h->reply_tag, name, v, e);
}

/* A LOOKUP of rows of a distributed table's block: its ids come inline or in pieces on the data
 * tag of the request's reply pair (received at once: the trainer posts them with the header).
 * Sync: a request in step s reads the block as step s - 1 left it, so it is held while the
 * requester's gradient is part of an unfinished step (its previous one) or the block has not
 * finished step s - 1. */
static FlStatus on_lookup(Server *s, int t, int src, const Hdr *h, const char *name, const char *payload, FlErr *e) {
    FlTensor ids = FL_TENSOR_INIT;
    if (flm_take_payload(s->m, h, name, payload, src, h->reply_tag + 1, &ids, e) != FL_OK) return FL_ERROR;
    char tmp[NAME_MAX_LEN + 1];
    const char *res;
    FlVar *v = find_var(s, name, &res, tmp, sizeof tmp);
    long k = v ? block_writing(s, v, res) : -1;
    if (k < 0) {
        fl_tensor_fini(&ids);
        char msg[NAME_MAX_LEN + 128];
        snprintf(msg, sizeof msg, "pserver %d updates no table block '%s'", s->m->index, name);
        return flm_post(s->m, src, h->reply_tag, K_ERROR, 0, name, NULL, msg, 0, e);
    }
    SBlock *b = &s->b[k];
    if (fl_dist_server_sync(s->srv) && ((b->step >= 0 && b->contrib[t]) || b->done < h->step - 1 || b->streaming > 0)) {
        SLookup q = {.step = h->step, .src = src, .tag = h->reply_tag, .name = fl_xstrdup(name), .var = v,
                     .block = (size_t)k, .ids = ids};
        FL_VEC_PUSH(&s->lookups, q);
        return FL_OK;
    }
    FlStatus st = reply_rows(s, src, h->reply_tag, name, v, &ids, e);
    fl_tensor_fini(&ids);
    return st;
}

/* A block that waits longer than the timeout for some trainers' gradients: name them. */
static FlStatus check_stalls(Server *s, FlErr *e) {
    double t = flm_now();
    for (size_t k = 0; k < s->nb; k++) {
        SBlock *b = &s->b[k];
        if (b->step < 0 || t - b->since <= s->m->timeout) continue;
        for (int i = 0; i < s->m->T; i++) {
            int r = s->m->trainer_rank[i];
            if (!b->contrib[i] && flm_waited_too_long(s->m, r, t - b->since)) {
                char pn[FLM_PEER_NAME_MAX];
                return fl_err(e, "step %lld: no gradient from %s for %.0f s " FL_MPI_PEER_TIMEOUT "%s",
                              (long long)b->step, flm_peer_name(s->m, r, pn, sizeof pn), t - b->since,
                              flm_silent(s->m, r) <= s->m->timeout ? "; it is alive, but waits itself" : "");
            }
        }
    }
    return FL_OK;
}

/* A trainer not done that has sent nothing, not even a heartbeat, for the timeout: name it
 * (the pserver waits on the trainers with no request of its own that could time out). */
static FlStatus check_trainers(Server *s, const bool *done, FlErr *e) {
    FlMpi *m = s->m;
    for (int t = 0; t < m->T; t++) {
        int r = m->trainer_rank[t];
        if (done[t] || flm_silent(m, r) <= m->timeout) continue;
        char pn[FLM_PEER_NAME_MAX];
        return fl_err(e, "no message from %s for %.0f s " FL_MPI_PEER_TIMEOUT,
                      flm_peer_name(m, r, pn, sizeof pn), m->timeout);
    }
    return FL_OK;
}

/* The receipt of header h from rank src (read from ts on) in the timeline: a span, and for a
 * gradient the end of the arrow from its send. */
static void trace_header(FlMpi *m, int src, const Hdr *h, const char *name, int64_t ts) {
    switch (h->kind) {
    case K_GRAD:
        if (h->seq) fl_trace_flow(m->trace, 'f', "grad", flm_flow_id(src, h->seq), ts);
        flm_span(m, "recv grad", ts, name, "\"from\":%d,\"step\":%lld,\"bytes\":%llu", src, (long long)h->step,
                 (unsigned long long)h->nbytes);
        return;
    case K_GET: flm_span(m, "param request", ts, name, "\"from\":%d,\"step\":%lld", src, (long long)h->step); return;
    case K_DONE: flm_span(m, "trainer done", ts, NULL, "\"from\":%d", src); return;
    default: return;
    }
}

/* Reads one waiting header (*got: whether one was waiting) and acts on it. */
static FlStatus read_header(Server *s, bool *done, int *ndone, bool *got, FlErr *e) {
    FlMpi *m = s->m;
    int flag = 0;
    MPI_Message msg;
    MPI_Status ms;
    MPI_TRY(MPI_Improbe(MPI_ANY_SOURCE, TAG_HDR, MPI_COMM_WORLD, &flag, &msg, &ms), "waiting for messages");
    *got = flag;
    if (!flag) return FL_OK;
    int64_t ts = m->trace ? fl_trace_now() : 0;
    int count = 0;
    MPI_Get_count(&ms, MPI_BYTE, &count);
    int src = ms.MPI_SOURCE;
    flm_heard(m, src);
    char pn[FLM_PEER_NAME_MAX], buf[MSG_MAX], name[NAME_MAX_LEN + 1];
    if (count < 0 || (size_t)count > MSG_MAX)
        return fl_err(e, "a message of %d bytes from %s is too long", count, flm_peer_name(m, src, pn, sizeof pn));
    MPI_TRY(MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "receiving");
    Hdr h;
    const char *payload = NULL;
    if (flm_parse(m, src, buf, count, &h, name, &payload, e) != FL_OK) return FL_ERROR;
    if (m->role_of[src] != FL_MPI_TRAINER)
        return fl_err(e, "a message from %s, which is not a trainer", flm_peer_name(m, src, pn, sizeof pn));
    int t = m->index_of[src];
    if (m->trace) trace_header(m, src, &h, name, ts);
    switch (h.kind) {
    case K_GRAD: return on_grad(s, t, src, &h, name, payload, e);
    case K_GET: return on_get(s, t, src, &h, name, e);
    case K_LOOKUP: return on_lookup(s, t, src, &h, name, payload, e);
    case K_SAVE: /* done once the loop ends: every trainer done, every update applied */
        if (m->save_dir || t != 0)
            return fl_err(e, "a second request to save, from %s", flm_peer_name(m, src, pn, sizeof pn));
        m->save_dir = fl_xstrdup(name);
        m->save_src = src;
        m->save_tag = h.reply_tag;
        return FL_OK;
    case K_DONE:
        if (!done[t]) ++*ndone;
        done[t] = true;
        return FL_OK;
    default: return fl_err(e, "a message of unknown kind %d from %s", h.kind, flm_peer_name(m, src, pn, sizeof pn));
    }
}

static FlStatus serve_loop(Server *s, FlErr *e) {
    FlMpi *m = s->m;
    bool *done = fl_xcalloc((size_t)m->T, sizeof *done);
    int ndone = 0;
    Backoff bo = {0};
    FlStatus st = FL_OK;
    while (st == FL_OK && (ndone < m->T || s->recvs.len > 0)) {
        if ((st = flm_progress(m, false, e)) != FL_OK) break; /* it takes the heartbeats too */
        bool moved = false, got = true;
        for (int n = 0; n < 256 && got && st == FL_OK; n++) { /* every header waiting, then the payloads */
            st = read_header(s, done, &ndone, &got, e);
            moved |= got;
        }
        if (st == FL_OK) st = advance(s, &moved, e);
        if (st != FL_OK) break;
        if (moved) {
            bo.n = 0;
        } else {
            st = check_stalls(s, e);
            if (st == FL_OK) st = check_trainers(s, done, e);
            flm_backoff(&bo);
        }
    }
    if (st == FL_OK)
        for (size_t k = 0; k < s->nb; k++)
            if (s->b[k].step >= 0) {
                st = fl_err(e, "the trainers finished while step %lld of optimize block %zu was incomplete",
                            (long long)s->b[k].step, k);
                break;
            }
    if (st == FL_OK) st = flm_progress(m, true, e);
    free(done);
    return st;
}

FlStatus flm_p_serve(FlDist *d, FlDistServer *srv, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    if (!m->assigned || m->role != FL_MPI_PSERVER)
        return fl_err(e, "listen_and_serv runs on pservers only (this is %s)", m->who);
    double t0 = flm_now();
    Server s = {.m = m, .srv = srv, .lr_step = -1};
    s.ng = fl_dist_server_ngrads(srv);
    s.nb = fl_dist_server_nblocks(srv);
    s.g = fl_xcalloc(s.ng + 1, sizeof *s.g);
    s.b = fl_xcalloc(s.nb + 1, sizeof *s.b);
    fl_map_init(&s.grads);
    fl_map_init(&s.writers);
    FlStatus st = FL_OK;
    for (size_t k = 0; k < s.nb; k++) {
        s.b[k].step = -1;
        s.b[k].done = -1;
        s.b[k].contrib = fl_xcalloc((size_t)m->T, sizeof(bool));
    }
    char vn[NAME_MAX_LEN + 32];
    for (size_t i = 0; i < s.ng && st == FL_OK; i++) {
        SGrad *g = &s.g[i];
        g->name = fl_dist_server_grad(srv, i, &g->block);
        if (!fl_map_find_str(&s.grads, g->name)) fl_map_put_str(&s.grads, g->name, g); /* the first entry wins */
        g->acc = (FlTensor)FL_TENSOR_INIT;
        g->have = fl_xcalloc((size_t)m->T, sizeof(bool));
        s.b[g->block].need += (size_t)m->T;
        snprintf(vn, sizeof vn, "%s" FL_RULE_TRAINER_INFIX "0", g->name);
        if (fl_dist_server_sync(srv) && fl_dist_server_var(srv, vn)) {
            /* the plan's trainers; those the job does not run send nothing: zero gradients */
            g->per_trainer = fl_xcalloc((size_t)m->TP, sizeof *g->per_trainer);
            for (int t = 0; t < m->TP && st == FL_OK; t++) {
                snprintf(vn, sizeof vn, "%s" FL_RULE_TRAINER_INFIX "%d", g->name, t);
                g->per_trainer[t] = fl_dist_server_var(srv, vn);
                if (!g->per_trainer[t])
                    st = fl_err(e, "the pserver program has no '%s': it was transpiled for fewer trainers than the job's %d", vn, m->TP);
                else if (t >= m->T)
                    st = fl_dist_server_zero(srv, vn, e);
            }
        }
        g->var = fl_dist_server_var(srv, g->name);
        snprintf(vn, sizeof vn, "%s" FL_RULE_TRAINER_INFIX "0", g->name);
        g->rows = fl_dist_server_var_is_rows(srv, g->per_trainer ? vn : g->name);
        if (!g->per_trainer && !g->var && st == FL_OK)
            st = fl_err(e, "grad_to_block names '%s', which the pserver program does not declare", g->name);
    }
    /* a block taking one transpiled gradient whose head is its mean: do the mean on receipt */
    for (size_t i = 0; i < s.ng && st == FL_OK; i++) {
        SGrad *g = &s.g[i];
        size_t same = 0;
        for (size_t j = 0; j < s.ng; j++) same += s.g[j].block == g->block;
        if (!g->per_trainer || g->rows || same != 1 || !fl_dist_server_find_mean(srv, g->block, g->name, m->TP, &g->mean)) continue;
        g->fused = true;
        g->got = fl_xcalloc((size_t)m->T, sizeof *g->got);
        for (int t = 0; t < m->T; t++) g->got[t] = (FlTensor)FL_TENSOR_INIT;
        g->w = fl_xcalloc((size_t)m->T, sizeof *g->w);
        g->rin = fl_xcalloc((size_t)m->T, sizeof *g->rin);
        g->kind = fl_xcalloc((size_t)m->T, sizeof *g->kind);
        g->ringbuf = fl_xcalloc((size_t)m->T, sizeof *g->ringbuf);
        s.b[g->block].skip = g->mean.skip;
        if (fl_dist_server_updatable(srv, g->block, g->mean.skip)) s.b[g->block].g = g;
    }
    s.blocked = fl_xcalloc((size_t)m->T, sizeof *s.blocked);
    if (st == FL_OK) st = serve_loop(&s, e);
    for (size_t i = 0; i < s.ng; i++) {
        free(s.g[i].per_trainer);
        free(s.g[i].have);
        for (int t = 0; s.g[i].got && t < m->T; t++) fl_tensor_fini(&s.g[i].got[t]);
        free(s.g[i].got);
        free(s.g[i].w);
        free(s.g[i].rin);
        free(s.g[i].kind);
        for (int t = 0; s.g[i].ringbuf && t < m->T; t++) free(s.g[i].ringbuf[t]);
        free(s.g[i].ringbuf);
        fl_tensor_fini(&s.g[i].acc);
    }
    for (size_t k = 0; k < s.nb; k++) {
        free(s.b[k].contrib);
        fl_dist_update_free(s.b[k].upd);
        free(s.b[k].meanbuf);
    }
    for (size_t i = 0; i < s.recvs.len; i++) { /* after an error: drop what is still coming */
        SRecv *r = s.recvs.data[i];
        for (int64_t c = r->done; c < r->posted; c++) flm_drop_reqs(&r->req[c % RECV_WINDOW], 1);
        fl_tensor_fini(&r->x);
        free(r);
    }
    FL_VEC_FREE(&s.recvs);
    free(s.blocked);
    for (size_t i = 0; i < s.gets.len; i++) {
        free(s.gets.data[i].name);
        fl_tensor_fini(&s.gets.data[i].t);
    }
    FL_VEC_FREE(&s.gets);
    for (size_t i = 0; i < s.lookups.len; i++) {
        free(s.lookups.data[i].name);
        fl_tensor_fini(&s.lookups.data[i].ids);
    }
    FL_VEC_FREE(&s.lookups);
    fl_map_fini(&s.grads);
    for (size_t i = 0; i < s.writers.cap; i++)
        if (fl_map_slot_live(&s.writers, i)) free(s.writers.buckets[i].val);
    fl_map_fini(&s.writers);
    free(s.g);
    free(s.b);
    m->comm += flm_now() - t0; /* the loop's time; compute is subtracted when printed */
    return st;
}

const char *fl_mpi_save_request(const FlMpi *m) { return m->role == FL_MPI_PSERVER ? m->save_dir : NULL; }

FlStatus fl_mpi_save_answer(FlMpi *m, const char *error, int64_t files, int64_t bytes, FlErr *e) {
    FL_ASSERT(m->save_dir);
    int64_t n = 2;
    FlTensor t = FL_TENSOR_INIT;
    FlStatus st = error ? FL_OK : fl_tensor_alloc(e, &t, FL_DT_INT64, 1, &n);
    if (st == FL_OK && !error) {
        ((int64_t *)fl_tensor_data(&t))[0] = files;
        ((int64_t *)fl_tensor_data(&t))[1] = bytes;
    }
    if (st == FL_OK)
        st = flm_post(m, m->save_src, m->save_tag, error ? K_ERROR : K_PARAM, 0, m->save_dir, error ? NULL : &t, error, 0, e);
    fl_tensor_fini(&t);
    return st == FL_OK ? flm_progress(m, true, e) : st;
}
