/* detection_map.c: the mean average precision of Fluid's detection_map operator
 * (kernels_detection.h): per image and class the detections, best first, taken as true or false
 * positives against the ground truth, then per class the precision-recall curve and its area.
 * Orders, comparisons and the quirks of Fluid's operator (a class skipped when its positive count
 * equals background_label; the 11-point loop's early stop) are kept, so the number is Fluid's.
 * With the accumulated state, each class's verdicts are the earlier batches' (rows score, flag of
 * TruePos and FalsePos) followed by this batch's, and the state after the batch is written out. */
#include "runtime/kernels/detection_impl.h"

/* A detection's verdict is a DetItem (idx: its row of DetectRes; tp / fp: true or false
 * positive, or neither for the match of a difficult box left out). */

/* The average precision of one class's verdicts v (n, sorted best first) with npos positives. */
static double class_ap(const DetItem *v, int64_t n, int64_t npos, bool ap_11point, double *prec, double *rec) {
    int64_t tp = 0, fp = 0;
    for (int64_t i = 0; i < n; i++) {
        tp += v[i].tp, fp += v[i].fp;
        prec[i] = (double)tp / (double)(tp + fp);
        rec[i] = (double)tp / (double)npos;
    }
    if (!ap_11point) {
        double ap = 0, prev = 0;
        for (int64_t i = 0; i < n; i++) {
            if (fabs(rec[i] - prev) > 1e-6) ap += prec[i] * fabs(rec[i] - prev);
            prev = rec[i];
        }
        return ap;
    }
    double maxp[11] = {0};
    int64_t start = n - 1;
    for (int j = 10; j >= 0; j--)
        for (int64_t i = start; i >= 0; i--) {
            if (rec[i] < j / 10.) {
                start = i;
                if (j > 0) maxp[j - 1] = maxp[j];
                break;
            }
            if (maxp[j] < prec[i]) maxp[j] = prec[i];
        }
    double ap = 0;
    for (int j = 10; j >= 0; j--) ap += maxp[j] / 11;
    return ap;
}

/* The state `in` checked against class_num and DetectRes's dtype; its verdict rows counted in *nrows. */
static FlStatus check_state(FlErr *e, const char *op, const FlDetMapState *in, int64_t class_num, FlDType dt,
                            int64_t *nrows) {
    const FlTensor *pc = in->pos_count, *tp = in->true_pos, *fp = in->false_pos;
    if (khas(e, op, "PosCount", pc) || khas(e, op, "TruePos", tp) || khas(e, op, "FalsePos", fp)) return FL_ERROR;
    if (pc->dtype != FL_DT_INT32 || fl_tensor_numel(pc) != class_num)
        return fl_err(e, "%s: PosCount %s %s must be int32 [class_num %lld, 1]", op, fl_tensor_shape(pc).s,
                      fl_dtype_name(pc->dtype), (long long)class_num);
    for (int64_t c = 0; c < class_num; c++)
        if (((const int32_t *)fl_tensor_data(pc))[c] < 0)
            return fl_err(e, "%s: PosCount of class %lld is %d, a count below 0", op, (long long)c,
                          (int)((const int32_t *)fl_tensor_data(pc))[c]);
    const FlTensor *st[2] = {tp, fp};
    const char *names[2] = {"TruePos", "FalsePos"};
    for (int k = 0; k < 2; k++)
        if (st[k]->dtype != dt || st[k]->ndim != 2 || st[k]->ne[1] != 2)
            return fl_err(e, "%s: %s %s %s must be [n, 2] (score, flag) of DetectRes's dtype %s", op, names[k],
                          fl_tensor_shape(st[k]).s, fl_dtype_name(st[k]->dtype), fl_dtype_name(dt));
    if (!in->true_off || !in->false_off || in->true_nseq != class_num || in->false_nseq != class_num)
        return fl_err(e, "%s: the offsets of TruePos and FalsePos must cut them into class_num %lld classes, found %lld "
                         "and %lld", op, (long long)class_num, (long long)in->true_nseq, (long long)in->false_nseq);
    for (int64_t c = 0; c <= class_num; c++)
        if (in->true_off[c] != in->false_off[c])
            return fl_err(e, "%s: TruePos and FalsePos must hold the same rows of each class (one verdict each), but "
                             "class %lld starts at row %lld of one and %lld of the other", op,
                          (long long)(c < class_num ? c : class_num - 1), (long long)in->true_off[c],
                          (long long)in->false_off[c]);
    *nrows = tp->ne[0];
    return FL_OK;
}

/* The state after the batch: PosCount npos, and the verdicts a (n, grouped by class in
 * order, offsets off) as TruePos / FalsePos rows (score, flag). */
