/* proposals.c: YOLOv3's loss and its gradient; Faster R-CNN's proposals and RPN targets
 * (kernels_proposals.h says what each computes). Computed in double from copies of the inputs
 * (detection_impl.h), written in the inputs' dtype. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/detection_impl.h"
#include "runtime/kernels/kernels_proposals.h"
#include "runtime/rng.h"

/* ---- yolov3_loss ---- */

/* A box by its centre and size (normalized), as YOLOv3 keeps them. */
typedef struct CBox {
    double x, y, w, h;
} CBox;

static double overlap1(double c1, double w1, double c2, double w2) {
    return dmin(c1 + w1 / 2, c2 + w2 / 2) - dmax(c1 - w1 / 2, c2 - w2 / 2);
}

/* Fluid's YOLOv3 IoU: no intersection when either overlap is negative. */
static double cbox_iou(CBox a, CBox b) {
    double w = overlap1(a.x, a.w, b.x, b.w), h = overlap1(a.y, a.h, b.y, b.h);
    double inter = w < 0 || h < 0 ? 0 : w * h;
    return inter / (a.w * a.h + b.w * b.h - inter);
}

static double sce(double x, double t) { return dmax(x, 0) - x * t + log1p(exp(-fabs(x))); }

/* The sizes of one yolov3_loss call and its inputs as doubles. */
typedef struct Yolo {
    const FlYoloLossAttrs *a;
    int64_t N, M, H, B, C, hw;
    double input_size;
    double *x, *box, *score; /* score NULL: 1 */
    const FlTensor *label;
} Yolo;

/* Element (n, masked anchor j, channel ch, position at) of X. */
static int64_t yidx(const Yolo *y, int64_t n, int64_t j, int64_t ch, int64_t at) {
    return ((n * y->M + j) * (5 + y->C) + ch) * y->hw + at;
}

static bool real_box(const double *b) { return !(b[2] < 1e-6) && !(b[3] < 1e-6); }

/* The anchor whose shape matches box b best (the first on ties). */
static int best_anchor(const Yolo *y, const double *b) {
    CBox g = {0, 0, b[2], b[3]};
    double best = 0;
    int k = 0;
    for (int i = 0; i < y->a->n_anchors; i++) {
        const int64_t *wh = y->a->anchors + 2 * i;
        CBox an = {0, 0, (double)wh[0] / y->input_size, (double)wh[1] / y->input_size};
        double iou = cbox_iou(an, g);
        if (iou > best) best = iou, k = i;
    }
    return k;
}

/* Box t of image n made a positive of masked anchor j: its location and class terms, added to
 * *loss, or with dx their derivatives times dl added to dx. */
static void positive(const Yolo *y, int64_t n, int64_t t, int64_t j, double *loss, double *dx, double dl) {
    const double *b = y->box + (n * y->B + t) * 4;
    int64_t gi = (int64_t)(b[0] * (double)y->H), gj = (int64_t)(b[1] * (double)y->H), at = gj * y->H + gi;
    int64_t an = y->a->mask[j], label = iget(y->label, n * y->B + t);
    double s = y->score ? y->score[n * y->B + t] : 1.0, scale = (2.0 - b[2] * b[3]) * s;
    double tgt[4] = {b[0] * (double)y->H - (double)gi, b[1] * (double)y->H - (double)gj,
                     log(b[2] * y->input_size / (double)y->a->anchors[2 * an]),
                     log(b[3] * y->input_size / (double)y->a->anchors[2 * an + 1])};
    double pos = 1, neg = 0;
    if (y->a->label_smooth) pos = 1.0 - 1.0 / (double)y->C, neg = 1.0 / (double)y->C;
    for (int c = 0; c < 4; c++) {
        int64_t i = yidx(y, n, j, c, at);
        double v = y->x[i];
        if (!dx) *loss += (c < 2 ? sce(v, tgt[c]) : fabs(tgt[c] - v)) * scale;
        else dx[i] += (c < 2 ? dsigmoid(v) - tgt[c] : v > tgt[c] ? 1.0 : -1.0) * scale * dl;
    }
    for (int64_t c = 0; c < y->C; c++) {
        int64_t i = yidx(y, n, j, 5 + c, at);
        double v = y->x[i], lt = c == label ? pos : neg;
        if (!dx) *loss += sce(v, lt) * s;
        else dx[i] += (dsigmoid(v) - lt) * s * dl;
    }
}

/* Checks the shapes and loads the inputs (y->x, box, score freed by yolo_free). */
static FlStatus yolo_load(FlErr *e, const char *op, Yolo *y, const FlYoloLossAttrs *a, const FlTensor *x,
                          const FlTensor *gt_box, const FlTensor *gt_label, const FlTensor *gt_score) {
    *y = (Yolo){.a = a, .label = gt_label, .M = a->n_mask, .C = a->class_num};
    if (kneed_float(e, op, "X", x) || kneed_float(e, op, "GTBox", gt_box) || kneed_int(e, op, "GTLabel", gt_label) ||
        ksame_dtype(e, op, "X", x, "GTBox", gt_box) || (gt_score && ksame_dtype(e, op, "X", x, "GTScore", gt_score)))
        return FL_ERROR;
    if (x->ndim != 4 || x->ne[1] != y->M * (5 + y->C) || x->ne[2] != x->ne[3])
        return fl_err(e, "%s: X %s must be [N, %lld, H, H] for %lld masked anchors and %lld classes", op,
                      fl_tensor_shape(x).s, (long long)(y->M * (5 + y->C)), (long long)y->M, (long long)y->C);
    y->N = x->ne[0], y->H = x->ne[2], y->hw = y->H * y->H;
    y->input_size = (double)a->downsample_ratio * (double)y->H;
    if (gt_box->ndim != 3 || gt_box->ne[0] != y->N || gt_box->ne[2] != 4)
        return fl_err(e, "%s: GTBox %s must be [%lld, B, 4]", op, fl_tensor_shape(gt_box).s, (long long)y->N);
    y->B = gt_box->ne[1];
    if (gt_label->ndim != 2 || gt_label->ne[0] != y->N || gt_label->ne[1] != y->B)
        return fl_err(e, "%s: GTLabel %s must be [%lld, %lld]", op, fl_tensor_shape(gt_label).s, (long long)y->N,
                      (long long)y->B);
    if (gt_score && (gt_score->ndim != 2 || gt_score->ne[0] != y->N || gt_score->ne[1] != y->B))
        return fl_err(e, "%s: GTScore %s must be [%lld, %lld]", op, fl_tensor_shape(gt_score).s, (long long)y->N,
                      (long long)y->B);
    if (dload(e, op, x, &y->x) || dload(e, op, gt_box, &y->box) || (gt_score && dload(e, op, gt_score, &y->score)))
        return FL_ERROR;
    for (int64_t i = 0; i < y->N * y->B; i++) {
        const double *b = y->box + 4 * i;
        if (!real_box(b)) continue;
        double cx = b[0] * (double)y->H, cy = b[1] * (double)y->H;
        int64_t l = iget(gt_label, i);
        if (!(cx > -1 && cx < (double)y->H && cy > -1 && cy < (double)y->H))
            return fl_err(e, "%s: GTBox [%lld, %lld] has its centre (%g, %g) outside the image [0, 1)", op,
                          (long long)(i / y->B), (long long)(i % y->B), b[0], b[1]);
        if (l < 0 || l >= y->C)
            return fl_err(e, "%s: GTLabel [%lld, %lld] is %lld, outside [0, class_num %lld)", op,
                          (long long)(i / y->B), (long long)(i % y->B), (long long)l, (long long)y->C);
    }
    return FL_OK;
}

