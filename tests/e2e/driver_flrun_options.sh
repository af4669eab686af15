#!/bin/sh
# driver_flrun_options.sh FLRUN: flrun's --save, --load, --timeline and --profile over a script's own loop
# (docs/driver.md, "flrun's features"). A script trains 5 steps and flrun --save writes its parameters when it
# ends; a second script that runs its startup program and computes the loss gets the trained loss
# with --load (within 1e-6, relative: the same float32 ops on the same values) and another one
# without; --load of a script that never runs its startup program is refused before it runs, a
# --save target holding other files before the script runs, and a script that exits with an
# error saves nothing; --timeline holds the driver's run_program spans and the programs' op spans
# (check_timeline.py), and is refused onto the program itself before the script runs; --profile's
# table counts the driver's run_program calls and the programs' ops; --stats prints the GEMM line
# and the run's time with the main program's runs (5 steps; the test clone is another program),
# and leaves stdout as it was.
set -u
FLRUN=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }

model() {
    cat <<EOT
import paddle.fluid as fluid
import sys
x = fluid.layers.data(name='x', shape=[13], dtype='float32')
y = fluid.layers.data(name='y', shape=[1], dtype='float32')
pred = fluid.layers.fc(input=x, size=1)
loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
feed = {'x': [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3],
              [1.3, 1.2, 1.1, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]],
        'y': [[2.0], [3.0]]}
EOT
}
script() { # script NAME LINES...: the model, then LINES
    name=$1
    shift
    { model; printf '%s\n' "$@"; } >"$name.fl"
}
script train 'exe.run(fluid.default_startup_program())' 'for i in range(5):' \
    '    exe.run(feed=feed, fetch_list=[loss])' 'l, = exe.run(fluid.default_main_program().clone(for_test=True), feed=feed, fetch_list=[loss])' \
    'print("loss %.9g" % l)'
script eval 'exe.run(fluid.default_startup_program())' \
    'l, = exe.run(fluid.default_main_program().clone(for_test=True), feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script nostartup 'l, = exe.run(feed=feed, fetch_list=[loss])' 'print("loss %.9g" % l)'
script fails 'exe.run(fluid.default_startup_program())' 'l, = exe.run(feed=feed, fetch_list=[loss])' \
    'if l[0] > -1.0:' '    sys.exit("stopped")'

"$FLRUN" train.fl --save ck >train.out 2>train.err || bad "train --save: $(cat train.err)"
[ -f ck/MANIFEST ] || bad "--save wrote no checkpoint: $(ls -R)"
"$FLRUN" eval.fl --load ck >loaded.out 2>loaded.err || bad "eval --load: $(cat loaded.err)"
"$FLRUN" eval.fl >fresh.out 2>fresh.err || bad "eval: $(cat fresh.err)"
# the loaded loss is the trained one, and the fresh one another
awk -v a="$(cut -d' ' -f2 train.out)" -v b="$(cut -d' ' -f2 loaded.out)" -v c="$(cut -d' ' -f2 fresh.out)" \
    'BEGIN { d = a - b; if (d < 0) d = -d; e = a - c; if (e < 0) e = -e;
             exit !(a > 0 && d <= 1e-6 * a && e > 1e-3 * a) }' ||
    bad "losses: trained '$(cat train.out)', loaded '$(cat loaded.out)', fresh '$(cat fresh.out)'"

"$FLRUN" nostartup.fl --load ck >ns.out 2>ns.err
rc=$?
[ "$rc" = 2 ] || bad "--load without a startup run: exit $rc, want 2"
grep -q "flrun: --load: 'nostartup.fl' never runs its startup program" ns.err || bad "--load without startup: $(cat ns.err)"
[ -s ns.out ] && bad "--load without startup ran the script: $(cat ns.out)"

mkdir other && echo keep >other/notes.txt
"$FLRUN" train.fl --save other >other.out 2>other.err
rc=$?
[ "$rc" = 1 ] || bad "--save over another directory: exit $rc, want 1"
[ -s other.out ] && bad "--save over another directory ran the script: $(cat other.out)"
[ "$(cat other/notes.txt)" = keep ] && [ "$(ls other)" = notes.txt ] || bad "--save changed '$tmp/other'"

"$FLRUN" fails.fl --save failed >f.out 2>f.err
rc=$?
[ "$rc" = 1 ] || bad "a failing script: exit $rc, want 1"
grep -q stopped f.err || bad "a failing script: $(cat f.err)"
[ -e failed ] && bad "a failing script saved its parameters"

"$FLRUN" train.fl --timeline t.json >t.out 2>t.err || bad "--timeline: $(cat t.err)"
python3 "$ROOT/tests/e2e/check_timeline.py" t.json --span run_program --span mul --span sgd || bad "the driver's timeline"
n=$(grep -c '"name":"sgd","cat":"op"' t.json)
[ "$n" -eq 10 ] || bad "$n sgd spans in the timeline, want 10 (the weight's and the bias's, 5 steps)"
n=$(grep -c '"name":"run_program","cat":"op"' t.json)
[ "$n" -eq 7 ] || bad "$n run_program spans in the timeline, want 7 (startup, 5 steps, the test clone)"
cp train.fl keep.fl
"$FLRUN" train.fl --timeline train.fl >tt.out 2>tt.err
rc=$?
[ "$rc" = 2 ] || bad "--timeline onto the program: exit $rc, want 2"
cmp -s train.fl keep.fl || bad "--timeline onto the program changed it"
[ -s tt.out ] && bad "--timeline onto the program ran the script: $(cat tt.out)"

"$FLRUN" train.fl --profile --profile-sort calls >p.out 2>p.err || bad "--profile: $(cat p.err)"
grep -q "Profiling Report" p.out || bad "--profile printed no table: $(cat p.out)"
[ "$(awk '$1 == "run_program" { print $2 }' p.out)" = 7 ] || bad "--profile: run_program calls: $(cat p.out)"
[ "$(awk '$1 == "sgd" { print $2 }' p.out)" = 10 ] || bad "--profile: sgd calls: $(cat p.out)"
"$FLRUN" train.fl --stats >s.out 2>s.err || bad "--stats: $(cat s.err)"
cmp -s s.out train.out || bad "--stats changed the script's output: $(cat s.out)"
grep -q '^flrun: stats gemm: ' s.err || bad "--stats printed no GEMM line: $(cat s.err)"
grep -Eq '^flrun: stats run: [0-9]+\.[0-9]{6} s, [0-9]+\.[0-9]{6} CPU s; the main program ran 5 times$' s.err ||
    bad "--stats: the run's line: $(cat s.err)"
exit $fail
