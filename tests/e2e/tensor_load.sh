#!/bin/sh
# tensor_load.sh FLRUN REPO_ROOT: fluid.layers.load (Fluid's load op, compiler/ops/lodfile.def)
# reads files a Python writer made from the format's definition (tests/e2e/fluid_files.py):
# float32, float64, int32, int64 and bool tensors, and an int64 one with a LoD level, into vars
# of known, partly known and unknown shape; the values printed are the file's exactly (each is a
# value numpy prints as the writer wrote it). Then each bad file and each mismatch
# with the var's declaration is a located runtime error naming the file, the var and both shapes
# or dtypes, never a crash. float16, int8 and uint8 files load into vars of those dtypes, and
# load_as_fp16=True loads a float32 file into a float16 var: cast back, each value is the float32
# value rounded to the nearest half (the writer's struct 'e' rounding), within 2^-11 relative.
set -u
FLRUN=$1 ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
python3 - "$ROOT/tests/e2e" <<'PY' || { echo "FAIL: the Python writer"; exit 1; }
import sys
sys.path.insert(0, sys.argv[1])
import struct
from fluid_files import lod_tensor, write_files
X = [struct.unpack("<f", struct.pack("<f", v))[0] for v in [0.1, -3.14159, 1000.7, 0.001, 60000.3]]
files = {
    "w.bin": lod_tensor("float32", [2, 3], [1.5, -2.25, 1024.0, 0.0078125, -0.0, 65504.0]),
    "d.bin": lod_tensor("float64", [3], [0.5, -1e300, 2.0 ** -10]),
    "i32.bin": lod_tensor("int32", [2, 2], [7, -8, 2 ** 31 - 1, -2 ** 31]),
    "ids.bin": lod_tensor("int64", [4, 1], [1, -2, 3, 1 << 40], lod=[[0, 1, 4]]),
    "mask.bin": lod_tensor("bool", [3], [1, 0, 1]),
    "fp16.bin": lod_tensor("float16", [2], [1.0, 2.0]),
    "i8.bin": lod_tensor("int8", [4], [-128, -1, 0, 127]),
    "u8.bin": lod_tensor("uint8", [2, 2], [0, 1, 200, 255]),
    "i16.bin": lod_tensor("int16", [2], [1, 2]),
    "x.bin": lod_tensor("float32", [5], X),
    "xh.bin": lod_tensor("float32", [5], [struct.unpack("<e", struct.pack("<e", v))[0] for v in X]),
    "two.bin": lod_tensor("float32", [1], [1.0]) + lod_tensor("float32", [1], [2.0]),
    "garbage.bin": b"not a tensor file at all\n",
}
files["cut.bin"] = files["w.bin"][:-5]
write_files(".", files)
PY
. "$ROOT/tests/e2e/run_fl_common.sh"

run loads 0 <<'FL'
import numpy as np
import paddle.fluid as fluid
main = fluid.Program()
startup = fluid.Program()
with fluid.program_guard(main, startup):
    w = fluid.layers.create_tensor(dtype='float32', name='w')
    d = fluid.layers.data(name='d', shape=[-1], dtype='float64', append_batch_size=False)
    i32 = fluid.layers.data(name='i32', shape=[2, 2], dtype='int32', append_batch_size=False)
    ids = fluid.layers.data(name='ids', shape=[1], dtype='int64', lod_level=1)
    mask = fluid.layers.create_tensor(dtype='bool')
    fluid.layers.load(w, 'w.bin')
    fluid.layers.load(d, 'd.bin', load_as_fp16=False)
    fluid.layers.load(i32, file_path='i32.bin')
    fluid.layers.load(ids, 'ids.bin')
    fluid.layers.load(mask, 'mask.bin')
    s = fluid.layers.reduce_sum(fluid.layers.cast(ids, 'float64'))
exe = fluid.Executor(fluid.CPUPlace())
r = exe.run(main, fetch_list=[w, d, i32, ids, mask, s], return_numpy=False)
print(r[0])
print(r[1])
print(r[2])
print(r[3])
print(r[3].lod())
print(r[4])
print(r[5])
FL
cat >loads.want <<'OUT'
[[ 1.5000e+00 -2.2500e+00  1.0240e+03]
 [ 7.8125e-03 -0.0000e+00  6.5504e+04]]
[ 5.000000e-001 -1.000000e+300  9.765625e-004]
[[          7          -8]
 [ 2147483647 -2147483648]]
[[            1]
 [           -2]
 [            3]
 [1099511627776]]
[[0, 1, 4]]
[ True False  True]
[1.09951163e+12]
OUT
cmp -s loads.out loads.want || { echo "FAIL: the loaded values:"; cat loads.out; echo "--- expected:"; cat loads.want; fail=1; }

