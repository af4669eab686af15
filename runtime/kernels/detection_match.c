/* detection_match.c: the selection kernels of Fluid's detection layers (kernels_detection.h):
 * multiclass non-maximum suppression, bipartite matching, target assignment and hard negative
 * mining. In the NMS the order of candidates, the comparisons (a score above
 * the threshold, an overlap at most the threshold), the adaptive threshold and the regrouping
 * after keep_top_k are those of Fluid's operator, so ties resolve as Fluid resolves them: equal
 * scores keep their index order (a stable sort). */
#include "runtime/kernels/detection_impl.h"

/* ---- multiclass_nms ---- */

/* Fluid's NMS is a sort and a greedy pass: each candidate, best first, is compared with the boxes
 * kept so far, O(n log n + n k) for n candidates and k kept (quadratic when most boxes survive,
 * as with thousands of small priors). The result only depends on whether some kept box overlaps
 * the candidate by more than the threshold, and with a threshold >= 0 only a kept box whose
 * closed extent meets the candidate's can (box_iou is 0 for boxes apart). So, past
 * NMS_GRID_MIN candidates, the kept boxes are also filed in a uniform grid over the candidates'
 * extent (cells about a mean box wide) and a candidate is compared with those of the cells it
 * covers: the same verdicts, in near-linear time for boxes spread over the image. A box that
 * is inverted or not finite, or covers more than NMS_GRID_SPAN cells, is compared with every
 * candidate (as before), so what box_iou makes of odd boxes is unchanged. */
enum { NMS_GRID_MIN = 128, NMS_GRID_SPAN = 64 };

typedef struct NmsGrid {
    int64_t gx, gy;
    double x0, y0, cw, ch;  /* the grid's origin and cell sides (0: one cell along that axis) */
    int64_t *head;          /* gx * gy: a cell's first entry, -1 */
    int64_t *next, *who;    /* entries: the next of the cell, the kept box (index into out) */
    int64_t used, cap;
    int64_t *always, nalw;  /* kept boxes every candidate is compared with */
    int64_t *stamp;         /* per kept box: 1 + the last candidate compared with it */
} NmsGrid;

static bool nms_plain(const double *b) {
    return isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]) && isfinite(b[3]) && b[2] >= b[0] && b[3] >= b[1];
}

static int64_t nms_cell(double v, double v0, double side, int64_t g) {
    if (!(side > 0)) return 0;
    double c = floor((v - v0) / side);
    return c < 0 ? 0 : c > (double)(g - 1) ? g - 1 : (int64_t)c;
}

static void nms_grid_fini(NmsGrid *g) {
    free(g->head), free(g->next), free(g->who), free(g->always), free(g->stamp);
}

/* Sets up the grid over the n candidates' plain boxes; false when out of memory. */
static bool nms_grid_init(NmsGrid *g, const double *box, const DetItem *cand, int64_t n) {
    *g = (NmsGrid){0};
    double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY, sw = 0, sh = 0;
    int64_t np = 0;
    for (int64_t i = 0; i < n; i++) {
        const double *b = box + 4 * cand[i].idx;
        if (!nms_plain(b)) continue;
        x0 = dmin(x0, b[0]), y0 = dmin(y0, b[1]), x1 = dmax(x1, b[2]), y1 = dmax(y1, b[3]);
        sw += b[2] - b[0], sh += b[3] - b[1], np++;
    }
    double lim = floor(sqrt(4.0 * (double)n)) + 1; /* at most ~4n cells */
    double gx = np && sw > 0 ? dmin(lim, dmax(1, floor((x1 - x0) / (sw / (double)np)))) : 1;
    double gy = np && sh > 0 ? dmin(lim, dmax(1, floor((y1 - y0) / (sh / (double)np)))) : 1;
    if (!isfinite(gx) || !isfinite(gy)) gx = gy = 1;
    g->gx = (int64_t)gx, g->gy = (int64_t)gy, g->x0 = x0, g->y0 = y0;
    g->cw = g->gx > 1 ? (x1 - x0) / gx : 0, g->ch = g->gy > 1 ? (y1 - y0) / gy : 0;
    g->cap = 4 * n + 16;
    g->head = malloc((size_t)(g->gx * g->gy) * sizeof *g->head);
    g->next = malloc((size_t)g->cap * sizeof *g->next), g->who = malloc((size_t)g->cap * sizeof *g->who);
    g->always = malloc((size_t)n * sizeof *g->always), g->stamp = calloc((size_t)n, sizeof *g->stamp);
    if (!g->head || !g->next || !g->who || !g->always || !g->stamp) return false;
    for (int64_t c = 0; c < g->gx * g->gy; c++) g->head[c] = -1;
    return true;
}

