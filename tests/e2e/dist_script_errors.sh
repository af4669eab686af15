#!/bin/sh
# dist_script_errors.sh FLC FLRUN: fluid.DistributeTranspiler in a script without a job (label
# e2e): flc build of a script that transpiles itself writes a plan whose trainers keep the
# script's driver and whose pservers are the transpiler's (flc verify passes it); and what is
# refused says where and why: a role that does not do its part, a config or argument that is not
# built, flrun or flc transpile of such a script, and flc transpile of a driver that trains a
# program of its own or runs main from a thread. (tests/mpi/dist_script_test.sh runs such plans.)
set -u
FLC=$1 FLRUN=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$T" || exit 1

cat > base.fl <<'FL'
import os
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[4], dtype='float32')
loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
config = fluid.DistributeTranspilerConfig()
CONFIG
t = fluid.DistributeTranspiler(config=config)
tid = int(os.getenv("PADDLE_TRAINER_ID", "0"))
t.transpile(TID, pservers="127.0.0.1:6170,127.0.0.1:6171", trainers=2)
exe = fluid.Executor(fluid.CPUPlace())
if os.getenv("PADDLE_TRAINING_ROLE", "TRAINER") == "PSERVER":
    ep = os.getenv("PADDLE_CURRENT_ENDPOINT")
    prog = t.get_pserver_program(ep)
    exe.run(t.get_startup_program(ep, prog))
    exe.run(prog)
    EXTRA
else:
    exe.run(fluid.default_startup_program())
    out, = exe.run(t.get_trainer_program(), feed={"x": [[1.0, 2.0, 3.0, 4.0]]}, fetch_list=[loss])
    print(out)
FL
make() { sed "s/TID/$2/; s/CONFIG/$3/; s/    EXTRA/    $4/" base.fl > "$1.fl"; }
# expect NAME TEXT: flc build NAME.fl fails with TEXT on stderr
expect() {
    "$FLC" build "$1.fl" -o "$1.plan" > "$1.out" 2> "$1.err" && fail "$1: built"
    grep -qF "$2" "$1.err" || { cat "$1.err"; fail "$1: no '$2'"; }
    [ ! -e "$1.plan" ] || fail "$1: a plan was written"
}

make ok tid "" ""
"$FLC" build ok.fl -o ok.plan > ok.out || fail "flc build ok.fl"
grep -q "^ok.plan: sync mode, 2 trainers (ranks 0-1), 2 pservers (ranks 2-3)" ok.out || { cat ok.out; fail "ok.plan"; }
"$FLC" verify ok.plan > /dev/null || fail "flc verify ok.plan"
"$FLC" show ok.plan > ok.show || fail "flc show ok.plan"
# the trainers keep the driver (printing the loss), the pservers have none
[ "$(grep -c '^== driver program ==' ok.show)" = 2 ] || fail "drivers: $(grep -c '^== driver program ==' ok.show), want 2"
awk '/^=== role pserver/ { p = 1 } /^=== role trainer/ { p = 0 } p && /listen_and_serv/ { n++ } END { exit n != 2 }' ok.show ||
    fail "the pservers do not serve"

make tid 0 "" ""
expect tid "tid.fl:10:1: the script, run as trainer 1, passes trainer_id=0 to transpile() (read it from PADDLE_TRAINER_ID)"
make extra tid "" 'exe.run(fluid.default_main_program(), feed={"x": [[1.0, 2.0, 3.0, 4.0]]})'
expect extra "extra.fl:17:5: op 'run_program' of program 'main': a pserver's role runs its startup program, then its pserver program"
make asgd tid "config.enable_dc_asgd = True" ""
expect asgd "asgd.fl:10:1: error: DistributeTranspilerConfig.enable_dc_asgd: DC-ASGD's delay compensation is not built"
make prog "tid, program=fluid.Program()" "" ""
expect prog "prog.fl:10:1: error: transpile(program=): the plan is made of the default main program"
make ep tid "" ""
sed -i 's/prog = t.get_pserver_program(ep)/prog = t.get_pserver_program("127.0.0.1:1")/' ep.fl
expect ep "ep.fl:14:12: error: get_pserver_program(): '127.0.0.1:1' is not one of the pservers given to transpile() (127.0.0.1:6170,127.0.0.1:6171)"

# flrun and flc transpile of such a script say what makes its plan
"$FLRUN" ok.fl > run.out 2> run.err && fail "flrun ok.fl ran"
grep -qF "ok.fl:10:1: error: the script transpiles itself (DistributeTranspiler.transpile): build its plan with \`flc build FILE.fl -o FILE.plan\`" run.err ||
    { cat run.err; fail "flrun ok.fl: the message"; }
"$FLC" transpile ok.fl --pservers 1 --trainers 1 -o x.plan 2> tp.err
[ $? = 2 ] || fail "flc transpile ok.fl: not a usage error"
grep -qF "flc: 'ok.fl' transpiles itself (DistributeTranspiler.transpile): flc build makes its plan" tp.err || { cat tp.err; fail "flc transpile ok.fl"; }

# flc transpile of a driver whose other program trains on its own
cat > two.fl <<'FL'
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[4], dtype='float32')
loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
other = fluid.Program()
with fluid.program_guard(other, fluid.Program()):
    z = fluid.layers.data(name='z', shape=[4], dtype='float32')
    l2 = fluid.layers.mean(fluid.layers.fc(input=z, size=1))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(l2)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
exe.run(feed={"x": [[1.0, 2.0, 3.0, 4.0]]})
exe.run(other, feed={"z": [[1.0, 2.0, 3.0, 4.0]]})
FL
"$FLC" transpile two.fl --pservers 1 --trainers 2 -o two.plan > two.out 2> two.err && fail "two.fl transpiled"
grep -qF "two.fl:9:5: the driver's program 'program_1' trains (op 'sgd'); a plan trains the main program alone" two.err ||
    { cat two.err; fail "two.fl: the message"; }
# ... and of a driver that runs main from threads (a trainer's steps are one after the other)
cat > thr.fl <<'FL'
import threading
import paddle.fluid as fluid
x = fluid.layers.data(name='x', shape=[4], dtype='float32')
loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())


def step():
    exe.run(feed={"x": [[1.0, 2.0, 3.0, 4.0]]})


t = threading.Thread(target=step)
t.start()
t.join()
FL
"$FLC" transpile thr.fl --pservers 1 --trainers 2 -o thr.plan > thr.out 2> thr.err && fail "thr.fl transpiled"
grep -qF "thr.fl:11:5: the driver runs the main program in a thread (a goroutine)" thr.err || { cat thr.err; fail "thr.fl: the message"; }
echo "PASS"