static void yolo_free(Yolo *y) { free(y->x), free(y->box), free(y->score); }

FlStatus fl_kernel_yolov3_loss(FlErr *e, const FlTensor *x, const FlTensor *gt_box, const FlTensor *gt_label,
                               const FlTensor *gt_score, const FlYoloLossAttrs *a, FlTensor *loss, FlTensor *obj_mask,
                               FlTensor *match_mask) {
    const char *op = "yolov3_loss";
    Yolo y;
    FlStatus st = FL_ERROR;
    double *l = NULL, *om = NULL, *mm = NULL;
    FlTensor lt = FL_TENSOR_INIT, ot = FL_TENSOR_INIT, mt = FL_TENSOR_INIT;
    if (yolo_load(e, op, &y, a, x, gt_box, gt_label, gt_score)) goto done;
    int64_t N = y.N, M = y.M, H = y.H, B = y.B, hw = y.hw;
    if (dscratch(e, op, N, &l) || dscratch(e, op, N * M * hw, &om) || dscratch(e, op, N * B, &mm)) goto done;
    memset(l, 0, (size_t)N * sizeof *l);
    memset(om, 0, (size_t)(N * M * hw) * sizeof *om);
    for (int64_t n = 0; n < N; n++) {
        /* predictions overlapping a real box by more than ignore_thresh: no objectness loss */
        for (int64_t j = 0; j < M; j++) {
            int64_t an = a->mask[j];
            for (int64_t at = 0; at < hw; at++) {
                const double *p = y.x + yidx(&y, n, j, 0, at);
                CBox pb = {((double)(at % H) + dsigmoid(p[0])) / (double)H,
                           ((double)(at / H) + dsigmoid(p[hw])) / (double)H,
                           exp(p[2 * hw]) * (double)a->anchors[2 * an] / y.input_size,
                           exp(p[3 * hw]) * (double)a->anchors[2 * an + 1] / y.input_size};
                double best = 0;
                for (int64_t t = 0; t < B; t++) {
                    const double *b = y.box + (n * B + t) * 4;
                    if (!real_box(b)) continue;
                    double iou = cbox_iou(pb, (CBox){b[0], b[1], b[2], b[3]});
                    if (iou > best) best = iou;
                }
                if (best > a->ignore_thresh) om[(n * M + j) * hw + at] = -1;
            }
        }
        /* each real box: its best anchor, a positive when masked */
        for (int64_t t = 0; t < B; t++) {
            const double *b = y.box + (n * B + t) * 4;
            mm[n * B + t] = -1;
            if (!real_box(b)) continue;
            int best = best_anchor(&y, b);
            for (int64_t j = 0; j < M; j++)
                if (a->mask[j] == best) {
                    mm[n * B + t] = (double)j;
                    break;
                }
            if (mm[n * B + t] < 0) continue;
            int64_t j = (int64_t)mm[n * B + t];
            int64_t at = (int64_t)(b[1] * (double)H) * H + (int64_t)(b[0] * (double)H);
            positive(&y, n, t, j, &l[n], NULL, 0);
            om[(n * M + j) * hw + at] = y.score ? y.score[n * B + t] : 1.0;
        }
        /* objectness */
        for (int64_t j = 0; j < M; j++)
            for (int64_t at = 0; at < hw; at++) {
                double o = om[(n * M + j) * hw + at], v = y.x[yidx(&y, n, j, 4, at)];
                if (o > 1e-5) l[n] += sce(v, 1.0) * o;
                else if (o > -0.5) l[n] += sce(v, 0.0);
            }
    }
    if ((loss && dnew(e, op, &lt, x->dtype, 1, (int64_t[]){N}, l)) ||
        (obj_mask && dnew(e, op, &ot, x->dtype, 4, (int64_t[]){N, M, H, H}, om)) ||
        (match_mask && dnew(e, op, &mt, FL_DT_INT32, 2, (int64_t[]){N, B}, mm)))
        goto done;
    kout(loss, &lt), kout(obj_mask, &ot), kout(match_mask, &mt);
    st = FL_OK;
done:
    fl_tensor_fini(&lt), fl_tensor_fini(&ot), fl_tensor_fini(&mt);
    yolo_free(&y);
    free(l), free(om), free(mm);
    return st;
}

