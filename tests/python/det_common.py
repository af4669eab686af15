"""What the detection tests (test_py_detection.py, test_py_proposals.py) share: compiling a program
with flc and running it once, comparing values with a stated tolerance, and writing the .fl lines
that declare inputs and name what a test fetches (a compile-time print("FETCH", key, var.name))."""
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