/* Files kept box k (box b); false when out of memory. */
static bool nms_grid_add(NmsGrid *g, const double *b, int64_t k) {
    int64_t cx0 = 0, cx1 = 0, cy0 = 0, cy1 = 0;
    if (nms_plain(b)) {
        cx0 = nms_cell(b[0], g->x0, g->cw, g->gx), cx1 = nms_cell(b[2], g->x0, g->cw, g->gx);
        cy0 = nms_cell(b[1], g->y0, g->ch, g->gy), cy1 = nms_cell(b[3], g->y0, g->ch, g->gy);
    }
    if (!nms_plain(b) || (cx1 - cx0 + 1) * (cy1 - cy0 + 1) > NMS_GRID_SPAN) {
        g->always[g->nalw++] = k;
        return true;
    }
    int64_t need = g->used + (cx1 - cx0 + 1) * (cy1 - cy0 + 1);
    if (need > g->cap) {
        int64_t cap = 2 * need;
        int64_t *nx = realloc(g->next, (size_t)cap * sizeof *nx);
        if (nx) g->next = nx;
        int64_t *wh = nx ? realloc(g->who, (size_t)cap * sizeof *wh) : NULL;
        if (!wh) return false;
        g->who = wh, g->cap = cap;
    }
    for (int64_t cy = cy0; cy <= cy1; cy++)
        for (int64_t cx = cx0; cx <= cx1; cx++) {
            int64_t c = cy * g->gx + cx;
            g->next[g->used] = g->head[c], g->who[g->used] = k, g->head[c] = g->used++;
        }
    return true;
}

/* Whether some kept box overlaps a (candidate i) by more than th. */
static bool nms_grid_hit(NmsGrid *g, const double *box, const DetItem *out, const double *a, int64_t i, double th,
                         bool normalized) {
    for (int64_t j = 0; j < g->nalw; j++)
        if (box_iou(a, box + 4 * out[g->always[j]].idx, normalized) > th) return true;
    int64_t cx0 = nms_cell(a[0], g->x0, g->cw, g->gx), cx1 = nms_cell(a[2], g->x0, g->cw, g->gx);
    int64_t cy0 = nms_cell(a[1], g->y0, g->ch, g->gy), cy1 = nms_cell(a[3], g->y0, g->ch, g->gy);
    for (int64_t cy = cy0; cy <= cy1; cy++)
        for (int64_t cx = cx0; cx <= cx1; cx++)
            for (int64_t en = g->head[cy * g->gx + cx]; en >= 0; en = g->next[en]) {
                int64_t k = g->who[en];
                if (g->stamp[k] == i + 1) continue;
                g->stamp[k] = i + 1;
                if (box_iou(a, box + 4 * out[k].idx, normalized) > th) return true;
            }
    return false;
}

/* NMS of one class: the candidates of `sc` (M scores) above the threshold sth, best first (the
 * top_k best when top_k > -1), each kept when it overlaps no kept box by more than the adaptive
 * threshold (nth at first). Appends the kept ones to out and returns their count (-1: out of
 * memory for the grid). The thresholds come as values (the attributes rounded to the inputs'
 * precision). */
