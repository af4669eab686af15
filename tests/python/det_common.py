"""What the detection tests (test_py_detection.py, test_py_proposals.py, test_py_det_layers.py) share:
compiling a program with flc and running it once, comparing values with a stated tolerance, writing
the .fl lines that declare inputs and name what a test fetches (a compile-time print("FETCH", key,
var.name)), and Fluid's box overlap."""
import os
import subprocess
import sys

import numpy as np

import fluidc
from pyt_common import FLC, check, done, tmpdir

TMP = tmpdir()
TOL = 1e-5
_count = [0]


def compile_fl(name, src):
    """flc build of src; returns (flp path, {key: var name}) from its FETCH lines."""
    fl = os.path.join(TMP, name + ".fl")
    with open(fl, "w") as f:
        f.write(src)
    out = os.path.join(TMP, name + ".flp")
    r = subprocess.run([FLC, "build", fl, "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("flc build %s failed:\n%s%s" % (name, r.stdout, r.stderr))
    names = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == "FETCH":
            names[w[1]] = w[2]
    return out, names


def run(name, src, feed):
    """Compiles src and runs it once (predict: no parameter changes); {key: array}."""
    flp, names = compile_fl(name, src)
    exe = fluidc.Executor(fluidc.load(flp))
    keys = sorted(names)
    got = exe.predict(feed=feed, fetch_list=[names[k] for k in keys])
    exe.close()
    return dict(zip(keys, got))


def close(what, got, want, tol=TOL):
    """got == want within tol (relative above 1), same shape."""
    _count[0] += 1
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        check(False, "%s: shape %s, expected %s" % (what, got.shape, want.shape))
        return
    # a degenerate box (zero width) gives Fluid's inf or nan: those must be the same non-finite
    fin = np.isfinite(want)
    same = (np.isnan(got) & np.isnan(want)) | (got == want)
    with np.errstate(invalid="ignore"):
        err = np.where(fin, np.abs(got - want) / np.maximum(1.0, np.abs(want)), np.where(same, 0.0, np.inf))
    err = np.where(np.isnan(err), np.inf, err)
    ok = bool(np.all(err <= tol)) if err.size else True
    if not ok:
        i = np.unravel_index(np.argmax(err), err.shape)
        check(False, "%s: at %s got %r, expected %r (%d of %d elements differ)" %
              (what, i, got[i], want[i], int(np.sum(err > tol)), err.size))


def equal(what, got, want):
    _count[0] += 1
    got, want = np.asarray(got), np.asarray(want)
    check(got.shape == want.shape and np.array_equal(got, want),
          "%s: got %s, expected %s" % (what, got.tolist(), want.tolist()))


HEAD = "import fluid\nimport _core\nfrom fluid import layers\n"


def data(name, shape, dtype="float32", lod_level=0):
    if lod_level:  # rows of sequences: [-1, ...] and its offsets NAME@LOD0 ...
        return ("%s = layers.data(name=%r, shape=%r, dtype=%r, lod_level=%d)\n"
                % (name, name, list(shape[1:]), dtype, lod_level))
    return ("%s = layers.data(name=%r, shape=%r, dtype=%r, lod_level=%d, append_batch_size=False)\n"
            % (name, name, list(shape), dtype, lod_level))


def fetch(key, expr):
    return "print(\"FETCH\", %r, (%s).name)\n" % (key, expr)


def ref_ap(prec, rec, ap):
    """Fluid's average precision of one class from its precisions and recalls (best first):
    'integral' (the area under the curve) or '11point' (VOC2007, with the operator's early stop)."""
    if ap == "integral":
        total, prev = 0.0, 0.0
        for i in range(len(prec)):
            if abs(rec[i] - prev) > 1e-6:
                total += prec[i] * abs(rec[i] - prev)
            prev = rec[i]
        return total
    mp, start = [0.0] * 11, len(prec) - 1
    for j in range(10, -1, -1):
        for i in range(start, -1, -1):
            if rec[i] < j / 10.0:
                start = i
                if j > 0:
                    mp[j - 1] = mp[j]
                break
            mp[j] = max(mp[j], prec[i])
    return sum(mp) / 11


def cround(x):
    """C's round(): halves away from zero (numpy rounds them to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def jaccard(a, b, normalized):
    """Fluid's JaccardOverlap: 0 for boxes apart; pixel boxes count both edges."""
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    n = 0.0 if normalized else 1.0

    def area(x):
        if x[2] < x[0] or x[3] < x[1]:
            return 0.0
        return (x[2] - x[0] + n) * (x[3] - x[1] + n)
    inter = (min(a[2], b[2]) - max(a[0], b[0]) + n) * (min(a[3], b[3]) - max(a[1], b[1]) + n)
    return inter / (area(a) + area(b) - inter)


def nms_class(items, box, sth, top_k, nth, eta, normalized):
    """Fluid's NMSFast of one class: items (score, index), box(index) its box; the indices above
    sth, best first (stable), the top_k best, each kept when it overlaps no kept box by more than
    the threshold (times eta after a keep while above 0.5). The kept indices in that order."""
    cand = sorted([(s, i) for s, i in items if s > sth], key=lambda p: -p[0])
    if top_k > -1:
        cand = cand[:top_k]
    kept, th = [], nth
    for _, i in cand:
        if all(jaccard(box(i), box(k), normalized) <= th for k in kept):
            kept.append(i)
            if eta < 1 and th > 0.5:
                th *= eta
    return kept


def ref_nms(boxes, scores, bg, sth, top_k, nth, eta, keep_k, normalized, f32):
    """Fluid's MultiClassNMS image by image (boxes [N, M, 4], scores [N, C, M]): rows (label, score,
    box) and the image offsets; [[-1]] cut by [0, 1] when nothing is kept. With f32 the thresholds
    are float32 values, as Fluid's float kernel compares them."""
    if f32:
        sth, nth = float(np.float32(sth)), float(np.float32(nth))
    N, C, M = scores.shape
    rows, lod = [], [0]
    for n in range(N):
        sel = {c: nms_class([(scores[n, c, i], i) for i in range(M)], lambda i: boxes[n, i], sth, top_k, nth, eta,
                            normalized) for c in range(C) if c != bg}
        if keep_k > -1 and sum(len(v) for v in sel.values()) > keep_k:
            pairs = sorted([(scores[n, c, i], c, i) for c in sorted(sel) for i in sel[c]], key=lambda p: -p[0])
            sel = {}
            for _, c, i in pairs[:keep_k]:
                sel.setdefault(c, []).append(i)
        for c in sorted(sel):
            rows += [[c, scores[n, c, i]] + list(boxes[n, i]) for i in sel[c]]
        lod.append(len(rows))
    return (np.array(rows), lod) if rows else (np.array([[-1.0]]), [0, 1])
