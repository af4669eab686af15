#!/bin/sh
# Benchmark (prints figures, never fails on time): multiclass_nms and iou_similarity on the box
# counts of detection models (2,000-8,000 boxes: SSD's priors, an RPN's anchors per image), one
# thread, side by side with plain references of the same definitions: numpy (a vectorised greedy
# NMS: one IoU row of the kept box against the rest per keep; iou_similarity by broadcasting) and,
# when Debian's python3-torch is there, the same two in torch (no torchvision). The boxes are
# normalized, centres uniform in the image, sides 0.02-0.2 (most boxes survive a 0.45 threshold:
# the greedy loop's worst region); NMS runs on one image and one class, every box a candidate
# (score_threshold 0, nms_top_k -1, keep_top_k -1), so it is the whole sort + suppression.
# fluidc's time is one run of the compiled program through the Python package's Executor
# (feeding and fetching included), the best of REPS; each reference's is its best of REPS too.
# The kept counts of the three are printed and must agree (the script stops when they do not).
# usage: tests/bench/bench_nms.sh [BUILD_DIR]   (env: REPS=5, SIZES="2000 4000 8000", PYTHON=/usr/bin/python3)
set -eu
build=$(cd "${1:-build}" && pwd)
[ -x "$build/tools/flc" ] && [ -d "$build/python/fluidc" ] || { echo "bench_nms: $build/tools/flc or $build/python not found; build first"; exit 2; }
py=${PYTHON:-/usr/bin/python3}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
PYTHONPATH="$build/python" FLC="$build/tools/flc" REPS=${REPS:-5} SIZES=${SIZES:-"2000 4000 8000"} "$py" - <<'PY'
import os, subprocess, tempfile, time
import numpy as np
import fluidc

flc, reps = os.environ["FLC"], int(os.environ["REPS"])
try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None


def best(f):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f()
        t.append(time.perf_counter() - t0)
    return min(t), r


def np_iou(a, b):  # iou_similarity: normalized areas
    iw = np.clip(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    ih = np.clip(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = iw * ih
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


def np_nms(boxes, scores, th):  # greedy: best first, each keep suppresses what overlaps it by more than th
    order = np.argsort(-scores, kind="stable")
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        iw = np.clip(np.minimum(boxes[i, 2], boxes[rest, 2]) - np.maximum(boxes[i, 0], boxes[rest, 0]), 0, None)
        ih = np.clip(np.minimum(boxes[i, 3], boxes[rest, 3]) - np.maximum(boxes[i, 1], boxes[rest, 1]), 0, None)
        inter = iw * ih
        order = rest[inter / (area[i] + area[rest] - inter) <= th]
    return keep


def torch_iou(a, b):
    lt = torch.maximum(a[:, None, :2], b[None, :, :2])
    rb = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


def torch_nms(boxes, scores, th):
    order = torch.argsort(-scores, stable=True)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    keep = []
    while order.numel():
        i = order[0]
        keep.append(int(i))
        rest = order[1:]
        lt = torch.maximum(boxes[i, :2], boxes[rest, :2])
        rb = torch.minimum(boxes[i, 2:], boxes[rest, 2:])
        wh = (rb - lt).clamp(min=0)
        inter = wh[:, 0] * wh[:, 1]
        order = rest[inter / (area[i] + area[rest] - inter) <= th]
    return keep


tmp = tempfile.mkdtemp()
print("%6s  %-14s %10s %10s %10s   %s" % ("boxes", "op", "fluidc ms", "numpy ms", "torch ms", "kept (fluidc numpy torch)"))
for n in [int(s) for s in os.environ["SIZES"].split()]:
    rng = np.random.default_rng(n)
    ctr = rng.random((n, 2))
    half = rng.uniform(0.01, 0.1, (n, 2))
    boxes = np.concatenate([ctr - half, ctr + half], 1).astype(np.float32)
    scores = rng.random(n).astype(np.float32)
    head = "import fluid\nfrom fluid import layers\n"
    progs = {
        "nms": head + "b = layers.data(name='b', shape=[1, %d, 4], dtype='float32', append_batch_size=False)\n"
               "s = layers.data(name='s', shape=[1, 1, %d], dtype='float32', append_batch_size=False)\n"
               "out = layers.multiclass_nms(b, s, score_threshold=0.0, nms_top_k=-1, keep_top_k=-1,"
               " nms_threshold=0.45, background_label=-1)\nprint('NAME', out.name)\n" % (n, n),
        "iou": head + "x = layers.data(name='x', shape=[%d, 4], dtype='float32', append_batch_size=False)\n"
               "out = layers.iou_similarity(x, x)\nprint('NAME', out.name)\n" % n,
    }
    feeds = {"nms": {"b": boxes[None], "s": scores[None, None]}, "iou": {"x": boxes}}
    t = {}
    for k, src in progs.items():
        fl, flp = os.path.join(tmp, k + ".fl"), os.path.join(tmp, k + ".flp")
        open(fl, "w").write(src)
        r = subprocess.run([flc, "build", fl, "-o", flp], capture_output=True, text=True, check=True)
        name = [l.split()[1] for l in r.stdout.splitlines() if l.startswith("NAME")][0]
        exe = fluidc.Executor(fluidc.load(flp))
        t[k] = best(lambda: exe.predict(feed=feeds[k], fetch_list=[name])[0])
        exe.close()
    (t_nms, det), (t_iou, _) = t["nms"], t["iou"]
    tn_np, keep_np = best(lambda: np_nms(boxes, scores, np.float32(0.45)))
    ti_np, _ = best(lambda: np_iou(boxes, boxes))
    tn_t = ti_t = float("nan")
    keep_t = []
    if torch is not None:
        tb, ts = torch.from_numpy(boxes), torch.from_numpy(scores)
        tn_t, keep_t = best(lambda: torch_nms(tb, ts, 0.45))
        ti_t, _ = best(lambda: torch_iou(tb, tb))
    kept = (len(det), len(keep_np), len(keep_t) if torch is not None else -1)
    if kept[0] != kept[1] or (torch is not None and kept[2] != kept[0]):
        raise SystemExit("bench_nms: kept counts differ: %s" % (kept,))
    print("%6d  %-14s %10.1f %10.1f %10.1f   %d %d %d" % (n, "multiclass_nms", t_nms * 1e3, tn_np * 1e3, tn_t * 1e3, *kept))
    print("%6d  %-14s %10.1f %10.1f %10.1f" % (n, "iou_similarity", t_iou * 1e3, ti_np * 1e3, ti_t * 1e3))
PY
