"""Training while predicting from Python: one thread trains examples/embed/train.fl
(pred = x . w + b, w [2, 1]) with run() while four threads predict() through the same Executor.

Every prediction must come from whole parameter tensors. Predictors feed the rows (1, 0),
(0, 1), (0, 0) and five random rows: the first three give the w and b the call used
(w = (p0 - p2, p1 - p2), b = p2). That w must be one the trainer made (it records every w and b
after each step; it is the only writer, so the record is complete): a torn w (w0 of one step,
w1 of another) matches none, as the noisy targets move w by far more than the tolerance at each
step. b must be a recorded b too (w and b are separate tensors: one call may read w of one step
and b of the next, runtime/api.h). The random rows' predictions must equal x . w + b computed
in numpy from that w and b, so every row of one call used the same parameters. The parameters
fetched in the same predict call are checked to be recorded snapshots as well, but not compared
with the ones the prediction used: a fetch reads the scope after the call's ops ran, and a
training step may have replaced them in between."""
import os
import threading
import time

import numpy as np

import fluidc
from pyt_common import SRC, build, check, done, tmpdir

STEPS, PREDICTORS, MIN_PREDICTIONS, BATCH = 400, 4, 50, 8
TOL = 1e-4

prog = fluidc.load(build(os.path.join(SRC, "examples/embed/train.fl"), tmpdir()))
exe = fluidc.Executor(prog, seed=0)
hist_w = [exe.get("fc_0.w_0").ravel().copy()]
hist_b = [exe.get("fc_0.b_0").ravel().copy()]
losses = []
errors = []
trained = threading.Event()  # set when the trainer ends: the predictors stop then


def trainer():
    rng = np.random.default_rng(1)
    for _ in range(STEPS):
        x = rng.uniform(-1, 1, (BATCH, 2)).astype(np.float32)
        y = (2 * x[:, :1] - 3 * x[:, 1:] + 0.5 + rng.uniform(-0.5, 0.5, (BATCH, 1))).astype(np.float32)
        try:
            loss, = exe.run(feed={"x": x, "y": y}, fetch_list=["mean_0.tmp_0"])
            hist_w.append(exe.get("fc_0.w_0").ravel().copy())
            hist_b.append(exe.get("fc_0.b_0").ravel().copy())
        except fluidc.Error as e:
            errors.append("trainer: %s" % e)
            break
        losses.append(float(loss.ravel()[0]))
        time.sleep(0)  # yield the GIL (see predictor)
    trained.set()


def predictor(seed, got):
    rng = np.random.default_rng(100 + seed)
    while not trained.is_set() or len(got) < MIN_PREDICTIONS:
        x = np.vstack([np.array([[1, 0], [0, 1], [0, 0]], np.float32),
                       rng.uniform(-2, 2, (5, 2)).astype(np.float32)])
        try:
            p, w, b = exe.predict(feed={"x": x},
                                  fetch_list=["elementwise_add_0.tmp_0", "fc_0.w_0", "fc_0.b_0"])
        except fluidc.Error as e:
            errors.append("predictor %d: %s" % (seed, e))
            return
        got.append((x, p.astype(np.float64), w.ravel().copy(), b.ravel().copy()))
        # Yield the GIL: a thread that gets it back as its call returns would otherwise run on
        # in bursts (dozens of steps or predictions while the others wait on a loaded machine);
        # the runtime calls themselves run without the GIL either way.
        time.sleep(0)


gots = [[] for _ in range(PREDICTORS)]
ts = [threading.Thread(target=trainer)] + [
    threading.Thread(target=predictor, args=(i, gots[i])) for i in range(PREDICTORS)]
for t in ts:
    t.start()
for t in ts:
    t.join()

check(not errors, "errors: %s" % errors[:3])
check(len(losses) == STEPS, "%d of %d training steps ran" % (len(losses), STEPS))
check(len(losses) > 1 and losses[-1] < losses[0], "the loss did not drop: %s -> %s"
      % (losses[:1], losses[-1:]))
HW, HB = np.array(hist_w), np.array(hist_b)


def recorded(h, v):
    return bool(np.any(np.all(np.abs(h - v) < TOL, axis=1)))


total = unmatched_w = unmatched_b = inconsistent = fetched_torn = 0
for got in gots:
    for x, p, fw, fb in got:
        total += 1
        p = p.ravel()
        w = np.array([p[0] - p[2], p[1] - p[2]])
        b = p[2]
        unmatched_w += not recorded(HW, w)
        unmatched_b += not recorded(HB, np.array([b]))
        inconsistent += not np.allclose(x[3:].astype(np.float64) @ w + b, p[3:], atol=TOL, rtol=0)
        fetched_torn += not (recorded(HW, fw) and recorded(HB, fb))
check(total >= PREDICTORS * MIN_PREDICTIONS, "%d predictions" % total)
check(unmatched_w == 0, "%d of %d predictions used a w no training step made" % (unmatched_w, total))
check(unmatched_b == 0, "%d of %d predictions used a b no training step made" % (unmatched_b, total))
check(inconsistent == 0, "%d of %d predictions differ from x . w + b of their own w and b"
      % (inconsistent, total))
check(fetched_torn == 0, "%d of %d fetched parameter pairs are no recorded snapshot"
      % (fetched_torn, total))
# the parameters moved while the predictors ran: many distinct w were seen
seen = len({tuple(np.round(g[2], 5)) for got in gots for g in got})
check(seen > STEPS // 10, "the predictors saw only %d distinct w" % seen)
done("%d training steps (loss %.3f -> %.3f) and %d predictions from %d threads (%d distinct w); "
     "every prediction used whole parameter tensors of a training step"
     % (len(losses), losses[0], losses[-1], total, PREDICTORS, seen))
