"""detection_map's accumulated state (Fluid's PosCount, TruePos, FalsePos carried from batch to
batch: paddle/fluid/operators/detection_map_op.h) and fluid.metrics.DetectionMAP /
fluid.evaluator.DetectionMAP over it, against a numpy reference written here from the operator:
per class, the earlier batches' verdicts (score, flag) come first, this batch's after them (image by
image, best first), and the AP is taken over all of them. Several batches, integral and 11point,
with and without difficult boxes, background_label -1 (with the state every class counts, its
positive count 0 or not); the state tensors themselves; the mAP within 1e-5."""
import numpy as np

import fluidc
from det_common import HEAD, _count, close, compile_fl, data, equal, fetch, ref_ap
from pyt_common import check, done


def jaccard(a, b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    iw, ih = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    inter = iw * ih
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


class RefState:
    """The operator's state: positives per class (None: the class was never seen, without a
    state), and per class the verdicts (score, true flag, false flag) in the order pushed."""

    def __init__(self, class_num):
        self.class_num = class_num
        self.npos = {}
        self.verdicts = {}
        self.has_state = False

    def batch(self, det, dlod, gt, glod, thr, eval_difficult, f32):
        """Adds one batch (as CalcTrueAndFalsePositive does) on top of the state."""
        if f32:
            thr = float(np.float32(thr))
        W = gt.shape[1]
        for r in gt:
            if eval_difficult or W == 5 or abs(r[1]) < 1e-6:
                self.npos[int(r[0])] = self.npos.get(int(r[0]), 0) + 1
        for n in range(len(glod) - 1):
            g, d = gt[glod[n]:glod[n + 1]], det[dlod[n]:dlod[n + 1]]
            for c in sorted(set(int(x) for x in d[:, 0])):
                preds = sorted([r for r in d if int(r[0]) == c], key=lambda r: -r[1])
                gc = [r for r in g if int(r[0]) == c]
                taken = [False] * len(gc)
                for r in preds:
                    best, bj = -1.0, 0
                    for j, q in enumerate(gc):
                        ov = jaccard(np.clip(r[2:6], 0, 1), q[W - 4:])
                        if ov > best:
                            best, bj = ov, j
                    v = (r[1], 0, 1)
                    if gc and best > thr:
                        if eval_difficult or not (W == 6 and abs(gc[bj][1]) >= 1e-6):
                            if not taken[bj]:
                                v, taken[bj] = (r[1], 1, 0), True
                        else:
                            v = None  # a difficult box's match: no verdict
                    if v is not None:
                        self.verdicts.setdefault(c, []).append(v)

    def carry(self):
        """The state is read back (has_state set): every class gets its count, 0 or not."""
        self.npos = {c: self.npos.get(c, 0) for c in range(self.class_num)}
        self.has_state = True

    def map(self, bg, ap):
        total, count = 0.0, 0
        for c in sorted(self.npos):
            if self.npos[c] == bg:
                continue
            count += 1
            v = sorted(self.verdicts.get(c, []), key=lambda t: -t[0])  # stable: ties as pushed
            if not v or self.npos[c] == 0:
                continue
            t, f = np.cumsum([x[1] for x in v]), np.cumsum([x[2] for x in v])
            total += ref_ap(t / (t + f), t / self.npos[c], ap)
        return np.array([total / count if count else 0.0])

    def rows(self):
        """(PosCount [C, 1], TruePos [n, 2], FalsePos [n, 2], offsets [C + 1]) as the op writes them."""
        pc = np.array([[self.npos.get(c, 0)] for c in range(self.class_num)], np.int32)
        tp, fp, off = [], [], [0]
        for c in range(self.class_num):
            for s, t, f in self.verdicts.get(c, []):
                tp.append([s, t])
                fp.append([s, f])
            off.append(len(tp))
        return pc, np.array(tp).reshape(-1, 2), np.array(fp).reshape(-1, 2), np.array(off, np.int64)


def batches(rng, dt, n_batches=3, class_num=5):
    """Batches of 3 images: ground truth (label, difficult, box; some images without any) and
    detections near it (duplicates, boxes crossing the image, classes without truth, ties)."""
    out = []
    for _ in range(n_batches):
        gt, glod, det, dlod = [], [0], [], [0]
        for _ in range(3):
            for _ in range(rng.integers(0, 4)):
                x, y = rng.random(2) * 0.6
                gt.append([rng.integers(1, class_num - 1), float(rng.random() < 0.25), x, y, x + 0.2 + rng.random() * 0.2,
                           y + 0.2 + rng.random() * 0.2])
            glod.append(len(gt))
            for r in gt[glod[-2]:glod[-1]]:
                for _ in range(rng.integers(1, 4)):
                    det.append([r[0], np.round(rng.random(), 1)] + list(np.array(r[2:]) + rng.normal(0, 0.05, 4)))
            c = rng.integers(1, class_num)
            x, y = rng.random(2) * 0.8
            det.append([c, np.round(rng.random(), 1), x - 0.1, y, x + 0.3, y + 0.25])
            dlod.append(len(det))
        out.append((np.array(det, dt), np.array(dlod, np.int64), np.array(gt, dt).reshape(-1, 6),
                    np.array(glod, np.int64)))
    return out


CASES = [  # key: (overlap_threshold, evaluate_difficult, ap_version, background_label)
    ("a", 0.3, True, "integral", 0),
    ("b", 0.5, False, "integral", 0),
    ("c", 0.3, True, "11point", 0),
    ("d", 0.4, False, "11point", -1),
]


def state_program(dt):
    src = HEAD + data("det", [None, 6], dt, 1) + data("gt", [None, 6], dt, 1)
    for key, thr, diff, ap, bg in CASES:
        args = "class_num=5, overlap_threshold=%r, evaluate_difficult=%r, ap_version=%r, background_label=%d" % (
            thr, diff, ap, bg)
        src += ("hs_%s = layers.create_global_var([1], 0, 'int32', persistable=True)\n"
                "st_%s = [layers.create_global_var([5, 1], 0, 'int32', persistable=True),\n"
                "         layers.create_global_var([1, 2], 0.0, %r, persistable=True),\n"
                "         layers.create_global_var([1, 2], 0.0, %r, persistable=True)]\n" % (key, key, dt, dt))
        src += fetch("cur_" + key, "layers.detection_map(det, gt, %s)" % args)
        src += fetch("acc_" + key, "layers.detection_map(det, gt, %s, has_state=hs_%s, input_states=st_%s, "
                     "out_states=st_%s)" % (args, key, key, key))
        src += "layers.fill_constant([1], 'int32', 1, out=hs_%s)\n" % key
        for i, what in enumerate(("pc", "tp", "fp")):
            src += fetch("%s_%s" % (what, key), "st_%s[%d]" % (key, i))
        src += fetch("off_" + key, "_core.find_var(st_%s[1].name + '@LOD0')" % key)
    return src


def test_accumulated():
    for dt in ("float32", "float64"):
        rng = np.random.default_rng(21)
        flp, names = compile_fl("map_state_" + dt, state_program(dt))
        exe = fluidc.Executor(fluidc.load(flp))
        keys = sorted(names)
        refs = {k: RefState(5) for k, *_ in CASES}
        accs = []
        for b, (det, dlod, gt, glod) in enumerate(batches(rng, dt)):
            got = dict(zip(keys, exe.run(feed={"det": det, "det@LOD0": dlod, "gt": gt, "gt@LOD0": glod},
                                         fetch_list=[names[k] for k in keys])))
            d64, g64, f32 = det.astype(np.float64), gt.astype(np.float64), dt == "float32"
            for key, thr, diff, ap, bg in CASES:
                one = RefState(5)
                one.batch(d64, dlod, g64, glod, thr, diff, f32)
                close("detection_map %s batch %d alone %s" % (key, b, dt), got["cur_" + key], one.map(bg, ap))
                ref = refs[key]
                if b > 0:
                    ref.carry()
                ref.batch(d64, dlod, g64, glod, thr, diff, f32)
                close("detection_map %s batches 0..%d accumulated %s" % (key, b, dt), got["acc_" + key], ref.map(bg, ap))
                pc, tp, fp, off = ref.rows()
                equal("detection_map %s PosCount after batch %d %s" % (key, b, dt), got["pc_" + key], pc)
                close("detection_map %s TruePos after batch %d %s" % (key, b, dt), got["tp_" + key], tp)
                close("detection_map %s FalsePos after batch %d %s" % (key, b, dt), got["fp_" + key], fp)
                equal("detection_map %s offsets after batch %d %s" % (key, b, dt), got["off_" + key], off)
            accs.append(float(got["acc_a"][0]))
        exe.close()
        # the accumulated figure is not the last batch's: the state changed it
        check(abs(accs[-1] - float(got["cur_a"][0])) > 1e-3,
              "accumulated mAP %s equals the last batch's %s: the state was not read" % (accs, got["cur_a"]))
        print("detection_map %s: accumulated mAP over the batches %s" % (dt, ["%.4f" % a for a in accs]))


def test_metrics_classes():
    """fluid.metrics.DetectionMAP and fluid.evaluator.DetectionMAP: get_map_var() gives the
    batch's and the accumulated mAP, from gt_label (int32), gt_box and gt_difficult as Fluid's
    detection programs feed them; the same figures as the reference."""
    dt = "float32"
    src = HEAD + data("det", [None, 6], dt, 1) + data("gt_box", [None, 4], dt, 1)
    src += "gt_label = layers.data(name='gt_label', shape=[1], dtype='int32', lod_level=1)\n"
    src += "difficult = layers.data(name='difficult', shape=[1], dtype='int32', lod_level=1)\n"
    src += ("m = fluid.metrics.DetectionMAP(det, gt_label, gt_box, difficult, class_num=5, overlap_threshold=0.4, "
            "evaluate_difficult=False, ap_version='11point')\n"
            "cur, acc = m.get_map_var()\n"
            "e = fluid.evaluator.DetectionMAP(det, gt_label, gt_box, class_num=5)\n"
            "ecur, eacc = e.get_map_var()\n")
    for k in ("cur", "acc", "ecur", "eacc"):
        src += fetch(k, k)
    flp, names = compile_fl("map_metrics", src)
    exe = fluidc.Executor(fluidc.load(flp))
    keys = sorted(names)
    rm, re_ = RefState(5), RefState(5)
    rng = np.random.default_rng(22)
    for b, (det, dlod, gt, glod) in enumerate(batches(rng, dt)):
        feed = {"det": det, "det@LOD0": dlod, "gt_box": gt[:, 2:].copy(), "gt_box@LOD0": glod,
                "gt_label": gt[:, :1].astype(np.int32), "gt_label@LOD0": glod,
                "difficult": gt[:, 1:2].astype(np.int32), "difficult@LOD0": glod}
        got = dict(zip(keys, exe.run(feed=feed, fetch_list=[names[k] for k in keys])))
        d64, g64 = det.astype(np.float64), gt.astype(np.float64)
        one = RefState(5)
        one.batch(d64, dlod, g64, glod, 0.4, False, True)
        close("metrics.DetectionMAP batch %d" % b, got["cur"], one.map(0, "11point"))
        g5 = g64[:, [0, 2, 3, 4, 5]]
        one = RefState(5)
        one.batch(d64, dlod, g5, glod, 0.5, True, True)
        close("evaluator.DetectionMAP batch %d" % b, got["ecur"], one.map(0, "integral"))
        for ref, g, thr, diff, ap, key in ((rm, g64, 0.4, False, "11point", "acc"), (re_, g5, 0.5, True, "integral", "eacc")):
            if b > 0:
                ref.carry()
            ref.batch(d64, dlod, g, glod, thr, diff, True)
            close("DetectionMAP %s accumulated after batch %d" % (key, b), got[key], ref.map(0, ap))
    exe.close()


test_accumulated()
test_metrics_classes()
done("%d accumulated detection_map values agree with their numpy reference" % _count[0])
