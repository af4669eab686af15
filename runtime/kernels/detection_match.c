/* detection_match.c: the selection kernels of Fluid's detection layers (kernels_detection.h):
 * multiclass non-maximum suppression. The order of candidates, the comparisons (a score above
 * the threshold, an overlap at most the threshold), the adaptive threshold and the regrouping
 * after keep_top_k are those of Fluid's operator, so ties resolve as Fluid resolves them: equal
 * scores keep their index order (a stable sort). */
#include "runtime/kernels/detection_impl.h"

/* A candidate: its score, class and box index. */
typedef struct Cand {
    double score;
    int64_t cls, idx;
} Cand;

/* A stable bottom-up merge sort (n can be thousands): by score descending, or with by_class by
 * class ascending. */
static void sort_cands(Cand *a, Cand *tmp, int64_t n, bool by_class) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = (by_class ? a[j].cls < a[i].cls : a[j].score > a[i].score) ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

/* NMS of one class: the candidates of `sc` (M scores) above the threshold, best first (the
 * top_k best when top_k > -1), each kept when it overlaps no kept box by more than the adaptive
 * threshold. Appends the kept ones to out (their count returned). */
static int64_t nms_class(const double *box, const double *sc, int64_t M, int64_t cls, const FlNmsAttrs *a,
                         Cand *cand, Cand *tmp, Cand *out) {
    int64_t n = 0, kept = 0;
    for (int64_t i = 0; i < M; i++)
        if (sc[i] > a->score_threshold) cand[n++] = (Cand){sc[i], cls, i};
    sort_cands(cand, tmp, n, false);
    if (a->nms_top_k > -1 && a->nms_top_k < n) n = a->nms_top_k;
    double th = a->nms_threshold;
    for (int64_t i = 0; i < n; i++) {
        bool keep = true;
        for (int64_t k = 0; k < kept && keep; k++)
            keep = box_iou(box + 4 * cand[i].idx, box + 4 * out[k].idx, a->normalized) <= th;
        if (!keep) continue;
        out[kept++] = cand[i];
        if (a->nms_eta < 1 && th > 0.5) th *= a->nms_eta;
    }
    return kept;
}

FlStatus fl_kernel_multiclass_nms(FlErr *e, const FlTensor *bboxes, const FlTensor *scores, const FlNmsAttrs *a,
                                  FlTensor *out, FlTensor *out_lod) {
    const char *op = "multiclass_nms";
    if (kboxes(e, op, "BBoxes", bboxes) || kneed_float(e, op, "Scores", scores) ||
        ksame_dtype(e, op, "BBoxes", bboxes, "Scores", scores))
        return FL_ERROR;
    if (bboxes->ndim != 3 || scores->ndim != 3 || bboxes->ne[0] != scores->ne[0] || bboxes->ne[1] != scores->ne[2])
        return fl_err(e, "%s: BBoxes %s and Scores %s must be [N, M, 4] and [N, C, M]", op,
                      fl_tensor_shape(bboxes).s, fl_tensor_shape(scores).s);
    int64_t N = scores->ne[0], C = scores->ne[1], M = scores->ne[2];
    FlNmsAttrs at = *a; /* float32 inputs compare with float32 thresholds, as Fluid's float kernel */
    if (scores->dtype == FL_DT_FLOAT32)
        at.score_threshold = (float)at.score_threshold, at.nms_threshold = (float)at.nms_threshold;
    a = &at;
    double *box = NULL, *sc = NULL, *o = NULL, *lod = NULL;
    Cand *cand = NULL, *tmp = NULL, *sel = NULL;
    int64_t nsel = 0; /* rows of o */
    FlStatus st = FL_ERROR;
    /* every image keeps at most C * M boxes */
    size_t per = (size_t)(C * M > 0 ? C * M : 1);
    if (dload(e, op, bboxes, &box) || dload(e, op, scores, &sc) || dscratch(e, op, N + 1, &lod) ||
        dscratch(e, op, N * C * M * 6, &o))
        goto done;
    cand = malloc(per * sizeof *cand), tmp = malloc(per * sizeof *tmp), sel = malloc(per * sizeof *sel);
    if (!cand || !tmp || !sel) {
        fl_err(e, "%s: out of memory for %lld candidates", op, (long long)per);
        goto done;
    }
    lod[0] = 0;
    for (int64_t n = 0; n < N; n++) {
        const double *b = box + n * M * 4;
        int64_t k = 0;
        for (int64_t c = 0; c < C; c++) {
            if (c == a->background_label) continue;
            k += nms_class(b, sc + (n * C + c) * M, M, c, a, cand, tmp, sel + k);
        }
        if (a->keep_top_k > -1 && k > a->keep_top_k) {
            /* the keep_top_k best of the image (ties: the class-then-NMS order), regrouped by class */
            sort_cands(sel, tmp, k, false);
            k = a->keep_top_k;
            sort_cands(sel, tmp, k, true);
        }
        for (int64_t i = 0; i < k; i++) {
            double *r = o + (nsel + i) * 6;
            r[0] = (double)sel[i].cls;
            r[1] = sel[i].score;
            memcpy(r + 2, b + 4 * sel[i].idx, 4 * sizeof *r);
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
    free(box), free(sc), free(o), free(lod), free(cand), free(tmp), free(sel);
    return st;
}
