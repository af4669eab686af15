"""Detection layers against references written here in numpy from Fluid's operator definitions
(paddle/fluid/operators/detection/*): multiclass_nms's LoD form (Scores [M, C] with BBoxes
[M, C, 4] cut into images, as Faster R-CNN's heads give them), and roi_perspective_transform
(roi_perspective_transform_op.cc: its matrix, its test of a point against the quadrilateral, its
bilinear sampling, all with its tolerance of 1e-4), and generate_mask_labels (generate_mask_labels_op.cc
and mask_util.cc: COCO's polygon-to-mask, in float32 as Fluid's kernel). Fixed inputs with the cases that
decide behaviour: an image without rows, ties in scores, a score equal to the threshold, boxes
outside the image, keep_top_k cutting through a tie, nothing kept. Values agree within 1e-5
(relative above 1), in float32 and float64."""
import numpy as np

from det_common import HEAD, _count, close, data, equal, fetch, nms_class, ref_nms, run
from pyt_common import check, done


def ref_nms_lod(boxes, scores, lod, bg, sth, top_k, nth, eta, keep_k, normalized, f32):
    """Fluid's MultiClassNMS, LoD form: per image (rows lod[i]..lod[i+1]) and class c, the scores
    of column c and the boxes boxes[:, c]; a class's kept rows in row order; keep_top_k over the
    (class, row) pairs by score (stable), regrouped by class and row."""
    if f32:
        sth, nth = float(np.float32(sth)), float(np.float32(nth))
    C = scores.shape[1]
    rows, out_lod = [], [0]
    for n in range(len(lod) - 1):
        r0, r1 = lod[n], lod[n + 1]
        sel = {}
        for c in range(C):
            if c == bg:
                continue
            sel[c] = sorted(nms_class([(scores[r, c], r) for r in range(r0, r1)], lambda r: boxes[r, c], sth, top_k, nth,
                                      eta, normalized))
        if keep_k > -1 and sum(len(v) for v in sel.values()) > keep_k:
            pairs = sorted([(scores[r, c], c, r) for c in sorted(sel) for r in sel[c]], key=lambda p: -p[0])
            sel = {}
            for _, c, r in pairs[:keep_k]:
                sel.setdefault(c, []).append(r)
            sel = {c: sorted(v) for c, v in sel.items()}
        for c in sorted(sel):
            for r in sel[c]:
                rows.append([c, scores[r, c]] + list(boxes[r, c]))
        out_lod.append(len(rows))
    if not rows:
        return np.array([[-1.0]]), [0, 1]
    return np.array(rows), out_lod


