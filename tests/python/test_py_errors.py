"""fluidc.Error from Python, with the runtime's messages: bad feeds (missing, wrong shape, wrong
dtype, a numpy dtype the runtime lacks), a failing op naming itself and its .fl line, an unknown
fetch, bad .flp paths and files, a bad checkpoint directory, an Executor used after close().
After each failed call the Executor still works."""
import os

import numpy as np

import fluidc
from pyt_common import SRC, build, check, done, raises, tmpdir

d = tmpdir()
fl = os.path.join(SRC, "tests/python/py_fit.fl")
prog = fluidc.load(build(fl, d))
exe = fluidc.Executor(prog)
x = np.ones((4, 3), np.float32)
y = np.ones((4, 1), np.float32)
n = 0


def ok():
    """A good step still runs after an error."""
    global n
    loss, = exe.run(feed={"x": x, "y": y}, fetch_list=["mean_0.tmp_0"])
    check(loss.shape == (1,) and np.isfinite(loss).all(), "loss after an error: %s" % loss)
    n += 1


raises(lambda: exe.run(feed={"x": x}, fetch_list=["mean_0.tmp_0"]),
       "missing feed 'y' (float32 [-1, 1])")
ok()
raises(lambda: exe.run(feed={"x": np.ones((4, 2), np.float32), "y": y}),
       "feed 'x': expected shape [-1, 3], found [4, 2]")
ok()
raises(lambda: exe.run(feed={"x": np.ones((4, 3)), "y": y}),
       "feed 'x': expected dtype float32, found float64")
ok()
raises(lambda: exe.run(feed={"x": np.ones((4, 3), np.uint8), "y": y}),
       "feed 'x': expected dtype float32, found uint8")
ok()
raises(lambda: exe.run(feed={"x": np.ones((4, 3), np.int16), "y": y}),
       "feed 'x': numpy dtype int16 is not one of float32, float64, int32, int64, bool, float16, int8, uint8")
raises(lambda: exe.run(feed={"nope": x, "x": x, "y": y}),
       "feed 'nope': the program has no var of that name")
raises(lambda: exe.run(feed=[x]), "feed must be a dict")
raises(lambda: exe.run(feed={"x": x, "y": y}, fetch_list=["nope"]),
       "fetch 'nope': no var of that name")
ok()
# predict needs no label, and does not change the parameters
w0 = exe.get("fc_0.w_0")
p, = exe.predict(feed={"x": x}, fetch_list=["elementwise_add_0.tmp_0"])
check(p.shape == (4, 1), "predict shape %s" % (p.shape,))
check(np.array_equal(exe.get("fc_0.w_0"), w0), "predict changed fc_0.w_0")
# a failing op: fc_0.w_0 of the wrong shape; the message names the op and the .fl line
good_w = exe.get("fc_0.w_0")
exe.set("fc_0.w_0", np.zeros((2, 1), np.float32))
msg = raises(lambda: exe.run(feed={"x": x, "y": y}),
             "runtime error in op 'mul' (py_fit.fl:6:", "[4, 3]", "[2, 1]")
print("runtime error: %s" % msg)
exe.set("fc_0.w_0", good_w)
ok()
raises(lambda: exe.get("nope"), "nope")
# programs: a missing path, a file that is not a .flp, a wrong argument type
raises(lambda: fluidc.load(os.path.join(d, "missing.flp")), "missing.flp")
raises(lambda: fluidc.load(fl), "py_fit.fl")
raises(lambda: fluidc.load(42), "a path must be")
raises(lambda: fluidc.Executor("model.flp"), "expected a fluidc.Program")
raises(lambda: fluidc.Executor(prog, seed=-1), "seed must be")
# checkpoints: loading a directory that holds none, saving over a file that is not one
raises(lambda: exe.load(os.path.join(d, "nothing")), "nothing")
with open(os.path.join(d, "plain"), "w") as f:
    f.write("not a checkpoint\n")
raises(lambda: exe.save(os.path.join(d, "plain")), "plain", "not a checkpoint")
ok()
exe.close()
raises(lambda: exe.run(feed={"x": x, "y": y}), "used after close()")
done("every bad call raised fluidc.Error with its message; %d good steps ran in between" % n)
