/* ctc.c: the CTC loss and its gradient, greedy CTC alignment, edit distance and token erasure
 * over sequences cut by offsets (kernels_ctc.h). The loss runs the forward-backward recursions
 * of CTC in log space (double), so long sequences and confident logits neither underflow nor
 * overflow. */
#include "runtime/kernels/kernels_ctc.h"

#include <math.h>

#include "runtime/kernels/kernels_impl.h"

/* ids: an int tensor of `rows` values, [rows, 1] or [rows]. */
static FlStatus check_ids(FlErr *e, const char *op, const char *slot, const FlTensor *t, int64_t rows) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (!kis_int(t->dtype))
        return fl_err(e, "%s: %s %s has dtype %s; int32 or int64 ids expected", op, slot, fl_tensor_shape(t).s,
                      fl_dtype_name(t->dtype));
    if (t->ndim < 1 || t->ndim > 2 || (t->ndim == 2 && t->ne[1] != 1) || t->ne[0] != rows)
        return fl_err(e, "%s: %s %s must be [%lld, 1], one id per row its offsets cut", op, slot,
                      fl_tensor_shape(t).s, (long long)rows);
    return FL_OK;
}

static double lse(double a, double b) {
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* Row r of a float tensor [., C] into dst (double). */
static void load_row(const FlTensor *t, int64_t r, int64_t C, double *dst) {
    if (t->dtype == FL_DT_FLOAT32) {
        const float *p = (const float *)fl_tensor_data(t) + r * C;
        for (int64_t k = 0; k < C; k++) dst[k] = p[k];
    } else {
        const double *p = (const double *)fl_tensor_data(t) + r * C;
        for (int64_t k = 0; k < C; k++) dst[k] = p[k];
    }
}

static void store(FlTensor *t, int64_t i, double v) {
    if (t->dtype == FL_DT_FLOAT32) ((float *)fl_tensor_data(t))[i] = (float)v;
    else ((double *)fl_tensor_data(t))[i] = v;
}

/* ---- warpctc ---- */

/* One sequence: lp [T, C] the frames' log-probabilities, lab [L] its label. Returns -log p
 * (0 when no alignment fits: *fits false) and, when g is given, adds the posterior of each
 * class to g [T, C] (the caller forms softmax - posterior). */
typedef struct CtcWork {
    double *alpha, *beta; /* [T, S] */
    int64_t *ext;         /* [S]: blank, l0, blank, l1, ..., blank */
} CtcWork;

static double ctc_seq(const double *lp, int64_t T, int64_t C, const int64_t *lab, int64_t L, int64_t blank,
                      CtcWork *w, double *post, bool *fits) {
    int64_t S = 2 * L + 1, repeats = 0;
    for (int64_t i = 1; i < L; i++) repeats += lab[i] == lab[i - 1];
    *fits = L + repeats <= T;
    if (!*fits) return 0;
    if (T == 0) return 0; /* an empty label read from no frame: p = 1 */
    for (int64_t s = 0; s < S; s++) w->ext[s] = s % 2 ? lab[s / 2] : blank;
    double *a = w->alpha, *b = w->beta;
    for (int64_t i = 0; i < T * S; i++) a[i] = b[i] = -INFINITY;
    a[0] = lp[blank];
    if (S > 1) a[1] = lp[w->ext[1]];
    for (int64_t t = 1; t < T; t++) {
        const double *prev = a + (t - 1) * S;
        double *cur = a + t * S;
        for (int64_t s = 0; s < S; s++) {
            double v = prev[s];
            if (s >= 1) v = lse(v, prev[s - 1]);
            if (s >= 2 && w->ext[s] != blank && w->ext[s] != w->ext[s - 2]) v = lse(v, prev[s - 2]);
            cur[s] = v == -INFINITY ? v : v + lp[t * C + w->ext[s]];
        }
    }
    /* beta[t][s]: the log-probability of the frames after t given state s at t */
    double *bl = b + (T - 1) * S;
    bl[S - 1] = 0;
    if (S > 1) bl[S - 2] = 0;
    for (int64_t t = T - 2; t >= 0; t--) {
        const double *next = b + (t + 1) * S, *lpn = lp + (t + 1) * C;
        double *cur = b + t * S;
        for (int64_t s = 0; s < S; s++) {
            double v = next[s] + lpn[w->ext[s]];
            if (s + 1 < S) v = lse(v, next[s + 1] + lpn[w->ext[s + 1]]);
            if (s + 2 < S && w->ext[s + 2] != blank && w->ext[s + 2] != w->ext[s])
                v = lse(v, next[s + 2] + lpn[w->ext[s + 2]]);
            cur[s] = v;
        }
    }
    double logp = a[(T - 1) * S + S - 1];
    if (S > 1) logp = lse(logp, a[(T - 1) * S + S - 2]);
    if (post) {
        for (int64_t t = 0; t < T; t++)
            for (int64_t s = 0; s < S; s++) {
                double v = a[t * S + s] + b[t * S + s];
                if (v != -INFINITY) post[t * C + w->ext[s]] += exp(v - logp);
            }
    }
    return -logp;
}

FlStatus fl_kernel_warpctc(FlErr *e, const FlTensor *logits, const int64_t *loff, int64_t nseq,
                           const FlTensor *label, const int64_t *laboff, int64_t nlab, int64_t blank,
                           FlTensor *grad, FlTensor *loss) {
    const char *op = "warpctc";
    if (kneed_float(e, op, "Logits", logits) || kwant(e, op, "Loss", loss)) return FL_ERROR;
    if (logits->ndim != 2 || logits->ne[1] < 1)
        return fl_err(e, "%s: Logits %s must be [T, C] (a score per frame and class)", op, fl_tensor_shape(logits).s);
    if (loff[nseq] != logits->ne[0])
        return fl_err(e, "%s: the offsets end at %lld but Logits %s has %lld rows", op, (long long)loff[nseq],
                      fl_tensor_shape(logits).s, (long long)logits->ne[0]);
    if (check_ids(e, op, "Label", label, laboff[nlab])) return FL_ERROR;
    if (nseq != nlab)
        return fl_err(e, "%s: Logits holds %lld sequences but Label %lld: each sequence needs its label", op,
                      (long long)nseq, (long long)nlab);
    int64_t C = logits->ne[1];
    if (blank < 0 || blank >= C)
        return fl_err(e, "%s: blank %lld is outside the %lld classes [0, %lld) of Logits %s", op, (long long)blank,
                      (long long)C, (long long)C, fl_tensor_shape(logits).s);
    for (int64_t i = 0, n = laboff[nlab]; i < n; i++) {
        int64_t v = fl_tensor_get_int(label, i);
        if (v < 0 || v >= C || v == blank)
            return fl_err(e, "%s: Label row %lld is %lld: labels are classes in [0, %lld) other than the blank %lld",
                          op, (long long)i, (long long)v, (long long)C, (long long)blank);
    }
    FlTensor lo = FL_TENSOR_INIT, go = FL_TENSOR_INIT;
    if (kalloc(e, op, &lo, logits->dtype, 2, (int64_t[]){nseq, 1})) return FL_ERROR;
    if (grad && kalloc(e, op, &go, logits->dtype, 2, logits->ne)) {
        fl_tensor_fini(&lo);
        return FL_ERROR;
    }
    int64_t maxT = 0, maxL = 0;
    for (int64_t s = 0; s < nseq; s++) {
        if (loff[s + 1] - loff[s] > maxT) maxT = loff[s + 1] - loff[s];
        if (laboff[s + 1] - laboff[s] > maxL) maxL = laboff[s + 1] - laboff[s];
    }
    int64_t S = 2 * maxL + 1, cells;
    /* the tables of the longest sequence and label: their product may not fit though each does */
    CtcWork w = {NULL, NULL, NULL};
    if (!__builtin_mul_overflow(maxT, S, &cells) && (uint64_t)cells < SIZE_MAX / sizeof(double) - 1)
        w = (CtcWork){calloc((size_t)cells + 1, sizeof(double)), calloc((size_t)cells + 1, sizeof(double)),
                      calloc((size_t)S, sizeof(int64_t))};
    if (!w.alpha || !w.beta || !w.ext) {
        free(w.alpha);
        free(w.beta);
        free(w.ext);
        fl_tensor_fini(&lo);
        fl_tensor_fini(&go);
        return fl_err(e, "%s: out of memory for the CTC tables of %lld frames by %lld label states", op,
                      (long long)maxT, (long long)S);
    }
    double *lp = fl_xcalloc((size_t)(maxT * C + 1), sizeof(double));
    double *post = grad ? fl_xcalloc((size_t)(maxT * C + 1), sizeof(double)) : NULL;
    int64_t *lab = fl_xcalloc((size_t)maxL + 1, sizeof(int64_t));
    for (int64_t s = 0; s < nseq; s++) {
        int64_t r0 = loff[s], Ts = loff[s + 1] - r0, L = laboff[s + 1] - laboff[s];
        for (int64_t i = 0; i < L; i++) lab[i] = fl_tensor_get_int(label, laboff[s] + i);
        for (int64_t t = 0; t < Ts; t++) {
            double *row = lp + t * C, m = -INFINITY, z = 0;
            load_row(logits, r0 + t, C, row);
            for (int64_t k = 0; k < C; k++) m = fmax(m, row[k]);
            for (int64_t k = 0; k < C; k++) z += exp(row[k] - m);
            double lz = m + log(z);
            for (int64_t k = 0; k < C; k++) row[k] -= lz;
        }
        if (post) memset(post, 0, (size_t)(Ts * C) * sizeof(double));
        bool fits;
        double nll = ctc_seq(lp, Ts, C, lab, L, blank, &w, post, &fits);
        store(&lo, s, nll);
        if (grad && fits)
            for (int64_t i = 0; i < Ts * C; i++) store(&go, r0 * C + i, exp(lp[i]) - post[i]);
    }
    free(w.alpha);
    free(w.beta);
    free(w.ext);
    free(lp);
    free(post);
    free(lab);
    kout(loss, &lo);
    if (grad) kout(grad, &go);
    return FL_OK;
}

FlStatus fl_kernel_warpctc_grad(FlErr *e, const FlTensor *grad, const int64_t *loff, int64_t nseq,
                                const FlTensor *dloss, bool norm_by_times, FlTensor *dlogits) {
    const char *op = "warpctc_grad";
    if (!dlogits) return FL_OK;
    if (kneed_float(e, op, "WarpCTCGrad", grad) || ksame_dtype(e, op, "WarpCTCGrad", grad, "Loss@GRAD", dloss))
        return FL_ERROR;
    if (grad->ndim != 2 || loff[nseq] != grad->ne[0])
        return fl_err(e, "%s: WarpCTCGrad %s must be [T, C] with the %lld rows its offsets cut", op,
                      fl_tensor_shape(grad).s, (long long)loff[nseq]);
    if (fl_tensor_numel(dloss) != nseq)
        return fl_err(e, "%s: Loss@GRAD %s must hold one value per sequence (%lld)", op, fl_tensor_shape(dloss).s,
                      (long long)nseq);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_like(e, op, &o, grad)) return FL_ERROR;
    int64_t C = grad->ne[1];
    for (int64_t s = 0; s < nseq; s++) {
        int64_t Ts = loff[s + 1] - loff[s];
        double k = fl_tensor_get(dloss, s) / (norm_by_times && Ts > 0 ? (double)Ts : 1.0);
        for (int64_t i = loff[s] * C; i < loff[s + 1] * C; i++) store(&o, i, fl_tensor_get(grad, i) * k);
    }
    kout(dlogits, &o);
    return FL_OK;
}