def test_nms_lod():
    rng = np.random.default_rng(5)
    for dt in ("float32", "float64"):
        C = 4
        lod = [0, 7, 7, 16, 19]  # image 1 has no rows
        M = lod[-1]
        # per-class boxes clustered around a few centres (overlaps around the thresholds), some
        # reaching outside [0, 1]; scores in tenths (ties, scores equal to a threshold)
        ctr = rng.random((M, 1, 2)) * 0.8 + 0.1 + rng.normal(0, 0.04, (M, C, 2))
        ctr[3:7] = ctr[0:4] + rng.normal(0, 0.02, (4, C, 2))
        half = rng.random((M, C, 2)) * 0.2 + 0.05
        boxes = np.concatenate([ctr - half, ctr + half], -1).astype(dt)
        scores = np.round(rng.random((M, C)), 1).astype(dt)
        scores[16:] = 0.05  # image 3: nothing above 0.1
        boxes_pix = (boxes.astype(np.float64) * 40).astype(dt)
        src = HEAD + data("bb", [M, C, 4], dt, lod_level=1) + data("bbp", [M, C, 4], dt, lod_level=1)
        src += data("sc", [M, C], dt)
        cases = {
            "plain": ("bb", "score_threshold=0.1, nms_top_k=-1, keep_top_k=-1", 0, 0.1, -1, 0.3, 1.0, -1, True),
            "keep": ("bb", "score_threshold=0.3, nms_top_k=4, keep_top_k=5, nms_threshold=0.5", 0, 0.3, 4, 0.5, 1.0, 5, True),
            "eta": ("bb", "score_threshold=0.0, nms_top_k=-1, keep_top_k=100, nms_threshold=0.9, nms_eta=0.7, background_label=-1",
                    -1, 0.0, -1, 0.9, 0.7, 100, True),
            "pixels": ("bbp", "score_threshold=0.3, nms_top_k=-1, keep_top_k=-1, nms_threshold=0.4, normalized=False, background_label=2",
                       2, 0.3, -1, 0.4, 1.0, -1, False),
            "none": ("bb", "score_threshold=1.0, nms_top_k=-1, keep_top_k=-1", 0, 1.0, -1, 0.3, 1.0, -1, True),
        }
        for k, (b, args, *_) in cases.items():
            src += "%s = layers.multiclass_nms(%s, sc, %s)\n" % (k, b, args)
            src += fetch(k, k) + fetch(k + "_lod", "_core.lod(%s)[0]" % k)
        lod64 = np.array(lod, np.int64)
        got = run("nms_lod_" + dt, src, {"bb": boxes, "bb@LOD0": lod64, "bbp": boxes_pix, "bbp@LOD0": lod64,
                                         "sc": scores})
        src_of = {"bb": boxes, "bbp": boxes_pix}
        for k, (b, _, bg, sth, top_k, nth, eta, keep_k, norm) in cases.items():
            rows, olod = ref_nms_lod(src_of[b].astype(np.float64), scores.astype(np.float64), lod, bg, sth, top_k, nth,
                                     eta, keep_k, norm, dt == "float32")
            close("multiclass_nms LoD %s %s" % (k, dt), got[k], rows)
            equal("multiclass_nms LoD %s offsets %s" % (k, dt), got[k + "_lod"], np.array(olod))
        p = got["plain_lod"]
        check(p[2] == p[1] and p[4] == p[3], "multiclass_nms LoD: images 1 and 3 should have no detection, found %s" % p)
        check(got["none"].shape == (1, 1), "multiclass_nms LoD: nothing kept should be [[-1]]")
        check(np.min(got["keep"][:, 1]) > 0.35, "multiclass_nms LoD: a score equal to score_threshold 0.3 is not above it")
        # within a class the rows come in row order, not best first: some class shows it
        lab, sco = got["plain"][:p[1], 0], got["plain"][:p[1], 1]
        check(any(lab[i] == lab[i + 1] and sco[i] < sco[i + 1] for i in range(len(lab) - 1)),
              "multiclass_nms LoD: the inputs should show a class's rows in row order (a lower score first)")