static FlStatus write_state(FlErr *e, const char *op, const FlDetMapAccum *out, FlDType dt, int64_t class_num,
                            const int64_t *npos, const DetItem *a, int64_t n, const int64_t *off) {
    FlTensor t = FL_TENSOR_INIT;
    if (out->pos_count) {
        if (kalloc_raw(e, op, &t, FL_DT_INT32, 2, (int64_t[]){class_num, 1})) return FL_ERROR;
        int32_t *p = fl_tensor_data(&t);
        for (int64_t c = 0; c < class_num; c++) p[c] = (int32_t)npos[c];
        kout(out->pos_count, &t);
    }
    FlTensor *rows[2] = {out->true_pos, out->false_pos}, *offs[2] = {out->true_off, out->false_off};
    double *d = NULL;
    if (dscratch(e, op, 2 * n, &d)) return FL_ERROR;
    for (int k = 0; k < 2; k++) {
        if (rows[k]) {
            for (int64_t i = 0; i < n; i++) d[2 * i] = a[i].score, d[2 * i + 1] = k ? a[i].fp : a[i].tp;
            if (dnew(e, op, &t, dt, 2, (int64_t[]){n, 2}, d)) {
                free(d);
                return FL_ERROR;
            }
            kout(rows[k], &t);
        }
        if (offs[k]) {
            if (kalloc_raw(e, op, &t, FL_DT_INT64, 1, (int64_t[]){class_num + 1})) {
                free(d);
                return FL_ERROR;
            }
            memcpy(fl_tensor_data(&t), off, (size_t)(class_num + 1) * sizeof *off);
            kout(offs[k], &t);
        }
    }
    free(d);
    return FL_OK;
}

