#!/bin/sh
# Traffic of a distributed table against a sparse and a dense one (prints figures, never fails on
# them): a [1000000, 64] float table read by 8 ids per row, 25 rows per trainer (~200 distinct ids
# per trainer and step, spread over the table), through an fc of 2 (SGD), on a sync plan of P=2
# T=2 with --stats, three ways:
#   dist    embedding(is_sparse=True, is_distributed=True): the trainers ask the servers for the
#           rows they look up and send the rows' gradient; nothing of the table comes back;
#   sparse  is_sparse=True only: the gradient goes as rows, the table's blocks come back whole;
#   dense   neither: the gradient is a [1000000, 64] tensor, the blocks come back whole.
# Per trainer and step it prints the bytes sent and received, and for dist the bound
#   1.1 x touched rows x (64 x 4 + 8) + 2 x the dense parameters' bytes + the messages' headers
# that each direction must stay under (touched rows: the distinct ids looked up; a row travels as
# 8 bytes of id and 256 of value: the gradient's rows and the lookup's ids one way, the rows the
# other way).
# usage: tests/bench/bench_dist_table.sh [BUILD_DIR]   (env: STEPS=20 dist steps; the sparse and
#        dense runs take STEPS_WHOLE=3 steps: each moves the 256 MB table every step)
set -eu
build=${1:-build}
flc=$build/tools/flc flrun=$build/tools/flrun
for f in "$flc" "$flrun"; do
    [ -x "$f" ] || { echo "bench_dist_table: $f not found; build first"; exit 2; }
done
steps=${STEPS:-20} whole=${STEPS_WHOLE:-3}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ids spread over the whole table (a multiplicative hash of the row and field), a learnable label
awk -v n=$((steps * 50)) 'BEGIN { for (i = 0; i < n; i++) { l = ""; for (k = 0; k < 8; k++)
    l = l ((i * 2654435761 + k * 40503 + 7) % 1000000) ","; print l (i % 3 == 0) } }' >"$tmp/ids.csv"
cat >"$tmp/big_table.fl" <<'FL'
import fluid
from fluid import layers, optimizer, io
fluid.default_startup_program().random_seed = 1
SPARSE = fluid.flag("kind", "dist") != "dense"
DIST = fluid.flag("kind", "dist") == "dist"
ids = layers.data(name="ids", shape=[8], dtype="int64")
click = layers.data(name="click", shape=[1], dtype="int64")
e = layers.embedding(input=ids, size=[1000000, 64], is_sparse=SPARSE, is_distributed=DIST,
                     param_attr=fluid.ParamAttr(name="table"))
predict = layers.fc(input=layers.reshape(e, shape=[-1, 512]), size=2, act="softmax")
cost = layers.mean(layers.cross_entropy(input=predict, label=click))
optimizer.SGD(learning_rate=0.1).minimize(cost)
data = io.csv("ids.csv", columns={"ids": range(0, 8), "click": [8]})
fluid.train(reader=data, batch_size=25, epochs=1, fetch={"loss": cost})
FL
echo "load: $(cat /proc/loadavg)"
for kind in dist sparse dense; do
    n=$steps
    [ $kind = dist ] || n=$whole
    head -n $((n * 50)) "$tmp/ids.csv" >"$tmp/ids_$kind.csv"
    sed "s/ids.csv/ids_$kind.csv/" "$tmp/big_table.fl" >"$tmp/t_$kind.fl"
    "$flc" build "$tmp/t_$kind.fl" -D kind=$kind -o "$tmp/t.flp"
    "$flc" transpile "$tmp/t.flp" --pservers 2 --trainers 2 -o "$tmp/t.plan" >/dev/null
    t0=$(date +%s.%N)
    mpirun --allow-run-as-root --oversubscribe -np 4 "$flrun" "$tmp/t.plan" -q --stats 2>"$tmp/stats_$kind" >/dev/null
    t1=$(date +%s.%N)
    awk -v kind=$kind -v n=$n -v secs="$(echo "$t1 - $t0" | bc)" '
        /rank 0 \(trainer 0\): [0-9]+ steps, sent/ { for (i = 1; i <= NF; i++) if ($i == "sent") sent = $(i + 1) }
        /rank 0 \(trainer 0\): distributed tables/ {
            for (i = 1; i <= NF; i++) {
                if ($i == "rows" && $(i + 1) == "looked") rows = $(i - 1)
                if ($i == "received:") recv = $(i + 1)
            }
        }
        /rank 0 \(trainer 0\): sparse gradients/ { for (i = 1; i <= NF; i++) if ($i == "dense:") dense = $(i + 1) }
        /rank [23] \(pserver [01]\): [0-9]+ steps, sent/ { for (i = 1; i <= NF; i++) if ($i == "sent") psent += $(i + 1) }
        END {
            if (kind != "dist") recv = psent / 2 # each trainer gets its half of what the servers send
            printf "%-6s trainer 0: sent %10.0f bytes per step, received %10.0f (%d steps, %.1f s for the job)\n",
                kind, sent / n, recv / n, n, secs
            if (kind == "dist") {
                dparam = (512 * 2 + 2) * 4
                hdr = 128 + 40
                # messages a step: ids and rows per block (2 + 2), the gradient rows (2), the dense
                # gradients and parameters (2 + 2 + 2 GETs)
                bound = 1.1 * (rows / n) * (64 * 4 + 8) + 2 * dparam + 12 * hdr
                printf "dist   touched rows %.1f per step: bound %.0f bytes per direction; sent %s, received %s\n",
                    rows / n, bound, sent / n <= bound ? "within" : "OVER", recv / n <= bound ? "within" : "OVER"
            }
        }' "$tmp/stats_$kind"
done
grep "rank 0 (trainer 0)" "$tmp/stats_dist"