def test_nms_many():
    """Past 128 candidates the kernel files kept boxes in a grid (detection_match.c): the same
    verdicts as the plain greedy pass, checked on 500 boxes of mixed sizes with odd ones among
    them (inverted, zero-sized, far outside the image, one covering everything), both forms,
    normalized and pixel boxes, and an adaptive threshold."""
    rng = np.random.default_rng(11)
    for dt in ("float32", "float64"):
        M, C = 500, 3
        ctr = rng.random((M, 2)) * 1.2 - 0.1
        half = rng.uniform(0.005, 0.08, (M, 2)) * np.where(rng.random((M, 1)) < 0.1, 4.0, 1.0)
        boxes = np.concatenate([ctr - half, ctr + half], 1)
        boxes[5] = [0.6, 0.6, 0.4, 0.4]      # inverted
        boxes[6] = [0.3, 0.3, 0.3, 0.3]      # a point
        boxes[7] = [-0.5, -0.5, 1.5, 1.5]    # covers everything
        boxes[8] = [3.0, 3.0, 3.2, 3.1]      # far outside
        boxes[9] = boxes[10]                 # a duplicate (ties with its twin)
        boxes = boxes.astype(dt)
        scores = np.round(rng.random((1, C, M)), 2).astype(dt)  # ties
        scores[0, :, 7] = 0.5
        pix = (boxes.astype(np.float64) * 300).astype(dt)
        lod = [0, 200, 500]
        per_class = np.repeat(boxes[:, None, :], C, 1) + rng.normal(0, 0.003, (M, C, 4)).astype(dt)
        per_class = per_class.astype(dt)
        sc2 = scores[0].T.copy()
        src = HEAD + data("b", [1, M, 4], dt) + data("bp", [1, M, 4], dt) + data("s", [1, C, M], dt)
        src += data("pc", [M, C, 4], dt, lod_level=1) + data("s2", [M, C], dt)
        src += "d1 = layers.multiclass_nms(b, s, score_threshold=0.0, nms_top_k=-1, keep_top_k=-1, nms_threshold=0.3, background_label=-1)\n"
        src += "d2 = layers.multiclass_nms(bp, s, score_threshold=0.2, nms_top_k=500, keep_top_k=400, nms_threshold=0.45, normalized=False, background_label=0)\n"
        src += "d3 = layers.multiclass_nms(b, s, score_threshold=0.0, nms_top_k=200, keep_top_k=-1, nms_threshold=0.9, nms_eta=0.8, background_label=-1)\n"
        src += "d4 = layers.multiclass_nms(pc, s2, score_threshold=0.1, nms_top_k=-1, keep_top_k=-1, nms_threshold=0.3, background_label=-1)\n"
        src += "d5 = layers.multiclass_nms(b, s, score_threshold=0.0, nms_top_k=-1, keep_top_k=-1, nms_threshold=0.0, background_label=-1)\n"
        for k in ("d1", "d2", "d3", "d4", "d5"):
            src += fetch(k, k)
        got = run("nms_many_" + dt, src, {"b": boxes[None], "bp": pix[None], "s": scores, "pc": per_class,
                                          "pc@LOD0": np.array(lod, np.int64), "s2": sc2})
        f32 = dt == "float32"
        b64, p64, s64 = boxes[None].astype(np.float64), pix[None].astype(np.float64), scores.astype(np.float64)
        close("multiclass_nms many " + dt, got["d1"], ref_nms(b64, s64, -1, 0.0, -1, 0.3, 1.0, -1, True, f32)[0])
        close("multiclass_nms many pixels " + dt, got["d2"], ref_nms(p64, s64, 0, 0.2, 500, 0.45, 1.0, 400, False, f32)[0])
        close("multiclass_nms many eta " + dt, got["d3"], ref_nms(b64, s64, -1, 0.0, 200, 0.9, 0.8, -1, True, f32)[0])
        close("multiclass_nms many LoD " + dt, got["d4"],
              ref_nms_lod(per_class.astype(np.float64), sc2.astype(np.float64), lod, -1, 0.1, -1, 0.3, 1.0, -1, True, f32)[0])
        close("multiclass_nms many threshold 0 " + dt, got["d5"], ref_nms(b64, s64, -1, 0.0, -1, 0.0, 1.0, -1, True, f32)[0])
        check(len(got["d1"]) > 600, "multiclass_nms many: most boxes should survive 0.3, kept %d" % len(got["d1"]))



# ---- roi_perspective_transform ------------------------------------------------------------------

EPS = 1e-4


def _ge(a, b):
    return a > b or abs(a - b) < EPS


def _le(a, b):
    return a < b or abs(a - b) < EPS


def _gt(a, b):
    return a - b > EPS


def _in_quad(x, y, qx, qy):
    for i in range(4):
        xs, ys, xe, ye = qx[i], qy[i], qx[(i + 1) % 4], qy[(i + 1) % 4]
        if abs(ys - ye) < EPS:
            if abs(y - ys) < EPS and abs(y - ye) < EPS and _ge(x, min(xs, xe)) and _le(x, max(xs, xe)):
                return True
        else:
            ix = (y - ys) * (xe - xs) / (ye - ys) + xs
            if abs(ix - x) < EPS and _ge(y, min(ys, ye)) and _le(y, max(ys, ye)):
                return True
    cross = 0
    for i in range(4):
        xs, ys, xe, ye = qx[i], qy[i], qx[(i + 1) % 4], qy[(i + 1) % 4]
        if abs(ys - ye) < EPS or _le(y, min(ys, ye)) or _gt(y, max(ys, ye)):
            continue
        ix = (y - ys) * (xe - xs) / (ye - ys) + xs
        if abs(ix - x) < EPS:
            return True
        if _gt(ix, x):
            cross += 1
    return cross % 2 == 1


