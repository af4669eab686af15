/* dnnl.c: the oneDNN fast paths of conv2d, conv3d, pool2d and pool3d (float32, NCHW and NCDHW),
 * through oneDNN's C API.
 *
 * How: an op's shape and attributes form a key; the first call with a key builds its
 * primitives (and the reorders between the kernels' plain nchw / oihw tensors and the layouts
 * the primitives chose) and keeps them in a process-wide cache, so a steady training step builds
 * none. Convolutions let oneDNN pick its blocked layouts (format_tag_any) and reorder around the
 * call: on this machine that runs 2.5-4x faster than im2col + GEMM, while oneDNN on plain nchw
 * falls back to its own GEMM and gains nothing (docs/kernels.md has the figures). Pooling runs
 * on plain nchw. (Batch norm left oneDNN: its nchw kernel makes three passes over the whole
 * tensor, norm.c's pooled per-channel loops ran 2.3x faster.)
 *
 * Invariants: every primitive uses a user-provided scratchpad, allocated per call, so one cached
 * primitive may run on any number of threads at once; the cache is guarded by a mutex and only
 * grows (its entries live as long as the process). Debian's oneDNN runs on OpenMP: each call
 * takes the kernel pool (par.h, fl_par_enter) and sets the calling thread's OpenMP team size to
 * the pool's width (omp_set_num_threads, found in the process with dlsym, so no OpenMP flags
 * are needed to build): 1 without a pool (flrun --threads 1, MPI ranks by default) or inside
 * another kernel's chunk, N with flrun --threads N; while the OpenMP team works the pool's own
 * workers sleep, so the two never run at once. A primitive is built for its team size (oneDNN
 * fixes its work split when the primitive is created), which is part of the cache key: the same
 * N gives the same split, and bit-identical results run to run. TSan builds keep a team of 1
 * (libgomp's synchronisation is invisible to TSan). FL_DNNL=0 in the environment turns every
 * fast path here off (the kernels' own loops run). */
#include "runtime/kernels/kernels_impl.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>

#include <dnnl.h>

#include "runtime/kernels/par.h"

enum { KEY_LEN = 24, MAX_ARGS = 10, MAX_PRIMS = 3 };

typedef enum OpKind { K_CONV, K_CONV_GRAD, K_POOL, K_POOL_GRAD } OpKind;

/* One execute argument: the caller's buffer is in `user` layout; the primitive wants `prim`.
 * reorder is NULL when they are equal. */
typedef struct Arg {
    int arg;
    bool out;
    dnnl_memory_desc_t user, prim;
    dnnl_primitive_t reorder;
} Arg;

typedef struct Prim {
    dnnl_primitive_t p;
    dnnl_memory_desc_t scratch;
    int nargs;
    Arg args[MAX_ARGS];
} Prim;

typedef struct Entry {
    struct Entry *next;
    int64_t key[KEY_LEN];
    bool ok; /* false: oneDNN refused the shape; the caller's kernel runs */
    int nprims;
    Prim prims[MAX_PRIMS];
} Entry;

static struct {
    pthread_once_t once;
    bool on;
    dnnl_engine_t eng;
    void (*omp_set_num_threads)(int);
    pthread_mutex_t mu;
    Entry *head;
} G = {PTHREAD_ONCE_INIT, false, NULL, NULL, PTHREAD_MUTEX_INITIALIZER, NULL};

static void init(void) {
    const char *v = getenv("FL_DNNL");
    if (v && strcmp(v, "0") == 0) return;
    if (dnnl_engine_create(&G.eng, dnnl_cpu, 0) != dnnl_success) return;
    *(void **)&G.omp_set_num_threads = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    G.on = true;
}

static bool on(void) {
    pthread_once(&G.once, init);
    return G.on;
}

/* The user-scratchpad attribute every primitive here is built with. */
static dnnl_primitive_attr_t attr_new(void) {
    dnnl_primitive_attr_t a = NULL;
    if (dnnl_primitive_attr_create(&a) != dnnl_success) return NULL;
    if (dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user) != dnnl_success) {
        dnnl_primitive_attr_destroy(a);
        return NULL;
    }
    return a;
}

