#!/bin/sh
# test_model.sh FLRUN EMBED_MODEL FLC: inference models on disk (docs/driver.md, "Saving and
# serving"; docs/running.md, "Inference models"). A script trains a few steps and saves an
# inference model (dropout in it: the model runs it in test mode) twice, as __model__ with a
# file per parameter and with model_filename= and params_filename=, then prints its test
# program's prediction; flrun DIR --predict and the C API (embed_model) predict the same from
# the directories (within 1e-6, relative: the same float32 ops on the same values). A second run
# replaces both models. Bad directories are errors that say what is wrong, and a save refuses a
# directory holding a file it did not write, which stays as it was.
set -u
FLRUN=$1 EMBED=$2 FLC=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
near() { # near A B: |A - B| <= 1e-6 * max(1, |A|)
    awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a
                                     exit !(a != "" && b != "" && d <= 1e-6 * (m > 1 ? m : 1)) }'
}
cat >train.fl <<'EOT'
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[4], dtype='float32')
y = fluid.layers.data(name='y', shape=[1], dtype='float32')
h = fluid.layers.dropout(fluid.layers.fc(input=x, size=8, act='relu'), dropout_prob=0.5)
pred = fluid.layers.fc(input=h, size=1)
loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
test_prog = fluid.default_main_program().clone(for_test=True)
fluid.optimizer.SGD(learning_rate=0.05).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
feed = {'x': [[0.5, -1.0, 2.0, 0.25], [1.5, 0.5, -0.5, 1.0]], 'y': [[1.0], [2.0]]}
for i in range(5):
    exe.run(feed=feed, fetch_list=[loss])
fluid.io.save_inference_model('m', ['x'], [pred], exe)
fluid.io.save_inference_model('m2', ['x'], [pred, h], exe, model_filename='model.flp', params_filename='params')
p, = exe.run(test_prog, feed=feed, fetch_list=[pred])
print("%.9g %.9g" % (p[0][0], p[1][0]))
EOT
printf '0.5, -1.0, 2.0, 0.25\n\n1.5 0.5 -0.5 1.0\n' >rows.csv
"$FLRUN" train.fl >train.out 2>&1 || bad "train.fl: $(cat train.out)"
t1=$(awk '{ print $1 }' train.out) t2=$(awk '{ print $2 }' train.out)
[ "$(ls m | tr '\n' ' ')" = "FORMAT MANIFEST __model__ fc_0.b_0 fc_0.w_0 fc_1.b_0 fc_1.w_0 " ] || bad "m holds $(ls m)"
[ "$(ls m2 | tr '\n' ' ')" = "FORMAT MANIFEST model.flp params " ] || bad "m2 holds $(ls m2)"
# another script loads both models (read when it compiles, their parameters when it runs) and
# predicts what the training script did; a second feed order and the model's second target too
cat >infer.fl <<'EOT'
import paddle.fluid as fluid
import numpy
exe = fluid.Executor(fluid.CPUPlace())
[prog, feeds, fetches] = fluid.io.load_inference_model('m', exe)
[prog2, feeds2, fetches2] = fluid.io.load_inference_model('m2', exe, model_filename='sub/model.flp',
                                                          params_filename='params')
x = numpy.array([[0.5, -1.0, 2.0, 0.25], [1.5, 0.5, -0.5, 1.0]], dtype='float32')
p, = exe.run(prog, feed={feeds[0]: x}, fetch_list=fetches)
q, h = exe.run(prog2, feed={feeds2[0]: x}, fetch_list=fetches2)
print("%.9g %.9g %.9g %.9g" % (p[0][0], p[1][0], q[0][0], q[1][0]))
print(feeds, feeds2, h.shape)
EOT
"$FLRUN" infer.fl >infer.out 2>&1 || bad "infer.fl: $(cat infer.out)"
i1=$(awk 'NR == 1 { print $1 }' infer.out) i2=$(awk 'NR == 1 { print $2 }' infer.out)
i3=$(awk 'NR == 1 { print $3 }' infer.out) i4=$(awk 'NR == 1 { print $4 }' infer.out)
near "$t1" "$i1" && near "$t2" "$i2" && near "$t1" "$i3" && near "$t2" "$i4" ||
    bad "infer.fl predicted [$(head -1 infer.out)], the training script [$(cat train.out)]"