def _matrix(qx, qy, th, tw):
    x0, x1, x2, x3 = qx
    y0, y1, y2, y3 = qy
    l1, l2 = np.hypot(x0 - x1, y0 - y1), np.hypot(x1 - x2, y1 - y2)
    l3, l4 = np.hypot(x2 - x3, y2 - y3), np.hypot(x3 - x0, y3 - y0)
    eh, ew = (l2 + l4) / 2, (l1 + l3) / 2
    nh = max(2, th)
    v = ew * (nh - 1) / eh
    nw = max(2, min(int(np.floor(v + 0.5)) + 1, tw))  # std::round: halves away from zero (v >= 0)
    dx1, dx2, dx3 = x1 - x2, x3 - x2, x0 - x1 + x2 - x3
    dy1, dy2, dy3 = y1 - y2, y3 - y2, y0 - y1 + y2 - y3
    den = dx1 * dy2 - dx2 * dy1 + 1e-5
    m = np.zeros(9)
    m[6] = (dx3 * dy2 - dx2 * dy3) / den / (nw - 1)
    m[7] = (dx1 * dy3 - dx3 * dy1) / den / (nh - 1)
    m[8] = 1
    m[3] = (y1 - y0 + m[6] * (nw - 1) * y1) / (nw - 1)
    m[4] = (y3 - y0 + m[7] * (nh - 1) * y3) / (nh - 1)
    m[5] = y0
    m[0] = (x1 - x0 + m[6] * (nw - 1) * x1) / (nw - 1)
    m[1] = (x3 - x0 + m[7] * (nh - 1) * x3) / (nh - 1)
    m[2] = x0
    return m


def _bilinear(img, x, y):
    H, W = img.shape
    if _ge(-0.5, x) or _ge(x, W - 0.5) or _ge(-0.5, y) or _ge(y, H - 0.5):
        return 0.0
    x = 0.0 if _ge(0, x) else x
    y = 0.0 if _ge(0, y) else y
    xf, yf = int(np.floor(x)), int(np.floor(y))
    xc, yc = xf + 1, yf + 1
    if xf >= W - 1:
        xf = xc = W - 1
        x = float(xf)
    if yf >= H - 1:
        yf = yc = H - 1
        y = float(yf)
    fx, fy = x - xf, y - yf
    return ((1 - fx) * (1 - fy) * img[yf, xf] + (1 - fx) * fy * img[yc, xf] + fx * fy * img[yc, xc] +
            fx * (1 - fy) * img[yf, xc])


def ref_perspective(x, rois, lod, th, tw, scale):
    """Fluid's CPUROIPerspectiveTransformOpKernel in float64."""
    out = np.zeros((len(rois), x.shape[1], th, tw))
    for n in range(len(lod) - 1):
        for r in range(lod[n], lod[n + 1]):
            qx, qy = rois[r, 0::2] * scale, rois[r, 1::2] * scale
            m = _matrix(qx, qy, th, tw)
            for h in range(th):
                for w in range(tw):
                    u, v, z = m[0] * w + m[1] * h + m[2], m[3] * w + m[4] * h + m[5], m[6] * w + m[7] * h + m[8]
                    sx, sy = u / z, v / z
                    if _in_quad(sx, sy, qx, qy):
                        for c in range(x.shape[1]):
                            out[r, c, h, w] = _bilinear(x[n, c], sx, sy)
    return out