static bool pd_new(dnnl_primitive_desc_t *pd, const void *desc, const_dnnl_primitive_desc_t hint) {
    dnnl_primitive_attr_t a = attr_new();
    if (!a) return false;
    dnnl_status_t s = dnnl_primitive_desc_create(pd, desc, a, G.eng, hint);
    dnnl_primitive_attr_destroy(a);
    return s == dnnl_success;
}

/* A reorder between two layouts of one tensor; it must need no scratchpad (plain <-> blocked
 * copies do not), so it too may run on many threads at once. */
static bool reorder_new(dnnl_primitive_t *r, const dnnl_memory_desc_t *from,
                        const dnnl_memory_desc_t *to) {
    dnnl_primitive_attr_t a = attr_new();
    dnnl_primitive_desc_t pd = NULL;
    bool ok = a && dnnl_reorder_primitive_desc_create(&pd, from, G.eng, to, G.eng, a) == dnnl_success;
    if (a) dnnl_primitive_attr_destroy(a);
    if (ok) {
        const dnnl_memory_desc_t *s = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        ok = (!s || dnnl_memory_desc_get_size(s) == 0) && dnnl_primitive_create(r, pd) == dnnl_success;
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* Builds pr from pd (which it destroys): user[i] is the caller's layout of argument args[i]. */
static bool prim_init(Prim *pr, dnnl_primitive_desc_t pd, int n, const int *args,
                      const bool *outs, const dnnl_memory_desc_t *user) {
    bool ok = dnnl_primitive_create(&pr->p, pd) == dnnl_success;
    const dnnl_memory_desc_t *s = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (s) pr->scratch = *s;
    for (int i = 0; ok && i < n; i++) {
        Arg *a = &pr->args[pr->nargs++];
        a->arg = args[i];
        a->out = outs[i];
        a->user = user[i];
        const dnnl_memory_desc_t *pm = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, args[i]);
        if (!pm || pm->ndims == 0) {
            ok = false;
            break;
        }
        a->prim = *pm;
        if (!dnnl_memory_desc_equal(&a->user, &a->prim))
            ok = a->out ? reorder_new(&a->reorder, &a->prim, &a->user)
                        : reorder_new(&a->reorder, &a->user, &a->prim);
    }
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* A temporary for md from the tensors' buffer cache (runtime/tensor.h): the blocked copies
 * of a step's activations are megabytes, which malloc would map and fault in anew each call.
 * Exactly md's bytes (rounded up to a float): a blocked copy is mostly the size of its plain
 * tensor, so it takes back a buffer an activation or a gradient freed; one float more made every
 * temporary a size of its own, which filled the cache past its limit and was evicted and
 * malloc'd again each step (~520 page faults a ResNet-32 step). */
static void *tmp_buf(FlTensor *t, const dnnl_memory_desc_t *md) {
    FlErr e;
    int64_t n = (int64_t)((dnnl_memory_desc_get_size(md) + sizeof(float) - 1) / sizeof(float));
    return fl_tensor_alloc_uninit(&e, t, FL_DT_FLOAT32, 1, &n) ? NULL : fl_tensor_data(t);
}
static bool tmp_mem(dnnl_memory_t *m, FlTensor *t, const dnnl_memory_desc_t *md) {
    void *p = tmp_buf(t, md);
    return p && dnnl_memory_create(m, md, G.eng, p) == dnnl_success;
}

/* Runs pr on the caller's buffers ptr[i] (for args[i]): inputs in another layout are reordered
 * into temporaries first, outputs reordered back after; an input whose bit i is set in `pre` is
 * in the primitive's layout already (reorder_input's copy). */
static bool run_pre(const Prim *pr, void *const *ptr, unsigned pre) {
    kmark_kernel_used();
    dnnl_stream_t st = NULL;
    dnnl_memory_t user[MAX_ARGS] = {0}, tmp[MAX_ARGS] = {0}, scratch = NULL;
    FlTensor bufs[MAX_ARGS + 1];
    for (int i = 0; i <= MAX_ARGS; i++) fl_tensor_init(&bufs[i]);
    dnnl_exec_arg_t ex[MAX_ARGS + 1];
    int nex = 0;
    bool ok = dnnl_stream_create(&st, G.eng, dnnl_stream_default_flags) == dnnl_success;
    if (ok && dnnl_memory_desc_get_size(&pr->scratch) > 0) {
        ok = tmp_mem(&scratch, &bufs[MAX_ARGS], &pr->scratch);
        ex[nex++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, scratch};
    }
    for (int i = 0; ok && i < pr->nargs; i++) {
        const Arg *a = &pr->args[i];
        bool ready = a->reorder && !a->out && (pre >> i & 1u);
        ok = dnnl_memory_create(&user[i], ready ? &a->prim : &a->user, G.eng, ptr[i]) == dnnl_success;
        if (ok && a->reorder && !ready) {
            ok = tmp_mem(&tmp[i], &bufs[i], &a->prim);
            if (ok && !a->out) {
                dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, user[i]}, {DNNL_ARG_TO, tmp[i]}};
                ok = dnnl_primitive_execute(a->reorder, st, 2, r) == dnnl_success;
            }
        }
        ex[nex++] = (dnnl_exec_arg_t){a->arg, a->reorder && !ready ? tmp[i] : user[i]};
    }
    if (ok) ok = dnnl_primitive_execute(pr->p, st, nex, ex) == dnnl_success;
    for (int i = 0; ok && i < pr->nargs; i++)
        if (pr->args[i].reorder && pr->args[i].out) {
            dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, tmp[i]}, {DNNL_ARG_TO, user[i]}};
            ok = dnnl_primitive_execute(pr->args[i].reorder, st, 2, r) == dnnl_success;
        }
    if (st && dnnl_stream_wait(st) != dnnl_success) ok = false;
    for (int i = 0; i < pr->nargs; i++) {
        if (user[i]) dnnl_memory_destroy(user[i]);
        if (tmp[i]) dnnl_memory_destroy(tmp[i]);
    }
    if (scratch) dnnl_memory_destroy(scratch);
    if (st) dnnl_stream_destroy(st);
    for (int i = 0; i <= MAX_ARGS; i++) fl_tensor_fini(&bufs[i]);
    return ok;
}