FlStatus fl_kernel_yolov3_loss_grad(FlErr *e, const FlTensor *x, const FlTensor *gt_box, const FlTensor *gt_label,
                                    const FlTensor *gt_score, const FlTensor *obj_mask, const FlTensor *match_mask,
                                    const FlTensor *dloss, const FlYoloLossAttrs *a, FlTensor *dx) {
    const char *op = "yolov3_loss_grad";
    if (!dx) return FL_OK;
    Yolo y;
    FlStatus st = FL_ERROR;
    double *g = NULL, *dl = NULL, *om = NULL;
    FlTensor gt = FL_TENSOR_INIT;
    if (yolo_load(e, op, &y, a, x, gt_box, gt_label, gt_score) || kneed_float(e, op, "Loss@GRAD", dloss) ||
        kneed_float(e, op, "ObjectnessMask", obj_mask) || kneed_int(e, op, "GTMatchMask", match_mask))
        goto done;
    int64_t N = y.N, M = y.M, B = y.B, hw = y.hw;
    if (fl_tensor_numel(dloss) != N || fl_tensor_numel(obj_mask) != N * M * hw ||
        fl_tensor_numel(match_mask) != N * B) {
        fl_err(e, "%s: Loss@GRAD %s, ObjectnessMask %s and GTMatchMask %s must hold %lld, %lld and %lld values", op,
               fl_tensor_shape(dloss).s, fl_tensor_shape(obj_mask).s, fl_tensor_shape(match_mask).s, (long long)N,
               (long long)(N * M * hw), (long long)(N * B));
        goto done;
    }
    int64_t nx = fl_tensor_numel(x);
    if (dscratch(e, op, nx, &g) || dload(e, op, dloss, &dl) || dload(e, op, obj_mask, &om)) goto done;
    memset(g, 0, (size_t)nx * sizeof *g);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t t = 0; t < B; t++) {
            int64_t j = iget(match_mask, n * B + t);
            if (j >= 0 && j < M) positive(&y, n, t, j, NULL, g, dl[n]);
        }
        for (int64_t j = 0; j < M; j++)
            for (int64_t at = 0; at < hw; at++) {
                double o = om[(n * M + j) * hw + at];
                int64_t i = yidx(&y, n, j, 4, at);
                if (o > 1e-5) g[i] = (dsigmoid(y.x[i]) - 1.0) * o * dl[n];
                else if (o > -0.5) g[i] = dsigmoid(y.x[i]) * dl[n];
            }
    }
    if (dnew(e, op, &gt, x->dtype, x->ndim, x->ne, g)) goto done;
    kout(dx, &gt);
    st = FL_OK;
done:
    fl_tensor_fini(&gt);
    yolo_free(&y);
    free(g), free(dl), free(om);
    return st;
}

/* ---- generate_proposals ---- */

/* Fluid's cap on a decoded log size ratio: boxes at most 1000/16 times their anchor. */
#define BBOX_CLIP_DEFAULT 4.1351665567423558 /* log(1000 / 16) */

/* Anchor `an` moved by deltas `d` (scaled by variances `v`) into pixel box `o`. */
static void decode_pixel(const double *an, const double *v, const double *d, double *o) {
    double aw = an[2] - an[0] + 1, ah = an[3] - an[1] + 1;
    double cx = an[0] + 0.5 * aw + v[0] * d[0] * aw, cy = an[1] + 0.5 * ah + v[1] * d[1] * ah;
    double w = exp(dmin(v[2] * d[2], BBOX_CLIP_DEFAULT)) * aw, h = exp(dmin(v[3] * d[3], BBOX_CLIP_DEFAULT)) * ah;
    o[0] = cx - w / 2, o[1] = cy - h / 2, o[2] = cx + w / 2 - 1, o[3] = cy + h / 2 - 1;
}

/* Whether box b overlaps one of the kept boxes (rows `kept` of box) by more than th. */
static bool suppressed(const double *box, const DetItem *kept, int64_t nkept, const double *b, double th) {
    for (int64_t k = 0; k < nkept; k++)
        if (box_iou(b, box + 4 * kept[k].idx, false) > th) return true;
    return false;
}

/* One image's proposals: appends their boxes and scores to ob, os (count returned). cand, tmp: K
 * items of scratch; box: 4 K of scratch. */
static int64_t proposals_image(const FlProposalAttrs *a, const double *sc, const double *dl, const double *an,
                               const double *var, const double *info, int64_t A, int64_t hw, DetItem *cand,
                               DetItem *tmp, double *box, double *ob, double *os) {
    int64_t K = A * hw, n = 0;
    for (int64_t i = 0; i < K; i++) cand[i] = (DetItem){sc[(i % A) * hw + i / A], 0, i, 0, 0};
    det_sort(cand, tmp, K, false);
    if (a->pre_nms_top_n > 0 && a->pre_nms_top_n < K) K = a->pre_nms_top_n;
    double min_size = dmax(a->min_size, 1.0);
    for (int64_t i = 0; i < K; i++) {
        int64_t r = cand[i].idx, at = r / A, k = r % A;
        double d[4] = {dl[(4 * k) * hw + at], dl[(4 * k + 1) * hw + at], dl[(4 * k + 2) * hw + at],
                       dl[(4 * k + 3) * hw + at]};
        double *b = box + 4 * r;
        decode_pixel(an + 4 * r, var + 4 * r, d, b);
        for (int c = 0; c < 4; c++) b[c] = dmax(dmin(b[c], info[c % 2 ? 0 : 1] - 1), 0);
        double ws = b[2] - b[0] + 1, hs = b[3] - b[1] + 1;
        if ((b[2] - b[0]) / info[2] + 1 >= min_size && (b[3] - b[1]) / info[2] + 1 >= min_size &&
            b[0] + ws / 2 <= info[1] && b[1] + hs / 2 <= info[0])
            cand[n++] = cand[i];
    }
    if (n == 0) {
        memset(ob, 0, 4 * sizeof *ob);
        os[0] = 0;
        return 1;
    }
    int64_t kept = 0;
    double th = a->nms_thresh;
    for (int64_t i = 0; i < n; i++) {
        if (a->nms_thresh > 0 && suppressed(box, tmp, kept, box + 4 * cand[i].idx, th)) continue;
        tmp[kept++] = cand[i];
        if (a->nms_thresh > 0 && a->eta < 1 && th > 0.5) th *= a->eta;
    }
    if (a->nms_thresh > 0 && a->post_nms_top_n > 0 && a->post_nms_top_n < kept) kept = a->post_nms_top_n;
    for (int64_t i = 0; i < kept; i++) {
        memcpy(ob + 4 * i, box + 4 * tmp[i].idx, 4 * sizeof *ob);
        os[i] = tmp[i].score;
    }
    return kept;
}