def test_roi_perspective_transform():
    rng = np.random.default_rng(9)
    x = rng.normal(0, 1, (3, 2, 9, 11))
    # image 0: the whole image (the identity where nw = tw), a rotated square, a trapezoid (a true
    # perspective), a region reaching past the image's corner; image 1 none; image 2: a sliver
    # wider than high (nw clamped to tw), corners at half cells, a region of one cell
    rois = np.array([[0, 0, 10, 0, 10, 8, 0, 8], [5, 0, 9, 4, 5, 8, 1, 4], [2, 1, 8, 1, 10, 7, 0, 7],
                     [6, 5, 13, 4, 14, 11, 7, 12], [0.5, 3, 10.5, 3, 10.5, 4, 0.5, 4], [1.5, 1.5, 6.5, 2.5, 6, 7.5, 1, 6.5],
                     [4, 4, 5, 4, 5, 5, 4, 5]], np.float64)
    lod = [0, 4, 4, 7]
    cases = {"a": (9, 11, 1.0), "b": (5, 7, 1.0), "c": (1, 3, 1.0), "d": (6, 12, 0.5), "e": (4, 4, 2.0)}
    for dt in ("float32", "float64"):
        src = HEAD + "x = layers.data(name='x', shape=[2, 9, 11], dtype=%r)\n" % dt + data("r", rois.shape, dt, 1)
        for k, (th, tw, sc) in sorted(cases.items()):
            src += "%s = layers.roi_perspective_transform(x, r, %d, %d, spatial_scale=%r)\n" % (k, th, tw, sc)
            src += fetch(k, k)
        got = run("roi_perspective_" + dt, src, {"x": x.astype(dt), "r": rois.astype(dt), "r@LOD0": np.array(lod, np.int64)})
        xf, rf = x.astype(dt).astype(np.float64), rois.astype(dt).astype(np.float64)
        for k, (th, tw, sc) in sorted(cases.items()):
            close("roi_perspective_transform %s %s" % (k, dt), got[k], ref_perspective(xf, rf, lod, th, tw, sc))
        # the whole image at its own size is the image; a region narrower than tw leaves zeros
        close("roi_perspective_transform identity " + dt, got["a"][0], xf[0])
        check(np.all(got["a"][1][:, :, 9:] == 0) and np.all(got["a"][1][:, :, :9] != 0),
              "roi_perspective_transform a: the rotated square fills 9 columns (nw 9), the last 2 are 0")
        check(np.all(got["d"][3][:, :, -1] == 0) and np.any(got["d"][3] != 0),
              "roi_perspective_transform d: the region past the image's corner keeps some values and zeros")


# ---- generate_mask_labels -----------------------------------------------------------------------

F = np.float32


def ref_poly2mask(xy, h, w):
    """mask_util.cc's Poly2Mask: the polygon xy (k x 2, float32) into an h x w 0/1 mask."""
    k = len(xy)
    x = [int(5.0 * float(p[0]) + .5) for p in xy] + [0]
    y = [int(5.0 * float(p[1]) + .5) for p in xy] + [0]
    x[k], y[k] = x[0], y[0]
    u, v = [], []
    for j in range(k):
        xs, xe, ys, ye = x[j], x[j + 1], y[j], y[j + 1]
        dx, dy = abs(xe - xs), abs(ys - ye)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        s = (ye - ys) / dx if dx >= dy else (xe - xs) / dy
        for d in range((dx if dx >= dy else dy) + 1):
            t = (dx if dx >= dy else dy) - d if flip else d
            if dx >= dy:
                u.append(t + xs)
                v.append(int(ys + s * t + .5))
            else:
                v.append(t + ys)
                u.append(int(xs + s * t + .5))
    a = []
    for j in range(1, len(u)):
        if u[j] == u[j - 1]:
            continue
        xd = float(u[j] if u[j] < u[j - 1] else u[j] - 1)
        xd = (xd + .5) / 5.0 - .5
        if np.floor(xd) != xd or xd < 0 or xd > w - 1:
            continue
        yd = float(v[j] if v[j] < v[j - 1] else v[j - 1])
        yd = (yd + .5) / 5.0 - .5
        yd = np.ceil(0 if yd < 0 else h if yd > h else yd)
        a.append(int(xd) * h + int(yd))
    a.append(h * w)
    a.sort()
    a = [a[0]] + [a[j] - a[j - 1] for j in range(1, len(a))]
    b, j = [a[0]], 1
    while j < len(a):
        if a[j] > 0:
            b.append(a[j])
            j += 1
        else:
            j += 1
            if j < len(a):
                b[-1] += a[j]
                j += 1
    flat, val = [], 0
    for cnt in b:
        flat += [val] * cnt
        val = 1 - val
    return np.array(flat[:h * w], np.int32).reshape(w, h).T