/* ---- ctc_align, sequence_erase: ids kept or dropped row by row ---- */

/* Out: the rows of ids that keep(.) keeps, per sequence, and their offsets. */
typedef bool (*KeepFn)(int64_t id, int64_t prev, const void *arg);

static FlStatus filter_ids(FlErr *e, const char *op, const FlTensor *x, const int64_t *off, int64_t nseq,
                           KeepFn keep, const void *arg, FlTensor *out, FlTensor *out_lod) {
    if (kwant(e, op, "Out", out) || kwant(e, op, "OutLod", out_lod)) return FL_ERROR;
    int64_t T = off[nseq];
    int64_t *ids = fl_xcalloc((size_t)T + 1, sizeof(int64_t));
    FlTensor lod = FL_TENSOR_INIT, o = FL_TENSOR_INIT;
    if (kalloc(e, op, &lod, FL_DT_INT64, 1, (int64_t[]){nseq + 1})) {
        free(ids);
        return FL_ERROR;
    }
    int64_t *lo = fl_tensor_data(&lod), n = 0;
    lo[0] = 0;
    for (int64_t s = 0; s < nseq; s++) {
        int64_t prev = INT64_MIN; /* no id before a sequence's first */
        for (int64_t i = off[s]; i < off[s + 1]; i++) {
            int64_t v = fl_tensor_get_int(x, i);
            if (keep(v, prev, arg)) ids[n++] = v;
            prev = v;
        }
        lo[s + 1] = n;
    }
    if (kalloc(e, op, &o, x->dtype, 2, (int64_t[]){n, 1})) {
        free(ids);
        fl_tensor_fini(&lod);
        return FL_ERROR;
    }
    for (int64_t i = 0; i < n; i++) {
        if (o.dtype == FL_DT_INT64) ((int64_t *)fl_tensor_data(&o))[i] = ids[i];
        else ((int32_t *)fl_tensor_data(&o))[i] = (int32_t)ids[i];
    }
    free(ids);
    kout(out, &o);
    kout(out_lod, &lod);
    return FL_OK;
}

