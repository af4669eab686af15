#!/bin/sh
# Traffic of a sparse table in a plan (prints figures, never fails on them): a [100000, 16]
# table read with is_sparse=True over 8 ids per row (a CTR-style model: the looked-up rows
# through an fc of 2, SGD), batch 64 per trainer, on a sync plan of P=2 T=2 with --stats:
#   - what a trainer sends per step: the table's gradient as rows (about 8 x 64 rows of 16 floats
#     for its share, split by the table's two blocks), beside its dense bytes;
#   - what a pserver sends per step: its block of the table back to each trainer, whole;
#   - the dense alternative: the table's gradient as a [100000, 16] tensor (6.4 MB per trainer).
# The pservers return whole blocks, not only the rows a step changed: the second figure is what
# returning changed rows only would cut.
# usage: tests/bench/bench_sparse_plan.sh [BUILD_DIR]   (env: STEPS=20)
set -eu
build=${1:-build}
flc=$build/tools/flc flrun=$build/tools/flrun
for f in "$flc" "$flrun"; do
    [ -x "$f" ] || { echo "bench_sparse_plan: $f not found; build first"; exit 2; }
done
steps=${STEPS:-20}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ids spread over the whole table (a multiplicative hash of the row and field), a learnable label
awk -v n=$((steps * 128)) 'BEGIN { for (i = 0; i < n; i++) { l = ""; for (k = 0; k < 8; k++)
    l = l ((i * 2654435761 + k * 40503) % 100000) ","; print l (i % 3 == 0) } }' >"$tmp/ids.csv"
cat >"$tmp/big_table.fl" <<'FL'
import fluid
from fluid import layers, optimizer, io
ids = layers.data(name="ids", shape=[8], dtype="int64")
click = layers.data(name="click", shape=[1], dtype="int64")
e = layers.embedding(input=ids, size=[100000, 16], is_sparse=True, param_attr=fluid.ParamAttr(name="table"))
predict = layers.fc(input=layers.reshape(e, shape=[-1, 128]), size=2, act="softmax")
cost = layers.mean(layers.cross_entropy(input=predict, label=click))
optimizer.SGD(learning_rate=0.1).minimize(cost)
data = io.csv("ids.csv", columns={"ids": range(0, 8), "click": [8]})
fluid.train(reader=data, batch_size=64, epochs=1, fetch={"loss": cost})
FL
"$flc" build "$tmp/big_table.fl" -o "$tmp/t.flp"
"$flc" transpile "$tmp/t.flp" --pservers 2 --trainers 2 -o "$tmp/t.plan" >/dev/null
mpirun --allow-run-as-root --oversubscribe -np 4 "$flrun" "$tmp/t.plan" -q --batch-size 64 --stats 2>"$tmp/stats" >/dev/null
sort "$tmp/stats"
awk -v steps="$steps" '
    /trainer 0\): sparse gradients/ { for (i = 1; i <= NF; i++) if ($i == "bytes" && $(i - 1) ~ /^[0-9]+$/ && !sp) sp = $(i - 1) }
    /pserver 0\): [0-9]+ steps/ { for (i = 1; i <= NF; i++) if ($i == "sent") ps = $(i + 1) }
    END {
        dense = 100000 * 16 * 4
        printf "trainer 0: the table gradient as rows: %.0f bytes per step (dense: %d bytes, %.1fx more)\n", sp / steps, dense, dense / (sp / steps)
        printf "pserver 0: %.0f bytes per step back to the trainers (its whole block, twice)\n", ps / steps
    }' "$tmp/stats"
