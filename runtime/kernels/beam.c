/* beam.c: beam_search and beam_search_decode (kernels_beam.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_beam.h"

typedef struct Cand {
    int64_t row, id;
    float score;
} Cand;

/* Fluid's order of candidates: a higher score first, on a tie the later row first. */
static bool cand_below(const Cand *a, const Cand *b) {
    return a->score < b->score || (a->score == b->score && a->row < b->row);
}

/* Puts c among the k best of top (*n of them, best first): a candidate below none of a full list's
 * last is dropped; one equal to it replaces it. */
static void cand_insert(Cand *top, int64_t *n, int64_t k, Cand c) {
    if (*n == k && cand_below(&c, &top[k - 1])) return;
    int64_t j = *n < k ? (*n)++ : k - 1;
    while (j > 0 && cand_below(&top[j - 1], &c)) {
        top[j] = top[j - 1];
        j--;
    }
    top[j] = c;
}

static int cmp_row(const void *pa, const void *pb) {
    const Cand *a = pa, *b = pb;
    if (a->row != b->row) return a->row < b->row ? -1 : 1;
    return 0;
}

static FlStatus want_rows(FlErr *e, const char *what, const FlTensor *t, FlDType dt, int64_t rows, int64_t width) {
    if (!t || !fl_tensor_has_data(t)) return fl_err(e, "beam_search: %s holds no data", what);
    if (t->dtype != dt)
        return fl_err(e, "beam_search: %s must be %s, found %s", what, fl_dtype_name(dt), fl_dtype_name(t->dtype));
    int64_t r = t->ndim > 0 ? t->ne[0] : 1, n = fl_tensor_numel(t);
    if (r != rows || n != rows * width)
        return fl_err(e, "beam_search: %s %s must be [%lld, %lld] (one row per prefix)", what, fl_tensor_shape(t).s,
                      (long long)rows, (long long)width);
    return FL_OK;
}

FlStatus fl_kernel_beam_search(FlErr *e, const FlTensor *pre_ids, const FlTensor *pre_scores, const FlTensor *ids,
                               const FlTensor *scores, const int64_t *src_off, int64_t nsrc, const int64_t *pfx_off,
                               int64_t npfx, int64_t beam_size, int64_t end_id, bool accumulated, FlTensor *sel_ids,
                               FlTensor *sel_scores, FlTensor *parent, FlTensor *out_src, FlTensor *out_lod) {
    if (beam_size < 1) return fl_err(e, "beam_search: beam_size must be at least 1, found %lld", (long long)beam_size);
    if (!scores || !fl_tensor_has_data(scores) || scores->ndim < 1)
        return fl_err(e, "beam_search: scores holds no data");
    int64_t rows = scores->ne[0], k = rows ? fl_tensor_numel(scores) / rows : 0;
    if (src_off[nsrc] != npfx || pfx_off[npfx] != rows)
        return fl_err(e, "beam_search: the offsets cut %lld prefixes of %lld rows, scores has %lld rows",
                      (long long)src_off[nsrc], (long long)pfx_off[npfx], (long long)rows);
    if (want_rows(e, "scores", scores, FL_DT_FLOAT32, rows, k) ||
        want_rows(e, "pre_ids", pre_ids, FL_DT_INT64, rows, 1) ||
        want_rows(e, "pre_scores", pre_scores, FL_DT_FLOAT32, rows, 1) ||
        (ids && want_rows(e, "ids", ids, FL_DT_INT64, rows, k)))
        return FL_ERROR;
    const int64_t *pid = fl_tensor_data(pre_ids), *cid = ids ? fl_tensor_data(ids) : NULL;
    const float *psc = fl_tensor_data(pre_scores), *csc = fl_tensor_data(scores);
    Cand *all = malloc(sizeof *all * (size_t)(nsrc * beam_size + 1));
    int64_t *cnt = calloc((size_t)rows + 1, sizeof *cnt);
    FlStatus st = FL_ERROR;
    if (!all || !cnt) {
        fl_err(e, "beam_search: out of memory");
        goto done;
    }
    int64_t nall = 0;
    for (int64_t s = 0; s < nsrc; s++) {
        Cand *top = all + nall;
        int64_t n = 0, r0 = pfx_off[src_off[s]], r1 = pfx_off[src_off[s + 1]];
        for (int64_t r = r0; r < r1; r++) {
            if (pid[r] == end_id) { /* an ended prefix goes on with end_id alone, at its score */
                cand_insert(top, &n, beam_size, (Cand){r, end_id, psc[r]});
                continue;
            }
            for (int64_t j = 0; j < k; j++) {
                float p = csc[r * k + j];
                float sc = accumulated ? p : psc[r] + logf(p);
                cand_insert(top, &n, beam_size, (Cand){r, cid ? cid[r * k + j] : j, sc});
            }
        }
        bool ended = true; /* every kept candidate an end_id after an end_id: the source is done */
        for (int64_t j = 0; j < n && ended; j++) ended = top[j].id == end_id && pid[top[j].row] == end_id;
        if (ended) n = 0;
        /* grouped by row, best first within a row (a stable sort keeps the order of equal rows) */
        for (int64_t j = 1; j < n; j++) {
            Cand c = top[j];
            int64_t i = j;
            while (i > 0 && cmp_row(&top[i - 1], &c) > 0) top[i] = top[i - 1], i--;
            top[i] = c;
        }
        for (int64_t j = 0; j < n; j++) cnt[top[j].row + 1]++;
        nall += n;
    }
    int64_t col[2] = {nall, 1}, ns = nsrc + 1, nl = rows + 1;
    if (fl_tensor_alloc_uninit(e, sel_ids, FL_DT_INT64, 2, col) ||
        fl_tensor_alloc_uninit(e, sel_scores, FL_DT_FLOAT32, 2, col) ||
        (parent && fl_tensor_alloc_uninit(e, parent, FL_DT_INT32, 1, &nall)) ||
        fl_tensor_alloc_uninit(e, out_src, FL_DT_INT64, 1, &ns) || fl_tensor_alloc_uninit(e, out_lod, FL_DT_INT64, 1, &nl))
        goto done;
    int64_t *oid = fl_tensor_data(sel_ids), *osrc = fl_tensor_data(out_src), *olod = fl_tensor_data(out_lod);
    float *osc = fl_tensor_data(sel_scores);
    int32_t *opar = parent ? fl_tensor_data(parent) : NULL;
    for (int64_t j = 0; j < nall; j++) {
        oid[j] = all[j].id;
        osc[j] = all[j].score;
        if (opar) opar[j] = (int32_t)all[j].row;
    }
    for (int64_t s = 0; s <= nsrc; s++) osrc[s] = pfx_off[src_off[s]];
    olod[0] = 0;
    for (int64_t r = 0; r < rows; r++) olod[r + 1] = olod[r] + cnt[r + 1];
    st = FL_OK;
done:
    free(all);
    free(cnt);
    return st;
}