[ "$(sed -n 2p infer.out)" = "['x'] ['x'] (2, 8)" ] || bad "infer.fl: $(sed -n 2p infer.out)"
# flrun: one line per row, the targets' values of that row
"$FLRUN" m --predict rows.csv >m.pred 2>&1 || bad "flrun m --predict: $(cat m.pred)"
[ "$(wc -l <m.pred)" = 2 ] || bad "flrun m --predict printed $(cat m.pred)"
near "$t1" "$(sed -n 1p m.pred)" && near "$t2" "$(sed -n 2p m.pred)" ||
    bad "flrun m --predict: [$(tr '\n' ' ' <m.pred)], the script predicted [$(cat train.out)]"
"$FLRUN" m2/model.flp --predict rows.csv >m2.pred 2>&1 || bad "flrun m2/model.flp --predict: $(cat m2.pred)"
[ "$(awk '{ print NF }' m2.pred | tr '\n' ' ')" = "9 9 " ] || bad "m2 (pred and h): $(cat m2.pred)"
near "$t1" "$(awk 'NR == 1 { print $1 }' m2.pred)" && near "$t2" "$(awk 'NR == 2 { print $1 }' m2.pred)" ||
    bad "flrun m2/model.flp --predict: [$(cat m2.pred)], the script predicted [$(cat train.out)]"
# the C API, a row at a time
"$EMBED" m 0.5 -1.0 2.0 0.25 >c1.out 2>&1 || bad "embed_model m: $(cat c1.out)"
"$EMBED" m2/model.flp 1.5 0.5 -0.5 1.0 >c2.out 2>&1 || bad "embed_model m2/model.flp: $(cat c2.out)"
near "$t1" "$(cat c1.out)" && near "$t2" "$(cat c2.out)" ||
    bad "embed_model: [$(cat c1.out)] [$(cat c2.out)], the script predicted [$(cat train.out)]"
# flc show names the feeds and targets; flc verify says what the file is
"$FLC" show m/__model__ | grep -qx "inference model: feeds x; targets elementwise_add_1.tmp_0" || bad "flc show m/__model__: $("$FLC" show m/__model__ | tail -1)"
[ "$("$FLC" verify m2/model.flp)" = "m2/model.flp: ok: an inference model (flrun FILE --predict DATA prints its targets)" ] ||
    bad "flc verify m2/model.flp: $("$FLC" verify m2/model.flp 2>&1)"
# two feeds: a row holds the first feed's values, then the second's, in the order the save named them
cat >two.fl <<'EOT'
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[2], dtype='float32')
z = fluid.layers.data(name='z', shape=[3], dtype='float32')
out = fluid.layers.fc(input=[x, z], size=2, act='sigmoid')
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
fluid.io.save_inference_model('two', ['z', 'x'], [out], exe)
o, = exe.run(feed={'x': [[1.0, -2.0]], 'z': [[0.5, 0.25, -1.0]]}, fetch_list=[out])
print("%.9g %.9g" % (o[0][0], o[0][1]))
EOT
"$FLRUN" two.fl >two.out 2>&1 || bad "two.fl: $(cat two.out)"
echo '0.5 0.25 -1.0 1.0 -2.0' >two.csv
"$FLRUN" two --predict two.csv >two.pred 2>&1 || bad "flrun two --predict: $(cat two.pred)"
near "$(awk '{ print $1 }' two.out)" "$(awk '{ print $1 }' two.pred)" &&
    near "$(awk '{ print $2 }' two.out)" "$(awk '{ print $2 }' two.pred)" ||
    bad "flrun two --predict: [$(cat two.pred)], the script computed [$(cat two.out)]"
# export_for_deployment=False: the whole program (the loss and its label too), as __model__.main_program
cat >whole.fl <<'EOT'
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[2], dtype='float32')
y = fluid.layers.data(name='y', shape=[1], dtype='float32')
loss = fluid.layers.mean(fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y))
fluid.optimizer.SGD(learning_rate=0.05).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
print(fluid.io.save_inference_model('whole', 'x', loss, exe, export_for_deployment=False))
EOT
"$FLRUN" whole.fl >whole.out 2>&1 || bad "whole.fl: $(cat whole.out)"
[ "$(cat whole.out)" = "['mean_0.tmp_0']" ] || bad "whole.fl returned $(cat whole.out)"
[ "$(ls whole | tr '\n' ' ')" = "FORMAT MANIFEST __model__.main_program fc_0.b_0 fc_0.w_0 learning_rate_0 " ] ||
    bad "whole holds $(ls whole)"
"$FLC" show whole/__model__.main_program | grep -q "op sgd" || bad "whole/__model__.main_program is not the whole program"
# a second run replaces the two models
"$FLRUN" train.fl >train2.out 2>&1 || bad "train.fl again: $(cat train2.out)"
# bad directories and files
mkdir empty
"$FLRUN" empty --predict rows.csv >e1.out 2>&1 && bad "flrun empty --predict ran"
grep -qF "flrun: error: empty: a directory without an inference model (no __model__ in it: fluid.io.save_inference_model writes one)" e1.out ||
    bad "flrun empty: $(cat e1.out)"