FlStatus fl_kernel_generate_proposals(FlErr *e, const FlTensor *scores, const FlTensor *deltas, const FlTensor *im_info,
                                      const FlTensor *anchors, const FlTensor *variances, const FlProposalAttrs *a,
                                      FlTensor *rois, FlTensor *probs, FlTensor *rois_lod) {
    const char *op = "generate_proposals";
    if (kneed_float(e, op, "Scores", scores) || kneed_float(e, op, "BboxDeltas", deltas) ||
        kneed_float(e, op, "ImInfo", im_info) || kboxes(e, op, "Anchors", anchors) ||
        kboxes(e, op, "Variances", variances) || ksame_dtype(e, op, "Scores", scores, "BboxDeltas", deltas) ||
        ksame_dtype(e, op, "Scores", scores, "ImInfo", im_info) ||
        ksame_dtype(e, op, "Scores", scores, "Anchors", anchors) ||
        ksame_dtype(e, op, "Scores", scores, "Variances", variances))
        return FL_ERROR;
    if (scores->ndim != 4 || deltas->ndim != 4 || deltas->ne[0] != scores->ne[0] ||
        deltas->ne[1] != 4 * scores->ne[1] || deltas->ne[2] != scores->ne[2] || deltas->ne[3] != scores->ne[3])
        return fl_err(e, "%s: Scores %s and BboxDeltas %s must be [N, A, H, W] and [N, 4A, H, W]", op,
                      fl_tensor_shape(scores).s, fl_tensor_shape(deltas).s);
    int64_t N = scores->ne[0], A = scores->ne[1], hw = scores->ne[2] * scores->ne[3], K = A * hw;
    if (im_info->ndim != 2 || im_info->ne[0] != N || im_info->ne[1] != 3)
        return fl_err(e, "%s: ImInfo %s must be [%lld, 3] (height, width, scale)", op, fl_tensor_shape(im_info).s,
                      (long long)N);
    if (fl_tensor_numel(anchors) != 4 * K || fl_tensor_numel(variances) != 4 * K)
        return fl_err(e, "%s: Anchors %s and Variances %s must hold %lld boxes, one per score of Scores %s", op,
                      fl_tensor_shape(anchors).s, fl_tensor_shape(variances).s, (long long)K,
                      fl_tensor_shape(scores).s);
    FlStatus st = FL_ERROR;
    double *sc = NULL, *dl = NULL, *info = NULL, *an = NULL, *var = NULL, *box = NULL, *ob = NULL, *os = NULL;
    double *lod = NULL;
    DetItem *cand = NULL, *tmp = NULL;
    FlTensor rt = FL_TENSOR_INIT, pt = FL_TENSOR_INIT, lt = FL_TENSOR_INIT;
    if (dload(e, op, scores, &sc) || dload(e, op, deltas, &dl) || dload(e, op, im_info, &info) ||
        dload(e, op, anchors, &an) || dload(e, op, variances, &var) || dscratch(e, op, 4 * K, &box) ||
        dscratch(e, op, 4 * N * K + 4, &ob) || dscratch(e, op, N * K + 1, &os) || dscratch(e, op, N + 1, &lod))
        goto done;
    cand = malloc((size_t)(K > 0 ? K : 1) * sizeof *cand);
    tmp = malloc((size_t)(K > 0 ? K : 1) * sizeof *tmp);
    if (!cand || !tmp) {
        fl_err(e, "%s: out of memory for %lld candidates", op, (long long)K);
        goto done;
    }
    int64_t R = 0;
    lod[0] = 0;
    for (int64_t n = 0; n < N; n++) {
        const double *in = info + 3 * n;
        if (!(in[2] > 0)) {
            fl_err(e, "%s: ImInfo row %lld has scale %g; it must be > 0", op, (long long)n, in[2]);
            goto done;
        }
        R += proposals_image(a, sc + n * K, dl + n * 4 * K, an, var, in, A, hw, cand, tmp, box, ob + 4 * R, os + R);
        lod[n + 1] = (double)R;
    }
    if (dnew(e, op, &rt, scores->dtype, 2, (int64_t[]){R, 4}, ob) ||
        dnew(e, op, &pt, scores->dtype, 2, (int64_t[]){R, 1}, os) ||
        dnew(e, op, &lt, FL_DT_INT64, 1, (int64_t[]){N + 1}, lod))
        goto done;
    kout(rois, &rt), kout(probs, &pt), kout(rois_lod, &lt);
    st = FL_OK;
done:
    fl_tensor_fini(&rt), fl_tensor_fini(&pt), fl_tensor_fini(&lt);
    free(sc), free(dl), free(info), free(an), free(var), free(box), free(ob), free(os), free(lod);
    free(cand), free(tmp);
    return st;
}

/* ---- rpn_target_assign ---- */

/* Fluid's BboxOverlaps: the IoU of pixel boxes (both edges counted), 0 without intersection. */
static double overlap_px(const double *a, const double *b) {
    double iw = dmax(dmin(a[2], b[2]) - dmax(a[0], b[0]) + 1, 0), ih = dmax(dmin(a[3], b[3]) - dmax(a[1], b[1]) + 1, 0);
    double inter = iw * ih;
    if (inter == 0) return 0;
    return inter / ((a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1) - inter);
}

/* Keeps num of the len entries of v (all when len <= num): with use_random Fluid's reservoir
 * sampling (entry i >= num replaces entry floor(u * i) when that is below num), else the first
 * num. Returns the count kept. */
static int64_t reservoir(int64_t *v, int64_t len, int64_t num, bool use_random, FlRng *r) {
    if (len <= num) return len;
    for (int64_t i = num; use_random && i < len; i++) {
        int64_t k = (int64_t)floor(fl_rng_uniform(r) * (double)i);
        if (k < num) {
            int64_t t = v[k];
            v[k] = v[i], v[i] = t;
        }
    }
    return num;
}

/* Fluid's BoxToDelta (pixel boxes, no weights): the deltas from box ex to box gt. */
static void box_delta(const double *ex, const double *gt, double *o) {
    double ew = ex[2] - ex[0] + 1, eh = ex[3] - ex[1] + 1, gw = gt[2] - gt[0] + 1, gh = gt[3] - gt[1] + 1;
    o[0] = (gt[0] + 0.5 * gw - (ex[0] + 0.5 * ew)) / ew, o[1] = (gt[1] + 0.5 * gh - (ex[1] + 0.5 * eh)) / eh;
    o[2] = log(gw / ew), o[3] = log(gh / eh);
}

/* The per-anchor scratch of one image, and the growing outputs. */
typedef struct Rpn {
    const FlRpnTargetAttrs *a;
    const double *anchor;
    int64_t M;
    double *ov, *amax, *gmax, *gts;    /* IoU [inside, G], per anchor max, per box max, boxes */
    int64_t *inside, *amaxi, *fg, *bg; /* inside anchors, per anchor argmax, sampled lists */
    int *label;
    double *box, *wt, *loc, *score, *lab; /* outputs so far */
    int64_t nloc, nscore;
    FlRng rng;
} Rpn;

