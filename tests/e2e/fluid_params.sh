#!/bin/sh
# fluid_params.sh FLRUN REPO_ROOT: parameters saved in Paddle's layouts (docs/running.md,
# "Paddle's saved parameters"), written here by a Python writer from the format's definition
# (tests/e2e/fluid_files.py), load in a script and with flrun --load:
#   - a directory of a file per var, each one tensor of Fluid's stream format, with files of vars
#     nobody asks for and a file that is no tensor at all beside them (ignored);
#   - combined files, the vars' tensors back to back sorted by name (Fluid's save_combine);
# by load_params (parameters only: the persistable global var keeps its value),
# load_persistables, load_vars(predicate=) as PaddleCV's if_exist, load_vars(vars=) of a LoD var
# (its offsets kept) and load_inference_model(params_filename=). The values fetched are the
# file's exactly (each a float numpy prints as written), the fc output computed from them exact
# in float32 (small integers and halves). Then a missing var's file, a wrong dtype, a wrong shape,
# LoD levels the var has not, a truncated file and bytes after a tensor or at the end of a
# combined file: each an error naming the var and the file, at the call's line. What the
# script's fluid.io.save_* write (checkpoint formats 4 and 5) is read back by the Python reader
# as Paddle's load and load_combine read it, values and LoD equal, and by flrun --load.
set -u
FLRUN=$1 ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
python3 - "$ROOT/tests/e2e" <<'PY' || { echo "FAIL: the Python writer"; exit 1; }
import os
import sys
sys.path.insert(0, sys.argv[1])
from fluid_files import lod_tensor, write_files

W = [0.5, -1.25, 2.0, 0.75, -3.0, 1.5]
B = [0.25, -0.5]
W2 = [2 * v for v in W]
B2 = [2 * v for v in B]
pd = {"fc_0.w_0": lod_tensor("float32", [3, 2], W), "fc_0.b_0": lod_tensor("float32", [2], B),
      "gstep": lod_tensor("float32", [1], [7.0]),
      "ids": lod_tensor("int64", [3, 1], [4, 5, 6], lod=[[0, 1, 3]]),
      "fc_9.w_0": lod_tensor("float64", [5], [1.0] * 5), "notes.txt": b"not a tensor\n"}
two = {"fc_0.w_0": lod_tensor("float32", [3, 2], W2), "fc_0.b_0": lod_tensor("float32", [2], B2),
       "gstep": lod_tensor("float32", [1], [9.0])}
everything = b"".join(two[k] for k in sorted(two))
files = {"pd/" + k: v for k, v in pd.items()}
files["cb/all"] = everything
files["cb/params"] = two["fc_0.b_0"] + two["fc_0.w_0"]
files["cb/extra"] = everything + b"\0\0\0"
files["cb/cut"] = everything[:-3]
files["cb/unsorted"] = two["fc_0.w_0"] + two["fc_0.b_0"]
bad = {"dtype": lod_tensor("float64", [3, 2], W), "shape": lod_tensor("float32", [2, 3], W),
       "cut": pd["fc_0.w_0"][:-1], "lod": lod_tensor("float32", [3, 2], W, lod=[[0, 3]]),
       "tail": pd["fc_0.w_0"] + b"x"}
for name, w in bad.items():
    files["bad_%s/fc_0.w_0" % name] = w
    files["bad_%s/fc_0.b_0" % name] = pd["fc_0.b_0"]
files["bad_miss/fc_0.w_0"] = pd["fc_0.w_0"]
for d in ["pd", "cb"] + ["bad_" + n for n in list(bad) + ["miss"]]:
    os.makedirs(d, exist_ok=True)
write_files(".", files)
PY
. "$ROOT/tests/e2e/run_fl_common.sh"

NET="import os
import numpy as np
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[3], dtype='float32')
y = fluid.layers.fc(input=x, size=2)
g = fluid.layers.create_global_var(shape=[1], value=0.0, dtype='float32', persistable=True, name='gstep')
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
feed = {'x': np.array([[1, 2, 3]], dtype='float32')}"

run loads 0 <<FL
$NET
ids = fluid.layers.data(name='ids', shape=[1], dtype='int64', lod_level=1)
def show(what):
    r = exe.run(fluid.default_main_program(), feed=feed, fetch_list=[y, 'fc_0.b_0', g])
    print(what, r[0][0], r[1], r[2])
