"""Checkpoints from Python in flrun's format: save() then load() into another Executor (same
parameters and predictions), flrun --load --predict reading a checkpoint that Python saved, and
Python loading one that flrun --save wrote."""
import os
import subprocess

import numpy as np

import fluidc
from pyt_common import FLRUN, build, check, done, raises, tmpdir, write

d = tmpdir()
rng = np.random.default_rng(7)
xs = rng.uniform(-1, 1, (64, 3))
ys = xs @ np.array([1.5, -2.0, 0.5]) + 0.25
with open(os.path.join(d, "train.csv"), "w") as f:
    for xr, yr in zip(xs, ys):
        f.write("%.6f,%.6f,%.6f,%.6f\n" % (xr[0], xr[1], xr[2], yr))
feats = rng.uniform(-1, 1, (5, 3))
with open(os.path.join(d, "features.csv"), "w") as f:
    for xr in feats:
        f.write("%.6f,%.6f,%.6f\n" % tuple(xr))
feats = np.loadtxt(os.path.join(d, "features.csv"), delimiter=",").astype(np.float32)
fl = write(os.path.join(d, "ckpt.fl"), """import fluid
from fluid import layers, optimizer, io

x = layers.data(name="x", shape=[3], dtype="float32")
y = layers.data(name="y", shape=[1], dtype="float32")
pred = layers.fc(x, size=1)
loss = layers.mean(layers.square_error_cost(pred, y))
optimizer.SGD(learning_rate=0.1).minimize(loss)

data = io.csv("train.csv", columns={"x": range(0, 3), "y": [3]})
fluid.train(reader=data, batch_size=8, epochs=3, fetch={"loss": loss})
""")
flp = build(fl, d)
prog = fluidc.load(flp)
exe = fluidc.Executor(prog, seed=1)
for i in range(0, 64, 8):
    exe.run(feed={"x": xs[i:i + 8].astype(np.float32), "y": ys[i:i + 8, None].astype(np.float32)})
w, b = exe.get("fc_0.w_0"), exe.get("fc_0.b_0")

# save, and load into a fresh Executor (initial parameters)
ck = os.path.join(d, "py_ckpt")
exe.save(ck)
with open(os.path.join(ck, "FORMAT")) as f:
    check(f.read() == "fluidc checkpoint 2\n", "FORMAT file")
exe2 = fluidc.Executor(prog)
check(not np.array_equal(exe2.get("fc_0.w_0"), w), "training did not move w")
exe2.load(ck)
check(np.array_equal(exe2.get("fc_0.w_0"), w) and np.array_equal(exe2.get("fc_0.b_0"), b),
      "loaded parameters differ from the saved ones")
p1, = exe.predict(feed={"x": feats}, fetch_list=["elementwise_add_0.tmp_0"])
p2, = exe2.predict(feed={"x": feats}, fetch_list=["elementwise_add_0.tmp_0"])
check(np.array_equal(p1, p2), "predictions after load differ: %s vs %s" % (p1, p2))
# an Executor made without the startup program, then loaded
exe3 = fluidc.Executor(prog, startup=False)
exe3.load(ck)
p3, = exe3.predict(feed={"x": feats}, fetch_list=["elementwise_add_0.tmp_0"])
check(np.array_equal(p1, p3), "predictions of a startup=False Executor after load differ")
# save replaces an earlier checkpoint
exe2.save(ck)


def flrun_predict(ckdir):
    r = subprocess.run([FLRUN, flp, "-q", "--load", ckdir, "--predict",
                        os.path.join(d, "features.csv")], capture_output=True, text=True)
    check(r.returncode == 0, "flrun --load %s: %s" % (ckdir, r.stderr))
    return np.array([float(v) for v in r.stdout.split()])


# flrun reads what Python saved: its predictions are x . w + b of the saved parameters
fp = flrun_predict(ck)
want = feats.astype(np.float64) @ w.astype(np.float64).ravel() + float(b.ravel()[0])
check(fp.shape == (5,) and np.allclose(fp, want, rtol=1e-4, atol=1e-4),
      "flrun --predict from the Python checkpoint: %s, numpy: %s" % (fp, want))
check(np.allclose(fp, p1.ravel(), rtol=1e-4, atol=1e-4), "flrun and Python predictions differ")

# Python reads what flrun saved
ck2 = os.path.join(d, "flrun_ckpt")
r = subprocess.run([FLRUN, flp, "-q", "--save", ck2], capture_output=True, text=True)
check(r.returncode == 0, "flrun --save: %s" % r.stderr)
exe4 = fluidc.Executor(prog)
exe4.load(ck2)
p4, = exe4.predict(feed={"x": feats}, fetch_list=["elementwise_add_0.tmp_0"])
fp2 = flrun_predict(ck2)
check(np.allclose(fp2, p4.ravel(), rtol=1e-4, atol=1e-4),
      "Python after loading flrun's checkpoint: %s, flrun: %s" % (p4.ravel(), fp2))
# a checkpoint of another program is refused, naming the var
other = build(os.path.join(os.environ["FLUIDC_SOURCE_DIR"], "examples/embed/train.fl"), d)
raises(lambda: fluidc.Executor(fluidc.load(other)).load(ck), "fc_0.w_0")
done("saved from Python, loaded in Python and by flrun --load (predictions %s); flrun's "
     "checkpoint loaded in Python" % np.round(fp, 4))
