"""Inference models from Python: a script trains and saves one (fluid.io.save_inference_model,
run by flrun); fluidc.load(DIR) and fluidc.load(DIR/model file) give its feed and fetch names and
an Executor that predicts what the script's test program predicted (within 1e-6); bad
directories raise fluidc.Error saying what is wrong."""
import os
import shutil
import subprocess

import numpy as np

import fluidc
from pyt_common import FLRUN, check, done, raises, tmpdir, write

d = tmpdir()
write(os.path.join(d, "train.fl"), """import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[3], dtype='float32')
y = fluid.layers.data(name='y', shape=[1], dtype='float32')
h = fluid.layers.fc(input=x, size=6, act='tanh')
pred = fluid.layers.fc(input=h, size=1)
loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
test_prog = fluid.default_main_program().clone(for_test=True)
fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
feed = {'x': [[0.5, -1.0, 2.0], [1.5, 0.5, -0.5], [0.0, 0.25, 1.0]], 'y': [[1.0], [2.0], [0.5]]}
for i in range(4):
    exe.run(feed=feed, fetch_list=[loss])
fluid.io.save_inference_model('model', ['x'], [pred], exe)
fluid.io.save_inference_model('model2', ['x'], [pred], exe, model_filename='m', params_filename='p')
p, = exe.run(test_prog, feed=feed, fetch_list=[pred])
print('%.9g %.9g %.9g' % (p[0][0], p[1][0], p[2][0]))
""")
r = subprocess.run([FLRUN, "train.fl"], cwd=d, capture_output=True, text=True)
check(r.returncode == 0, "train.fl: %s%s" % (r.stdout, r.stderr))
want = np.array([float(v) for v in r.stdout.split()], np.float64)
xs = np.array([[0.5, -1.0, 2.0], [1.5, 0.5, -0.5], [0.0, 0.25, 1.0]], np.float32)

for path in (os.path.join(d, "model"), os.path.join(d, "model2", "m")):
    prog = fluidc.load(path)
    check(prog.feed_names == ["x"], "%s: feed_names %r" % (path, prog.feed_names))
    check(len(prog.fetch_names) == 1, "%s: fetch_names %r" % (path, prog.fetch_names))
    with fluidc.Executor(prog) as exe:
        got, = exe.run(feed={prog.feed_names[0]: xs}, fetch_list=prog.fetch_names)
        check(got.shape == (3, 1), "%s: shape %r" % (path, got.shape))
        check(np.allclose(got[:, 0], want, rtol=1e-6, atol=1e-6),
              "%s predicts %r, the script %r" % (path, got[:, 0], want))
        # the parameters are the saved ones
        check(exe.get("fc_0.w_0").shape == (3, 6), "%s: fc_0.w_0 %r" % (path, exe.get("fc_0.w_0").shape))

# a compiled program that is not a model has no feed or fetch names
write(os.path.join(d, "plain.fl"), "import paddle.fluid as fluid\n")
from pyt_common import build  # noqa: E402
plain = fluidc.load(build(os.path.join(d, "plain.fl"), d))
check(plain.feed_names is None and plain.fetch_names is None, "plain: %r %r" % (plain.feed_names, plain.fetch_names))

os.mkdir(os.path.join(d, "empty"))
raises(lambda: fluidc.load(os.path.join(d, "empty")), "a directory without an inference model (no __model__ in it")
shutil.copytree(os.path.join(d, "model"), os.path.join(d, "broken"))
os.remove(os.path.join(d, "broken", "fc_1.w_0"))
raises(lambda: fluidc.load(os.path.join(d, "broken")), "no saved value for 'fc_1.w_0'")
done("test_py_model: ok")