static bool run(const Prim *pr, void *const *ptr) { return run_pre(pr, ptr, 0); }

/* The input `from` of argument a (which has a reorder) copied into a's primitive layout, in a
 * temporary held by t; NULL on failure. */
static void *reorder_input(const Arg *a, const void *from, FlTensor *t) {
    dnnl_stream_t st = NULL;
    dnnl_memory_t src = NULL, dst = NULL;
    void *p = tmp_buf(t, &a->prim);
    bool ok = p && dnnl_stream_create(&st, G.eng, dnnl_stream_default_flags) == dnnl_success &&
              dnnl_memory_create(&src, &a->user, G.eng, (void *)from) == dnnl_success &&
              dnnl_memory_create(&dst, &a->prim, G.eng, p) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
        ok = dnnl_primitive_execute(a->reorder, st, 2, r) == dnnl_success &&
             dnnl_stream_wait(st) == dnnl_success;
    }
    if (src) dnnl_memory_destroy(src);
    if (dst) dnnl_memory_destroy(dst);
    if (st) dnnl_stream_destroy(st);
    return ok ? p : NULL;
}

typedef bool (*BuildFn)(Entry *en, const void *ctx);

/* The OpenMP team size of the calling thread's oneDNN call: the kernel pool's width, set by the
 * kdnnl_* entry points while they hold the pool (par.h). */
static _Thread_local int tls_threads = 1;