fluid.io.load_params(exe, 'pd')
show('load_params')
fluid.io.load_persistables(exe, 'pd')
show('load_persistables')
fluid.io.load_persistables(exe, 'cb', filename='all')
show('combined persistables')
fluid.io.load_params(exe, 'pd')
fluid.io.load_params(exe, 'cb', filename='params')
show('combined params')  # gstep is no parameter: still 9
def if_exist(var):
    return os.path.exists(os.path.join('pd', var.name))
fluid.io.load_vars(exe, 'pd', predicate=if_exist)
show('if_exist')
fluid.io.load_vars(exe, 'pd', vars=[ids])
r = exe.run(fluid.default_main_program(), feed=feed, fetch_list=['fc_0.w_0', ids], return_numpy=False)
print(np.array(r[0]))
print(np.array(r[1]).reshape(-1), r[1].lod())
fluid.io.save_params(exe, 'out_split')
fluid.io.save_persistables(exe, 'out_comb', filename='all')
fluid.io.save_vars(exe, 'out_ids', vars=[ids])
FL
cat >loads.want <<'OUT'
load_params [-4.25  4.25] [ 0.25 -0.5 ] [0.]
load_persistables [-4.25  4.25] [ 0.25 -0.5 ] [7.]
combined persistables [-8.5  8.5] [ 0.5 -1. ] [9.]
combined params [-8.5  8.5] [ 0.5 -1. ] [9.]
if_exist [-4.25  4.25] [ 0.25 -0.5 ] [7.]
[[ 0.5  -1.25]
 [ 2.    0.75]
 [-3.    1.5 ]]
[4 5 6] [[0, 1, 3]]
OUT
cmp -s loads.out loads.want || { echo "FAIL: the loaded values:"; cat loads.out; echo "--- expected:"; cat loads.want; fail=1; }

# what the script saved, read as Paddle's load and load_combine read it (the Python reader of the
# format's definition): a var's file is one tensor, named after it; the combined file the
# persistables' tensors sorted by name, nothing after them; the LoD var keeps its offsets
python3 - "$ROOT/tests/e2e" <<'PY' || { echo "FAIL: the saved files, read by the Python reader"; fail=1; }
import sys
sys.path.insert(0, sys.argv[1])
from fluid_files import read_lod_tensor
want = {"fc_0.w_0": ("float32", [3, 2], [0.5, -1.25, 2.0, 0.75, -3.0, 1.5], []),
        "fc_0.b_0": ("float32", [2], [0.25, -0.5], []), "gstep": ("float32", [1], [7.0], []),
        "ids": ("int64", [3, 1], [4, 5, 6], [[0, 1, 3]])}
def check(path, data, pos, name):
    dt, dims, values, lod, end = read_lod_tensor(data, pos)
    if (dt, dims, values, lod) != want[name]:
        sys.exit("%s: %s holds %s, not %s" % (path, name, (dt, dims, values, lod), want[name]))
    return end
for d, names in (("out_split", ["fc_0.w_0", "fc_0.b_0"]), ("out_ids", ["ids"])):
    for n in names:
        b = open(d + "/" + n, "rb").read()
        if check(d + "/" + n, b, 0, n) != len(b):
            sys.exit("%s/%s: bytes after its tensor" % (d, n))
b = open("out_comb/all", "rb").read()
pos = 0
for n in sorted(["fc_0.w_0", "fc_0.b_0", "gstep"]):
    pos = check("out_comb/all", b, pos, n)
if pos != len(b):
    sys.exit("out_comb/all: %d bytes after its tensors" % (len(b) - pos))
PY

# flrun --load: a directory of a file per var, and a combined file of the persistables
cat >show.fl <<FL
$NET
r = exe.run(fluid.default_main_program(), feed=feed, fetch_list=[y, 'fc_0.b_0', g])
print(r[0][0], r[1], r[2])
FL
for ck in pd cb/all out_comb; do
    "$FLRUN" show.fl --load "$ck" >flrun.out 2>flrun.err || { echo "FAIL: --load $ck:"; cat flrun.err; fail=1; }
    want="[-4.25  4.25] [ 0.25 -0.5 ] [7.]"
    [ "$ck" = cb/all ] && want="[-8.5  8.5] [ 0.5 -1. ] [9.]"  # out_comb: what loads.fl saved of pd's
    [ "$(cat flrun.out)" = "$want" ] || { echo "FAIL: --load $ck printed '$(cat flrun.out)', not '$want'"; fail=1; }
