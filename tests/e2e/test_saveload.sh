#!/bin/sh
# test_saveload.sh FLRUN: fluid.io's save_params / save_persistables and load_params /
# load_persistables between runs (docs/driver.md, "Saving and serving"). A script trains a few
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
    'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script params 1 'fluid.io.load_params(exe, "params")' 'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script pers 1 'fluid.io.load_persistables(exe, "pers")' 'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script wide 2 'fluid.io.load_params(exe, "params")'

"$FLRUN" train.fl >train.out 2>&1 || bad "train.fl: $(cat train.out)"
[ "$(cat params/MANIFEST)" = "$(printf 'fc_0.w_0\nfc_0.b_0')" ] || bad "params/MANIFEST: $(cat params/MANIFEST)"
[ "$(cat pers/MANIFEST)" = "$(printf 'fc_0.w_0\nfc_0.b_0\nlearning_rate_0')" ] || bad "pers/MANIFEST: $(cat pers/MANIFEST)"
for f in params pers; do
    "$FLRUN" $f.fl >$f.out 2>&1 || bad "$f.fl: $(cat $f.out)"
    awk 'NR == FNR { a = $2; next } { b = $2 }
         END { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; exit !(a != "" && b != "" && d <= 1e-6 * (m > 1 ? m : 1)) }' \
        train.out $f.out || bad "$f.fl: the loaded run's loss [$(cat $f.out)] is not the saving run's [$(cat train.out)]"
done
# a second save replaces the checkpoint the first one wrote
"$FLRUN" train.fl >train2.out 2>&1 || bad "train.fl again: $(cat train2.out)"
# flrun --load reads a checkpoint of save_persistables (fit_a_line.fl has the same vars)
"$FLRUN" "$ROOT/examples/fit_a_line.fl" -q --load pers --predict "$ROOT/examples/data/boston_features.csv" >pred.out 2>&1 ||
    bad "flrun --load pers: $(cat pred.out)"
[ "$(grep -c '^-\{0,1\}[0-9]' pred.out)" = 3 ] || bad "flrun --load pers --predict: $(cat pred.out)"
# another shape: refused at the load, naming the var and both shapes
if "$FLRUN" wide.fl >wide.out 2>&1; then bad "wide.fl loaded [1]-wide params into a [2]-wide fc"; fi
grep -qF "runtime error in op 'load_vars' (wide.fl:12:1): loading 'params': 'fc_0.w_0' is float32 [13, 1] in the file but float32 [13, 2] in the program" wide.out ||
    bad "wide.fl: $(cat wide.out)"
[ $fail = 0 ] && echo "test_saveload: ok"
exit $fail
