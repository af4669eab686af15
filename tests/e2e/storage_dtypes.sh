#!/bin/sh
# storage_dtypes.sh FLRUN REPO_ROOT: the storage dtypes float16, int8 and uint8 (docs/language.md, "Storage
# dtypes"). A program feeds uint8, int8 and float16 arrays, moves them (assign, reshape, concat,
# cast) and fetches them: the values and dtypes printed are numpy's. QuantizeTranspiler: a small
# quantized MLP trained a few steps, frozen, saved, converted to int8 and saved again: each
# weight's int8 file holds 1 byte per value and exactly the frozen float32 file's values (all
# integers of the 8-bit grid), the inference model holds the int8 weights and no float ones. And
# the refusals, at their lines at compile time: a mul on an int8 var, exe.run of the int8 program.
set -u
FLRUN=$1 ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
. "$ROOT/tests/e2e/run_fl_common.sh"

run feed_fetch 0 <<'FL'
import paddle.fluid as fluid
import numpy as np
u = fluid.layers.data(name='u', shape=[2, 3], dtype='uint8', append_batch_size=False)
i = fluid.layers.data(name='i', shape=[4], dtype='int8', append_batch_size=False)
h = fluid.layers.data(name='h', shape=[3], dtype=np.float16, append_batch_size=False)
u2 = fluid.layers.reshape(fluid.layers.assign(u), [3, 2])
ii = fluid.layers.concat([i, i])
hf = fluid.layers.cast(h, 'float32')
exe = fluid.Executor(fluid.CPUPlace())
r = exe.run(feed={'u': np.array([[0, 1, 2], [200, 254, 255]], dtype='uint8'),
                  'i': np.array([-128, -1, 0, 127], dtype=np.int8),
                  'h': np.array([0.1, 65504, -2.5], dtype=np.float16)},
            fetch_list=[u2, ii, h, hf])
for a in r:
    print(a)
print(repr(r[0]))
print(repr(r[2]))
FL
cat >feed_fetch.want <<'OUT'
[[  0   1]
 [  2 200]
 [254 255]]
[-128   -1    0  127 -128   -1    0  127]
[ 1.00e-01  6.55e+04 -2.50e+00]
[ 9.9975586e-02  6.5504000e+04 -2.5000000e+00]
array([[  0,   1],
       [  2, 200],
       [254, 255]], dtype=uint8)
array([ 1.00e-01,  6.55e+04, -2.50e+00], dtype=float16)
OUT
cmp -s feed_fetch.out feed_fetch.want || { echo "FAIL: fed and fetched values:"; cat feed_fetch.out; echo "--- expected:"; cat feed_fetch.want; fail=1; }

# the other data movement ops on an int8 tensor
run moves 0 <<'FL'
import paddle.fluid as fluid
import numpy as np
i = fluid.layers.data(name='i', shape=[2, 3], dtype='int8', append_batch_size=False)
a = fluid.layers.transpose(i, [1, 0])
b = fluid.layers.slice(i, axes=[1], starts=[1], ends=[3])
c = fluid.layers.split(i, num_or_sections=3, dim=1)
d = fluid.layers.flatten(fluid.layers.unsqueeze(i, [0]), axis=1)
e = fluid.layers.squeeze(fluid.layers.unsqueeze(i, [0]), [0])
exe = fluid.Executor(fluid.CPUPlace())
r = exe.run(feed={'i': np.array([[1, -2, 3], [-4, 5, 127]], dtype='int8')}, fetch_list=[a, b, c[2], d, e])
for x in r:
    print(repr(x))
FL
cat >moves.want <<'OUT'
array([[  1,  -4],
       [ -2,   5],
       [  3, 127]], dtype=int8)
array([[ -2,   3],
       [  5, 127]], dtype=int8)
array([[  3],
       [127]], dtype=int8)
array([[  1,  -2,   3,  -4,   5, 127]], dtype=int8)
array([[  1,  -2,   3],
       [ -4,   5, 127]], dtype=int8)
OUT
cmp -s moves.out moves.want || { echo "FAIL: moved int8 values:"; cat moves.out; echo "--- expected:"; cat moves.want; fail=1; }

