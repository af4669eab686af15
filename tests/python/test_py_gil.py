"""ctypes releases the GIL during each call into libfluidc_py.so, so calls of one Executor from
many Python threads run inside the runtime at the same time.

The check: py_sleep.fl's step waits 0.25 s (fluid.time.sleep). 8 threads each run one step at
once: if the GIL were held through a call (ctypes.PyDLL instead of ctypes.CDLL) the waits would
follow one another, 2 s in all; run concurrently they take about 0.25 s. The bound is 1 s, which
a waiting thread meets whatever the machine's load (a sleep needs no CPU). Each thread must also
get 2 x of its own x.

Then the compute-bound case, printed but not checked (it depends on free cores): 8 predict
calls of py_wide.fl (a [256, 512] batch through four 512-wide layers) from 1 thread, then from
2 threads."""
import os
import threading
import time

import numpy as np

import fluidc
from pyt_common import SRC, build, check, done, tmpdir

THREADS, SLEEP = 8, 0.25
d = tmpdir()
sleepy = fluidc.Executor(fluidc.load(build(os.path.join(SRC, "tests/python/py_sleep.fl"), d)))
barrier = threading.Barrier(THREADS + 1)
got = [None] * THREADS


def step(i):
    barrier.wait()
    y, = sleepy.run(feed={"x": np.array([[i]], np.float32)}, fetch_list=["scale_0.tmp_0"])
    got[i] = y


ts = [threading.Thread(target=step, args=(i,)) for i in range(THREADS)]
for t in ts:
    t.start()
barrier.wait()
t0 = time.monotonic()
for t in ts:
    t.join()
wall = time.monotonic() - t0
check(all(got[i] is not None and got[i].tolist() == [[2.0 * i]] for i in range(THREADS)),
      "results %s" % got)
check(wall < 1.0, "%d concurrent steps of a %.2f s wait took %.2f s: the calls were serialised "
      "(the GIL is held during calls?)" % (THREADS, SLEEP, wall))

wide = fluidc.Executor(fluidc.load(build(os.path.join(SRC, "tests/python/py_wide.fl"), d)), seed=1)
x = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
FETCH = "tanh_3.tmp_0"  # the last layer's output (flc show lists the vars)
ref, = wide.predict(feed={"x": x}, fetch_list=[FETCH])
check(ref.shape == (256, 512), "output shape %s" % (ref.shape,))


def calls(n, outs):
    for _ in range(n):
        y, = wide.predict(feed={"x": x}, fetch_list=[FETCH])
        outs.append(y)


def threaded(nthreads, per_thread):
    outs = [[] for _ in range(nthreads)]
    ts = [threading.Thread(target=calls, args=(per_thread, outs[i]))
          for i in range(nthreads)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.monotonic() - t0, outs


one, _ = threaded(1, 8)
two, outs = threaded(2, 4)
for o in outs:
    check(len(o) == 4 and all(np.array_equal(y, ref) for y in o), "a thread's results differ")
done("%d threads ran a %.2f s step at once in %.2f s; 8 predict calls of py_wide.fl: 1 thread "
     "%.3f s, 2 threads %.3f s (x%.2f)" % (THREADS, SLEEP, wall, one, two, one / two))