static void rpn_image(Rpn *s, int64_t img, const double *gt, const int64_t *crowd_of, int64_t G, const double *info) {
    const FlRpnTargetAttrs *a = s->a;
    double t = a->straddle_thresh;
    int64_t ni = 0, ng = 0;
    for (int64_t i = 0; i < s->M; i++) {
        const double *b = s->anchor + 4 * i;
        if (t < 0 || (b[0] >= -t && b[1] >= -t && b[2] < info[1] + t && b[3] < info[0] + t)) s->inside[ni++] = i;
    }
    for (int64_t j = 0; j < G; j++)
        if (crowd_of[j] == 0) {
            for (int c = 0; c < 4; c++) s->gts[4 * ng + c] = gt[4 * j + c] * info[2];
            ng++;
        }
    for (int64_t j = 0; j < ng; j++) s->gmax[j] = -INFINITY;
    for (int64_t i = 0; i < ni; i++) {
        s->amax[i] = -INFINITY, s->amaxi[i] = 0, s->label[i] = -1;
        for (int64_t j = 0; j < ng; j++) {
            double v = s->ov[i * ng + j] = overlap_px(s->anchor + 4 * s->inside[i], s->gts + 4 * j);
            if (v > s->amax[i]) s->amax[i] = v, s->amaxi[i] = j;
            if (v > s->gmax[j]) s->gmax[j] = v;
        }
    }
    int64_t nfg = 0, nbg = 0;
    for (int64_t i = 0; i < ni; i++) {
        bool best = s->amax[i] >= a->positive_overlap;
        for (int64_t j = 0; j < ng && !best; j++) best = fabs(s->ov[i * ng + j] - s->gmax[j]) < 1e-5;
        if (best) s->fg[nfg++] = i;
    }
    nfg = reservoir(s->fg, nfg, (int64_t)(a->fg_fraction * (double)a->batch_size_per_im), a->use_random, &s->rng);
    for (int64_t k = 0; k < nfg; k++) s->label[s->fg[k]] = 1;
    for (int64_t i = 0; i < ni; i++)
        if (s->amax[i] < a->negative_overlap) s->bg[nbg++] = i;
    nbg = reservoir(s->bg, nbg, a->batch_size_per_im - nfg, a->use_random, &s->rng);
    int64_t off = img * s->M, start = s->nloc;
    /* a foreground the background took back: Fluid's location row of the first foreground, weight 0 */
    for (int64_t k = 0; k < nbg; k++) {
        if (s->label[s->bg[k]] == 1) {
            s->loc[s->nloc] = (double)s->fg[0];
            memset(s->wt + 4 * s->nloc++, 0, 4 * sizeof *s->wt);
        }
        s->label[s->bg[k]] = 0;
    }
    for (int64_t i = 0; i < ni; i++)
        if (s->label[i] == 1) {
            s->loc[s->nloc] = (double)i;
            for (int c = 0; c < 4; c++) s->wt[4 * s->nloc + c] = 1;
            s->nloc++;
        }
    for (int64_t r = start; r < s->nloc; r++) {
        int64_t i = (int64_t)s->loc[r];
        box_delta(s->anchor + 4 * s->inside[i], s->gts + 4 * s->amaxi[i], s->box + 4 * r);
        s->loc[r] = (double)(s->inside[i] + off);
    }
    for (int64_t want = 1; want >= 0; want--)
        for (int64_t i = 0; i < ni; i++)
            if (s->label[i] == want) {
                s->score[s->nscore] = (double)(s->inside[i] + off);
                s->lab[s->nscore++] = (double)want;
            }
}

static void rpn_free(Rpn *s) {
    free(s->ov), free(s->amax), free(s->gmax), free(s->gts), free(s->inside), free(s->amaxi), free(s->fg);
    free(s->bg), free(s->label), free(s->box), free(s->wt), free(s->loc), free(s->score), free(s->lab);
}

