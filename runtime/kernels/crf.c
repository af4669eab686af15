/* crf.c: the linear-chain CRF (negative log-likelihood, its gradient, Viterbi decoding) and
 * chunk evaluation, over sequences cut by offsets (kernels_crf.h).
 *
 * The CRF works in double on copies of its float inputs. The forward pass is the scaled forward
 * algorithm: each row of alpha is normalised to sum 1 and the logs of the normalisers add up to
 * log Z, with emissions taken as exp(x - the row's max) so no exponent exceeds 0; the backward
 * vectors of the gradient are normalised the same way, so neither recursion over- or
 * underflows on long sequences. Marginals are products of the two normalised vectors divided by
 * their sum at that position, which cancels every normaliser.
 */
#include "runtime/kernels/kernels_crf.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"

/* ---- typed access: float inputs as double, int labels as int64 ---- */

static void load_f(const FlTensor *t, double *d, int64_t n) {
    if (t->dtype == FL_DT_FLOAT32) {
        const float *p = fl_tensor_data(t);
        for (int64_t i = 0; i < n; i++) d[i] = p[i];
    } else {
        memcpy(d, fl_tensor_data(t), (size_t)n * sizeof *d);
    }
}

static void store_f(FlTensor *t, const double *d, int64_t n) {
    if (t->dtype == FL_DT_FLOAT32) {
        float *p = fl_tensor_data(t);
        for (int64_t i = 0; i < n; i++) p[i] = (float)d[i];
    } else {
        memcpy(fl_tensor_data(t), d, (size_t)n * sizeof *d);
    }
}

static int64_t label_at(const FlTensor *t, int64_t i) {
    return t->dtype == FL_DT_INT64 ? ((const int64_t *)fl_tensor_data(t))[i]
                                   : ((const int32_t *)fl_tensor_data(t))[i];
}

/* A scratch array of n doubles (n counts elements of existing tensors, so n * 8 cannot overflow). */
static FlStatus scratch(FlErr *e, const char *op, int64_t n, double **p) {
    *p = malloc((size_t)(n > 0 ? n : 1) * sizeof **p);
    return *p ? FL_OK : fl_err(e, "%s: out of memory for %lld doubles of scratch", op, (long long)n);
}

/* An int tensor of rows values ([rows, 1] or [rows]) holding labels; NULL is allowed when
 * optional. */
static FlStatus check_labels(FlErr *e, const char *op, const char *slot, const FlTensor *t, int64_t rows) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    bool shape_ok = (t->ndim == 2 && t->ne[1] == 1) || t->ndim == 1;
    if (!kis_int(t->dtype) || !shape_ok || t->ne[0] != rows)
        return fl_err(e, "%s: %s %s (%s) must be int64 [%lld, 1]", op, slot, fl_tensor_shape(t).s,
                      fl_dtype_name(t->dtype), (long long)rows);
    return FL_OK;
}

/* Emission [T, K] (F), Transition [K + 2, K] (its dtype), optional Label [T, 1] with tags in
 * [0, K), offsets ending at T. */
static FlStatus crf_check(FlErr *e, const char *op, const FlTensor *x, const FlTensor *w, const FlTensor *label,
                          const int64_t *off, int64_t nseq, int64_t *T, int64_t *K) {
    if (kneed_float(e, op, "Emission", x) || ksame_dtype(e, op, "Emission", x, "Transition", w)) return FL_ERROR;
    if (x->ndim != 2 || x->ne[1] < 1)
        return fl_err(e, "%s: Emission %s must be [T, K] with K >= 1", op, fl_tensor_shape(x).s);
    *T = x->ne[0], *K = x->ne[1];
    if (w->ndim != 2 || w->ne[0] != *K + 2 || w->ne[1] != *K)
        return fl_err(e, "%s: Transition %s must be [K + 2, K] = [%lld, %lld] for Emission %s", op,
                      fl_tensor_shape(w).s, (long long)(*K + 2), (long long)*K, fl_tensor_shape(x).s);
    if (nseq < 0 || off[0] != 0 || off[nseq] != *T)
        return fl_err(e, "%s: the offsets cut %lld rows but Emission %s has %lld", op, (long long)off[nseq],
                      fl_tensor_shape(x).s, (long long)*T);
    if (!label) return FL_OK;
    if (check_labels(e, op, "Label", label, *T)) return FL_ERROR;
    for (int64_t r = 0; r < *T; r++) {
        int64_t v = label_at(label, r);
        if (v < 0 || v >= *K)
            return fl_err(e, "%s: Label row %lld is %lld, outside the %lld tags [0, %lld)", op, (long long)r,
                          (long long)v, (long long)*K, (long long)*K);
    }
    return FL_OK;
}