# each bad file, each mismatch with the declaration: a runtime error at the load's line
bad() { # NAME VARDECL FILE MESSAGE
    run "$1" 1 <<FL
import paddle.fluid as fluid
v = $2
fluid.layers.load(v, '$3')
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_main_program(), fetch_list=[v])
FL
    expect_err "$1" "runtime error in op 'load' ($1.fl:3:1): $4"
}
f32='fluid.layers.create_tensor(dtype="float32", name="v")'
bad missing "$f32" nope.bin "load of 'v': cannot open 'nope.bin': No such file or directory"
bad directory "$f32" . "load of 'v': '.' is not a regular file (a directory)"
bad cut "$f32" cut.bin "'cut.bin' is not a tensor file of Fluid's save op: the stream ends inside the values of the float32 [2, 3] tensor: it needs 24 bytes at byte 26, and 19 are left"
bad garbage "$f32" garbage.bin "'garbage.bin' is not a tensor file of Fluid's save op: the LoD version at byte 0 is 544501614: Fluid writes 0"
bad fp16 "$f32" fp16.bin "'fp16.bin' holds a float16 tensor, but 'v' is declared float32"
bad int16 "$f32" i16.bin "'i16.bin' is not a tensor file of Fluid's save op: the tensor at byte 20 holds INT16 values (Fluid's dtype 1), which fluidc has no tensors of: it reads float32, float64, float16, int32, int64, int8, uint8 and bool"
bad two "$f32" two.bin "'two.bin' holds 28 bytes after its tensor (a tensor file holds one tensor; a file of several vars is read by fluid.io.load_vars)"
bad dtype 'fluid.layers.create_tensor(dtype="int64", name="v")' w.bin "'w.bin' holds a float32 tensor, but 'v' is declared int64"
bad shape 'fluid.layers.data(name="v", shape=[3, -1], dtype="float32", append_batch_size=False)' w.bin \
    "'w.bin' holds a tensor of shape [2, 3], but 'v' is declared [3, -1]"
bad rank 'fluid.layers.data(name="v", shape=[6], dtype="float32", append_batch_size=False)' w.bin \
    "'w.bin' holds a tensor of shape [2, 3], but 'v' is declared [6]"
bad lod 'fluid.layers.data(name="v", shape=[1], dtype="int64")' ids.bin \
    "'ids.bin' holds a tensor with 1 LoD levels, but 'v' has lod_level 0 (declare it with lod_level=1)"
bad nolod 'fluid.layers.data(name="v", shape=[3], dtype="float32", lod_level=1)' w.bin \
    "'w.bin' holds a tensor with 0 LoD levels, but 'v' has lod_level 1 (declare it with lod_level=0)"

# the storage dtypes: Fluid's FP16, INT8 and UINT8 files, and load_as_fp16
run storage 0 <<'FL'
import paddle.fluid as fluid
h = fluid.layers.create_tensor(dtype='float16')
i8 = fluid.layers.create_tensor(dtype='int8')
u8 = fluid.layers.create_tensor(dtype='uint8')
x = fluid.layers.create_tensor(dtype='float32')
xh = fluid.layers.create_tensor(dtype='float32')
xf16 = fluid.layers.create_tensor(dtype=fluid.core.VarDesc.VarType.FP16)
fluid.layers.load(h, 'fp16.bin')
fluid.layers.load(i8, 'i8.bin')
fluid.layers.load(u8, 'u8.bin')
fluid.layers.load(x, 'x.bin')
fluid.layers.load(xh, 'xh.bin')
fluid.layers.load(xf16, 'x.bin', load_as_fp16=True)
back = fluid.layers.cast(xf16, 'float32')
exact = fluid.layers.reduce_max(fluid.layers.abs(back - xh))
rel = fluid.layers.reduce_max(fluid.layers.abs(back - x) / fluid.layers.abs(x))
exe = fluid.Executor(fluid.CPUPlace())
r = exe.run(fluid.default_main_program(), fetch_list=[h, i8, u8, xf16, exact, rel])
print(r[0])
print(r[1])
print(r[2])
print(r[3])
print(r[4])
print(r[5] <= 2.0 ** -11, r[5] > 0)
FL
cat >storage.want <<'OUT'
[1. 2.]
[-128   -1    0  127]
[[  0   1]
 [200 255]]
[ 9.9976e-02 -3.1406e+00  1.0005e+03  1.0004e-03  6.0000e+04]
[0.]
[ True] [ True]
OUT
cmp -s storage.out storage.want || { echo "FAIL: the storage dtypes' values:"; cat storage.out; echo "--- expected:"; cat storage.want; fail=1; }
run fp16_not_half 1 <<'FL'
import paddle.fluid as fluid
v = fluid.layers.create_tensor(dtype='float32')
fluid.layers.load(v, 'w.bin', load_as_fp16=True)
FL
expect_err fp16_not_half "fp16_not_half.fl:3:1: error: fluid.layers.load(create_tensor_0, 'w.bin', load_as_fp16=True) converts the tensor to float16, but create_tensor_0 is float32: load into a float16 var (fluid.layers.create_tensor(dtype='float16'))"
run not_a_var 1 <<'FL'
import paddle.fluid as fluid
fluid.layers.load([1.0, 2.0], 'w.bin')
FL
expect_err not_a_var "not_a_var.fl:2:1: error: fluid.layers.load(out=...) takes the var to load into (create_tensor, data, a parameter), found list"
[ "$fail" = 0 ] && echo "tensor_load: ok"
exit "$fail"