typedef struct AlignArg {
    int64_t blank;
    bool merge;
} AlignArg;

static bool align_keep(int64_t id, int64_t prev, const void *arg) {
    const AlignArg *a = arg;
    return id != a->blank && !(a->merge && id == prev);
}

FlStatus fl_kernel_ctc_align(FlErr *e, const FlTensor *input, const int64_t *off, int64_t nseq, int64_t blank,
                             bool merge_repeated, FlTensor *output, FlTensor *output_lod) {
    if (check_ids(e, "ctc_align", "Input", input, off[nseq])) return FL_ERROR;
    AlignArg a = {blank, merge_repeated};
    return filter_ids(e, "ctc_align", input, off, nseq, align_keep, &a, output, output_lod);
}

typedef struct EraseArg {
    const int64_t *tokens;
    size_t n;
} EraseArg;

static bool erase_keep(int64_t id, int64_t prev, const void *arg) {
    (void)prev;
    const EraseArg *a = arg;
    for (size_t i = 0; i < a->n; i++)
        if (a->tokens[i] == id) return false;
    return true;
}

FlStatus fl_kernel_sequence_erase(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                  const int64_t *tokens, size_t n, FlTensor *out, FlTensor *out_lod) {
    if (check_ids(e, "sequence_erase", "X", x, off[nseq])) return FL_ERROR;
    EraseArg a = {tokens, n};
    return filter_ids(e, "sequence_erase", x, off, nseq, erase_keep, &a, out, out_lod);
}