/* The cache entry of key (built by build on a miss); NULL when oneDNN is off or refused it. */
static const Entry *lookup(const int64_t *key_in, BuildFn build, const void *ctx) {
    if (!on()) return NULL;
    /* a primitive is built for the OpenMP team it will run with: the team size is in the key */
    int64_t key[KEY_LEN];
    memcpy(key, key_in, sizeof key);
    key[KEY_LEN - 1] = tls_threads;
    if (G.omp_set_num_threads) G.omp_set_num_threads(tls_threads);
    pthread_mutex_lock(&G.mu);
    Entry *en = G.head;
    while (en && memcmp(en->key, key, sizeof en->key)) en = en->next;
    if (!en && (en = calloc(1, sizeof *en))) {
        memcpy(en->key, key, sizeof en->key);
        en->ok = build(en, ctx);
        en->next = G.head;
        G.head = en;
    }
    pthread_mutex_unlock(&G.mu);
    return en && en->ok ? en : NULL;
}

/* ---- convolution (2 or 3 spatial dims) ---- */

/* A memory descriptor of nd dims (nd <= 6). */
static void mdn(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag, bool *ok) {
    dnnl_dims_t dd = {0};
    for (int i = 0; i < nd; i++) dd[i] = dims[i];
    if (*ok && dnnl_memory_desc_init_by_tag(md, nd, dd, dnnl_f32, tag) != dnnl_success) *ok = false;
}

typedef struct ConvMds {
    dnnl_memory_desc_t x, w, y, xa, wa, ya; /* plain, and "any" for the primitive */
    dnnl_dims_t strides, dil, pl, pr;
    dnnl_convolution_desc_t fwd;
} ConvMds;

static bool conv_mds(const ConvNd *d, ConvMds *m) {
    bool ok = true, d3 = d->nsp == 3;
    int nd = 2 + d->nsp;
    int64_t x[5] = {d->N, d->C}, y[5] = {d->N, d->M}, w[6] = {d->M, d->C}, gw[6] = {d->groups, d->Mg, d->Cg};
    for (int i = 0; i < d->nsp; i++) {
        x[2 + i] = d->in[i], y[2 + i] = d->out[i], w[2 + i] = d->k[i], gw[3 + i] = d->k[i];
        m->strides[i] = d->s[i], m->dil[i] = d->d[i] - 1, m->pl[i] = d->p[i], m->pr[i] = d->p[i];
    }
    mdn(&m->x, nd, x, d3 ? dnnl_ncdhw : dnnl_nchw, &ok);
    mdn(&m->y, nd, y, d3 ? dnnl_ncdhw : dnnl_nchw, &ok);
    mdn(&m->xa, nd, x, dnnl_format_tag_any, &ok);
    mdn(&m->ya, nd, y, dnnl_format_tag_any, &ok);
    if (d->groups == 1) {
        mdn(&m->w, nd, w, d3 ? dnnl_oidhw : dnnl_oihw, &ok);
        mdn(&m->wa, nd, w, dnnl_format_tag_any, &ok);
    } else { /* [M, Cg, k...] is goihw's memory: [groups, Mg, Cg, k...] */
        mdn(&m->w, nd + 1, gw, d3 ? dnnl_goidhw : dnnl_goihw, &ok);
        mdn(&m->wa, nd + 1, gw, dnnl_format_tag_any, &ok);
    }
    return ok && dnnl_dilated_convolution_forward_desc_init(
                     &m->fwd, dnnl_forward_training, dnnl_convolution_direct, &m->xa, &m->wa, NULL,
                     &m->ya, m->strides, m->dil, m->pl, m->pr) == dnnl_success;
}

static void conv_key(int64_t *key, OpKind k, const ConvNd *d) {
    int64_t v[] = {k, d->nsp, d->N, d->C, d->M, d->groups};
    memset(key, 0, KEY_LEN * sizeof *key);
    memcpy(key, v, sizeof v);
    for (int i = 0; i < d->nsp; i++) {
        int64_t *q = key + FL_ARRAY_LEN(v) + 5 * i;
        q[0] = d->in[i], q[1] = d->k[i], q[2] = d->s[i], q[3] = d->p[i], q[4] = d->d[i];
    }
}