FlStatus fl_kernel_rpn_target_assign(FlErr *e, const FlTensor *anchor, const FlTensor *gt, const int64_t *gt_off,
                                     int64_t nseq, const FlTensor *crowd, const int64_t *crowd_off,
                                     const FlTensor *im_info, const FlRpnTargetAttrs *a, const FlRpnTargets *out) {
    const char *op = "rpn_target_assign";
    if (kboxes(e, op, "Anchor", anchor) || kboxes(e, op, "GtBoxes", gt) || kneed_int(e, op, "IsCrowd", crowd) ||
        kneed_float(e, op, "ImInfo", im_info) || ksame_dtype(e, op, "Anchor", anchor, "GtBoxes", gt) ||
        ksame_dtype(e, op, "Anchor", anchor, "ImInfo", im_info) ||
        koffsets(e, op, "GtBoxes", gt_off, nseq, gt->ne[0]) ||
        koffsets(e, op, "IsCrowd", crowd_off, nseq, crowd->ne[0]))
        return FL_ERROR;
    if (anchor->ndim != 2 || gt->ndim != 2)
        return fl_err(e, "%s: Anchor %s and GtBoxes %s must be [M, 4] and [G, 4]", op, fl_tensor_shape(anchor).s,
                      fl_tensor_shape(gt).s);
    if (im_info->ndim != 2 || im_info->ne[0] != nseq || im_info->ne[1] != 3)
        return fl_err(e, "%s: ImInfo %s must be [%lld, 3] (height, width, scale): one row per image of GtBoxes", op,
                      fl_tensor_shape(im_info).s, (long long)nseq);
    int64_t gmax = 0, M = anchor->ne[0];
    for (int64_t n = 0; n < nseq; n++) {
        if (gt_off[n + 1] - gt_off[n] != crowd_off[n + 1] - crowd_off[n])
            return fl_err(e, "%s: image %lld has %lld boxes in GtBoxes but %lld rows in IsCrowd", op, (long long)n,
                          (long long)(gt_off[n + 1] - gt_off[n]), (long long)(crowd_off[n + 1] - crowd_off[n]));
        gmax = gt_off[n + 1] - gt_off[n] > gmax ? gt_off[n + 1] - gt_off[n] : gmax;
    }
    if (fl_tensor_numel(crowd) != crowd->ne[0])
        return fl_err(e, "%s: IsCrowd %s must be [G, 1]", op, fl_tensor_shape(crowd).s);
    Rpn s = {.a = a, .M = M};
    FlStatus st = FL_ERROR;
    double *an = NULL, *g = NULL, *info = NULL, *lods = NULL;
    int64_t *cr = NULL;
    FlTensor t[7];
    for (int i = 0; i < 7; i++) t[i] = (FlTensor)FL_TENSOR_INIT;
    int64_t cap = nseq * M;
    if (dload(e, op, anchor, &an) || dload(e, op, gt, &g) || dload(e, op, im_info, &info) ||
        iscratch(e, op, crowd->ne[0], &cr) || dscratch(e, op, M * gmax, &s.ov) || dscratch(e, op, M, &s.amax) ||
        dscratch(e, op, gmax, &s.gmax) || dscratch(e, op, 4 * gmax, &s.gts) || iscratch(e, op, M, &s.inside) ||
        iscratch(e, op, M, &s.amaxi) || iscratch(e, op, M, &s.fg) || iscratch(e, op, M, &s.bg) ||
        dscratch(e, op, 4 * cap, &s.box) || dscratch(e, op, 4 * cap, &s.wt) || dscratch(e, op, cap, &s.loc) ||
        dscratch(e, op, cap, &s.score) || dscratch(e, op, cap, &s.lab) || dscratch(e, op, 2 * (nseq + 1), &lods))
        goto done;
    s.label = malloc((size_t)(M > 0 ? M : 1) * sizeof *s.label);
    if (!s.label) {
        fl_err(e, "%s: out of memory for %lld anchors", op, (long long)M);
        goto done;
    }
    s.anchor = an;
    for (int64_t i = 0; i < crowd->ne[0]; i++) cr[i] = iget(crowd, i);
    fl_rng_init2(&s.rng, a->seed, a->stream);
    lods[0] = lods[nseq + 1] = 0;
    for (int64_t n = 0; n < nseq; n++) {
        if (!(info[3 * n + 2] > 0)) {
            fl_err(e, "%s: ImInfo row %lld has scale %g; it must be > 0", op, (long long)n, info[3 * n + 2]);
            goto done;
        }
        rpn_image(&s, n, g + 4 * gt_off[n], cr + crowd_off[n], gt_off[n + 1] - gt_off[n], info + 3 * n);
        lods[n + 1] = (double)s.nloc, lods[nseq + 2 + n] = (double)s.nscore;
    }
    int64_t F = s.nloc, S = s.nscore;
    if (dnew(e, op, &t[0], FL_DT_INT32, 1, (int64_t[]){F}, s.loc) ||
        dnew(e, op, &t[1], FL_DT_INT32, 1, (int64_t[]){S}, s.score) ||
        dnew(e, op, &t[2], anchor->dtype, 2, (int64_t[]){F, 4}, s.box) ||
        dnew(e, op, &t[3], FL_DT_INT32, 2, (int64_t[]){S, 1}, s.lab) ||
        dnew(e, op, &t[4], anchor->dtype, 2, (int64_t[]){F, 4}, s.wt) ||
        dnew(e, op, &t[5], FL_DT_INT64, 1, (int64_t[]){nseq + 1}, lods) ||
        dnew(e, op, &t[6], FL_DT_INT64, 1, (int64_t[]){nseq + 1}, lods + nseq + 1))
        goto done;
    kout(out->loc_index, &t[0]), kout(out->score_index, &t[1]), kout(out->target_bbox, &t[2]);
    kout(out->target_label, &t[3]), kout(out->inside_weight, &t[4]), kout(out->loc_lod, &t[5]);
    kout(out->score_lod, &t[6]);
    st = FL_OK;
done:
    for (int i = 0; i < 7; i++) fl_tensor_fini(&t[i]);
    rpn_free(&s);
    free(an), free(g), free(info), free(lods), free(cr);
    return st;
}

/* ---- feature pyramid proposals ---- */

static int fpn_level(const double *b, int lo, int hi, int refer_level, int refer_scale) {
    double area = box_area(b, false);
    if (!(area > 0)) return lo;
    double l = floor(log2(sqrt(area) / (double)refer_scale) + (double)refer_level);
    return l < lo ? lo : l > hi ? hi : (int)l;
}

FlStatus fl_kernel_distribute_fpn_proposals(FlErr *e, const FlTensor *rois, const int64_t *off, int64_t nseq,
                                            int min_level, int max_level, int refer_level, int refer_scale,
                                            FlTensor *const *level_rois, FlTensor *const *level_lods,
                                            FlTensor *restore) {
    const char *op = "distribute_fpn_proposals";
    if (kboxes(e, op, "FpnRois", rois)) return FL_ERROR;
    if (rois->ndim != 2) return fl_err(e, "%s: FpnRois %s must be [R, 4]", op, fl_tensor_shape(rois).s);
    int64_t R = rois->ne[0];
    int L = max_level - min_level + 1;
    if (koffsets(e, op, "FpnRois", off, nseq, R)) return FL_ERROR;
    FlStatus st = FL_ERROR;
    double *r = NULL, *lv = NULL, *out = NULL, *lod = NULL, *ri = NULL;
    FlTensor tmp = FL_TENSOR_INIT;
    if (dload(e, op, rois, &r) || dscratch(e, op, R, &lv) || dscratch(e, op, 4 * R, &out) ||
        dscratch(e, op, nseq + 1, &lod) || dscratch(e, op, R, &ri))
        goto done;
    for (int64_t i = 0; i < R; i++) lv[i] = fpn_level(r + 4 * i, min_level, max_level, refer_level, refer_scale);
    int64_t base = 0; /* rows of the levels before this one */
    for (int k = 0; k < L; k++) {
        int64_t n = 0;
        lod[0] = 0;
        for (int64_t s = 0; s < nseq; s++) {
            for (int64_t i = off[s]; i < off[s + 1]; i++)
                if (lv[i] == min_level + k) {
                    memcpy(out + 4 * n, r + 4 * i, 4 * sizeof *out);
                    ri[i] = (double)(base + n++);
                }
            lod[s + 1] = (double)n;
        }
        if (kalloc_raw(e, op, &tmp, rois->dtype, 2, (int64_t[]){n, 4})) goto done;
        dstore(&tmp, out, 4 * n);
        kout(level_rois[k], &tmp);
        if (dnew(e, op, &tmp, FL_DT_INT64, 1, (int64_t[]){nseq + 1}, lod)) goto done;
        kout(level_lods[k], &tmp);
        base += n;
    }
    if (dnew(e, op, &tmp, FL_DT_INT32, 2, (int64_t[]){R, 1}, ri)) goto done;
    kout(restore, &tmp);
    st = FL_OK;
done:
    fl_tensor_fini(&tmp);
    free(r), free(lv), free(out), free(lod), free(ri);
    return st;
}

