"""The YOLOv3 loss and region proposal layers (compiler/ops/proposals.def) against references
written here in numpy from Fluid's operator definitions (paddle/fluid/operators/detection/*), on
fixed inputs with the cases that decide behaviour: padding rows, a box whose best anchor is not
in the mask, two boxes in one cell, predictions past ignore_thresh, label smoothing and mixup
scores. Values agree within 1e-5 (relative above 1), in float32 and float64."""
import numpy as np

import fluidc
from det_common import HEAD, _count, close, compile_fl, data, equal, fetch, run
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


# ---- references: generate_proposals ----------------------------------------------------------

def pixel_iou(a, b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    def area(x):
        return 0.0 if x[2] < x[0] or x[3] < x[1] else (x[2] - x[0] + 1) * (x[3] - x[1] + 1)
    iw, ih = min(a[2], b[2]) - max(a[0], b[0]) + 1, min(a[3], b[3]) - max(a[1], b[1]) + 1
    inter = iw * ih
    u = area(a) + area(b) - inter
    return inter / u if u > 0 else 0.0


def ref_generate_proposals(scores, deltas, info, anchors, var, pre, post, nms, min_size, eta):
    """-> (rois, probs, lod) as Fluid's GenerateProposalsKernel, ties in anchor order."""
    N, A, H, W = scores.shape
    anchors, var = anchors.reshape(-1, 4), var.reshape(-1, 4)
    clip = np.log(1000.0 / 16.0)
    rois, probs, lod = [], [], [0]
    for n in range(N):
        sc = scores[n].transpose(1, 2, 0).ravel()             # (h, w, a)
        dl = deltas[n].reshape(A, 4, H, W).transpose(2, 3, 0, 1).reshape(-1, 4)
        order = sorted(range(len(sc)), key=lambda i: (-sc[i], i))
        if 0 < pre < len(order):
            order = order[:pre]
        ih, iw, scale = info[n]
        kept = []
        for i in order:
            a, v, d = anchors[i], var[i], dl[i]
            aw, ah = a[2] - a[0] + 1, a[3] - a[1] + 1
            cx, cy = a[0] + 0.5 * aw + v[0] * d[0] * aw, a[1] + 0.5 * ah + v[1] * d[1] * ah
            w, h = np.exp(min(v[2] * d[2], clip)) * aw, np.exp(min(v[3] * d[3], clip)) * ah
            b = [cx - w / 2, cy - h / 2, cx + w / 2 - 1, cy + h / 2 - 1]
            b = [max(min(b[0], iw - 1), 0), max(min(b[1], ih - 1), 0), max(min(b[2], iw - 1), 0),
                 max(min(b[3], ih - 1), 0)]
            ms = max(min_size, 1.0)
            ws, hs = b[2] - b[0] + 1, b[3] - b[1] + 1
            if (b[2] - b[0]) / scale + 1 >= ms and (b[3] - b[1]) / scale + 1 >= ms and \
                    b[0] + ws / 2 <= iw and b[1] + hs / 2 <= ih:
                kept.append((b, sc[i]))
        if not kept:
            kept = [([0.0] * 4, 0.0)]
        elif nms > 0:
            sel, th = [], nms
            for b, s in kept:
                if all(pixel_iou(b, k[0]) <= th for k in sel):
                    sel.append((b, s))
                    if eta < 1 and th > 0.5:
                        th *= eta
            kept = sel[:post] if 0 < post < len(sel) else sel
        rois += [k[0] for k in kept]
        probs += [[k[1]] for k in kept]
        lod.append(len(rois))
    return np.array(rois), np.array(probs), np.array(lod)


def test_generate_proposals():
    rng = np.random.default_rng(5)
    N, A, H, W = 2, 3, 4, 5
    # anchors: 3 shapes on a 16-pixel grid; variances not all 1
    anchors = np.zeros((H, W, A, 4))
    for h in range(H):
        for w in range(W):
            for a, (bw, bh) in enumerate(((16, 16), (24, 12), (12, 30))):
                cx, cy = w * 16 + 7.5, h * 16 + 7.5
                anchors[h, w, a] = [cx - (bw - 1) / 2, cy - (bh - 1) / 2, cx + (bw - 1) / 2, cy + (bh - 1) / 2]
    var = np.tile([0.1, 0.1, 0.2, 0.2], (H, W, A, 1)) * rng.uniform(0.5, 2.0, (H, W, A, 1))
    info = np.array([[64, 80, 1.0], [48, 60, 2.0]])
    for dt in ("float32", "float64"):
        scores = np.round(rng.random((N, A, H, W)), 2).astype(dt)     # rounded: ties
        deltas = rng.normal(0, 1.0, (N, 4 * A, H, W)).astype(dt)
        deltas[0, 2, 0, 0] = 30.0                                     # a log size past the cap
        feed = {"scores": scores, "deltas": deltas, "info": info.astype(dt), "anchors": anchors.astype(dt),
                "var": var.astype(dt)}
        src = HEAD + data("scores", scores.shape, dt) + data("deltas", deltas.shape, dt) + data("info", info.shape, dt)
        src += data("anchors", anchors.shape, dt) + data("var", var.shape, dt)
        cases = {"d": (6000, 1000, 0.5, 0.1, 1.0), "k": (12, 5, 0.7, 4.0, 0.8), "n": (20, 3, 0.0, 2.0, 1.0),
                 "e": (-1, -1, 0.3, 200.0, 1.0)}
        for k, (pre, post, nms, ms, eta) in sorted(cases.items()):
            src += "r_%s, p_%s = layers.generate_proposals(scores, deltas, info, anchors, var, pre_nms_top_n=%d, " \
                   "post_nms_top_n=%d, nms_thresh=%r, min_size=%r, eta=%r)\n" % (k, k, pre, post, nms, ms, eta)
            src += fetch("r_" + k, "r_" + k) + fetch("p_" + k, "p_" + k)
            src += fetch("l_" + k, "_core.lod(r_%s)[0]" % k) + fetch("m_" + k, "_core.lod(p_%s)[0]" % k)
        got = run("proposals_" + dt, src, feed)
        f64 = {k: v.astype(np.float64) for k, v in feed.items()}
        for k, (pre, post, nms, ms, eta) in sorted(cases.items()):
            rois, probs, lod = ref_generate_proposals(f64["scores"], f64["deltas"], f64["info"], f64["anchors"],
                                                      f64["var"], pre, post, nms, ms, eta)
            what = "generate_proposals %s %s" % (k, dt)
            equal(what + " lod", got["l_" + k], lod)
            equal(what + " probs' lod", got["m_" + k], lod)
            close(what + " rois", got["r_" + k], rois)
            close(what + " probs", got["p_" + k], probs)
        check(len(got["p_k"]) == 10 and len(got["p_e"]) == 2 and not np.any(got["r_e"]),
              "generate_proposals %s: post_nms_top_n 5 per image and the empty images' zero rows: %s %s" %
              (dt, got["l_k"], got["r_e"].tolist()))


# ---- references: rpn_target_assign -----------------------------------------------------------

def overlap_px(a, b):
    iw = max(min(a[2], b[2]) - max(a[0], b[0]) + 1, 0)
    ih = max(min(a[3], b[3]) - max(a[1], b[1]) + 1, 0)
    inter = iw * ih
    if inter == 0:
        return 0.0
    return inter / ((a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1) - inter)


def rpn_candidates(anchors, gt, glod, crowd, info, n, straddle, pos, neg):
    """Image n's inside anchors, boxes (scaled), best box per inside anchor, and foreground and
    background candidates (positions in the inside list), as Fluid's kernel finds them."""
    M = len(anchors)
    h, w, sc = info[n]
    inside = [i for i in range(M) if straddle < 0 or (anchors[i][0] >= -straddle and anchors[i][1] >= -straddle
                                                      and anchors[i][2] < w + straddle and anchors[i][3] < h + straddle)]
    gts = [gt[j] * sc for j in range(glod[n], glod[n + 1]) if crowd[j] == 0]
    ov = np.array([[overlap_px(anchors[i], g) for g in gts] for i in inside]).reshape(len(inside), len(gts))
    amax = ov.max(axis=1) if gts else np.full(len(inside), -np.inf)
    arg = ov.argmax(axis=1) if gts else np.zeros(len(inside), int)
    gmax = ov.max(axis=0) if gts else []
    fg = [k for k in range(len(inside)) if amax[k] >= pos or any(abs(ov[k, j] - gmax[j]) < 1e-5
                                                                  for j in range(len(gts)))]
    bg = [k for k in range(len(inside)) if amax[k] < neg]
    return inside, gts, arg, fg, bg


def ref_rpn_target_assign(anchors, gt, glod, crowd, info, batch, straddle, pos, neg, frac):
    """-> (loc index, score index, target boxes, labels, inside weights, loc lod, score lod) as Fluid's
    RpnTargetAssignKernel with use_random False (the first candidates are kept)."""
    M = len(anchors)
    loc, score, boxes, labels, weights, llod, slod = [], [], [], [], [], [0], [0]
    for n in range(len(glod) - 1):
        inside, gts, arg, fg, bg = rpn_candidates(anchors, gt, glod, crowd, info, n, straddle, pos, neg)
        fg = fg[:int(frac * batch)]
        label = [-1] * len(inside)
        for k in fg:
            label[k] = 1
        bg = bg[:batch - len(fg)]
        rows = []
        for k in bg:
            if label[k] == 1:
                rows.append((fg[0], 0.0))
            label[k] = 0
        rows += [(k, 1.0) for k in range(len(inside)) if label[k] == 1]
        for k, wt in rows:
            a, g = anchors[inside[k]], gts[arg[k]]
            ew, eh, gw, gh = a[2] - a[0] + 1, a[3] - a[1] + 1, g[2] - g[0] + 1, g[3] - g[1] + 1
            boxes.append([(g[0] + 0.5 * gw - a[0] - 0.5 * ew) / ew, (g[1] + 0.5 * gh - a[1] - 0.5 * eh) / eh,
                          np.log(gw / ew), np.log(gh / eh)])
            loc.append(inside[k] + n * M)
            weights.append([wt] * 4)
        for want in (1, 0):
            for k in range(len(inside)):
                if label[k] == want:
                    score.append(inside[k] + n * M)
                    labels.append([want])
        llod.append(len(loc))
        slod.append(len(score))
    return (np.array(loc), np.array(score), np.array(boxes).reshape(-1, 4), np.array(labels).reshape(-1, 1),
            np.array(weights).reshape(-1, 4), np.array(llod), np.array(slod))


def test_rpn_target_assign():
    # anchors of a 4x4 map (stride 8) in 3 shapes, some past the image's edge
    anchors = []
    for h in range(4):
        for w in range(4):
            for bw, bh in ((12, 12), (20, 10), (8, 24)):
                cx, cy = w * 8 + 3.5, h * 8 + 3.5
                anchors.append([cx - (bw - 1) / 2, cy - (bh - 1) / 2, cx + (bw - 1) / 2, cy + (bh - 1) / 2])
    anchors = np.array(anchors)
    M = len(anchors)
    # image 0: two boxes, a crowd box, a 3-pixel box (its best anchor is below the negative overlap);
    # image 1 (scale 2): boxes in original pixels, doubled by the op
    gt = np.array([[2, 3, 14, 13], [16, 14, 30, 26], [0, 0, 31, 31], [24, 2, 26, 4],
                   [1, 1, 7, 6], [8, 9, 14, 15]], np.float64)
    glod = np.array([0, 4, 6], np.int64)
    crowd = np.array([[0], [0], [1], [0], [0], [0]], np.int32)
    info = np.array([[32, 32, 1.0], [32, 30, 2.0]])
    for dt in ("float32", "float64"):
        feed = {"anchors": anchors.astype(dt), "var": np.ones_like(anchors).astype(dt), "gt": gt.astype(dt),
                "gt@LOD0": glod, "crowd": crowd, "crowd@LOD0": glod, "info": info.astype(dt),
                "cls": np.arange(2 * M, dtype=dt).reshape(2, M, 1),
                "pred": np.arange(2 * M * 4, dtype=dt).reshape(2, M, 4)}
        src = HEAD + data("anchors", anchors.shape, dt) + data("var", anchors.shape, dt)
        src += data("gt", gt.shape, dt, 1) + data("crowd", crowd.shape, "int32", 1) + data("info", info.shape, dt)
        src += data("cls", (2, M, 1), dt) + data("pred", (2, M, 4), dt)
        cases = {"a": (256, 0.0, 0.5, 0.7, 0.3, False), "b": (10, 0.0, 0.3, 0.5, 0.2, False),
                 "c": (64, -1.0, 0.25, 0.6, 0.3, False), "r": (12, 0.0, 0.5, 0.5, 0.3, True)}
        for k, (batch, straddle, frac, pos, neg, rnd) in sorted(cases.items()):
            src += "c_%s, p_%s, l_%s, b_%s, w_%s = layers.rpn_target_assign(pred, cls, anchors, var, gt, crowd, " \
                   "info, rpn_batch_size_per_im=%d, rpn_straddle_thresh=%r, rpn_fg_fraction=%r, " \
                   "rpn_positive_overlap=%r, rpn_negative_overlap=%r, use_random=%r)\n" % (
                       k, k, k, k, k, batch, straddle, frac, pos, neg, rnd)
            for v in "cplbw":
                src += fetch(v + "_" + k, v + "_" + k)
            src += fetch("ll_" + k, "_core.lod(b_%s)[0]" % k) + fetch("sl_" + k, "_core.lod(l_%s)[0]" % k)
        got = run("rpn_" + dt, src, feed)
        for k, (batch, straddle, frac, pos, neg, rnd) in sorted(cases.items()):
            loc, score, boxes, labels, weights, llod, slod = ref_rpn_target_assign(
                anchors, gt, glod, crowd.ravel(), info, batch, straddle, pos, neg, frac if not rnd else 0.0)
            what = "rpn_target_assign %s %s" % (k, dt)
            if rnd:
                # sampled at random: per image at most int(0.5 * 12) = 6 foreground rows, 12 rows in all,
                # each a candidate of its kind, the sample not simply the first candidates
                sl, c, lab = got["sl_" + k], got["c_" + k].ravel().astype(int), got["l_" + k].ravel()
                firsts = True
                for n in range(2):
                    inside, _, _, fg, bg = rpn_candidates(anchors, gt, glod, crowd.ravel(), info, n, straddle, pos, neg)
                    rows = list(zip(c[sl[n]:sl[n + 1]] - n * M, lab[sl[n]:sl[n + 1]]))
                    fgs = set(inside[q] for q in fg)
                    bgs = set(inside[q] for q in bg)
                    check(len(rows) <= 12 and sum(l for _, l in rows) <= 6 and
                          all((i in fgs) if l == 1 else (i in bgs) for i, l in rows),
                          what + ": image %d's rows %s should be candidates of their kind" % (n, rows))
                    firsts = firsts and [i for i, l in rows if l == 0] == sorted(
                        inside[q] for q in bg[:12 - sum(l for _, l in rows)])
                check(not firsts, what + ": use_random should not keep the first background candidates")
                continue
            equal(what + " score index", got["c_" + k].ravel().astype(int), score)
            equal(what + " location index", (got["p_" + k][:, 0] / 4).astype(int), loc)
            equal(what + " labels", got["l_" + k], labels)
            close(what + " target deltas", got["b_" + k], boxes)
            close(what + " inside weights", got["w_" + k], weights)
            equal(what + " location lod", got["ll_" + k], llod)
            equal(what + " score lod", got["sl_" + k], slod)
        check(np.any(got["w_a"] == 0) and np.any(got["w_a"] == 1),
              "rpn_target_assign: case a should have a foreground taken back by the background (weight 0)")


# ---- a tiny YOLOv3 head and a tiny RPN train -------------------------------------------------

def box_images(rng, n, size=32):
    """n images [3, size, size] of noise with 1 or 2 squares (side 6 to 14) coloured by class 0 or 1
    (red, green): their pixel boxes, classes and offsets."""
    imgs = rng.normal(0, 0.1, (n, 3, size, size)).astype("float32")
    boxes, labels, lod = [], [], [0]
    for i in range(n):
        for _ in range(rng.integers(1, 3)):
            s = int(rng.integers(6, 15))
            x, y = (int(v) for v in rng.integers(0, size - s, 2))
            c = int(rng.integers(0, 2))
            imgs[i, c, y:y + s, x:x + s] += 1.0
            boxes.append([x, y, x + s - 1, y + s - 1])
            labels.append([c])
        lod.append(len(boxes))
    return imgs, np.array(boxes, "float32"), np.array(labels, "int32"), np.array(lod, np.int64)


def train(name, src, feeds, steps):
    """Adam steps over the feeds in turn; -> the losses."""
    flp, names = compile_fl(name, src + fetch("loss", "loss"))
    exe = fluidc.Executor(fluidc.load(flp), seed=1)
    losses = []
    for step in range(steps):
        out, = exe.run(feed=feeds[step % len(feeds)], fetch_list=[names["loss"]])
        losses.append(float(np.ravel(out)[0]))
    exe.close()
    return losses


def check_falls(what, losses, ratio):
    first, last = np.mean(losses[:5]), np.mean(losses[-10:])
    check(np.all(np.isfinite(losses)) and last < ratio * first,
          "%s: loss %.4f -> %.4f, expected below %d%% of the start" % (what, first, last, int(ratio * 100)))
    print("%s: loss %.4f -> %.4f" % (what, first, last))


def test_yolov3_trains():
    """A 3-convolution backbone and YOLOv3's head (4x4 map, 3 anchors, 2 classes) on 16 synthetic
    images, Adam: the mean loss of the last 10 steps must be under 65% of the first 5's (it falls to
    about a quarter: the margin is under half the fall)."""
    src = HEAD + """
img = layers.data(name="img", shape=[3, 32, 32], dtype="float32")
gt_box = layers.data(name="gt_box", shape=[2, 4], dtype="float32")
gt_label = layers.data(name="gt_label", shape=[2], dtype="int32")
h = layers.conv2d(img, num_filters=8, filter_size=3, stride=2, padding=1, act="relu")
h = layers.conv2d(h, num_filters=16, filter_size=3, stride=2, padding=1, act="relu")
h = layers.conv2d(h, num_filters=16, filter_size=3, stride=2, padding=1, act="relu")
head = layers.conv2d(h, num_filters=3 * (5 + 2), filter_size=1)
loss = layers.mean(layers.yolov3_loss(head, gt_box, gt_label, anchors=[6, 6, 10, 10, 14, 14], anchor_mask=[0, 1, 2],
                                      class_num=2, ignore_thresh=0.7, downsample_ratio=8))
fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
"""
    rng = np.random.default_rng(11)
    feeds = []
    for _ in range(2):
        imgs, boxes, labels, lod = box_images(rng, 8)
        gb = np.zeros((8, 2, 4), "float32")
        gl = np.zeros((8, 2), "int32")
        for i in range(8):
            for k, r in enumerate(range(lod[i], lod[i + 1])):
                x1, y1, x2, y2 = boxes[r]
                gb[i, k] = [(x1 + x2 + 1) / 64, (y1 + y2 + 1) / 64, (x2 - x1 + 1) / 32, (y2 - y1 + 1) / 32]
                gl[i, k] = labels[r, 0]
        feeds.append({"img": imgs, "gt_box": gb, "gt_label": gl})
    check_falls("yolov3 training", train("yolo_train", src, feeds, 60), 0.65)


def test_rpn_trains():
    """Faster R-CNN's RPN head (anchor_generator, rpn_target_assign sampling at random,
    sigmoid cross entropy and smooth L1, generate_proposals) on 16 synthetic images, Adam: the mean
    loss of the last 10 steps must be under 60% of the first 5's (it falls to about an eighth: the
    margin is under half the fall)."""
    src = HEAD + """
img = layers.data(name="img", shape=[3, 32, 32], dtype="float32")
im_info = layers.data(name="im_info", shape=[3], dtype="float32")
gt_box = layers.data(name="gt_box", shape=[4], dtype="float32", lod_level=1)
is_crowd = layers.data(name="is_crowd", shape=[1], dtype="int32", lod_level=1)
h = layers.conv2d(img, num_filters=8, filter_size=3, stride=2, padding=1, act="relu")
feat = layers.conv2d(h, num_filters=16, filter_size=3, stride=2, padding=1, act="relu")
rpn_cls = layers.conv2d(feat, num_filters=2, filter_size=1)
rpn_bbox = layers.conv2d(feat, num_filters=8, filter_size=1)
anchors, var = layers.anchor_generator(feat, anchor_sizes=[8.0, 14.0], aspect_ratios=[1.0],
                                       variance=[1.0, 1.0, 1.0, 1.0], stride=[4.0, 4.0])
cls_logits = layers.reshape(layers.transpose(rpn_cls, perm=[0, 2, 3, 1]), shape=[0, -1, 1])
bbox_pred = layers.reshape(layers.transpose(rpn_bbox, perm=[0, 2, 3, 1]), shape=[0, -1, 4])
score_pred, loc_pred, score_tgt, loc_tgt, weight = layers.rpn_target_assign(
    bbox_pred, cls_logits, layers.reshape(anchors, [-1, 4]), layers.reshape(var, [-1, 4]), gt_box, is_crowd, im_info,
    rpn_batch_size_per_im=32, rpn_positive_overlap=0.5, rpn_negative_overlap=0.3)
cls_loss = layers.mean(layers.sigmoid_cross_entropy_with_logits(score_pred, layers.cast(score_tgt, "float32")))
reg_loss = layers.mean(layers.smooth_l1(loc_pred, loc_tgt, inside_weight=weight, outside_weight=weight, sigma=3.0))
loss = cls_loss + reg_loss
fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
rois, probs = layers.generate_proposals(layers.sigmoid(rpn_cls), rpn_bbox, im_info, anchors, var,
                                        pre_nms_top_n=50, post_nms_top_n=10, nms_thresh=0.7)
"""
    rng = np.random.default_rng(12)
    feeds = []
    for _ in range(2):
        imgs, boxes, labels, lod = box_images(rng, 8)
        feeds.append({"img": imgs, "im_info": np.tile(np.array([[32, 32, 1]], "float32"), (8, 1)),
                      "gt_box": boxes, "gt_box@LOD0": lod, "is_crowd": np.zeros((len(boxes), 1), "int32"),
                      "is_crowd@LOD0": lod})
    check_falls("rpn training", train("rpn_train", src + fetch("rois", "rois"), feeds, 60), 0.6)


# ---- references: distribute_fpn_proposals, collect_fpn_proposals -----------------------------

def ref_distribute(rois, lod, lo, hi, refer_level, refer_scale):
    """-> ([level RoIs], [level lods], restore index [R, 1]) as Fluid's kernel."""
    def level(b):
        area = 0.0 if b[2] < b[0] or b[3] < b[1] else (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
        if area <= 0:
            return lo
        return int(min(hi, max(lo, np.floor(np.log2(np.sqrt(area) / refer_scale) + refer_level))))
    lv = [level(b) for b in rois]
    out, lods, restore, base = [], [], np.zeros((len(rois), 1), np.int64), 0
    for k in range(lo, hi + 1):
        rows, l = [], [0]
        for n in range(len(lod) - 1):
            for i in range(lod[n], lod[n + 1]):
                if lv[i] == k:
                    restore[i, 0] = base + len(rows)
                    rows.append(rois[i])
            l.append(len(rows))
        out.append(np.array(rows).reshape(-1, 4))
        lods.append(np.array(l))
        base += len(rows)
    return out, lods, restore


def ref_collect(rois, scores, lods, top_n):
    items = []
    for k in range(len(rois)):
        for n in range(len(lods[k]) - 1):
            for i in range(lods[k][n], lods[k][n + 1]):
                items.append((-scores[k][i, 0], k, i, n))
    items = sorted(items, key=lambda t: t[0])[:top_n]          # stable: level, then row on ties
    items = sorted(items, key=lambda t: t[3])
    nimg = len(lods[0]) - 1
    out = np.array([rois[k][i] for _, k, i, _ in items]).reshape(-1, 4)
    lod = [0] + [sum(1 for t in items if t[3] <= n) for n in range(nimg)]
    return out, np.array(lod)


def test_fpn_proposals():
    rng = np.random.default_rng(9)
    for dt in ("float32", "float64"):
        # 3 images (the second without RoIs), RoIs from 2 to 900 pixels wide, one inverted
        sizes = np.exp(rng.uniform(np.log(2), np.log(900), (15, 2)))
        xy = rng.uniform(0, 200, (15, 2))
        rois = np.concatenate([xy, xy + sizes], axis=1)
        rois[4] = [50, 50, 40, 40]
        for i, side in enumerate((30, 150, 300, 600)):  # one RoI of each level at least
            rois[10 + i, 2:] = rois[10 + i, :2] + side
        lod = np.array([0, 9, 9, 15], np.int64)
        src = HEAD + data("rois", rois.shape, dt, 1)
        src += "multi, restore = layers.distribute_fpn_proposals(rois, min_level=2, max_level=5, refer_level=4, " \
               "refer_scale=224)\n"
        for k in range(4):
            src += fetch("r%d" % k, "multi[%d]" % k) + fetch("l%d" % k, "_core.lod(multi[%d])[0]" % k)
        src += fetch("restore", "restore")
        src += fetch("back", "layers.gather(layers.concat([_core.set_lod(m, []) for m in multi]), restore)")
        # collect: three levels of RoIs and scores (ties across levels), cut into the same 3 images
        lv = [rng.uniform(0, 100, (n, 4)) for n in (5, 7, 4)]
        lv = [np.concatenate([b[:, :2], b[:, :2] + b[:, 2:]], axis=1) for b in lv]
        sc = [np.round(rng.random((len(b), 1)), 1) for b in lv]
        llods = [np.array(l, np.int64) for l in ([0, 2, 2, 5], [0, 3, 4, 7], [0, 0, 1, 4])]
        feed = {"rois": rois.astype(dt), "rois@LOD0": lod}
        for k in range(3):
            src += data("b%d" % k, lv[k].shape, dt, 1) + data("s%d" % k, sc[k].shape, dt, 1)
            feed.update({"b%d" % k: lv[k].astype(dt), "b%d@LOD0" % k: llods[k], "s%d" % k: sc[k].astype(dt),
                         "s%d@LOD0" % k: llods[k]})
        for top in (100, 6, 0):
            src += "c%d = layers.collect_fpn_proposals([b0, b1, b2, b0], [s0, s1, s2, s0], min_level=2, " \
                   "max_level=4, post_nms_top_n=%d)\n" % (top, top)
            src += fetch("c%d" % top, "c%d" % top) + fetch("cl%d" % top, "_core.lod(c%d)[0]" % top)
        got = run("fpn_" + dt, src, feed)
        f = rois.astype(dt).astype(np.float64)
        out, lods, restore = ref_distribute(f, lod, 2, 5, 4, 224)
        for k in range(4):
            close("distribute_fpn_proposals level %d %s" % (k + 2, dt), got["r%d" % k], out[k])
            equal("distribute_fpn_proposals level %d lod %s" % (k + 2, dt), got["l%d" % k], lods[k])
        equal("distribute_fpn_proposals restore index " + dt, got["restore"], restore)
        close("distribute_fpn_proposals gathered back " + dt, got["back"], f)
        check(all(len(got["r%d" % k]) > 0 for k in range(4)), "distribute_fpn_proposals: every level should get RoIs")
        for top in (100, 6, 0):
            want, wl = ref_collect([b.astype(dt).astype(np.float64) for b in lv],
                                   [x.astype(dt).astype(np.float64) for x in sc], llods, top)
            close("collect_fpn_proposals top %d %s" % (top, dt), got["c%d" % top], want)
            equal("collect_fpn_proposals top %d lod %s" % (top, dt), got["cl%d" % top], wl)


# ---- references: generate_proposal_labels ----------------------------------------------------

def ref_proposal_labels(rois, rlod, cls, crowd, gt, glod, info, batch, frac, fg_th, bg_hi, bg_lo, weights, C,
                        agnostic=False, cascade=False):
    """-> (rois, labels, targets, inside weights, outside weights, lod) as Fluid 1.5's
    GenerateProposalLabelsKernel with use_random False (the first candidates are kept): foreground
    at or above fg_th; with cascade (is_cascade_rcnn) the image's first G RoIs dropped, candidates
    with a width or height (+1) <= 0 left out and no sampling; with agnostic (is_cls_agnostic) the
    targets in class 1's columns."""
    out = [[], [], [], [], []]
    lod = [0]
    for n in range(len(rlod) - 1):
        scale = info[n][2]
        g = gt[glod[n]:glod[n + 1]]
        r = rois[rlod[n]:rlod[n + 1]]
        if cascade:
            r = r[len(g):]
        boxes = list(g) + [x / scale for x in r]
        ov = np.array([[overlap_px(b, x) for x in g] for b in boxes]).reshape(len(boxes), len(g))
        fg, fgt, bg = [], [], []
        for i in range(len(boxes)):
            m = ov[i].max() if len(g) else -np.inf
            if i < len(g) and crowd[glod[n] + i]:
                m = -1.0
            if cascade and not (boxes[i][2] - boxes[i][0] + 1 > 0 and boxes[i][3] - boxes[i][1] + 1 > 0):
                continue
            if m >= fg_th:
                j = next(j for j in range(len(g)) if abs(m - ov[i, j]) < 1e-5)
                fg.append(i)
                fgt.append(j)
            elif bg_lo <= m < bg_hi:
                bg.append(i)
        nf = len(fg) if cascade else min(int(np.floor(batch * frac)), len(fg))
        nb = len(bg) if cascade else min(batch - nf, len(bg))
        for k, i in enumerate(fg[:nf] + bg[:nb]):
            b = boxes[i]
            label = int(cls[glod[n] + fgt[k]]) if k < nf else 0
            t, w = np.zeros(4 * C), np.zeros(4 * C)
            if label > 0:
                x = g[fgt[k]]
                ew, eh, gw, gh = b[2] - b[0] + 1, b[3] - b[1] + 1, x[2] - x[0] + 1, x[3] - x[1] + 1
                d = [(x[0] + 0.5 * gw - b[0] - 0.5 * ew) / ew, (x[1] + 0.5 * gh - b[1] - 0.5 * eh) / eh,
                     np.log(gw / ew), np.log(gh / eh)]
                col = 4 if agnostic else 4 * label
                t[col:col + 4] = np.array(d) / np.array(weights)
                w[col:col + 4] = 1
            out[0].append(np.array(b) * scale)
            out[1].append([label])
            out[2].append(t)
            out[3].append(w)
            out[4].append(w)
        lod.append(len(out[0]))
    return [np.array(o).reshape(len(o), -1) for o in out] + [np.array(lod)]


def test_generate_proposal_labels():
    rng = np.random.default_rng(21)
    # 2 images: scale 1 with 3 boxes (one crowd), scale 2 with 1 box; RoIs around the boxes and elsewhere
    gt = np.array([[4, 4, 20, 20], [30, 10, 50, 40], [0, 0, 60, 60], [10, 12, 30, 28]], np.float64)
    glod = np.array([0, 3, 4], np.int64)
    cls = np.array([[1], [2], [1], [3]], np.int32)
    crowd = np.array([[0], [0], [1], [0]], np.int32)
    info = np.array([[64, 64, 1.0], [80, 80, 2.0]])
    rois = []
    for n, (lo, hi) in enumerate(((0, 2), (3, 4))):
        for j in range(lo, hi):
            for _ in range(6):
                rois.append((gt[j] + rng.normal(0, 3, 4)) * info[n][2])
        for _ in range(8):
            x, y = rng.uniform(0, 50, 2)
            rois.append(np.array([x, y, x + rng.uniform(5, 20), y + rng.uniform(5, 20)]) * info[n][2])
        if n == 0:
            # IoU exactly 0.5 with the first box (foreground at fg_thresh 0.5), and an inverted RoI
            # (a background candidate, left out by is_cascade_rcnn)
            rois += [np.array([4.0, 4, 37, 20]), np.array([30.0, 30, 20, 40])]
    rois = np.array(rois)
    rlod = np.array([0, 22, 36], np.int64)
    for dt in ("float32", "float64"):
        feed = {"rois": rois.astype(dt), "rois@LOD0": rlod, "cls": cls, "cls@LOD0": glod, "crowd": crowd,
                "crowd@LOD0": glod, "gt": gt.astype(dt), "gt@LOD0": glod, "info": info.astype(dt)}
        src = HEAD + data("rois", rois.shape, dt, 1) + data("cls", cls.shape, "int32", 1)
        src += data("crowd", crowd.shape, "int32", 1) + data("gt", gt.shape, dt, 1) + data("info", info.shape, dt)
        # key: batch, fg_fraction, fg_thresh, bg_thresh_hi, bg_thresh_lo, weights, class_nums,
        # is_cls_agnostic, is_cascade_rcnn (c: a batch far below the candidates, which it ignores;
        # g: the agnostic targets with class_nums 2 and classes up to 3, as Cascade R-CNN passes it)
        cases = {"a": (512, 0.25, 0.5, 0.5, 0.0, [0.1, 0.1, 0.2, 0.2], 4, False, False),
                 "b": (8, 0.5, 0.6, 0.4, 0.1, [1.0, 1.0, 1.0, 1.0], 4, False, False),
                 "c": (4, 0.25, 0.5, 0.5, 0.0, [0.1, 0.1, 0.2, 0.2], 4, False, True),
                 "d": (512, 0.25, 0.6, 0.5, 0.0, [0.1, 0.1, 0.2, 0.2], 2, True, True),
                 "g": (6, 0.5, 0.5, 0.5, 0.0, [0.1, 0.1, 0.2, 0.2], 2, True, False),
                 "r": (10, 0.5, 0.5, 0.5, 0.0, [0.1, 0.1, 0.2, 0.2], 4, False, False)}
        for k, (batch, frac, fg, hi, lo, w, C, agn, casc) in sorted(cases.items()):
            src += "o_%s = layers.generate_proposal_labels(rois, cls, crowd, gt, info, batch_size_per_im=%d, " \
                   "fg_fraction=%r, fg_thresh=%r, bg_thresh_hi=%r, bg_thresh_lo=%r, bbox_reg_weights=%r, " \
                   "class_nums=%d, use_random=%r, is_cls_agnostic=%r, is_cascade_rcnn=%r)\n" % (
                       k, batch, frac, fg, hi, lo, w, C, k == "r", agn, casc)
            for i in range(5):
                src += fetch("%s%d" % (k, i), "o_%s[%d]" % (k, i))
            src += fetch(k + "lod", "_core.lod(o_%s[0])[0]" % k)
        got = run("proposal_labels_" + dt, src, feed)
        f = {key: v.astype(np.float64) if v.dtype.kind == "f" else v for key, v in feed.items()}
        for k, (batch, frac, fg, hi, lo, w, C, agn, casc) in sorted(cases.items()):
            what = "generate_proposal_labels %s %s" % (k, dt)
            if k == "r":
                # sampled at random: per image at most 5 foreground rows and 10 in all, each row a
                # foreground (label > 0, its targets in its class's columns) or a background one
                _, labs, _, inw, _, l = ref_proposal_labels(f["rois"], rlod, cls.ravel(), crowd.ravel(), f["gt"], glod,
                                                            f["info"], 10 ** 6, 0.5, fg, hi, lo, w, 4)
                gl, gw, gll = got["r1"].ravel(), got["r3"], got["rlod"]
                check(all(gll[n + 1] - gll[n] <= 10 and np.sum(gl[gll[n]:gll[n + 1]] > 0) <= 5 for n in range(2)) and
                      all((gw[i, 4 * gl[i]:4 * gl[i] + 4] == 1).all() == (gl[i] > 0) and gw[i].sum() == 4 * (gl[i] > 0)
                          for i in range(len(gl))), what + ": the sample's sizes and weights")
                continue
            want = ref_proposal_labels(f["rois"], rlod, cls.ravel(), crowd.ravel(), f["gt"], glod, f["info"], batch,
                                       frac, fg, hi, lo, w, C, agn, casc)
            close(what + " rois", got[k + "0"], want[0])
            equal(what + " labels", got[k + "1"], want[1])
            close(what + " targets", got[k + "2"], want[2])
            close(what + " inside weights", got[k + "3"], want[3])
            close(what + " outside weights", got[k + "4"], want[4])
            equal(what + " lod", got[k + "lod"], want[5])
        check(len(set(got["a1"].ravel().tolist())) == 4, "generate_proposal_labels a: labels 0 to 3 should all appear")
        # the RoI at IoU 0.5 is a foreground of case a (fg_thresh 0.5); the cascade keeps more rows
        # than its batch, none of them the inverted RoI, and is not the plain case's first rows
        check(any(np.allclose(r, [4, 4, 37, 20]) for r in got["a0"][got["a1"].ravel() > 0]),
              "generate_proposal_labels a: the RoI at IoU 0.5 should be foreground")
        check(got["clod"][1] > 4 and not any(np.allclose(r, [30, 30, 20, 40]) for r in got["c0"]) and
              any(np.allclose(r, [30, 30, 20, 40]) for r in got["a0"]),
              "generate_proposal_labels c: all candidates kept but the inverted RoI")
        check(got["d2"].shape[1] == 8 and (got["d3"][:, :4] == 0).all() and (got["d1"].ravel() == 3).any(),
              "generate_proposal_labels d: class 3's targets in class 1's columns of [S, 8]")


test_yolov3_loss()
test_generate_proposals()
test_rpn_target_assign()
test_fpn_proposals()
test_generate_proposal_labels()
test_yolov3_trains()
test_rpn_trains()
done("%d proposal values agree with their numpy references" % _count[0])