static bool build_conv(Entry *en, const void *ctx) {
    ConvMds m;
    dnnl_primitive_desc_t pd;
    if (!conv_mds(ctx, &m) || !pd_new(&pd, &m.fwd, NULL)) return false;
    en->nprims = 1;
    return prim_init(&en->prims[0], pd, 3, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                     (bool[]){false, false, true}, (dnnl_memory_desc_t[]){m.x, m.w, m.y});
}

static bool conv_impl(const ConvNd *d, const float *in, const float *w, float *out) {
    int64_t key[KEY_LEN];
    conv_key(key, K_CONV, d);
    const Entry *en = lookup(key, build_conv, d);
    return en && run(&en->prims[0], (void *[]){(void *)in, (void *)w, out});
}

/* prims[0]: backward data, prims[1]: backward weights (both hinted by the forward). */
static bool build_conv_grad(Entry *en, const void *ctx) {
    ConvMds m;
    dnnl_primitive_desc_t fwd, bd, bw;
    dnnl_convolution_desc_t dd, wd;
    if (!conv_mds(ctx, &m) || !pd_new(&fwd, &m.fwd, NULL)) return false;
    bool ok = dnnl_dilated_convolution_backward_data_desc_init(
                  &dd, dnnl_convolution_direct, &m.xa, &m.wa, &m.ya, m.strides, m.dil, m.pl,
                  m.pr) == dnnl_success &&
              dnnl_dilated_convolution_backward_weights_desc_init(
                  &wd, dnnl_convolution_direct, &m.xa, &m.wa, NULL, &m.ya, m.strides, m.dil, m.pl,
                  m.pr) == dnnl_success;
    if (ok && pd_new(&bd, &dd, fwd)) {
        en->nprims = 1;
        ok = prim_init(&en->prims[0], bd, 3,
                       (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                       (bool[]){false, false, true}, (dnnl_memory_desc_t[]){m.y, m.w, m.x});
    } else {
        ok = false;
    }
    if (ok && pd_new(&bw, &wd, fwd)) {
        en->nprims = 2;
        ok = prim_init(&en->prims[1], bw, 3,
                       (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS},
                       (bool[]){false, false, true}, (dnnl_memory_desc_t[]){m.y, m.x, m.w});
    } else {
        ok = false;
    }
    dnnl_primitive_desc_destroy(fwd);
    return ok;
}

static bool conv_grad_impl(const ConvNd *d, const float *in, const float *w, const float *dout,
                     float *din, float *dw) {
    int64_t key[KEY_LEN];
    conv_key(key, K_CONV_GRAD, d);
    const Entry *en = lookup(key, build_conv_grad, d);
    if (!en) return false;
    /* both gradients: Output@GRAD reordered once for the two primitives when they take it in
     * one layout (they do on this machine: a third of a backward's reorders) */
    const Arg *g0 = &en->prims[0].args[0], *g1 = &en->prims[1].args[0];
    if (din && dw && g0->reorder && g1->reorder && dnnl_memory_desc_equal(&g0->prim, &g1->prim)) {
        FlTensor t;
        fl_tensor_init(&t);
        void *g = reorder_input(g0, dout, &t);
        bool ok = g && run_pre(&en->prims[0], (void *[]){g, (void *)w, din}, 1u) &&
                  run_pre(&en->prims[1], (void *[]){g, (void *)in, dw}, 1u);
        fl_tensor_fini(&t);
        return ok;
    }
    return (!din || run(&en->prims[0], (void *[]){(void *)dout, (void *)w, din})) &&
           (!dw || run(&en->prims[1], (void *[]){(void *)dout, (void *)in, dw}));
}

/* conv2d's dims as a ConvNd of 2 spatial dims. */
static ConvNd conv_nd2(const ConvDims *d) {
    return (ConvNd){.nsp = 2, .N = d->N, .C = d->C, .M = d->M, .groups = d->groups, .Cg = d->Cg,
                    .Mg = d->Mg, .in = {d->H, d->W}, .k = {d->kh, d->kw}, .out = {d->Ho, d->Wo},
                    .s = {d->sh, d->sw}, .p = {d->ph, d->pw}, .d = {d->dh, d->dw}};
}

/* ---- pooling (2 or 3 spatial dims) ---- */

/* The descriptor of the pooling: `fwd` for forward (training keeps a workspace for max),
 * else backward. The right padding is what makes oneDNN's output size ours: the left one, or
 * more with ceil_mode's overhanging last window. */
static bool pool_desc(const PoolNd *p, bool fwd, dnnl_prop_kind_t prop,
                      dnnl_pooling_v2_desc_t *pd, dnnl_memory_desc_t *x, dnnl_memory_desc_t *y) {
    bool ok = true;
    int nd = 2 + p->nsp;
    int64_t xd[5] = {p->N, p->C}, yd[5] = {p->N, p->C};
    dnnl_dims_t st, k, dil, pl, pr;
    for (int i = 0; i < p->nsp; i++) {
        int64_t r = (p->out[i] - 1) * p->s[i] + p->k[i] - p->in[i] - p->p[i];
        xd[2 + i] = p->in[i], yd[2 + i] = p->out[i];
        st[i] = p->s[i], k[i] = p->k[i], dil[i] = 0, pl[i] = p->p[i], pr[i] = r > p->p[i] ? r : p->p[i];
    }
    mdn(x, nd, xd, p->nsp == 3 ? dnnl_ncdhw : dnnl_nchw, &ok);
    mdn(y, nd, yd, p->nsp == 3 ? dnnl_ncdhw : dnnl_nchw, &ok);
    dnnl_alg_kind_t alg = p->type == FL_POOL_MAX ? dnnl_pooling_max
                          : p->exclusive         ? dnnl_pooling_avg_exclude_padding
                                                 : dnnl_pooling_avg_include_padding;
    if (!ok) return false;
    if (fwd) return dnnl_pooling_v2_forward_desc_init(pd, prop, alg, x, y, st, k, dil, pl, pr) == dnnl_success;
    return dnnl_pooling_v2_backward_desc_init(pd, alg, x, y, st, k, dil, pl, pr) == dnnl_success;
}

static void pool_key(int64_t *key, OpKind k, const PoolNd *p) {
    int64_t v[] = {k, p->nsp, p->N, p->C, p->type, p->exclusive};
    memset(key, 0, KEY_LEN * sizeof *key);
    memcpy(key, v, sizeof v);
    for (int i = 0; i < p->nsp; i++) {
        int64_t *q = key + FL_ARRAY_LEN(v) + 5 * i;
        q[0] = p->in[i], q[1] = p->out[i], q[2] = p->k[i], q[3] = p->s[i], q[4] = p->p[i];
    }
}

static bool build_pool(Entry *en, const void *ctx) {
    dnnl_pooling_v2_desc_t desc;
    dnnl_memory_desc_t x, y;
    dnnl_primitive_desc_t pd;
    if (!pool_desc(ctx, true, dnnl_forward_inference, &desc, &x, &y) || !pd_new(&pd, &desc, NULL))
        return false;
    en->nprims = 1;
    return prim_init(&en->prims[0], pd, 2, (int[]){DNNL_ARG_SRC, DNNL_ARG_DST},
                     (bool[]){false, true}, (dnnl_memory_desc_t[]){x, y});
}

static bool pool_impl(const PoolNd *p, const float *x, float *out) {
    int64_t key[KEY_LEN];
    pool_key(key, K_POOL, p);
    const Entry *en = lookup(key, build_pool, p);
    return en && run(&en->prims[0], (void *[]){(void *)x, out});
}

/* prims[0]: backward; for max, prims[1]: the training forward that finds the argmax cells (its
 * workspace; the kernel's gradient takes X, not the forward's workspace). */
static bool build_pool_grad(Entry *en, const void *ctx) {
    const PoolNd *p = ctx;
    dnnl_pooling_v2_desc_t fd, bd;
    dnnl_memory_desc_t x, y;
    dnnl_primitive_desc_t fwd, bwd;
    if (!pool_desc(p, true, dnnl_forward_training, &fd, &x, &y) || !pd_new(&fwd, &fd, NULL))
        return false;
    bool max = p->type == FL_POOL_MAX, ok = pool_desc(p, false, 0, &bd, &x, &y) && pd_new(&bwd, &bd, fwd);
    const dnnl_memory_desc_t *ws = dnnl_primitive_desc_query_md(fwd, dnnl_query_workspace_md, 0);
    dnnl_memory_desc_t wsd = ws ? *ws : (dnnl_memory_desc_t){0};
    if (ok && max && wsd.ndims == 0) {
        dnnl_primitive_desc_destroy(bwd);
        ok = false;
    }
    if (ok) {
        en->nprims = 1;
        ok = max ? prim_init(&en->prims[0], bwd, 3,
                             (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WORKSPACE, DNNL_ARG_DIFF_SRC},
                             (bool[]){false, false, true}, (dnnl_memory_desc_t[]){y, wsd, x})
                 : prim_init(&en->prims[0], bwd, 2, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC},
                             (bool[]){false, true}, (dnnl_memory_desc_t[]){y, x});
    }
    if (ok && max) {
        en->nprims = 2;
        return prim_init(&en->prims[1], fwd, 3,
                         (int[]){DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_WORKSPACE},
                         (bool[]){false, true, true}, (dnnl_memory_desc_t[]){x, y, wsd});
    }
    dnnl_primitive_desc_destroy(fwd);
    return ok;
}