def _iou_f32(a, b):
    iw = F(min(a[2], b[2]) - max(a[0], b[0]) + F(1))
    ih = F(min(a[3], b[3]) - max(a[1], b[1]) + F(1))
    inter = F(max(iw, F(0)) * max(ih, F(0)))
    if inter == 0:
        return F(0)
    return F(inter / F(F((a[2] - a[0] + F(1)) * (a[3] - a[1] + F(1))) + F((b[2] - b[0] + F(1)) * (b[3] - b[1] + F(1))) - inter))


def ref_mask_labels(info, cls, glod, crowd, objs, rois, labels, rlod, C, M):
    """Fluid's GenerateMaskLabelsKernel: objs[g] the polygons (lists of (x, y)) of object g."""
    out_r, out_h, out_m, lod = [], [], [], [0]
    for n in range(len(rlod) - 1):
        r0, r1 = rlod[n], rlod[n + 1]
        if r0 == r1:
            lod.append(len(out_r))
            continue
        scale = F(info[n][2])
        gts = [g for g in range(glod[n], glod[n + 1]) if cls[g] > 0 and crowd[g] == 0]
        boxes = []
        for g in gts:
            pts = np.concatenate([np.array(p, F) for p in objs[g]])
            boxes.append([pts[:, 0].min(), pts[:, 1].min(), max(F(np.finfo(F).tiny), pts[:, 0].max()),
                          max(F(np.finfo(F).tiny), pts[:, 1].max())])
        fg = [r for r in range(r0, r1) if labels[r] > 0]
        for r in fg:
            box = [F(F(v) / scale) for v in rois[r]]
            best, top = 0, F(np.finfo(F).tiny)
            for j, b in enumerate(boxes):
                o = _iou_f32(box, b)
                if o > top:
                    best, top = j, o
            w, h = max(F(box[2] - box[0]), F(1)), max(F(box[3] - box[1]), F(1))
            mask = np.zeros((M, M), np.int32)
            for poly in objs[gts[best]]:
                p = [(F(F(F(x) - box[0]) * F(M)) / w, F(F(F(y) - box[1]) * F(M)) / h) for x, y in poly]
                mask |= ref_poly2mask(p, M, M)
            row = -np.ones(C * M * M, np.int32)
            row[labels[r] * M * M:(labels[r] + 1) * M * M] = mask.ravel()
            out_r.append([F(v * scale) for v in box])
            out_h.append([r - r0])
            out_m.append(row)
        if not fg:
            out_r.append([F(F(F(v) / scale) * scale) for v in rois[r0]])
            out_h.append([0])
            out_m.append(-np.ones(C * M * M, np.int32))
        lod.append(len(out_r))
    return np.array(out_r).reshape(-1, 4), np.array(out_h).reshape(-1, 1), np.array(out_m).reshape(len(out_m), -1), lod