static int64_t nms_class(const double *box, const double *sc, int64_t M, int64_t cls, const FlNmsAttrs *a,
                         double sth, double nth, DetItem *cand, DetItem *tmp, DetItem *out) {
    int64_t n = 0, kept = 0;
    for (int64_t i = 0; i < M; i++)
        if (sc[i] > sth) cand[n++] = (DetItem){sc[i], cls, i, 0, 0};
    det_sort(cand, tmp, n, false);
    if (a->nms_top_k > -1 && a->nms_top_k < n) n = a->nms_top_k;
    double th = nth;
    NmsGrid g = {0};
    bool grid = n >= NMS_GRID_MIN && th >= 0; /* th only shrinks toward 0 (nms_eta in (0, 1]) */
    if (grid && !nms_grid_init(&g, box, cand, n)) {
        nms_grid_fini(&g);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        const double *b = box + 4 * cand[i].idx;
        bool keep = true;
        if (grid && nms_plain(b)) {
            keep = !nms_grid_hit(&g, box, out, b, i, th, a->normalized);
        } else {
            for (int64_t k = 0; k < kept && keep; k++) keep = box_iou(b, box + 4 * out[k].idx, a->normalized) <= th;
        }
        if (!keep) continue;
        if (grid && !nms_grid_add(&g, b, kept)) {
            nms_grid_fini(&g);
            return -1;
        }
        out[kept++] = cand[i];
        if (a->nms_eta < 1 && th > 0.5) th *= a->nms_eta;
    }
    if (grid) nms_grid_fini(&g);
    return kept;
}