static bool pool_grad_impl(const PoolNd *p, const float *x, const float *dout, float *dx) {
    int64_t key[KEY_LEN];
    pool_key(key, K_POOL_GRAD, p);
    const Entry *en = lookup(key, build_pool_grad, p);
    if (!en) return false;
    if (en->nprims == 1) return run(&en->prims[0], (void *[]){(void *)dout, dx});
    /* max: the forward again for its workspace (and a scratch Out), both from the buffer cache
     * (a steady step mallocs no large buffer) */
    FlTensor wt, yt;
    fl_tensor_init(&wt);
    fl_tensor_init(&yt);
    void *wbuf = tmp_buf(&wt, &en->prims[1].args[2].user), *y = tmp_buf(&yt, &en->prims[1].args[1].user);
    bool ok = wbuf && y && run(&en->prims[1], (void *[]){(void *)x, y, wbuf}) &&
              run(&en->prims[0], (void *[]){(void *)dout, wbuf, dx});
    fl_tensor_fini(&wt);
    fl_tensor_fini(&yt);
    return ok;
}

/* Whether a window of ceil_mode lies wholly in the right padding: oneDNN's max gives it the
 * lowest float where the loops give 0 (kernels_conv3.h), so such a pooling is left to them. */
static bool pool_empty_window(const PoolNd *p) {
    for (int i = 0; i < p->nsp; i++)
        if ((p->out[i] - 1) * p->s[i] - p->p[i] >= p->in[i]) return true;
    return false;
}