FlStatus fl_kernel_collect_fpn_proposals(FlErr *e, const FlTensor *const *rois, const FlTensor *const *scores,
                                         const int64_t *const *offs, int nlevel, int64_t nseq, int64_t top_n,
                                         FlTensor *out, FlTensor *lod) {
    const char *op = "collect_fpn_proposals";
    int64_t total = 0;
    for (int k = 0; k < nlevel; k++) {
        if (kboxes(e, op, "MultiLevelRois", rois[k]) || kneed_float(e, op, "MultiLevelScores", scores[k]) ||
            ksame_dtype(e, op, "MultiLevelRois", rois[0], "MultiLevelRois", rois[k]) ||
            ksame_dtype(e, op, "MultiLevelRois", rois[0], "MultiLevelScores", scores[k]))
            return FL_ERROR;
        if (rois[k]->ndim != 2 || fl_tensor_numel(scores[k]) != rois[k]->ne[0])
            return fl_err(e, "%s: level %d's RoIs %s and scores %s must be [R, 4] and [R, 1]", op, k,
                          fl_tensor_shape(rois[k]).s, fl_tensor_shape(scores[k]).s);
        if (koffsets(e, op, "MultiLevelRois", offs[k], nseq, rois[k]->ne[0])) return FL_ERROR;
        total += rois[k]->ne[0];
    }
    FlStatus st = FL_ERROR;
    DetItem *it = NULL, *tmp = NULL;
    size_t nl = nlevel > 0 ? (size_t)nlevel : 1;
    double *o = NULL, *l = NULL, **rd = calloc(nl, sizeof *rd), **sd = calloc(nl, sizeof *sd);
    FlTensor ot = FL_TENSOR_INIT, lt = FL_TENSOR_INIT;
    if (!rd || !sd) {
        fl_err(e, "%s: out of memory", op);
        goto done;
    }
    for (int k = 0; k < nlevel; k++)
        if (dload(e, op, rois[k], &rd[k]) || dload(e, op, scores[k], &sd[k])) goto done;
    it = malloc((size_t)(total + 1) * sizeof *it);
    tmp = malloc((size_t)(total + 1) * sizeof *tmp);
    if (!it || !tmp || dscratch(e, op, 4 * total, &o) || dscratch(e, op, nseq + 1, &l)) {
        if (!it || !tmp) fl_err(e, "%s: out of memory for %lld RoIs", op, (long long)total);
        goto done;
    }
    int64_t n = 0;
    for (int k = 0; k < nlevel; k++)
        for (int64_t s = 0; s < nseq; s++)
            for (int64_t i = offs[k][s]; i < offs[k][s + 1]; i++) /* cls: the image; idx, tp: row, level */
                it[n++] = (DetItem){sd[k][i], s, i, k, 0};
    det_sort(it, tmp, n, false);
    if (top_n < n) n = top_n;
    det_sort(it, tmp, n, true);
    int64_t s = 0;
    l[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        while (s < it[i].cls) l[++s] = (double)i;
        memcpy(o + 4 * i, rd[it[i].tp] + 4 * it[i].idx, 4 * sizeof *o);
    }
    while (s < nseq) l[++s] = (double)n;
    if (dnew(e, op, &ot, rois[0]->dtype, 2, (int64_t[]){n, 4}, o) ||
        dnew(e, op, &lt, FL_DT_INT64, 1, (int64_t[]){nseq + 1}, l))
        goto done;
    kout(out, &ot), kout(lod, &lt);
    st = FL_OK;
done:
    fl_tensor_fini(&ot), fl_tensor_fini(&lt);
    for (int k = 0; rd && sd && k < nlevel; k++) free(rd[k]), free(sd[k]);
    free(rd), free(sd), free(it), free(tmp), free(o), free(l);
    return st;
}

/* ---- generate_proposal_labels ---- */

