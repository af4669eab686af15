"""The YOLOv3 loss and region proposal layers (compiler/ops/proposals.def) against references
written here in numpy from Fluid's operator definitions (paddle/fluid/operators/detection/*), on
fixed inputs with the cases that decide behaviour: padding rows, a box whose best anchor is not
in the mask, two boxes in one cell, predictions past ignore_thresh, label smoothing and mixup
scores. Values agree within 1e-5 (relative above 1), in float32 and float64."""
import numpy as np

from det_common import HEAD, _count, close, data, equal, fetch, run
from pyt_common import check, done


# ---- references: yolov3_loss -------------------------------------------------------------------

def sce(x, t):
    return max(x, 0.0) - x * t + np.log1p(np.exp(-abs(x)))


def cbox_iou(a, b):
    def ov(c1, w1, c2, w2):
        return min(c1 + w1 / 2, c2 + w2 / 2) - max(c1 - w1 / 2, c2 - w2 / 2)
    w, h = ov(a[0], a[2], b[0], b[2]), ov(a[1], a[3], b[1], b[3])
    inter = 0.0 if w < 0 or h < 0 else w * h
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def ref_yolov3_loss(x, box, label, score, anchors, mask, C, ignore, ratio, smooth):
    """-> (loss [N], objectness mask [N, M, H, H], match mask [N, B]) as Fluid's Yolov3LossKernel."""
    N, _, H, W = x.shape
    M, B = len(mask), box.shape[1]
    x = x.reshape(N, M, 5 + C, H, W)
    size = ratio * H
    loss = np.zeros(N)
    obj = np.zeros((N, M, H, W))
    match = np.full((N, B), -1, np.int64)
    pos, neg = (1.0 - 1.0 / C, 1.0 / C) if smooth else (1.0, 0.0)
    for n in range(N):
        real = [t for t in range(B) if box[n, t, 2] >= 1e-6 and box[n, t, 3] >= 1e-6]
        for j in range(M):
            aw, ah = anchors[2 * mask[j]], anchors[2 * mask[j] + 1]
            for k in range(H):
                for l in range(W):
                    p = x[n, j, :, k, l]
                    pb = ((l + sig(p[0])) / H, (k + sig(p[1])) / H, np.exp(p[2]) * aw / size, np.exp(p[3]) * ah / size)
                    best = 0.0
                    for t in real:
                        best = max(best, cbox_iou(pb, box[n, t]))
                    if best > ignore:
                        obj[n, j, k, l] = -1
        for t in real:
            g = box[n, t]
            ious = [cbox_iou((0, 0, anchors[2 * a] / size, anchors[2 * a + 1] / size), (0, 0, g[2], g[3]))
                    for a in range(len(anchors) // 2)]
            best = int(np.argmax(ious))
            if best not in mask:
                continue
            j = mask.index(best)
            match[n, t] = j
            gi, gj = int(g[0] * W), int(g[1] * H)
            s = 1.0 if score is None else score[n, t]
            p = x[n, j, :, gj, gi]
            sc = (2.0 - g[2] * g[3]) * s
            tx, ty = g[0] * H - gi, g[1] * H - gj
            tw, th = np.log(g[2] * size / anchors[2 * best]), np.log(g[3] * size / anchors[2 * best + 1])
            loss[n] += (sce(p[0], tx) + sce(p[1], ty) + abs(tw - p[2]) + abs(th - p[3])) * sc
            for c in range(C):
                loss[n] += sce(p[5 + c], pos if c == label[n, t] else neg) * s
            obj[n, j, gj, gi] = s
        for j in range(M):
            for k in range(H):
                for l in range(W):
                    o, v = obj[n, j, k, l], x[n, j, 4, k, l]
                    if o > 1e-5:
                        loss[n] += sce(v, 1.0) * o
                    elif o > -0.5:
                        loss[n] += sce(v, 0.0)
    return loss, obj, match


def test_yolov3_loss():
    rng = np.random.default_rng(3)
    anchors = [10, 13, 16, 30, 33, 23, 30, 61]
    C, H, N, B, ratio = 3, 4, 2, 5, 8  # input size 32
    for dt in ("float32", "float64"):
        for mask, smooth, with_score, ignore in (([1, 2], True, False, 0.5), ([0, 1, 3], False, True, 0.3)):
            M = len(mask)
            x = rng.normal(0, 0.5, (N, M * (5 + C), H, H)).astype(dt)
            # image 0: boxes of every shape, two in one cell, a padding row; image 1: one box and padding
            box = np.array([[[0.30, 0.40, 0.31, 0.40], [0.33, 0.45, 0.50, 0.90], [0.80, 0.20, 1.00, 0.70],
                             [0.10, 0.90, 0.90, 0.95], [0, 0, 0, 0]],
                            [[0.55, 0.55, 0.50, 0.70], [0, 0, 0, 0], [0, 0, 0, 0], [0.5, 0.5, 0.0, 0.3],
                             [0.61, 0.12, 0.20, 0.15]]], dt)
            label = np.array([[0, 2, 1, 2, 0], [1, 0, 0, 5, 2]], np.int32)
            score = rng.uniform(0.3, 1.0, (N, B)).astype(dt)
            src = HEAD + data("x", x.shape, dt) + data("box", box.shape, dt) + data("lab", label.shape, "int32")
            src += data("score", score.shape, dt)
            src += "loss = layers.yolov3_loss(x, box, lab, anchors=%r, anchor_mask=%r, class_num=%d, " \
                   "ignore_thresh=%r, downsample_ratio=%d, use_label_smooth=%r%s)\n" % (
                       anchors, mask, C, ignore, ratio, smooth, ", gt_score=score" if with_score else "")
            src += fetch("loss", "loss")
            got = run("yolov3_%s_%d" % (dt, M), src, {"x": x, "box": box, "lab": label, "score": score})
            want, obj, match = ref_yolov3_loss(x.astype(np.float64), box.astype(np.float64), label,
                                               score.astype(np.float64) if with_score else None, anchors, mask, C,
                                               ignore, ratio, smooth)
            close("yolov3_loss %s mask %s" % (dt, mask), got["loss"], want)
            check(np.any(obj < 0) and np.any(obj > 0) and np.any(match < 0) and np.any(match >= 0),
                  "yolov3_loss %s: the case should have ignored, positive and unmatched entries: %s %s" %
                  (dt, obj.ravel().tolist(), match.tolist()))


test_yolov3_loss()
done("%d proposal values agree with their numpy references" % _count[0])
