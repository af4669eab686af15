#!/bin/sh
# test_saveload.sh FLRUN: fluid.io's save_params / save_persistables and load_params /
# load_persistables between runs (docs/driver.md, "Saving and serving"), in Fluid's layout
# (checkpoint formats 4 and 5). A script trains a few
# steps and saves; a second run loads what it saved and computes the same loss (within 1e-6,
# relative: the same float32 ops on the same values); flrun --load reads the same checkpoint in
# a program without a driver; a program whose var has another shape is refused, naming it.
set -u
FLRUN=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }

model() { # the model of examples/fit_a_line.fl, fc of width $1
    cat <<EOT
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[13], dtype='float32')
y = fluid.layers.data(name='y', shape=[1], dtype='float32')
pred = fluid.layers.fc(input=x, size=$1)
loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
feed = {'x': [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3],
              [1.3, 1.2, 1.1, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]],
        'y': [[2.0], [3.0]]}
EOT
}
script() { # script NAME WIDTH LINES...: the model of width WIDTH, then LINES
    name=$1 width=$2
    shift 2
    { model "$width"; printf '%s\n' "$@"; } >"$name.fl"
}
script train 1 'for i in range(5):' '    exe.run(feed=feed, fetch_list=[loss])' \
    'fluid.io.save_params(exe, "params")' 'fluid.io.save_persistables(exe, "pers/")' \
    'fluid.io.save_params(exe, "cparams", filename="__params__")' \
    'fluid.io.save_persistables(exe, "cpers", main_program=fluid.default_main_program(), filename="all")' \
    'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script params 1 'fluid.io.load_params(exe, "params")' 'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script pers 1 'fluid.io.load_persistables(exe, "pers")' 'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script cparams 1 'fluid.io.load_params(exe, "cparams", filename="__params__")' \
    'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script cpers 1 'fluid.io.load_vars(exe, "cpers", predicate=lambda v: v.persistable, filename="all")' \
    'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script wide 2 'fluid.io.load_params(exe, "params")'
script notcombined 1 'fluid.io.load_params(exe, "params", filename="__params__")'

"$FLRUN" train.fl >train.out 2>&1 || bad "train.fl: $(cat train.out)"
[ "$(cat params/MANIFEST)" = "$(printf 'fc_0.w_0\nfc_0.b_0')" ] || bad "params/MANIFEST: $(cat params/MANIFEST)"
[ "$(cat pers/MANIFEST)" = "$(printf 'fc_0.w_0\nfc_0.b_0\nlearning_rate_0')" ] || bad "pers/MANIFEST: $(cat pers/MANIFEST)"
[ "$(cat params/FORMAT)" = "fluidc checkpoint 4" ] || bad "params/FORMAT: $(cat params/FORMAT)"
[ "$(cat cparams/FORMAT)" = "fluidc checkpoint 5" ] || bad "cparams/FORMAT: $(cat cparams/FORMAT)"
[ "$(ls cparams | tr '\n' ' ')" = "FORMAT MANIFEST __params__ " ] || bad "cparams holds $(ls cparams)"
[ "$(cat cparams/MANIFEST)" = "$(printf '__params__\nfc_0.b_0\nfc_0.w_0')" ] || bad "cparams/MANIFEST: $(cat cparams/MANIFEST)"
# the combined file is the var files (Fluid's tensors) one after the other, sorted by name
[ "$(cat params/fc_0.b_0 params/fc_0.w_0 | cksum)" = "$(cksum <cparams/__params__)" ] || bad "cparams/__params__ is not params' files joined"
for f in params pers cparams cpers; do
    "$FLRUN" $f.fl >$f.out 2>&1 || bad "$f.fl: $(cat $f.out)"
    awk 'NR == FNR { a = $2; next } { b = $2 }
         END { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; exit !(a != "" && b != "" && d <= 1e-6 * (m > 1 ? m : 1)) }' \
        train.out $f.out || bad "$f.fl: the loaded run's loss [$(cat $f.out)] is not the saving run's [$(cat train.out)]"
done
# a second save replaces the checkpoint the first one wrote
"$FLRUN" train.fl >train2.out 2>&1 || bad "train.fl again: $(cat train2.out)"
# flrun --load reads a checkpoint of save_persistables, combined or not (fit_a_line.fl has the
# same vars), and predicts the same
for d in pers cpers; do
    "$FLRUN" "$ROOT/examples/fit_a_line.fl" -q --load $d --predict "$ROOT/examples/data/boston_features.csv" >$d.pred 2>&1 ||
        bad "flrun --load $d: $(cat $d.pred)"
    [ "$(grep -c '^-\{0,1\}[0-9]' $d.pred)" = 3 ] || bad "flrun --load $d --predict: $(cat $d.pred)"