# quantize, freeze, save; convert to int8, save again
cat >quant.head <<'FL'
import paddle.fluid as fluid
import numpy as np
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.layers.data(name='x', shape=[3], dtype='float32')
    h = fluid.layers.fc(x, size=4, act='relu')
    pred = fluid.layers.fc(h, size=2)
    loss = fluid.layers.mean(fluid.layers.square(pred))
    test = main.clone(for_test=True)
    fluid.optimizer.SGD(learning_rate=0.05).minimize(loss)
t = fluid.contrib.QuantizeTranspiler()
t.training_transpile(main, startup)
t.training_transpile(test, startup)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
np.random.seed(1)
for step in range(5):
    exe.run(main, feed={'x': np.random.uniform(-1, 1, [8, 3]).astype('float32')}, fetch_list=[loss])
t.freeze_program(test, fluid.CPUPlace())
fluid.io.save_persistables(exe, 'frozen', test)
t.convert_to_int8(test, fluid.CPUPlace())
print(sorted([v.name + ' ' + v.dtype for v in test.list_vars() if v.persistable]))
print([op.input('Y') for op in test.global_block().ops if op.type == 'mul'])
fluid.io.save_persistables(exe, 'int8', test)
fluid.io.save_inference_model('model', ['x'], [pred], exe, test)
FL
run quant 0 <quant.head
cat >quant.want <<'OUT'
['fc_0.b_0 float32', 'fc_0.w_0.int8 int8', 'fc_0.w_0.scale float32', 'fc_1.b_0 float32', 'fc_1.w_0.int8 int8', 'fc_1.w_0.scale float32']
[['fc_0.w_0.int8'], ['fc_1.w_0.int8']]
OUT
cmp -s quant.out quant.want || { echo "FAIL: the int8 program:"; cat quant.out; echo "--- expected:"; cat quant.want; fail=1; }
python3 - "$ROOT/tests/e2e" <<'PY' || fail=1
import os, struct, sys
sys.path.insert(0, sys.argv[1])
from fluid_files import read_lod_tensor
def read(path):  # a saved var's file: one tensor of Fluid's stream format (docs/running.md)
    b = open(path, "rb").read()
    dt, dims, values, lod, end = read_lod_tensor(b)
    assert end == len(b) and not lod, path
    size = struct.calcsize({"float32": "f", "int8": "b"}[dt])
    return dt, dims, values, len(b) - (end - len(values) * size)  # the bytes after the header
bad = 0
for w, numel in [("fc_0.w_0", 12), ("fc_1.w_0", 8)]:
    fdt, fdims, fv, fbytes = read("frozen/" + w)
    for d in ("int8", "model"):
        idt, idims, iv, ibytes = read(d + "/" + w + ".int8")
        if idt != "int8" or idims != fdims or ibytes != numel or fbytes != 4 * numel:
            print("FAIL: %s/%s.int8: dtype %s dims %s, %d bytes of values (float32 file: %d)" % (d, w, idt, idims, ibytes, fbytes))
            bad = 1
        if [float(v) for v in iv] != fv or max(abs(v) for v in iv) != 127:
            print("FAIL: %s/%s.int8 holds %s, the frozen weights %s" % (d, w, iv, fv))
            bad = 1
    for d in ("int8", "model"):
        if os.path.exists(d + "/" + w):
            print("FAIL: %s/%s: the float weight is saved with the int8 program" % (d, w))
            bad = 1
sys.exit(bad)
PY

# the int8 program is for storage: running it is refused where the op reads the int8 weight
{ cat quant.head; echo "exe.run(test, feed={'x': np.ones([2, 3], dtype='float32')}, fetch_list=[pred])"; } | run run_int8 1
expect_err run_int8 "run_int8.fl:26:1: error: exe.run of the program_"
expect_err run_int8 "program: mul: input Y 'fc_0.w_0.int8' is int8, a dtype fluidc stores, moves and casts but computes nothing on: mul has no int8 kernel; cast it to float32 first (fluid.layers.cast(x, 'float32'))"
expect_err run_int8 "run_int8.fl:6:9: note: the op is made here"

run mul_int8 1 <<'FL'
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[3], dtype='int8')
y = fluid.layers.fc(x, size=2)
FL
expect_err mul_int8 "mul_int8.fl:3:5: error: mul: input X 'x' is int8, a dtype fluidc stores, moves and casts but computes nothing on: mul has no int8 kernel; cast it to float32 first"
[ "$fail" = 0 ] && echo "storage_dtypes: ok"
exit "$fail"