/* ---- beam_search_decode ---- */

typedef struct Sent {
    int64_t *ids;
    float *scores;
    int64_t n, cap;
    int64_t at; /* the row it continues from at the step being walked */
} Sent;

static bool sent_push(Sent *s, int64_t id, float score) {
    if (s->n == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 8;
        int64_t *ni = realloc(s->ids, sizeof *ni * (size_t)cap);
        if (!ni) return false;
        s->ids = ni;
        float *nf = realloc(s->scores, sizeof *nf * (size_t)cap);
        if (!nf) return false;
        s->scores = nf;
        s->cap = cap;
    }
    s->ids[s->n] = id;
    s->scores[s->n++] = score;
    return true;
}

/* The prefix of source s whose rows hold `row` at a step. */
static int64_t prefix_of(const FlBeamStep *st, int64_t s, int64_t row) {
    int64_t lo = st->src_off[s], hi = st->src_off[s + 1];
    while (lo < hi) { /* the last prefix p with pfx_off[p] <= row */
        int64_t mid = lo + (hi - lo) / 2;
        if (st->pfx_off[mid + 1] <= row) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

FlStatus fl_kernel_beam_search_decode(FlErr *e, const FlBeamStep *steps, int64_t nsteps, int64_t beam_size,
                                      int64_t end_id, FlTensor *out_ids, FlTensor *out_scores, FlTensor *out_src,
                                      FlTensor *out_lod) {
    if (nsteps < 1) return fl_err(e, "beam_search_decode: the arrays hold no step");
    if (beam_size < 1)
        return fl_err(e, "beam_search_decode: beam_size must be at least 1, found %lld", (long long)beam_size);
    int64_t nsrc = steps[0].nsrc;
    for (int64_t t = 0; t < nsteps; t++) {
        const FlBeamStep *st = &steps[t];
        if (st->nsrc != nsrc)
            return fl_err(e, "beam_search_decode: step %lld has %lld sources, step 0 has %lld", (long long)t,
                          (long long)st->nsrc, (long long)nsrc);
        int64_t rows = st->pfx_off[st->src_off[nsrc]];
        if (!fl_tensor_has_data(st->ids) || st->ids->dtype != FL_DT_INT64 || fl_tensor_numel(st->ids) != rows ||
            !fl_tensor_has_data(st->scores) || st->scores->dtype != FL_DT_FLOAT32 ||
            fl_tensor_numel(st->scores) != rows)
            return fl_err(e, "beam_search_decode: step %lld: ids %s and scores %s must be int64 and float32 of %lld rows",
                          (long long)t, fl_tensor_shape(st->ids).s, fl_tensor_shape(st->scores).s, (long long)rows);
    }
    Sent *sents = calloc((size_t)(nsrc * beam_size + 1), sizeof *sents);
    int64_t *nsent = calloc((size_t)nsrc + 1, sizeof *nsent);
    FlStatus st = FL_ERROR;
    int64_t total = 0, allsent = 0;
    if (!sents || !nsent) goto oom;
    for (int64_t t = nsteps - 1; t >= 0; t--) {
        const FlBeamStep *sp = &steps[t];
        const int64_t *ids = fl_tensor_data(sp->ids);
        const float *sc = fl_tensor_data(sp->scores);
        for (int64_t s = 0; s < nsrc; s++) {
            Sent *ss = sents + s * beam_size;
            if (nsent[s] == 0) { /* not begun: the source's candidates at this step end its sentences */
                int64_t r0 = sp->pfx_off[sp->src_off[s]], r1 = sp->pfx_off[sp->src_off[s + 1]];
                if (r1 - r0 > beam_size) {
                    fl_err(e, "beam_search_decode: step %lld: source %lld has %lld candidates, more than beam_size %lld",
                           (long long)t, (long long)s, (long long)(r1 - r0), (long long)beam_size);
                    goto done;
                }
                for (int64_t r = r0; r < r1; r++) {
                    Sent *x = &ss[nsent[s]++];
                    if (!sent_push(x, ids[r], sc[r])) goto oom;
                    x->at = prefix_of(sp, s, r);
                }
                continue;
            }
            for (int64_t j = 0; j < nsent[s]; j++) {
                Sent *x = &ss[j];
                int64_t r = x->at;
                if (r < sp->pfx_off[sp->src_off[s]] || r >= sp->pfx_off[sp->src_off[s + 1]]) {
                    fl_err(e, "beam_search_decode: step %lld: row %lld that a sentence of source %lld comes from "
                           "is not one of its rows", (long long)t, (long long)r, (long long)s);
                    goto done;
                }
                if ((ids[r] != end_id || x->n == 0) && !sent_push(x, ids[r], sc[r])) goto oom;
                x->at = prefix_of(sp, s, r);
            }
        }
    }
    for (int64_t s = 0; s < nsrc; s++) {
        Sent *ss = sents + s * beam_size;
        for (int64_t j = 1; j < nsent[s]; j++) { /* best last score first, stable */
            Sent c = ss[j];
            int64_t i = j;
            while (i > 0 && ss[i - 1].scores[0] < c.scores[0]) ss[i] = ss[i - 1], i--;
            ss[i] = c;
        }
        for (int64_t j = 0; j < nsent[s]; j++) total += ss[j].n;
        allsent += nsent[s];
    }
    int64_t ns = nsrc + 1, nl = allsent + 1;
    if (fl_tensor_alloc_uninit(e, out_ids, FL_DT_INT64, 1, &total) ||
        fl_tensor_alloc_uninit(e, out_scores, FL_DT_FLOAT32, 1, &total) ||
        fl_tensor_alloc_uninit(e, out_src, FL_DT_INT64, 1, &ns) || fl_tensor_alloc_uninit(e, out_lod, FL_DT_INT64, 1, &nl))
        goto done;
    int64_t *oid = fl_tensor_data(out_ids), *osrc = fl_tensor_data(out_src), *olod = fl_tensor_data(out_lod);
    float *osc = fl_tensor_data(out_scores);
    int64_t w = 0, k = 0;
    osrc[0] = olod[0] = 0;
    for (int64_t s = 0; s < nsrc; s++) {
        Sent *ss = sents + s * beam_size;
        for (int64_t j = 0; j < nsent[s]; j++) {
            for (int64_t i = ss[j].n - 1; i >= 0; i--, w++) oid[w] = ss[j].ids[i], osc[w] = ss[j].scores[i];
            olod[++k] = w;
        }
        osrc[s + 1] = k;
    }
    st = FL_OK;
    goto done;
oom:
    fl_err(e, "beam_search_decode: out of memory");
done:
    if (sents)
        for (int64_t i = 0; i < nsrc * beam_size; i++) free(sents[i].ids), free(sents[i].scores);
    free(sents);
    free(nsent);
    return st;
}