FlStatus fl_kernel_detection_map(FlErr *e, const FlTensor *det, const int64_t *det_off, int64_t det_nseq,
                                 const FlTensor *label, const int64_t *gt_off, int64_t gt_nseq, int64_t class_num,
                                 int64_t background_label, double overlap_threshold, bool evaluate_difficult,
                                 bool ap_11point, const FlDetMapState *in, const FlDetMapAccum *out, FlTensor *map) {
    const char *op = "detection_map";
    if (kneed_float(e, op, "DetectRes", det) || kneed_float(e, op, "Label", label) ||
        ksame_dtype(e, op, "DetectRes", det, "Label", label))
        return FL_ERROR;
    bool none = det->ndim == 2 && det->ne[0] == 1 && det->ne[1] == 1; /* multiclass_nms's [[-1]] */
    if (det->ndim != 2 || (!none && det->ne[1] != 6) || label->ndim != 2 || (label->ne[1] != 6 && label->ne[1] != 5))
        return fl_err(e, "%s: DetectRes %s and Label %s must be [M, 6] and [G, 6] or [G, 5]", op, fl_tensor_shape(det).s,
                      fl_tensor_shape(label).s);
    if (koffsets(e, op, "Label", gt_off, gt_nseq, label->ne[0]) ||
        koffsets(e, op, "DetectRes", det_off, det_nseq, det->ne[0]))
        return FL_ERROR;
    if (!none && det_nseq != gt_nseq)
        return fl_err(e, "%s: DetectRes holds %lld images but Label %lld", op, (long long)det_nseq, (long long)gt_nseq);
    int64_t S = 0; /* the state's verdicts */
    if (in && check_state(e, op, in, class_num, det->dtype, &S)) return FL_ERROR;
    if (label->dtype == FL_DT_FLOAT32) overlap_threshold = (float)overlap_threshold;
    int64_t M = none ? 0 : det->ne[0], G = label->ne[0], W = label->ne[1];
    double *d = NULL, *g = NULL, *prec = NULL, *rec = NULL, *sd[2] = {NULL, NULL};
    DetItem *v = NULL, *tmp = NULL, *cv = NULL, *all = NULL;
    int64_t *npos = NULL, *rows = NULL, *aoff = NULL;
    bool *taken = NULL;
    FlStatus st = FL_ERROR;
    size_t nm = (size_t)(M > 0 ? M : 1), ng = (size_t)(G > 0 ? G : 1), na = (size_t)(M + S > 0 ? M + S : 1);
    if (dload(e, op, det, &d) || dload(e, op, label, &g) || dscratch(e, op, M + S, &prec) ||
        dscratch(e, op, M + S, &rec) || (in && (dload(e, op, in->true_pos, &sd[0]) || dload(e, op, in->false_pos, &sd[1]))))
        goto done;
    v = malloc(nm * sizeof *v), tmp = malloc(na * sizeof *tmp), cv = malloc(na * sizeof *cv);
    all = malloc(na * sizeof *all), rows = malloc(nm * sizeof *rows), aoff = malloc((size_t)(class_num + 1) * sizeof *aoff);
    npos = calloc((size_t)class_num, sizeof *npos), taken = malloc(ng);
    if (!v || !tmp || !cv || !all || !rows || !aoff || !npos || !taken) {
        fl_err(e, "%s: out of memory for %lld detections", op, (long long)(M + S));
        goto done;
    }
    if (in) {
        const int32_t *pc = fl_tensor_data(in->pos_count);
        for (int64_t c = 0; c < class_num; c++) npos[c] = pc[c];
    }
    /* the positives of each class (difficult ones only with evaluate_difficult) */
    for (int64_t i = 0; i < G; i++) {
        int64_t c = (int64_t)g[i * W];
        if (c < 0 || c >= class_num) {
            fl_err(e, "%s: Label row %lld has class %lld, not in [0, class_num %lld)", op, (long long)i, (long long)c,
                   (long long)class_num);
            goto done;
        }
        if (evaluate_difficult || W == 5 || fabs(g[i * W + 1]) < 1e-6) npos[c]++;
    }
    int64_t nv = 0;
    for (int64_t n = 0; n < (none ? 0 : gt_nseq); n++) {
        int64_t g0 = gt_off[n], g1 = gt_off[n + 1];
        for (int64_t c = 0; c < class_num; c++) {
            int64_t k = 0, ngt = 0;
            for (int64_t r = det_off[n]; r < det_off[n + 1]; r++)
                if ((int64_t)d[r * 6] == c) rows[k++] = r;
            if (k == 0) continue;
            for (int64_t i = g0; i < g1; i++) ngt += (int64_t)g[i * W] == c;
            DetItem *iv = v + nv;
            for (int64_t i = 0; i < k; i++) iv[i] = (DetItem){d[rows[i] * 6 + 1], c, rows[i], 0, 1};
            if (ngt > 0) {
                /* best first; each takes its best-overlapping box of the class if not taken */
                det_sort(iv, tmp, k, false);
                memset(taken, 0, ng);
                for (int64_t i = 0; i < k; i++) {
                    const double *b = d + iv[i].idx * 6 + 2;
                    double pb[4] = {dmax(dmin(b[0], 1), 0), dmax(dmin(b[1], 1), 0), dmax(dmin(b[2], 1), 0),
                                    dmax(dmin(b[3], 1), 0)};
                    double best = -1;
                    int64_t bj = -1;
                    for (int64_t j = g0; j < g1; j++) {
                        if ((int64_t)g[j * W] != c) continue;
                        double ov = box_iou(pb, g + j * W + (W - 4), true);
                        if (ov > best) best = ov, bj = j;
                    }
                    iv[i].tp = 0, iv[i].fp = 1;
                    if (best > overlap_threshold) {
                        bool difficult = W == 6 && fabs(g[bj * W + 1]) >= 1e-6;
                        if (evaluate_difficult || !difficult) {
                            if (!taken[bj - g0]) iv[i].tp = 1, iv[i].fp = 0, taken[bj - g0] = true;
                        } else {
                            iv[i].fp = 0; /* a difficult box's match: neither */
                        }
                    }
                }
            }
            nv += k;
        }
    }
    /* per class, the state's verdicts then this batch's (a difficult box's match is none) */
    int64_t nall = 0;
    for (int64_t c = 0; c < class_num; c++) {
        aoff[c] = nall;
        for (int64_t r = in ? in->true_off[c] : 0; in && r < in->true_off[c + 1]; r++)
            all[nall++] = (DetItem){sd[0][2 * r], c, -1, (int)sd[0][2 * r + 1], (int)sd[1][2 * r + 1]};
        for (int64_t i = 0; i < nv; i++)
            if (v[i].cls == c && (v[i].tp || v[i].fp)) all[nall++] = v[i];
    }
    aoff[class_num] = nall;
    /* per class with positives (every class with the state), the AP of its verdicts in order of
     * score (ties: as listed) */
    double sum = 0;
    int64_t count = 0;
    for (int64_t c = 0; c < class_num; c++) {
        if ((!in && npos[c] == 0) || npos[c] == background_label) continue;
        int64_t k = aoff[c + 1] - aoff[c];
        count++;
        if (k == 0 || npos[c] == 0) continue; /* no verdict, or no positive: an AP of 0 */
        memcpy(cv, all + aoff[c], (size_t)k * sizeof *cv);
        det_sort(cv, tmp, k, false);
        sum += class_ap(cv, k, npos[c], ap_11point, prec, rec);
    }
    double m = count ? sum / (double)count : 0;
    FlTensor t = FL_TENSOR_INIT;
    if (dnew(e, op, &t, det->dtype, 1, (int64_t[]){1}, &m)) goto done;
    kout(map, &t);
    if (out && write_state(e, op, out, det->dtype, class_num, npos, all, nall, aoff)) goto done;
    st = FL_OK;
done:
    free(d), free(g), free(prec), free(rec), free(sd[0]), free(sd[1]), free(v), free(tmp), free(cv), free(all);
    free(rows), free(aoff), free(npos), free(taken);
    return st;
}