/* Scales v[0..n) to sum 1; the sum, which must be positive and finite. */
static FlStatus normalise(FlErr *e, const char *op, double *v, int64_t n, int64_t row, double *sum) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    if (!(s > 0) || !isfinite(s))
        return fl_err(e, "%s: the path scores at row %lld sum to %g (weights too large or not finite)", op,
                      (long long)row, s);
    for (int64_t i = 0; i < n; i++) v[i] /= s;
    *sum = s;
    return FL_OK;
}

/* ---- linear_chain_crf ---- */

/* The negative log-likelihood of one sequence of L >= 1 rows (x, ex, a at its first row). */
static FlStatus crf_seq(FlErr *e, const char *op, const double *x, const double *ex, const double *rowmax,
                        const double *w, const double *we, const FlTensor *label, int64_t r0, int64_t L,
                        int64_t K, double *a, double *nll) {
    double s = 0, ll = 0; /* ll: -log Z, then + the label path's score */
    for (int64_t j = 0; j < K; j++) a[j] = we[j] * ex[j];
    if (normalise(e, op, a, K, r0, &s)) return FL_ERROR;
    ll -= rowmax[0] + log(s);
    for (int64_t k = 1; k < L; k++) {
        const double *prev = a + (k - 1) * K;
        double *cur = a + k * K;
        for (int64_t j = 0; j < K; j++) {
            double acc = 0;
            for (int64_t i = 0; i < K; i++) acc += prev[i] * we[(2 + i) * K + j];
            cur[j] = ex[k * K + j] * acc;
        }
        if (normalise(e, op, cur, K, r0 + k, &s)) return FL_ERROR;
        ll -= rowmax[k] + log(s);
    }
    s = 0;
    for (int64_t j = 0; j < K; j++) s += a[(L - 1) * K + j] * we[K + j];
    if (!(s > 0) || !isfinite(s))
        return fl_err(e, "%s: the path scores of the sequence at row %lld sum to %g", op, (long long)r0, s);
    ll -= log(s);
    int64_t y = label_at(label, r0);
    ll += w[y] + x[y];
    for (int64_t k = 1; k < L; k++) {
        int64_t yk = label_at(label, r0 + k);
        ll += x[k * K + yk] + w[(2 + y) * K + yk];
        y = yk;
    }
    ll += w[K + y];
    *nll = 0.0 - ll; /* not -ll: a one-tag CRF prints 0, not -0 */
    return FL_OK;
}

