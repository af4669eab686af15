#!/bin/sh
# contrib_lookup_table.sh FLC FLRUN: Fluid's contrib lookup table utils over fluidc's checkpoints
# (label mpi). A model with a distributed table (embedding(is_distributed=True)) trains as a plan
# of 1 trainer and 2 pservers and saves with --save, each pserver writing its shard of the
# table; a local script then makes its program local with convert_dist_to_sparse_program and
# loads the checkpoint with load_persistables_for_inference: the table's rows it looks up must
# be the shards' rows (read here from the shard files, docs/running.md's format), and fc_0.w_0
# the trainer's file. Also: the copy's lookups are local while the program keeps its own,
# convert of a program with no distributed table is None (Fluid's), and the errors are located.
# Then a script that transpiles itself runs as P=1 T=1, its pserver loading that checkpoint with
# load_persistables_for_increment: the rows its trainer looks up at the first step are the
# shards' within 1e-6.
set -u
FLC=$1 FLRUN=$2
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# a tensor file's floats (docs/running.md's format), for the checks below
cat > ckfile.py <<'PY'
import struct
def tensor(path):
    b = open(path, "rb").read()
    ver, dt, nd, _ = struct.unpack("<4I", b[8:24])
    off = 24 + 8 * nd + (16 if ver == 2 else 0)
    return list(struct.unpack("<%df" % ((len(b) - off) // 4), b[off:]))
PY
python3 - <<'PY'
import random
random.seed(1)
with open("d.csv", "w") as f:
    for _ in range(60):
        a, b = random.randrange(10), random.randrange(10)
        f.write("%d,%d,%d\n" % (a, b, int(a < 5)))
PY
cat > net.fl <<'FL'
import fluid
from fluid import layers
fluid.default_startup_program().random_seed = 1
ids = layers.data(name="ids", shape=[2], dtype="int64")
emb = layers.embedding(input=ids, size=[10, 4], is_sparse=True, is_distributed=True,
                       param_attr=fluid.ParamAttr(name="table"))
predict = layers.fc(input=layers.reshape(emb, [-1, 8]), size=2, act="softmax")
FL
{ cat net.fl; cat <<'FL'
from fluid import io
click = layers.data(name="click", shape=[1], dtype="int64")
loss = layers.mean(layers.cross_entropy(input=predict, label=click))
fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
fluid.train(reader=io.csv("d.csv", columns={"ids": [0, 1], "click": [2]}), batch_size=10, epochs=2,
            fetch={"loss": loss})
FL
} > train.fl
"$FLC" transpile train.fl --pservers 2 --trainers 1 -o train.plan > /dev/null || fail "flc transpile"
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 3 "$FLRUN" train.plan -q --save ck \
    || fail "the plan's training"
[ -f 'ck/table%shard-0-5' ] && [ -f 'ck/table%shard-5-10' ] || fail "no shards of the table: $(ls ck)"

{ cat net.fl; cat <<'FL'
main = fluid.default_main_program()
program = fluid.contrib.convert_dist_to_sparse_program(main)
print("copy", [op.attr("is_distributed") for op in program.global_block().ops if op.type == "lookup_table"])
print("main", [op.attr("is_distributed") for op in main.global_block().ops if op.type == "lookup_table"])
from paddle.fluid.contrib.utils import lookup_table_utils
print("again", lookup_table_utils.convert_dist_to_sparse_program(program))
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
program = fluid.contrib.load_persistables_for_inference("ck", exe, program, "table")
rows, w = exe.run(program, feed={"ids": [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]},
                  fetch_list=[emb, "fc_0.w_0"])
print("rows", rows.reshape([40]))
print("w", w.reshape([16]))
FL
} > infer.fl
"$FLRUN" infer.fl > out.txt 2> err.txt || fail "infer.fl: $(cat err.txt)"
grep -qx 'copy \[False\]' out.txt || fail "the copy's lookup is still distributed: $(cat out.txt)"
grep -qx 'main \[True\]' out.txt || fail "the program itself changed: $(cat out.txt)"
grep -qx 'again None' out.txt || fail "convert of a local program is not None: $(cat out.txt)"
python3 - <<'PY' || fail "the loaded values are not the checkpoint's"
import re
from ckfile import tensor
def printed(name):
    text = open("out.txt").read()
    m = re.search(r"^" + name + r" \[([^\]]*)\]", text, re.M | re.S)
    return [float(t) for t in m.group(1).split()]
want = tensor("ck/table%shard-0-5") + tensor("ck/table%shard-5-10")
for name, got, exp in (("rows", printed("rows"), want), ("w", printed("w"), tensor("ck/fc_0.w_0"))):
    assert len(got) == len(exp), (name, len(got), len(exp))
    bad = [(i, g, e) for i, (g, e) in enumerate(zip(got, exp)) if abs(g - e) > 1e-6 * max(1.0, abs(e))]
    assert not bad, (name, bad[:3])
PY

# located errors: a table the program lacks, the pserver-side load, a missing checkpoint
check_err() { # NAME TEXT: flrun NAME.fl fails, its stderr names NAME.fl's last line and holds TEXT
    "$FLRUN" "$1.fl" > /dev/null 2> "$1.err" && fail "$1.fl ran"
    last=$(wc -l < "$1.fl")
    grep -q "$1.fl:$last:" "$1.err" || fail "$1: not at line $last: $(cat "$1.err")"
    grep -qF "$2" "$1.err" || fail "$1: no '$2' in: $(cat "$1.err")"
}
{ cat net.fl; echo 'exe = fluid.Executor(fluid.CPUPlace())'
  echo 'fluid.contrib.load_persistables_for_inference("ck", exe, fluid.default_main_program(), "tabel")'; } > e1.fl
check_err e1 "the program has no var 'tabel' (the lookup table)"
{ cat net.fl; echo 'exe = fluid.Executor(fluid.CPUPlace())'
  echo 'fluid.contrib.load_persistables_for_increment("ck", exe, fluid.default_main_program(), "table", "t.bin")'; } > e2.fl
check_err e2 "fluidc's checkpoints hold the table's rows in the checkpoint directory itself"
{ cat net.fl; echo 'exe = fluid.Executor(fluid.CPUPlace())'
  echo 'fluid.contrib.load_persistables_for_inference("nowhere", exe, fluid.default_main_program(), "table")'; } > e3.fl
"$FLRUN" e3.fl > /dev/null 2> e3.err && fail "e3.fl ran"
grep -q "nowhere" e3.err || fail "e3: the missing checkpoint is not named: $(cat e3.err)"

# load_persistables_for_increment: a script that transpiles itself as P=1 T=1, whose pserver
# loads the checkpoint of the P=2 job above for increment (its one server reads its rows from
# both shards); the trainer's first step looks every row up from the pserver, before any
# update: the rows must be the shards' within 1e-6.
{ cat net.fl; cat <<'FL'
import os
click = layers.data(name="click", shape=[1], dtype="int64")
loss = layers.mean(layers.cross_entropy(input=predict, label=click))
fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
t = fluid.DistributeTranspiler()
t.transpile(int(os.getenv("PADDLE_TRAINER_ID", "0")), pservers=os.getenv("PADDLE_PSERVER_ENDPOINTS", ""),
            trainers=int(os.getenv("PADDLE_TRAINERS_NUM", "1")))
exe = fluid.Executor(fluid.CPUPlace())
if os.getenv("PADDLE_TRAINING_ROLE", "TRAINER") == "PSERVER":
    ep = os.getenv("PADDLE_CURRENT_ENDPOINT")
    pserver_prog = t.get_pserver_program(ep)
    exe.run(t.get_startup_program(ep, pserver_prog))
    fluid.contrib.load_persistables_for_increment("ck", exe, pserver_prog, "table", "ck/table")
    exe.run(pserver_prog)
else:
    exe.run(fluid.default_startup_program())
    rows, = exe.run(t.get_trainer_program(), feed={"ids": [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]],
                    "click": [[0], [1], [0], [1], [0]]}, fetch_list=[emb])
    print("rows", rows.reshape([40]))
FL
} > inc.fl
PADDLE_PSERVER_ENDPOINTS=127.0.0.1:6170 PADDLE_TRAINERS_NUM=1 "$FLC" build inc.fl -o inc.plan > inc.build 2>&1 ||
    fail "flc build inc.fl: $(cat inc.build)"
"$FLC" show inc.plan | grep -q '^load: ck (after the startup program)' ||
    fail "the plan's pserver does not load ck: $("$FLC" show inc.plan | grep -i load)"
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$FLRUN" inc.plan > out.txt 2> err.txt ||
    fail "the increment job: $(cat err.txt)"
python3 - <<'PY' || fail "the rows the pserver serves after the increment load are not the checkpoint's"
import re
from ckfile import tensor
m = re.search(r"^rows \[([^\]]*)\]", open("out.txt").read(), re.M | re.S)
got = [float(t) for t in m.group(1).split()]
want = tensor("ck/table%shard-0-5") + tensor("ck/table%shard-5-10")
assert len(got) == len(want) == 40, (len(got), len(want))
bad = [(i, g, e) for i, (g, e) in enumerate(zip(got, want)) if abs(g - e) > 1e-6 * max(1.0, abs(e))]
assert not bad, bad[:3]
PY
echo "ok"
