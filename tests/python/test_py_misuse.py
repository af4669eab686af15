"""A Python package never segfaults on misuse; each of these crashed the interpreter or was taken
silently before:

- close() while other threads are in run() or predict() freed the executor under them
  (segfault): close() now waits for the calls in flight, which return their results, and later
  calls raise fluidc.Error;
- dropping exe.program (exe.program = None, then the Program's last reference) freed the program
  the executor runs: the Executor's program is read-only, and the library keeps the C program
  while an executor uses it, whatever Python drops;
- a NUL byte in a feed or fetch name (or a get/set name, a checkpoint path) cut the name there
  in C: another var (or path) was used silently; now each is an error naming it;
- exe.set() with a name the program does not have (a typo) made a new var that nothing reads:
  now an error naming the program's persistable vars.
"""
import gc
import os
import threading
import time

import numpy as np

import fluidc
from pyt_common import SRC, build, check, done, raises, tmpdir

d = tmpdir()
SLEEP = 0.25  # py_sleep.fl: each step waits 0.25 s
sleep_flp = build(os.path.join(SRC, "tests/python/py_sleep.fl"), d)
fit_flp = build(os.path.join(SRC, "tests/python/py_fit.fl"), d)

# ---- close() while calls are in flight: it waits for them
exe = fluidc.Executor(fluidc.load(sleep_flp))
started = threading.Barrier(4)
got, errs = {}, []


def call(i):
    started.wait()
    try:
        y, = exe.run(feed={"x": np.array([[i]], np.float32)}, fetch_list=["scale_0.tmp_0"])
        got[i] = float(y[0, 0])
    except fluidc.Error as e:  # a call that comes after close() began: a clean error
        errs.append(str(e))


ts = [threading.Thread(target=call, args=(i,)) for i in range(3)]
for t in ts:
    t.start()
started.wait()
time.sleep(0.05)  # the three steps are inside the runtime, sleeping
t0 = time.monotonic()
exe.close()
waited = time.monotonic() - t0
for t in ts:
    t.join()
check(all(v == 2.0 * i for i, v in got.items()), "run: results %s" % got)
check(len(got) + len(errs) == 3 and all("used after close()" in e for e in errs),
      "run: results %s, errors %s" % (got, errs))
check(len(got) >= 1 and waited > SLEEP / 2,
      "close() returned after %.3f s with %d steps in flight" % (waited, len(got)))
raises(lambda: exe.run(feed={"x": np.ones((1, 1), np.float32)}), "used after close()")
raises(lambda: exe.get("scale_0.tmp_0"), "used after close()")
exe.close()  # twice: nothing more to do
print("close() waited %.3f s for %d steps in flight" % (waited, len(got)))

# four threads predicting without pause while another closes the executor: every call returns
# its result or raises the clean error, none touches a freed executor
exe = fluidc.Executor(fluidc.load(sleep_flp))
ok_calls, bad = [0] * 4, []
going = threading.Barrier(5)


def hammer(i):
    going.wait()
    while True:
        try:
            y, = exe.predict(feed={"x": np.array([[i]], np.float32)}, fetch_list=["scale_0.tmp_0"])
            if float(y[0, 0]) != 2.0 * i:
                bad.append("thread %d got %s" % (i, y))
            ok_calls[i] += 1
        except fluidc.Error as e:
            if "used after close()" not in str(e):
                bad.append(str(e))
            return


ts = [threading.Thread(target=hammer, args=(i,)) for i in range(4)]
for t in ts:
    t.start()
going.wait()
time.sleep(0.1)
exe.close()
for t in ts:
    t.join()
check(not bad and all(n > 0 for n in ok_calls), "predict during close(): %s, %s" % (ok_calls, bad))
print("predict: %d calls, then close() from another thread; each later call raised the clean error"
      % sum(ok_calls))

# ---- the Executor holds its program
prog = fluidc.load(fit_flp)
exe = fluidc.Executor(prog)
x = np.ones((4, 3), np.float32)
y = np.ones((4, 1), np.float32)
for drop in (lambda: setattr(exe, "program", None), lambda: delattr(exe, "program")):
    try:
        drop()
        check(False, "exe.program could be replaced or deleted")
    except AttributeError:
        pass
check(exe.program is prog, "exe.program is not the Program")
del prog
exe._program = None  # even past the read-only property, the library keeps the C program
gc.collect()
junk = [np.full((1000, 1000), 7.0) for _ in range(8)]  # reuse any memory freed by mistake
loss, = exe.run(feed={"x": x, "y": y}, fetch_list=["mean_0.tmp_0"])
check(loss.shape == (1,) and np.isfinite(loss).all(), "a step after the Program was dropped: %s" % loss)
p, = exe.predict(feed={"x": x}, fetch_list=["elementwise_add_0.tmp_0"])
check(p.shape == (4, 1), "a prediction after the Program was dropped: %s" % (p.shape,))
del junk

# ---- NUL bytes in names and paths are errors, not cut names
raises(lambda: exe.run(feed={"x\0junk": x, "y": y}), "feed: the var name", "holds a NUL byte")
raises(lambda: exe.run(feed={b"x\0": x, "y": y}), "holds a NUL byte")
raises(lambda: exe.run(feed={"x": x, "y": y}, fetch_list=["mean_0.tmp_0\0typo"]),
       "fetch: the var name", "holds a NUL byte")
raises(lambda: exe.predict(feed={"x": x}, fetch_list=["elementwise_add_0.tmp_0\0"]), "NUL byte")
raises(lambda: exe.get("fc_0.w_0\0x"), "get: the var name", "NUL byte")
raises(lambda: exe.set("fc_0.w_0\0x", np.zeros((3, 1), np.float32)), "NUL byte")
raises(lambda: exe.save(os.path.join(d, "ck\0evil")), "save: the path", "NUL byte")
raises(lambda: exe.load(os.path.join(d, "ck\0evil")), "load: the path", "NUL byte")
raises(lambda: fluidc.load(fit_flp + "\0.x"), "fluidc.load: the path", "NUL byte")
check(not os.path.exists(os.path.join(d, "ck")), "a save to a path with a NUL byte wrote its prefix")

# ---- set() of a name the program does not have
w = exe.get("fc_0.w_0")
raises(lambda: exe.set("fc_0.w0", np.zeros((3, 1), np.float32)),
       "set: the program has no var 'fc_0.w0' (its parameters and other persistable vars: ",
       "'fc_0.w_0'", "'fc_0.b_0'")
raises(lambda: exe.get("fc_0.w0"), "fc_0.w0")  # nothing was made
check(np.array_equal(exe.get("fc_0.w_0"), w), "a refused set changed fc_0.w_0")
exe.set("fc_0.w_0", np.full((3, 1), 0.5, np.float32))  # a var of the program: fine
check(np.array_equal(exe.get("fc_0.w_0"), np.full((3, 1), 0.5, np.float32)), "set of fc_0.w_0")
exe.close()
done("close() waits for calls in flight; the program outlives its executors; NUL bytes and "
     "unknown names are errors")