FlStatus fl_kernel_linear_chain_crf(FlErr *e, const FlTensor *emission, const FlTensor *transition,
                                    const FlTensor *label, const int64_t *off, int64_t nseq, FlTensor *alpha,
                                    FlTensor *emission_exps, FlTensor *transition_exps,
                                    FlTensor *log_likelihood) {
    const char *op = "linear_chain_crf";
    int64_t T, K;
    if (kwant(e, op, "LogLikelihood", log_likelihood) || khas(e, op, "Label", label) ||
        crf_check(e, op, emission, transition, label, off, nseq, &T, &K))
        return FL_ERROR;
    FlDType dt = emission->dtype;
    int64_t TK = T * K, WK = (K + 2) * K, oshape[2] = {nseq, 1};
    FlTensor r[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    double *x = NULL, *ex = NULL, *rowmax = NULL, *w = NULL, *we = NULL, *a = NULL, *nll = NULL;
    FlStatus st = FL_ERROR;
    if (kalloc_like(e, op, &r[0], emission) || kalloc_like(e, op, &r[1], emission) ||
        kalloc_like(e, op, &r[2], transition) || kalloc(e, op, &r[3], dt, 2, oshape) ||
        scratch(e, op, TK, &x) || scratch(e, op, TK, &ex) || scratch(e, op, T, &rowmax) ||
        scratch(e, op, WK, &w) || scratch(e, op, WK, &we) || scratch(e, op, TK, &a) ||
        scratch(e, op, nseq, &nll))
        goto fail;
    load_f(emission, x, TK);
    load_f(transition, w, WK);
    for (int64_t i = 0; i < WK; i++) we[i] = exp(w[i]);
    for (int64_t t = 0; t < T; t++) {
        double m = x[t * K];
        for (int64_t j = 1; j < K; j++) m = x[t * K + j] > m ? x[t * K + j] : m;
        rowmax[t] = m;
        for (int64_t j = 0; j < K; j++) ex[t * K + j] = exp(x[t * K + j] - m);
    }
    memset(a, 0, (size_t)TK * sizeof *a);
    for (int64_t s = 0; s < nseq; s++) {
        int64_t r0 = off[s], L = off[s + 1] - off[s];
        nll[s] = 0; /* an empty sequence costs nothing, as in Fluid */
        if (L > 0 && crf_seq(e, op, x + r0 * K, ex + r0 * K, rowmax + r0, w, we, label, r0, L, K, a + r0 * K,
                             &nll[s]))
            goto fail;
    }
    store_f(&r[0], a, TK);
    store_f(&r[1], ex, TK);
    store_f(&r[2], we, WK);
    store_f(&r[3], nll, nseq);
    kout(alpha, &r[0]);
    kout(emission_exps, &r[1]);
    kout(transition_exps, &r[2]);
    kout(log_likelihood, &r[3]);
    st = FL_OK;
fail:
    for (int i = 0; i < 4; i++) fl_tensor_fini(&r[i]);
    free(x), free(ex), free(rowmax), free(w), free(we), free(a), free(nll);
    return st;
}

/* The gradient of one sequence of L >= 1 rows scaled by g: into dx (its rows, zero on entry)
 * and dw (accumulated). b: scratch for the backward vectors [L, K]. */
static FlStatus crf_seq_grad(FlErr *e, const char *op, const double *a, const double *ex, const double *we,
                             const FlTensor *label, int64_t r0, int64_t L, int64_t K, double g, double *b,
                             double *dx, double *dw) {
    double s;
    for (int64_t j = 0; j < K; j++) b[(L - 1) * K + j] = we[K + j];
    if (normalise(e, op, b + (L - 1) * K, K, r0 + L - 1, &s)) return FL_ERROR;
    for (int64_t k = L - 2; k >= 0; k--) {
        for (int64_t i = 0; i < K; i++) {
            double acc = 0;
            for (int64_t j = 0; j < K; j++) acc += we[(2 + i) * K + j] * ex[(k + 1) * K + j] * b[(k + 1) * K + j];
            b[k * K + i] = acc;
        }
        if (normalise(e, op, b + k * K, K, r0 + k, &s)) return FL_ERROR;
    }
    for (int64_t k = 0; k < L; k++) {
        double z = 0;
        for (int64_t j = 0; j < K; j++) z += a[k * K + j] * b[k * K + j];
        if (!(z > 0) || !isfinite(z))
            return fl_err(e, "%s: the marginals at row %lld sum to %g", op, (long long)(r0 + k), z);
        for (int64_t j = 0; j < K; j++) dx[k * K + j] = g * a[k * K + j] * b[k * K + j] / z;
        dx[k * K + label_at(label, r0 + k)] -= g;
    }
    if (!dw) return FL_OK;
    for (int64_t j = 0; j < K; j++) {
        dw[j] += dx[j];
        dw[K + j] += dx[(L - 1) * K + j];
    }
    for (int64_t k = 1; k < L; k++) {
        /* P(y(k-1) = i, yk = j) is proportional to a[k-1, i] we[2 + i, j] ex[k, j] b[k, j] */
        double z = 0;
        for (int64_t i = 0; i < K; i++)
            for (int64_t j = 0; j < K; j++)
                z += a[(k - 1) * K + i] * we[(2 + i) * K + j] * ex[k * K + j] * b[k * K + j];
        if (!(z > 0) || !isfinite(z))
            return fl_err(e, "%s: the transition marginals at row %lld sum to %g", op, (long long)(r0 + k), z);
        for (int64_t i = 0; i < K; i++)
            for (int64_t j = 0; j < K; j++)
                dw[(2 + i) * K + j] += g * a[(k - 1) * K + i] * we[(2 + i) * K + j] * ex[k * K + j] * b[k * K + j] / z;
        dw[(2 + label_at(label, r0 + k - 1)) * K + label_at(label, r0 + k)] -= g;
    }
    return FL_OK;
}

FlStatus fl_kernel_linear_chain_crf_grad(FlErr *e, const FlTensor *label, const int64_t *off, int64_t nseq,
                                         const FlTensor *alpha, const FlTensor *emission_exps,
                                         const FlTensor *transition_exps, const FlTensor *dll,
                                         FlTensor *demission, FlTensor *dtransition) {
    const char *op = "linear_chain_crf_grad";
    if (!demission && !dtransition) return FL_OK;
    if (kneed_float(e, op, "Alpha", alpha) || ksame(e, op, "Alpha", alpha, "EmissionExps", emission_exps) ||
        ksame_dtype(e, op, "Alpha", alpha, "TransitionExps", transition_exps) ||
        ksame_dtype(e, op, "Alpha", alpha, "LogLikelihood@GRAD", dll))
        return FL_ERROR;
    int64_t T, K;
    if (crf_check(e, op, alpha, transition_exps, label, off, nseq, &T, &K)) return FL_ERROR;
    if (fl_tensor_numel(dll) != nseq)
        return fl_err(e, "%s: LogLikelihood@GRAD %s must hold one value per sequence (%lld)", op,
                      fl_tensor_shape(dll).s, (long long)nseq);
    int64_t TK = T * K, WK = (K + 2) * K;
    FlTensor r[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
    double *a = NULL, *ex = NULL, *we = NULL, *g = NULL, *b = NULL, *dx = NULL, *dw = NULL;
    FlStatus st = FL_ERROR;
    if (kalloc_like(e, op, &r[0], alpha) || kalloc_like(e, op, &r[1], transition_exps) ||
        scratch(e, op, TK, &a) || scratch(e, op, TK, &ex) || scratch(e, op, WK, &we) ||
        scratch(e, op, nseq, &g) || scratch(e, op, TK, &b) || scratch(e, op, TK, &dx) ||
        scratch(e, op, WK, &dw))
        goto fail;
    load_f(alpha, a, TK);
    load_f(emission_exps, ex, TK);
    load_f(transition_exps, we, WK);
    load_f(dll, g, nseq);
    memset(dx, 0, (size_t)TK * sizeof *dx);
    memset(dw, 0, (size_t)WK * sizeof *dw);
    for (int64_t s = 0; s < nseq; s++) {
        int64_t r0 = off[s], L = off[s + 1] - off[s];
        if (L > 0 && crf_seq_grad(e, op, a + r0 * K, ex + r0 * K, we, label, r0, L, K, g[s], b, dx + r0 * K,
                                  dtransition ? dw : NULL))
            goto fail;
    }
    store_f(&r[0], dx, TK);
    store_f(&r[1], dw, WK);
    kout(demission, &r[0]);
    kout(dtransition, &r[1]);
    st = FL_OK;
fail:
    fl_tensor_fini(&r[0]), fl_tensor_fini(&r[1]);
    free(a), free(ex), free(we), free(g), free(b), free(dx), free(dw);
    return st;
}

/* ---- crf_decoding ---- */

FlStatus fl_kernel_crf_decoding(FlErr *e, const FlTensor *emission, const FlTensor *transition,
                                const FlTensor *label, const int64_t *off, int64_t nseq, FlTensor *path) {
    const char *op = "crf_decoding";
    int64_t T, K;
    if (kwant(e, op, "ViterbiPath", path) || crf_check(e, op, emission, transition, NULL, off, nseq, &T, &K))
        return FL_ERROR;
    /* a label is compared with the path, whatever its values: only its shape is checked */
    if (label && check_labels(e, op, "Label", label, T)) return FL_ERROR;
    int64_t TK = T * K, WK = (K + 2) * K, oshape[2] = {T, 1};
    FlTensor r = FL_TENSOR_INIT;
    double *x = NULL, *w = NULL, *d = NULL;
    int64_t *back = NULL;
    FlStatus st = FL_ERROR;
    if (kalloc(e, op, &r, FL_DT_INT64, 2, oshape) || scratch(e, op, TK, &x) || scratch(e, op, WK, &w) ||
        scratch(e, op, TK, &d))
        goto fail;
    back = malloc((size_t)(TK > 0 ? TK : 1) * sizeof *back);
    if (!back) {
        fl_err(e, "%s: out of memory for the back pointers of %lld rows", op, (long long)T);
        goto fail;
    }
    load_f(emission, x, TK);
    load_f(transition, w, WK);
    int64_t *out = fl_tensor_data(&r);
    for (int64_t s = 0; s < nseq; s++) {
        int64_t r0 = off[s], L = off[s + 1] - off[s];
        if (L == 0) continue;
        const double *xs = x + r0 * K;
        double *ds = d + r0 * K;
        int64_t *bs = back + r0 * K;
        for (int64_t j = 0; j < K; j++) ds[j] = w[j] + xs[j];
        for (int64_t k = 1; k < L; k++)
            for (int64_t j = 0; j < K; j++) {
                double best = -INFINITY;
                int64_t arg = 0;
                for (int64_t i = 0; i < K; i++) {
                    double v = ds[(k - 1) * K + i] + w[(2 + i) * K + j];
                    if (v > best) best = v, arg = i;
                }
                ds[k * K + j] = best + xs[k * K + j];
                bs[k * K + j] = arg;
            }
        double best = -INFINITY;
        int64_t tag = 0;
        for (int64_t j = 0; j < K; j++) {
            double v = ds[(L - 1) * K + j] + w[K + j];
            if (v > best) best = v, tag = j;
        }
        for (int64_t k = L - 1; k >= 0; k--) {
            out[r0 + k] = tag;
            tag = bs[k * K + tag];
        }
    }
    if (label)
        for (int64_t t = 0; t < T; t++) out[t] = out[t] == label_at(label, t);
    kout(path, &r);
    st = FL_OK;
fail:
    fl_tensor_fini(&r);
    free(x), free(w), free(d), free(back);
    return st;
}

/* ---- chunk_eval ---- */

typedef struct ChunkTags {
    int kinds;                   /* tag kinds per chunk type */
    int begin, inside, end, single; /* each kind's tag, -1 when the scheme has none */
} ChunkTags;

static const ChunkTags chunk_tags[FL_CHUNK_COUNT] = {
    [FL_CHUNK_IOB] = {2, 0, 1, -1, -1},
    [FL_CHUNK_IOE] = {2, -1, 0, 1, -1},
    [FL_CHUNK_IOBES] = {4, 0, 1, 2, 3},
    [FL_CHUNK_PLAIN] = {1, -1, -1, -1, -1},
};
static const char *const chunk_names[FL_CHUNK_COUNT] = {"IOB", "IOE", "IOBES", "plain"};

FlChunkScheme fl_chunk_scheme_find(const char *name) {
    for (int s = 0; s < FL_CHUNK_COUNT; s++)
        if (strcmp(name, chunk_names[s]) == 0) return (FlChunkScheme)s;
    return FL_CHUNK_COUNT;
}

typedef struct Chunk {
    int64_t begin, end; /* rows, inclusive */
    int64_t type;
} Chunk;

/* Whether the chunk of (prev tag, prev type) ends before a token of (tag, type). */
static bool chunk_ends(const ChunkTags *c, int64_t ptag, int64_t ptype, int64_t tag, int64_t type, int64_t other) {
    if (ptype == other) return false;
    if (type == other || type != ptype) return true;
    if (ptag == c->begin || ptag == c->inside) return tag == c->begin || tag == c->single;
    return ptag == c->end || ptag == c->single;
}

/* Whether a token of (tag, type) after one of (prev tag, prev type) starts a chunk. */
static bool chunk_begins(const ChunkTags *c, int64_t ptag, int64_t ptype, int64_t tag, int64_t type, int64_t other) {
    if (ptype == other) return type != other;
    if (type == other) return false;
    if (type != ptype || tag == c->begin || tag == c->single) return true;
    if (tag == c->inside || tag == c->end) return ptag == c->end || ptag == c->single;
    return false;
}

/* The chunks of rows [r0, r0 + L) of t, in order, into out (room for L); their count. */
static int64_t chunks_of(const ChunkTags *c, const FlTensor *t, int64_t r0, int64_t L, int64_t other, Chunk *out) {
    int64_t n = 0, start = 0, tag = -1, type = other;
    bool in = false;
    for (int64_t k = 0; k < L; k++) {
        int64_t v = label_at(t, r0 + k), ptag = tag, ptype = type;
        tag = v % c->kinds, type = v / c->kinds;
        if (in && chunk_ends(c, ptag, ptype, tag, type, other)) {
            out[n++] = (Chunk){start, k - 1, ptype};
            in = false;
        }
        if (chunk_begins(c, ptag, ptype, tag, type, other)) start = k, in = true;
    }
    if (in) out[n++] = (Chunk){start, L - 1, type};
    return n;
}

static bool is_excluded(int64_t type, const int64_t *excluded, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (excluded[i] == type) return true;
    return false;
}

FlStatus fl_kernel_chunk_eval(FlErr *e, const FlTensor *inference, const FlTensor *label, const int64_t *off,
                              int64_t nseq, int num_chunk_types, FlChunkScheme scheme, const int64_t *excluded,
                              size_t n_excluded, FlTensor *precision, FlTensor *recall, FlTensor *f1,
                              FlTensor *num_infer, FlTensor *num_label, FlTensor *num_correct) {
    const char *op = "chunk_eval";
    if (khas(e, op, "Inference", inference)) return FL_ERROR;
    int64_t T = inference->ne[0];
    if (check_labels(e, op, "Inference", inference, T) || check_labels(e, op, "Label", label, T)) return FL_ERROR;
    if ((unsigned)scheme >= FL_CHUNK_COUNT || num_chunk_types < 1)
        return fl_err(e, "%s: num_chunk_types must be >= 1 and the scheme one of IOB, IOE, IOBES, plain", op);
    if (nseq < 0 || off[0] != 0 || off[nseq] != T)
        return fl_err(e, "%s: the offsets cut %lld rows but Inference %s has %lld", op, (long long)off[nseq],
                      fl_tensor_shape(inference).s, (long long)T);
    const ChunkTags *c = &chunk_tags[scheme];
    int64_t other = num_chunk_types, top = (int64_t)num_chunk_types * c->kinds;
    const FlTensor *ts[2] = {inference, label};
    for (int i = 0; i < 2; i++)
        for (int64_t r = 0; r < T; r++) {
            int64_t v = label_at(ts[i], r);
            if (v < 0 || v > top)
                return fl_err(e, "%s: %s row %lld is %lld, outside [0, %lld] (%d chunk types * %d tag kinds of %s)",
                              op, i ? "Label" : "Inference", (long long)r, (long long)v, (long long)top,
                              num_chunk_types, c->kinds, chunk_names[scheme]);
        }
    int64_t one = 1, counts[3] = {0, 0, 0}; /* inferred, labelled, correct */
    FlTensor r[6] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    Chunk *ci = malloc((size_t)(T > 0 ? T : 1) * sizeof *ci), *cl = malloc((size_t)(T > 0 ? T : 1) * sizeof *cl);
    FlStatus st = FL_ERROR;
    if (!ci || !cl) {
        fl_err(e, "%s: out of memory for the chunks of %lld rows", op, (long long)T);
        goto fail;
    }
    for (int i = 0; i < 6; i++)
        if (kalloc(e, op, &r[i], i < 3 ? FL_DT_FLOAT32 : FL_DT_INT64, 1, &one)) goto fail;
    for (int64_t s = 0; s < nseq; s++) {
        int64_t r0 = off[s], L = off[s + 1] - off[s];
        int64_t ni = chunks_of(c, inference, r0, L, other, ci), nl = chunks_of(c, label, r0, L, other, cl);
        for (int64_t i = 0; i < ni; i++) counts[0] += !is_excluded(ci[i].type, excluded, n_excluded);
        for (int64_t j = 0; j < nl; j++) counts[1] += !is_excluded(cl[j].type, excluded, n_excluded);
        /* both lists are ordered and free of overlaps: walk them together by their ends */
        for (int64_t i = 0, j = 0; i < ni && j < nl;) {
            if (ci[i].begin == cl[j].begin && ci[i].end == cl[j].end && ci[i].type == cl[j].type &&
                !is_excluded(ci[i].type, excluded, n_excluded))
                counts[2]++;
            if (ci[i].end < cl[j].end) i++;
            else if (ci[i].end > cl[j].end) j++;
            else i++, j++;
        }
    }
    double p = counts[0] ? (double)counts[2] / (double)counts[0] : 0;
    double rc = counts[1] ? (double)counts[2] / (double)counts[1] : 0;
    double f = counts[2] ? 2 * p * rc / (p + rc) : 0;
    fl_tensor_set(&r[0], 0, p);
    fl_tensor_set(&r[1], 0, rc);
    fl_tensor_set(&r[2], 0, f);
    for (int i = 0; i < 3; i++) ((int64_t *)fl_tensor_data(&r[3 + i]))[0] = counts[i];
    FlTensor *outs[6] = {precision, recall, f1, num_infer, num_label, num_correct};
    for (int i = 0; i < 6; i++) kout(outs[i], &r[i]);
    st = FL_OK;
fail:
    for (int i = 0; i < 6; i++) fl_tensor_fini(&r[i]);
    free(ci), free(cl);
    return st;
}