done
# a combined file of the parameters only: the persistables are more (the file ends early)
"$FLRUN" show.fl --load cb/params >flrun.out 2>flrun.err && { echo "FAIL: --load cb/params loaded"; fail=1; }
grep -qF -- "--load cb: the combined file 'params' does not hold 'gstep', tensor 3 of the vars asked (sorted by name, as Fluid's save_combine writes them): the stream ends inside the LoD version: it needs 4 bytes at byte 82, and 0 are left" flrun.err ||
    { echo "FAIL: --load cb/params:"; cat flrun.err; fail=1; }

# load_inference_model(params_filename=) of a model whose parameters Paddle's save_combine wrote:
# the model saved here, its fluidc checkpoint files replaced by Fluid's combined file
run save_model 0 <<FL
$NET
fluid.io.save_inference_model('m', ['x'], [y], exe, params_filename='params')
FL
python3 - "$ROOT/tests/e2e" <<'PY' || { echo "FAIL: the model's Fluid parameters"; fail=1; }
import os
import sys
sys.path.insert(0, sys.argv[1])
from fluid_files import lod_tensor
for f in ("FORMAT", "MANIFEST", "params"):
    os.remove(os.path.join("m", f))
with open("m/params", "wb") as f:
    f.write(lod_tensor("float32", [2], [1.0, -1.0]) + lod_tensor("float32", [3, 2], [1, 0, 0, 1, 1, 1]))
PY
run infer 0 <<'FL'
import numpy as np
import paddle.fluid as fluid
exe = fluid.Executor(fluid.CPUPlace())
prog, feeds, targets = fluid.io.load_inference_model('m', exe, params_filename='params')
print(exe.run(prog, feed={feeds[0]: np.array([[1, 2, 3]], dtype='float32')}, fetch_list=targets)[0])
FL
[ "$(cat infer.out)" = "[[5. 4.]]" ] || { echo "FAIL: the inference model printed '$(cat infer.out)'"; fail=1; }

# each bad directory or file: an error naming the var and the file, at the load's line
bad() { # NAME LOADCALL MESSAGE
    run "$1" 1 <<FL
$NET
$2
FL
    expect_err "$1" "runtime error in op 'load_vars' ($1.fl:10:1): $3"
}
bad missing "fluid.io.load_params(exe, 'bad_miss')" "loading 'bad_miss': no saved value for 'fc_0.b_0' (no file 'fc_0.b_0' in it)"
bad dtype "fluid.io.load_params(exe, 'bad_dtype')" \
    "loading 'bad_dtype': 'fc_0.w_0' is float64 [3, 2] in the file but float32 [3, 2] in the program"
bad shape "fluid.io.load_params(exe, 'bad_shape')" \
    "loading 'bad_shape': 'fc_0.w_0' is float32 [2, 3] in the file but float32 [3, 2] in the program"
bad lod "fluid.io.load_params(exe, 'bad_lod')" \
    "loading 'bad_lod': 'fc_0.w_0' has 1 LoD level in the file but lod_level 0 in the program"
bad cut "fluid.io.load_params(exe, 'bad_cut')" \
    "loading 'bad_cut': 'fc_0.w_0': its file 'fc_0.w_0' is not a tensor of Fluid's format: the stream ends inside the values of the float32 [3, 2] tensor: it needs 24 bytes at byte 26, and 23 are left"
bad tail "fluid.io.load_params(exe, 'bad_tail')" \
    "loading 'bad_tail': 'fc_0.w_0': its file 'fc_0.w_0' holds 1 byte after its tensor (Fluid's save writes one tensor to a var's file)"
bad extra "fluid.io.load_persistables(exe, 'cb', filename='extra')" \
    "loading 'cb': the combined file 'extra' holds 3 bytes after the 3 tensors of the vars asked (Fluid's load_combine reads a file whole: load the vars it was saved with)"
bad combined_cut "fluid.io.load_persistables(exe, 'cb', filename='cut')" \
    "loading 'cb': the combined file 'cut' does not hold 'gstep', tensor 3 of the vars asked (sorted by name, as Fluid's save_combine writes them): the stream ends inside the values of the float32 [1] tensor: it needs 4 bytes at byte 106, and 1 are left"
bad unsorted "fluid.io.load_params(exe, 'cb', filename='unsorted')" \
    "loading 'cb': 'fc_0.b_0' is float32 [3, 2] in the file 'unsorted' but float32 [2] in the program"
bad nofile "fluid.io.load_params(exe, 'cb', filename='none')" \
    "loading 'cb': it has no file 'none' (Fluid's save_*(filename='none') writes one) and no FORMAT (a fluidc checkpoint's)"
exit $fail
