/* proposals.c: YOLOv3's loss and its gradient; Faster R-CNN's proposals and RPN targets
 * (kernels_proposals.h says what each computes). Computed in double from copies of the inputs
 * (detection_impl.h), written in the inputs' dtype. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/detection_impl.h"
#include "runtime/kernels/kernels_proposals.h"

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