/* pool2d's dims (X [N, C, H, W], NC = N * C) as a PoolNd of 2 spatial dims. */
static PoolNd pool_nd2(const PoolDims *p, int64_t N) {
    return (PoolNd){.nsp = 2, .N = N, .C = p->NC / N, .in = {p->H, p->W}, .out = {p->Ho, p->Wo},
                    .k = {p->kh, p->kw}, .s = {p->sh, p->sw}, .p = {p->ph, p->pw}, .type = p->type,
                    .exclusive = p->exclusive};
}

/* ---- sgemm and the CPU ---- */

/* oneDNN's sgemm picks its kernels by the CPU it runs on (the ISA below), where OpenBLAS 0.3.21
 * picks them from a table of the CPUs it knows (gemm.c decides which of the two runs). One call
 * runs on the calling thread alone: gemm.c cuts a large product into blocks on the kernel pool,
 * as it does for OpenBLAS, so the OpenMP team of the call is 1 (set per call: a convolution on
 * this thread may have set its team to the pool's width). */
bool kdnnl_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                 int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (!on()) return false;
    if (G.omp_set_num_threads) G.omp_set_num_threads(1);
    return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C,
                      ldc) == dnnl_success;
}

const char *kdnnl_isa(FlIsa *isa) {
    if (!on()) return NULL;
    static const struct {
        dnnl_cpu_isa_t id;
        const char *name;
        FlIsa isa;
    } names[] = {
        {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx", FL_ISA_AVX512},
        {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16", FL_ISA_AVX512},
        {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni", FL_ISA_AVX512},
        {dnnl_cpu_isa_avx512_core, "avx512_core", FL_ISA_AVX512},
        {dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops", FL_ISA_AVX512},
        {dnnl_cpu_isa_avx512_mic, "avx512_mic", FL_ISA_AVX512},
        {dnnl_cpu_isa_avx2_vnni, "avx2_vnni", FL_ISA_AVX2},
        {dnnl_cpu_isa_avx2, "avx2", FL_ISA_AVX2},
        {dnnl_cpu_isa_avx, "avx", FL_ISA_AVX},
        {dnnl_cpu_isa_sse41, "sse41", FL_ISA_SSE},
    };
    dnnl_cpu_isa_t id = dnnl_get_effective_cpu_isa();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].id == id) {
            *isa = names[i].isa;
            return names[i].name;
        }
    *isa = FL_ISA_NONE;
    return "reference";
}

/* ---- entry points: each holds the kernel pool (par.h) for its call, so oneDNN's OpenMP team
 * (of the pool's size) runs while the pool's own workers sleep ---- */

#if defined(__SANITIZE_THREAD__)
#define TEAM(n) ((void)(n), 1)
#else
#define TEAM(n) (n)
#endif
#define ENTER() int prev_ = tls_threads; tls_threads = TEAM(fl_par_enter())
#define LEAVE() fl_par_leave(), tls_threads = prev_

bool kdnnl_conv(const ConvDims *d, const float *in, const float *w, float *out) {
    ConvNd n = conv_nd2(d);
    return kdnnl_conv_nd(&n, in, w, out);
}

bool kdnnl_conv_grad(const ConvDims *d, const float *in, const float *w, const float *dout,
                     float *din, float *dw) {
    ConvNd n = conv_nd2(d);
    return kdnnl_conv_nd_grad(&n, in, w, dout, din, dw);
}

bool kdnnl_pool(const PoolDims *p, int64_t N, const float *x, float *out) {
    PoolNd n = pool_nd2(p, N);
    return kdnnl_pool_nd(&n, x, out);
}

bool kdnnl_pool_grad(const PoolDims *p, int64_t N, const float *x, const float *dout, float *dx) {
    PoolNd n = pool_nd2(p, N);
    return kdnnl_pool_nd_grad(&n, x, dout, dx);
}

bool kdnnl_conv_nd(const ConvNd *d, const float *in, const float *w, float *out) {
    ENTER();
    bool ok = conv_impl(d, in, w, out);
    LEAVE();
    return ok;
}

bool kdnnl_conv_nd_grad(const ConvNd *d, const float *in, const float *w, const float *dout, float *din,
                        float *dw) {
    ENTER();
    bool ok = conv_grad_impl(d, in, w, dout, din, dw);
    LEAVE();
    return ok;
}

bool kdnnl_pool_nd(const PoolNd *p, const float *x, float *out) {
    if (p->adaptive || pool_empty_window(p)) return false;
    ENTER();
    bool ok = pool_impl(p, x, out);
    LEAVE();
    return ok;
}

bool kdnnl_pool_nd_grad(const PoolNd *p, const float *x, const float *dout, float *dx) {
    if (p->adaptive || pool_empty_window(p)) return false;
    ENTER();
    bool ok = pool_grad_impl(p, x, dout, dx);
    LEAVE();
    return ok;
}
