"""Paddle issue #14416 from Python: 10 threads feed their own value through ONE Executor (one
program, one scope), with no per-thread scope, executor or var names, and each must get its own
value back. 100 rounds (threads started together on a barrier), 5 calls per thread and round,
alternating run() and predict()."""
import os
import threading

import numpy as np

import fluidc
from pyt_common import SRC, build, check, done, tmpdir

THREADS, ROUNDS, CALLS = 10, 100, 5

prog = fluidc.load(build(os.path.join(SRC, "examples/embed/identity.fl"), tmpdir()))
exe = fluidc.Executor(prog)
barrier = threading.Barrier(THREADS)
bad = []


def worker(i, rnd):
    barrier.wait()
    for c in range(CALLS):
        v = float(rnd * 1000 + i * 10 + c)
        x = np.array([[v], [-v]], dtype=np.float32)
        call = exe.run if c % 2 == 0 else exe.predict
        try:
            y, = call(feed={"x": x}, fetch_list=["scale_0.tmp_0"])
        except fluidc.Error as e:
            bad.append("thread %d round %d: %s" % (i, rnd, e))
            continue
        if y.shape != (2, 1) or y.dtype != np.float32 or not np.array_equal(y, x):
            bad.append("thread %d round %d call %d fed %s, got %s" % (i, rnd, c, x.ravel(), y.ravel()))


for rnd in range(ROUNDS):
    ts = [threading.Thread(target=worker, args=(i, rnd)) for i in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
check(not bad, "%d wrong results, first: %s" % (len(bad), bad[:3]))
exe.close()
done("%d rounds x %d threads x %d calls through one Executor: every thread got its own value back"
     % (ROUNDS, THREADS, CALLS))
