"""Detection layers against references written here in numpy from Fluid's operator definitions
(paddle/fluid/operators/detection/*): multiclass_nms's LoD form (Scores [M, C] with BBoxes
[M, C, 4] cut into images, as Faster R-CNN's heads give them). Fixed inputs with the cases that
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



test_nms_lod()
test_nms_many()
done("%d detection values agree with their numpy references" % _count[0])