FlStatus fl_kernel_generate_proposal_labels(FlErr *e, const FlTensor *rois, const int64_t *roi_off, int64_t nseq,
                                            const FlTensor *classes, const FlTensor *crowd, const FlTensor *gt,
                                            const int64_t *gt_off, const FlTensor *im_info,
                                            const FlProposalLabelAttrs *a, const FlProposalLabels *out) {
    const char *op = "generate_proposal_labels";
    if (kboxes(e, op, "RpnRois", rois) || kboxes(e, op, "GtBoxes", gt) || kneed_int(e, op, "GtClasses", classes) ||
        kneed_int(e, op, "IsCrowd", crowd) || kneed_float(e, op, "ImInfo", im_info) ||
        ksame_dtype(e, op, "RpnRois", rois, "GtBoxes", gt) ||
        ksame_dtype(e, op, "RpnRois", rois, "ImInfo", im_info) ||
        koffsets(e, op, "RpnRois", roi_off, nseq, rois->ne[0]) || koffsets(e, op, "GtBoxes", gt_off, nseq, gt->ne[0]))
        return FL_ERROR;
    int64_t R = rois->ne[0], G = gt->ne[0], C = a->class_nums, W = 4 * C;
    if (rois->ndim != 2 || gt->ndim != 2 || fl_tensor_numel(classes) != G || fl_tensor_numel(crowd) != G)
        return fl_err(e, "%s: RpnRois %s, GtBoxes %s, GtClasses %s and IsCrowd %s must be [R, 4], [G, 4], [G, 1] and "
                      "[G, 1]", op, fl_tensor_shape(rois).s, fl_tensor_shape(gt).s, fl_tensor_shape(classes).s,
                      fl_tensor_shape(crowd).s);
    if (im_info->ndim != 2 || im_info->ne[0] != nseq || im_info->ne[1] != 3)
        return fl_err(e, "%s: ImInfo %s must be [%lld, 3] (height, width, scale)", op, fl_tensor_shape(im_info).s,
                      (long long)nseq);
    for (int64_t i = 0; i < G; i++) /* class-agnostic targets go in class 1's columns, whatever the class */
        if (iget(classes, i) < 0 || (!a->cls_agnostic && iget(classes, i) >= C))
            return fl_err(e, "%s: GtClasses row %lld is %lld, outside [0, class_nums %lld)", op, (long long)i,
                          (long long)iget(classes, i), (long long)C);
    for (int64_t n = 0; a->cascade && n < nseq; n++)
        if (roi_off[n + 1] - roi_off[n] < gt_off[n + 1] - gt_off[n])
            return fl_err(e, "%s: is_cascade_rcnn: image %lld has %lld RoIs, fewer than its %lld ground-truth boxes "
                          "(a cascade stage's RoIs start with the image's boxes, which are left out)", op,
                          (long long)n, (long long)(roi_off[n + 1] - roi_off[n]),
                          (long long)(gt_off[n + 1] - gt_off[n]));
    int64_t cap = R + G; /* candidates of all images; at most that many rows */
    FlStatus st = FL_ERROR;
    double *r = NULL, *g = NULL, *info = NULL, *cand = NULL, *o[4] = {0}, *lod = NULL;
    int64_t *fg = NULL, *fgt = NULL, *bg = NULL;
    FlTensor t[6];
    for (int i = 0; i < 6; i++) t[i] = (FlTensor)FL_TENSOR_INIT;
    if (dload(e, op, rois, &r) || dload(e, op, gt, &g) || dload(e, op, im_info, &info) ||
        dscratch(e, op, 4 * cap, &cand) || iscratch(e, op, cap, &fg) ||
        iscratch(e, op, cap, &fgt) || iscratch(e, op, cap, &bg) || dscratch(e, op, 4 * cap, &o[0]) ||
        dscratch(e, op, cap, &o[1]) || dscratch(e, op, W * cap, &o[2]) || dscratch(e, op, W * cap, &o[3]) ||
        dscratch(e, op, nseq + 1, &lod))
        goto done;
    memset(o[2], 0, (size_t)(W * cap) * sizeof *o[2]);
    memset(o[3], 0, (size_t)(W * cap) * sizeof *o[3]);
    FlRng rng;
    fl_rng_init2(&rng, a->seed, a->stream);
    int64_t S = 0;
    lod[0] = 0;
    for (int64_t n = 0; n < nseq; n++) {
        double scale = info[3 * n + 2];
        if (!(scale > 0)) {
            fl_err(e, "%s: ImInfo row %lld has scale %g; it must be > 0", op, (long long)n, scale);
            goto done;
        }
        const double *gb = g + 4 * gt_off[n];
        /* a cascade stage's RoIs repeat the image's boxes first: they are left out */
        int64_t ng = gt_off[n + 1] - gt_off[n], r0 = roi_off[n] + (a->cascade ? ng : 0);
        int64_t nc = ng + roi_off[n + 1] - r0, nfg = 0, nbg = 0;
        memcpy(cand, gb, (size_t)(4 * ng) * sizeof *cand);
        for (int64_t i = 4 * r0; i < 4 * roi_off[n + 1]; i++) cand[4 * ng + i - 4 * r0] = r[i] / scale;
        for (int64_t i = 0; i < nc; i++) {
            const double *b = cand + 4 * i;
            if (a->cascade && !(b[2] - b[0] + 1 > 0 && b[3] - b[1] + 1 > 0)) continue;
            double m = -INFINITY;
            for (int64_t j = 0; j < ng; j++) m = dmax(m, overlap_px(cand + 4 * i, gb + 4 * j));
            if (i < ng && iget(crowd, gt_off[n] + i)) m = -1;
            if (m >= a->fg_thresh) {
                int64_t j = 0;
                while (j < ng && !(fabs(m - overlap_px(cand + 4 * i, gb + 4 * j)) < 1e-5)) j++;
                fg[nfg] = i, fgt[nfg++] = j;
            } else if (m >= a->bg_thresh_lo && m < a->bg_thresh_hi) {
                bg[nbg++] = i;
            }
        }
        /* foreground sampled with its box: the pairs are coded into one index */
        for (int64_t k = 0; k < nfg; k++) fg[k] = fg[k] * (ng + 1) + fgt[k];
        if (!a->cascade) { /* a cascade stage keeps them all */
            int64_t fg_max = (int64_t)floor((double)a->batch_size_per_im * a->fg_fraction);
            nfg = reservoir(fg, nfg, fg_max, a->use_random, &rng);
            nbg = reservoir(bg, nbg, a->batch_size_per_im - nfg, a->use_random, &rng);
        }
        for (int64_t k = 0; k < nfg + nbg; k++, S++) {
            int64_t i = k < nfg ? fg[k] / (ng + 1) : bg[k - nfg], j = k < nfg ? fg[k] % (ng + 1) : -1;
            int64_t c = j >= 0 ? iget(classes, gt_off[n] + j) : 0;
            for (int q = 0; q < 4; q++) o[0][4 * S + q] = cand[4 * i + q] * scale;
            o[1][S] = (double)c;
            if (c > 0) {
                double d[4];
                int64_t col = 4 * (a->cls_agnostic ? 1 : c);
                box_delta(cand + 4 * i, gb + 4 * j, d);
                for (int q = 0; q < 4; q++)
                    o[2][W * S + col + q] = d[q] / a->reg_weights[q], o[3][W * S + col + q] = 1;
            }
        }
        lod[n + 1] = (double)S;
    }
    if (dnew(e, op, &t[0], rois->dtype, 2, (int64_t[]){S, 4}, o[0]) ||
        dnew(e, op, &t[1], FL_DT_INT32, 2, (int64_t[]){S, 1}, o[1]) ||
        dnew(e, op, &t[2], rois->dtype, 2, (int64_t[]){S, W}, o[2]) ||
        dnew(e, op, &t[3], rois->dtype, 2, (int64_t[]){S, W}, o[3]) ||
        dnew(e, op, &t[4], rois->dtype, 2, (int64_t[]){S, W}, o[3]) ||
        dnew(e, op, &t[5], FL_DT_INT64, 1, (int64_t[]){nseq + 1}, lod))
        goto done;
    kout(out->rois, &t[0]), kout(out->labels, &t[1]), kout(out->targets, &t[2]);
    kout(out->inside_weights, &t[3]), kout(out->outside_weights, &t[4]), kout(out->rois_lod, &t[5]);
    st = FL_OK;
done:
    for (int i = 0; i < 6; i++) fl_tensor_fini(&t[i]);
    free(r), free(g), free(info), free(cand), free(fg), free(fgt), free(bg), free(lod);
    for (int i = 0; i < 4; i++) free(o[i]);
    return st;
}