/* Items of one class by row ascending (the LoD form's order; rows are distinct in a class). */
static int by_row(const void *pa, const void *pb) {
    const DetItem *a = pa, *b = pb;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* The shapes of the two forms: BBoxes [N, M, 4] with Scores [N, C, M], or (off set) BBoxes
 * [M, C, 4] with Scores [M, C] and off cutting the M rows into nseq images. */
static FlStatus nms_shapes(FlErr *e, const char *op, const FlTensor *bboxes, const FlTensor *scores,
                           const int64_t *off, int64_t nseq) {
    if (kboxes(e, op, "BBoxes", bboxes) || kneed_float(e, op, "Scores", scores) ||
        ksame_dtype(e, op, "BBoxes", bboxes, "Scores", scores))
        return FL_ERROR;
    if (!off) {
        if (bboxes->ndim != 3 || scores->ndim != 3 || bboxes->ne[0] != scores->ne[0] ||
            bboxes->ne[1] != scores->ne[2])
            return fl_err(e, "%s: BBoxes %s and Scores %s must be [N, M, 4] and [N, C, M]", op,
                          fl_tensor_shape(bboxes).s, fl_tensor_shape(scores).s);
        return FL_OK;
    }
    if (bboxes->ndim != 3 || scores->ndim != 2 || bboxes->ne[0] != scores->ne[0] || bboxes->ne[1] != scores->ne[1])
        return fl_err(e, "%s: BBoxes %s and Scores %s must be [M, C, 4] and [M, C] in the LoD form", op,
                      fl_tensor_shape(bboxes).s, fl_tensor_shape(scores).s);
    return koffsets(e, op, "BBoxes", off, nseq, bboxes->ne[0]);
}

FlStatus fl_kernel_multiclass_nms(FlErr *e, const FlTensor *bboxes, const FlTensor *scores, const int64_t *off,
                                  int64_t nseq, const FlNmsAttrs *a, FlTensor *out, FlTensor *out_lod) {
    const char *op = "multiclass_nms";
    if (nms_shapes(e, op, bboxes, scores, off, nseq)) return FL_ERROR;
    bool lod_form = off != NULL;
    /* N images of at most M rows each, C classes */
    int64_t N = lod_form ? nseq : scores->ne[0], C = scores->ne[1], M = lod_form ? 0 : scores->ne[2];
    if (lod_form)
        for (int64_t n = 0; n < N; n++) M = off[n + 1] - off[n] > M ? off[n + 1] - off[n] : M;
    int64_t rows = lod_form ? scores->ne[0] : N * M; /* the batch's boxes of one class */
    /* float32 inputs compare with float32 thresholds, as Fluid's float kernel */
    bool f32 = scores->dtype == FL_DT_FLOAT32;
    double sth = f32 ? (double)(float)a->score_threshold : a->score_threshold;
    double nth = f32 ? (double)(float)a->nms_threshold : a->nms_threshold;
    double *box = NULL, *sc = NULL, *o = NULL, *lod = NULL, *cbox = NULL, *csc = NULL;
    DetItem *cand = NULL, *tmp = NULL, *sel = NULL;
    int64_t nsel = 0; /* rows of o */
    FlStatus st = FL_ERROR;
    /* every image keeps at most C * M boxes */
    size_t per = (size_t)(C * M > 0 ? C * M : 1);
    if (dload(e, op, bboxes, &box) || dload(e, op, scores, &sc) || dscratch(e, op, N + 1, &lod) ||
        dscratch(e, op, rows * C * 6, &o) || (lod_form && (dscratch(e, op, M * 4, &cbox) || dscratch(e, op, M, &csc))))
        goto done;
    cand = malloc(per * sizeof *cand), tmp = malloc(per * sizeof *tmp), sel = malloc(per * sizeof *sel);
    if (!cand || !tmp || !sel) {
        fl_err(e, "%s: out of memory for %lld candidates", op, (long long)per);
        goto done;
    }
    lod[0] = 0;
    for (int64_t n = 0; n < N; n++) {
        int64_t r0 = lod_form ? off[n] : 0, m = lod_form ? off[n + 1] - off[n] : M, k = 0;
        const double *b = lod_form ? box + r0 * C * 4 : box + n * M * 4;
        for (int64_t c = 0; c < C; c++) {
            if (c == a->background_label) continue;
            int64_t kc;
            if (!lod_form) {
                kc = nms_class(b, sc + (n * C + c) * M, M, c, a, sth, nth, cand, tmp, sel + k);
            } else { /* the class's column of scores and its boxes, then its kept rows in row order */
                for (int64_t i = 0; i < m; i++) {
                    csc[i] = sc[(r0 + i) * C + c];
                    memcpy(cbox + 4 * i, b + (i * C + c) * 4, 4 * sizeof *cbox);
                }
                kc = nms_class(cbox, csc, m, c, a, sth, nth, cand, tmp, sel + k);
                if (kc > 0) qsort(sel + k, (size_t)kc, sizeof *sel, by_row);
            }
            if (kc < 0) {
                fl_err(e, "%s: out of memory for the NMS grid of %lld candidates", op, (long long)m);
                goto done;
            }
            k += kc;
        }
        if (a->keep_top_k > -1 && k > a->keep_top_k) {
            /* the keep_top_k best of the image (ties: the class-then-NMS order), regrouped by class */
            det_sort(sel, tmp, k, false);
            k = a->keep_top_k;
            det_sort(sel, tmp, k, true);
            for (int64_t i = 0, j; lod_form && i < k; i = j) { /* each class's rows in row order */
                for (j = i; j < k && sel[j].cls == sel[i].cls; j++) {}
                qsort(sel + i, (size_t)(j - i), sizeof *sel, by_row);
            }
        }
        for (int64_t i = 0; i < k; i++) {
            double *r = o + (nsel + i) * 6;
            r[0] = (double)sel[i].cls;
            r[1] = sel[i].score;
            memcpy(r + 2, lod_form ? b + (sel[i].idx * C + sel[i].cls) * 4 : b + 4 * sel[i].idx, 4 * sizeof *r);
        }
        nsel += k;
        lod[n + 1] = (double)nsel;
    }
    FlTensor t = FL_TENSOR_INIT, l = FL_TENSOR_INIT;
    if (nsel == 0) { /* Fluid's empty result: one value -1, one sequence */
        o[0] = -1;
        lod[1] = 1;
        if (dnew(e, op, &t, scores->dtype, 2, (int64_t[]){1, 1}, o) ||
            dnew(e, op, &l, FL_DT_INT64, 1, (int64_t[]){2}, lod)) {
            fl_tensor_fini(&t);
            goto done;
        }
    } else if (dnew(e, op, &t, scores->dtype, 2, (int64_t[]){nsel, 6}, o) ||
               dnew(e, op, &l, FL_DT_INT64, 1, (int64_t[]){N + 1}, lod)) {
        fl_tensor_fini(&t);
        goto done;
    }
    kout(out, &t);
    kout(out_lod, &l);
    st = FL_OK;
done:
    free(box), free(sc), free(o), free(lod), free(cbox), free(csc), free(cand), free(tmp), free(sel);
    return st;
}

/* ---- bipartite_match ---- */

/* One image: rows [r0, r1) of dist (M columns) matched to columns. idx / md: M each, set. */
static void match_image(const double *dist, int64_t r0, int64_t r1, int64_t M, bool per_prediction,
                        double threshold, int32_t *idx, double *md, bool *row_used) {
    const double eps = 1e-6;
    for (int64_t j = 0; j < M; j++) idx[j] = -1, md[j] = 0;
    for (int64_t i = r0; i < r1; i++) row_used[i - r0] = false;
    /* greedy: the largest distance among free rows and columns, the first (column, then row) on ties */
    for (int64_t round = r0; round < r1; round++) {
        int64_t bj = -1, bi = -1;
        double best = -1;
        for (int64_t j = 0; j < M; j++) {
            if (idx[j] != -1) continue;
            for (int64_t i = r0; i < r1; i++) {
                double d = dist[i * M + j];
                if (row_used[i - r0] || d < eps) continue;
                if (d > best) bj = j, bi = i, best = d;
            }
        }
        if (bj < 0) break;
        idx[bj] = (int32_t)(bi - r0), md[bj] = best, row_used[bi - r0] = true;
    }
    if (!per_prediction) return;
    for (int64_t j = 0; j < M; j++) {
        if (idx[j] != -1) continue;
        int64_t bi = -1;
        double best = -1;
        for (int64_t i = r0; i < r1; i++) {
            double d = dist[i * M + j];
            if (d < eps) continue;
            if (d >= threshold && d > best) bi = i, best = d;
        }
        if (bi >= 0) idx[j] = (int32_t)(bi - r0), md[j] = best;
    }
}

FlStatus fl_kernel_bipartite_match(FlErr *e, const FlTensor *dist, const int64_t *off, int64_t nseq,
                                   bool per_prediction, double threshold, FlTensor *indices, FlTensor *out_dist) {
    const char *op = "bipartite_match";
    if (kneed_float(e, op, "DistMat", dist)) return FL_ERROR;
    if (dist->ndim != 2) return fl_err(e, "%s: DistMat %s must be [K, M]", op, fl_tensor_shape(dist).s);
    int64_t K = dist->ne[0], M = dist->ne[1], whole[2] = {0, K};
    if (!off) off = whole, nseq = 1;
    if (koffsets(e, op, "DistMat", off, nseq, K)) return FL_ERROR;
    if (dist->dtype == FL_DT_FLOAT32) threshold = (float)threshold;
    double *d = NULL, *md = NULL;
    bool *used = NULL;
    FlTensor ti = FL_TENSOR_INIT, td = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    int64_t ne[2] = {nseq, M};
    if (dload(e, op, dist, &d) || dscratch(e, op, nseq * M, &md) || kalloc_raw(e, op, &ti, FL_DT_INT32, 2, ne))
        goto done;
    used = malloc((size_t)(K > 0 ? K : 1));
    if (!used) {
        fl_err(e, "%s: out of memory for %lld rows", op, (long long)K);
        goto done;
    }
    int32_t *idx = fl_tensor_data(&ti);
    for (int64_t n = 0; n < nseq; n++)
        match_image(d, off[n], off[n + 1], M, per_prediction, threshold, idx + n * M, md + n * M, used);
    if (dnew(e, op, &td, dist->dtype, 2, ne, md)) goto done;
    kout(indices, &ti);
    kout(out_dist, &td);
    st = FL_OK;
done:
    if (st) fl_tensor_fini(&ti);
    free(d), free(md), free(used);
    return st;
}

/* ---- target_assign ---- */

FlStatus fl_kernel_target_assign(FlErr *e, const FlTensor *x, const int64_t *off, int64_t nseq,
                                  const FlTensor *match, const FlTensor *neg, const int64_t *neg_off, int64_t neg_nseq,
                                  int64_t mismatch, FlTensor *out, FlTensor *out_weight) {
    const char *op = "target_assign";
    if (khas(e, op, "X", x) || kneed_int(e, op, "MatchIndices", match)) return FL_ERROR;
    if (x->ndim != 3 || match->ndim != 2)
        return fl_err(e, "%s: X %s and MatchIndices %s must be [rows, P, K] and [N, M]", op, fl_tensor_shape(x).s,
                      fl_tensor_shape(match).s);
    int64_t N = match->ne[0], M = match->ne[1], P = x->ne[1], K = x->ne[2], rows = x->ne[0];
    if (koffsets(e, op, "X", off, nseq, rows)) return FL_ERROR;
    if (nseq != N)
        return fl_err(e, "%s: X holds %lld images (sequences) but MatchIndices %s has %lld rows", op,
                      (long long)nseq, fl_tensor_shape(match).s, (long long)N);
    if (P < 1 && N * M > 0) return fl_err(e, "%s: X %s has no column", op, fl_tensor_shape(x).s);
    double *xd = NULL, *o = NULL, *w = NULL;
    FlTensor to = FL_TENSOR_INIT, tw = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (dload(e, op, x, &xd) || dscratch(e, op, N * M * K, &o) || dscratch(e, op, N * M, &w)) goto done;
    for (int64_t n = 0; n < N; n++)
        for (int64_t j = 0; j < M; j++) {
            int64_t id = iget(match, n * M + j), i = n * M + j;
            if (id > -1) {
                if (id >= off[n + 1] - off[n]) {
                    fl_err(e, "%s: MatchIndices[%lld, %lld] = %lld but image %lld has %lld rows in X", op,
                           (long long)n, (long long)j, (long long)id, (long long)n, (long long)(off[n + 1] - off[n]));
                    goto done;
                }
                memcpy(o + i * K, xd + ((off[n] + id) * P + j % P) * K, (size_t)K * sizeof *o);
                w[i] = 1;
            } else {
                for (int64_t k = 0; k < K; k++) o[i * K + k] = (double)mismatch;
                w[i] = 0;
            }
        }
    if (neg) {
        if (kneed_int(e, op, "NegIndices", neg) || koffsets(e, op, "NegIndices", neg_off, neg_nseq, neg->ne[0]))
            goto done;
        if (neg_nseq != N) {
            fl_err(e, "%s: NegIndices holds %lld images (sequences) but MatchIndices has %lld rows", op,
                   (long long)neg_nseq, (long long)N);
            goto done;
        }
        for (int64_t n = 0; n < N; n++)
            for (int64_t r = neg_off[n]; r < neg_off[n + 1]; r++) {
                int64_t id = iget(neg, r);
                if (id < 0 || id >= M) {
                    fl_err(e, "%s: NegIndices row %lld = %lld is not a column of [0, %lld)", op, (long long)r,
                           (long long)id, (long long)M);
                    goto done;
                }
                for (int64_t k = 0; k < K; k++) o[(n * M + id) * K + k] = (double)mismatch;
                w[n * M + id] = 1;
            }
    }
    if (dnew(e, op, &to, x->dtype, 3, (int64_t[]){N, M, K}, o) ||
        dnew(e, op, &tw, FL_DT_FLOAT32, 3, (int64_t[]){N, M, 1}, w))
        goto done;
    kout(out, &to);
    kout(out_weight, &tw);
    st = FL_OK;
done:
    if (st) fl_tensor_fini(&to);
    free(xd), free(o), free(w);
    return st;
}

/* ---- mine_hard_examples ---- */

FlStatus fl_kernel_mine_hard_examples(FlErr *e, const FlTensor *cls_loss, const FlTensor *match, const FlTensor *dist,
                                      double neg_pos_ratio, double neg_dist_threshold, FlTensor *neg,
                                      FlTensor *neg_off, FlTensor *updated) {
    const char *op = "mine_hard_examples";
    if (kneed_float(e, op, "ClsLoss", cls_loss) || kneed_int(e, op, "MatchIndices", match) ||
        kneed_float(e, op, "MatchDist", dist))
        return FL_ERROR;
    if (cls_loss->ndim != 2 || !fl_tensor_same_shape(cls_loss, match) || !fl_tensor_same_shape(cls_loss, dist))
        return fl_err(e, "%s: ClsLoss %s, MatchIndices %s and MatchDist %s must all be [N, P]", op,
                      fl_tensor_shape(cls_loss).s, fl_tensor_shape(match).s, fl_tensor_shape(dist).s);
    int64_t N = cls_loss->ne[0], P = cls_loss->ne[1];
    if (dist->dtype == FL_DT_FLOAT32) neg_dist_threshold = (float)neg_dist_threshold;
    double *loss = NULL, *md = NULL, *sel = NULL, *off = NULL;
    DetItem *cand = NULL, *tmp = NULL;
    bool *pick = NULL;
    FlTensor tn = FL_TENSOR_INIT, to = FL_TENSOR_INIT, tu = FL_TENSOR_INIT;
    FlStatus st = FL_ERROR;
    if (dload(e, op, cls_loss, &loss) || dload(e, op, dist, &md) || dscratch(e, op, N * P, &sel) ||
        dscratch(e, op, N + 1, &off))
        goto done;
    cand = malloc((size_t)(P > 0 ? P : 1) * sizeof *cand), tmp = malloc((size_t)(P > 0 ? P : 1) * sizeof *tmp);
    pick = malloc((size_t)(P > 0 ? P : 1));
    if (!cand || !tmp || !pick) {
        fl_err(e, "%s: out of memory for %lld priors", op, (long long)P);
        goto done;
    }
    int64_t nsel = 0;
    off[0] = 0;
    for (int64_t n = 0; n < N; n++) {
        int64_t nc = 0, npos = 0;
        for (int64_t p = 0; p < P; p++) {
            int64_t id = iget(match, n * P + p);
            if (id != -1) npos++;
            else if (md[n * P + p] < neg_dist_threshold) cand[nc++] = (DetItem){loss[n * P + p], 0, p, 0, 0};
        }
        int64_t k = (int64_t)((double)npos * neg_pos_ratio);
        if (k > nc) k = nc;
        det_sort(cand, tmp, nc, false);
        memset(pick, 0, (size_t)(P > 0 ? P : 1));
        for (int64_t i = 0; i < k; i++) pick[cand[i].idx] = true;
        for (int64_t p = 0; p < P; p++)
            if (pick[p]) sel[nsel++] = (double)p;
        off[n + 1] = (double)nsel;
    }
    if (dnew(e, op, &tn, FL_DT_INT32, 2, (int64_t[]){nsel, 1}, sel) ||
        dnew(e, op, &to, FL_DT_INT64, 1, (int64_t[]){N + 1}, off) || kalloc_raw_like(e, op, &tu, match))
        goto done;
    memcpy(fl_tensor_data(&tu), fl_tensor_data(match), (size_t)fl_tensor_numel(match) * fl_dtype_size(match->dtype));
    kout(neg, &tn);
    kout(neg_off, &to);
    kout(updated, &tu);
    st = FL_OK;
done:
    if (st) fl_tensor_fini(&tn), fl_tensor_fini(&to), fl_tensor_fini(&tu);
    free(loss), free(md), free(sel), free(off), free(cand), free(tmp), free(pick);
    return st;
}