def test_generate_mask_labels():
    # image 0 (scale 1): a triangle of class 1, an object of class 2 in two polygons (their union),
    # a crowd object and one of class 0 (neither gives masks), a pentagon of class 3 reaching past
    # the image's left edge; RoIs around them, one overlapping nothing (the first object's mask),
    # background ones; image 1: no RoIs; image 2 (scale 2): background RoIs only (its first RoI,
    # class 0, all -1)
    objs = [[[(3, 2), (14, 4), (6, 15)]],
            [[(20, 20), (28, 20), (28, 26)], [(22, 27), (30, 27.5), (30, 34), (21.3, 33.8)]],
            [[(0, 0), (10, 0), (10, 10)]], [[(5, 5), (8, 5), (8, 8)]],
            [[(-3, 10), (4, 12.5), (6, 20), (0.7, 24), (-2, 18)]],
            [[(2, 2), (9, 2), (9, 9), (2, 9)]]]
    cls = np.array([1, 2, 1, 0, 3, 2], np.int32)
    crowd = np.array([0, 0, 1, 0, 0, 0], np.int32)
    glod = [0, 5, 5, 6]
    rois = np.array([[2, 1, 15, 16], [19.5, 18, 31, 35], [-4, 9, 7, 25], [40, 40, 50, 50], [3, 3, 12, 12],
                     [0, 0, 30, 30], [4, 4, 20, 20], [10, 10, 30, 30]], np.float32)
    labels = np.array([1, 2, 3, 1, 0, 2, 0, 0], np.int32)
    rlod = [0, 6, 6, 8]
    info = np.array([[40, 40, 1], [40, 40, 1], [80, 80, 2]], np.float32)
    pts = [p for o in objs for poly in o for p in poly]
    l2 = np.cumsum([0] + [len(poly) for o in objs for poly in o])
    l1 = np.cumsum([0] + [len(o) for o in objs])
    feed = {"info": info, "cls": cls.reshape(-1, 1), "cls@LOD0": np.array(glod, np.int64),
            "crowd": crowd.reshape(-1, 1), "crowd@LOD0": np.array(glod, np.int64),
            "segms": np.array(pts, np.float32), "segms@LOD0": np.array(glod, np.int64),
            "segms@LOD1": l1.astype(np.int64), "segms@LOD2": l2.astype(np.int64),
            "rois": rois, "rois@LOD0": np.array(rlod, np.int64), "labels": labels.reshape(-1, 1),
            "labels@LOD0": np.array(rlod, np.int64)}
    src = HEAD + data("info", info.shape) + data("cls", [6, 1], "int32", 1) + data("crowd", [6, 1], "int32", 1)
    src += "segms = layers.data(name='segms', shape=[2], dtype='float32', lod_level=3)\n"
    src += data("rois", rois.shape, "float32", 1) + data("labels", [8, 1], "int32", 1)
    for k, (C, M) in (("a", (4, 14)), ("b", (5, 7)), ("c", (4, 3))):
        src += "%s = layers.generate_mask_labels(info, cls, crowd, segms, rois, labels, num_classes=%d, resolution=%d)\n" % (k, C, M)
        for i in range(3):
            src += fetch("%s%d" % (k, i), "%s[%d]" % (k, i))
        src += fetch(k + "lod", "_core.lod(%s[0])[0]" % k)
    got = run("mask_labels", src, feed)
    for k, (C, M) in (("a", (4, 14)), ("b", (5, 7)), ("c", (4, 3))):
        want = ref_mask_labels(info, cls, glod, crowd, objs, rois, labels, rlod, C, M)
        close("generate_mask_labels %s rois" % k, got[k + "0"], want[0])
        equal("generate_mask_labels %s roi_has_mask" % k, got[k + "1"], want[1])
        close("generate_mask_labels %s masks" % k, got[k + "2"], want[2])
        equal("generate_mask_labels %s lod" % k, got[k + "lod"], np.array(want[3]))
    # the triangle at 14x14 in its own box: a filled triangle (neither empty nor full); the RoI far
    # from every object takes the first object's mask (all outside: 0); the two polygons of class 2
    # both show in the RoI around them; image 2's row is all -1
    m = got["a2"].reshape(-1, 4, 14, 14)
    check(0.3 < m[0, 1].mean() < 0.7 and m[0, 0].min() == -1 and m[3, 1].sum() == 0 and
          m[1, 2, :6].sum() > 0 and m[1, 2, 8:].sum() > 0 and (m[5] == -1).all(),
          "generate_mask_labels a: the masks' shapes %s" % [m[0, 1].mean(), m[3, 1].sum(), m[1, 2, :6].sum(), m[1, 2, 8:].sum()])


test_nms_lod()
test_nms_many()
test_roi_perspective_transform()
test_generate_mask_labels()
done("%d detection values agree with their numpy references" % _count[0])