done
cmp -s pers.pred cpers.pred || bad "--load cpers predicts [$(cat cpers.pred)], --load pers [$(cat pers.pred)]"
# another shape: refused at the load, naming the var and both shapes
if "$FLRUN" wide.fl >wide.out 2>&1; then bad "wide.fl loaded [1]-wide params into a [2]-wide fc"; fi
grep -qF "runtime error in op 'load_vars' (wide.fl:12:1): loading 'params': 'fc_0.w_0' is float32 [13, 1] in the file but float32 [13, 2] in the program" wide.out ||
    bad "wide.fl: $(cat wide.out)"
# the vars of a Program() (a named program of the bundle): saved with one initializer, loaded
# into a run whose initializer differs, which then computes what the saving run did
named() { # named INIT LINES...: an fc of Program() whose weights start at INIT
    init=$1
    shift
    { cat <<EOT
import paddle.fluid as fluid
prog, start = fluid.Program(), fluid.Program()
with fluid.program_guard(prog, start):
    x = fluid.layers.data(name='x', shape=[2], dtype='float32')
    p = fluid.layers.fc(input=x, size=1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant($init)))
exe = fluid.Executor(fluid.CPUPlace())
exe.run(start)
EOT
      printf '%s\n' "$@"; } >named_$init.fl
}
named 0.5 'fluid.io.save_params(exe, "np_params", main_program=prog, filename="w")'
named 0.25 'fluid.io.load_params(exe, "np_params", main_program=prog, filename="w")' \
    "print(exe.run(prog, feed={'x': [[1.0, 2.0]]}, fetch_list=[p])[0])"
"$FLRUN" named_0.5.fl >np1.out 2>&1 || bad "named_0.5.fl: $(cat np1.out)"
"$FLRUN" named_0.25.fl >np2.out 2>&1 || bad "named_0.25.fl: $(cat np2.out)"
[ "$(cat np2.out)" = "[[1.5]]" ] || bad "named_0.25.fl printed [$(cat np2.out)], expected [[1.5]] (0.5 * (1 + 2))"
# save_inference_model, then a training step that computes the prediction with the saved
# parameters (and changes them), then load_inference_model: the inference program's prediction
# is the training step's (within 1e-6), on the parameters loaded back; combined in a params file
for pf in None '"__params__"'; do
    script infer 1 'for i in range(3):' '    exe.run(feed=feed, fetch_list=[loss])' \
        "fluid.io.save_inference_model('inf', ['x'], [pred], exe, params_filename=$pf)" \
        'pt, = exe.run(feed=feed, fetch_list=[pred])' \
        "[prog, feed_names, fetch_targets] = fluid.io.load_inference_model('inf', exe, params_filename=$pf)" \
        "pi, = exe.run(prog, feed={feed_names[0]: feed['x']}, fetch_list=fetch_targets)" \
        'print("train %.9g %.9g" % (pt[0][0], pt[1][0]))' 'print("infer %.9g %.9g" % (pi[0][0], pi[1][0]))'
    rm -rf inf
    "$FLRUN" infer.fl >infer.out 2>&1 || bad "infer.fl ($pf): $(cat infer.out)"
    awk '/^train/ { t1 = $2; t2 = $3 } /^infer/ { i1 = $2; i2 = $3 }
         function off(a, b) { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; return d > 1e-6 * (m > 1 ? m : 1) }
         END { exit (t1 == "" || i1 == "" || off(t1, i1) || off(t2, i2)) }' infer.out ||
        bad "infer.fl ($pf): the inference program's prediction is not the training run's: $(tr '\n' '|' <infer.out)"
    [ "$(sed -n 1p inf/MANIFEST)" = "$([ "$pf" = None ] && echo fc_0.w_0 || echo __params__)" ] || bad "inf/MANIFEST ($pf): $(cat inf/MANIFEST)"
done
# filename= of a checkpoint that has a file per var
if "$FLRUN" notcombined.fl >nc.out 2>&1; then bad "notcombined.fl loaded"; fi
grep -qF "loading 'params': it holds a file per var, not one combined file '__params__'" nc.out || bad "notcombined.fl: $(cat nc.out)"
[ $fail = 0 ] && echo "test_saveload: ok"
exit $fail