/* ---- edit_distance ---- */

FlStatus fl_kernel_edit_distance(FlErr *e, const FlTensor *hyps, const int64_t *hoff, int64_t nh,
                                 const FlTensor *refs, const int64_t *roff, int64_t nr, bool normalized,
                                 FlTensor *out, FlTensor *sequence_num) {
    const char *op = "edit_distance";
    if (check_ids(e, op, "Hyps", hyps, hoff[nh]) || check_ids(e, op, "Refs", refs, roff[nr]) ||
        kwant(e, op, "Out", out))
        return FL_ERROR;
    if (nh != nr)
        return fl_err(e, "%s: Hyps holds %lld sequences but Refs %lld: each hypothesis needs its reference", op,
                      (long long)nh, (long long)nr);
    for (int64_t s = 0; normalized && s < nr; s++)
        if (roff[s + 1] == roff[s])
            return fl_err(e, "%s: reference %lld is empty, which normalized=True cannot divide by", op, (long long)s);
    FlTensor o = FL_TENSOR_INIT, sn = FL_TENSOR_INIT;
    if (kalloc(e, op, &o, FL_DT_FLOAT32, 2, (int64_t[]){nh, 1})) return FL_ERROR;
    if (sequence_num && kalloc(e, op, &sn, FL_DT_INT64, 1, (int64_t[]){1})) {
        fl_tensor_fini(&o);
        return FL_ERROR;
    }
    int64_t maxn = 0;
    for (int64_t s = 0; s < nr; s++)
        if (roff[s + 1] - roff[s] > maxn) maxn = roff[s + 1] - roff[s];
    int64_t *row = fl_xcalloc((size_t)maxn + 1, sizeof(int64_t)), *ref = fl_xcalloc((size_t)maxn + 1, sizeof(int64_t));
    for (int64_t s = 0; s < nh; s++) {
        int64_t m = hoff[s + 1] - hoff[s], n = roff[s + 1] - roff[s];
        for (int64_t j = 0; j < n; j++) ref[j] = fl_tensor_get_int(refs, roff[s] + j);
        /* row[j]: the distance from the hypothesis' first i ids to the reference's first j */
        for (int64_t j = 0; j <= n; j++) row[j] = j;
        for (int64_t i = 1; i <= m; i++) {
            int64_t h = fl_tensor_get_int(hyps, hoff[s] + i - 1), diag = row[0];
            row[0] = i;
            for (int64_t j = 1; j <= n; j++) {
                int64_t up = row[j], best = diag + (h != ref[j - 1]);
                if (up + 1 < best) best = up + 1;
                if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
                diag = up;
                row[j] = best;
            }
        }
        double d = (double)row[n];
        ((float *)fl_tensor_data(&o))[s] = (float)(normalized ? d / (double)n : d);
    }
    free(row);
    free(ref);
    if (sequence_num) ((int64_t *)fl_tensor_data(&sn))[0] = nh;
    kout(out, &o);
    if (sequence_num) kout(sequence_num, &sn);
    return FL_OK;
}