"$EMBED" empty 1 2 3 4 >e2.out 2>&1 && bad "embed_model empty ran"
grep -qF "empty: a directory without an inference model" e2.out || bad "embed_model empty: $(cat e2.out)"
echo 'import paddle.fluid as fluid' >plain.fl
mkdir plain && "$FLC" build plain.fl -o plain/__model__ >/dev/null 2>&1 || bad "flc build plain.fl"
"$FLRUN" plain --predict rows.csv >e3.out 2>&1 && bad "flrun plain --predict ran"
grep -qF "plain: its __model__ is a compiled program but not an inference model (it names no feeds and targets)" e3.out ||
    bad "flrun plain: $(cat e3.out)"
printf '%s\n' 'import paddle.fluid as fluid' 'exe = fluid.Executor(fluid.CPUPlace())' \
    'prog, feeds, fetches = fluid.io.load_inference_model("plain", exe)' >loadplain.fl
"$FLC" check loadplain.fl >e8.out 2>&1 && bad "loadplain.fl compiled"
grep -qF "loadplain.fl:3:24: error: load_inference_model: 'plain/__model__' is a compiled program but not an inference model" e8.out ||
    bad "loadplain.fl: $(cat e8.out)"
# a model saved again with other shapes after the script compiled: its parameters are refused
"$FLC" build infer.fl -o infer.flp >/dev/null 2>&1 || bad "flc build infer.fl"
sed 's/size=8/size=3/' train.fl >narrow.fl
"$FLRUN" narrow.fl >narrow.out 2>&1 || bad "narrow.fl: $(cat narrow.out)"
"$FLRUN" infer.flp >e9.out 2>&1 && bad "infer.flp ran on a model of other shapes"
grep -qF "loading 'm': 'fc_0.w_0' is float32 [4, 3] in the file but float32 [4, 8] in the program" e9.out || bad "infer.flp on a model of other shapes: $(cat e9.out)"
cp -r m nobias && rm nobias/fc_1.b_0
"$EMBED" nobias 1 2 3 4 >e4.out 2>&1 && bad "embed_model nobias ran"
grep -qF "inference model 'nobias': no saved value for 'fc_1.b_0'" e4.out || bad "embed_model nobias: $(cat e4.out)"
"$FLRUN" m >e5.out 2>&1; [ $? = 2 ] || bad "flrun m without --predict: not a usage error"
grep -qF "flrun: 'm' is an inference model: give --predict DATA" e5.out || bad "flrun m: $(cat e5.out)"
"$FLRUN" m --epochs 2 --predict rows.csv >e6.out 2>&1; [ $? = 2 ] || bad "flrun m --epochs: not a usage error"
grep -qF "flrun: --epochs: 'm' is an inference model, which only predicts" e6.out || bad "flrun m --epochs: $(cat e6.out)"
printf '1 2 3\n' >narrow.csv
"$FLRUN" m --predict narrow.csv >e7.out 2>&1 && bad "flrun m --predict narrow.csv ran"
grep -qF "narrow.csv:1: 3 values, but the model's feeds take 4 per row" e7.out || bad "narrow.csv: $(cat e7.out)"
# a save never replaces what it did not write: a directory with a file of someone else's, a
# model directory whose __model__ someone replaced with another file
sed 's/^fluid.io.save_inference_model(.m2.*//' train.fl >keep.fl
mkdir keep && echo 'my notes' >keep/notes.txt
sed -i "s/'m', \['x'\]/'keep', ['x']/" keep.fl
"$FLRUN" keep.fl >k.out 2>&1 && bad "keep.fl saved over keep/"
grep -qF "saving 'keep': 'keep' is a directory but not a checkpoint (it has no MANIFEST); refusing to replace it" k.out ||
    bad "keep.fl: $(cat k.out)"
[ "$(cat keep/notes.txt)" = "my notes" ] && [ "$(ls keep)" = notes.txt ] || bad "keep/ changed: $(ls keep)"
echo 'not a model' >m/__model__
sed 's/^fluid.io.save_inference_model(.m2.*//' train.fl >again.fl
"$FLRUN" again.fl >a.out 2>&1 && bad "again.fl replaced m/ whose __model__ is not a model"
grep -qF "it holds '__model__', which is not in its MANIFEST" a.out || bad "again.fl: $(cat a.out)"
[ "$(cat m/__model__)" = "not a model" ] || bad "m/__model__ changed"
[ $fail = 0 ] && echo "test_model: ok"
exit $fail
