#!/bin/sh
# A distributed table too big for one trainer (prints figures, never fails on them): a
# [ROWS, 64] float table (default 20000000 rows: 5.1 GB) read with is_distributed=True by 8 ids
# per row, 25 rows per trainer, through an fc of 2 (SGD), on a sync plan of P=4 T=2. Each
# pserver makes only its 1.28 GB block (counter-based init) and updates its rows in place; the
# trainers hold no part of the table. Prints each rank's peak RSS (GNU time's maximum resident
# set, of the job that trains), the startup time (a job of 0 steps: MPI, the plan's checks, the
# servers making their blocks) and the steps per second of the training steps. The training job
# ends with --save: each pserver writes its rows of the table as a shard (no rank gathers it), so
# the peak RSS includes the save; the checkpoint's shards and their sizes are printed.
# usage: tests/bench/bench_dist_table_scale.sh [BUILD_DIR]   (env: ROWS=20000000 STEPS=40)
set -eu
build=${1:-build}
flc=$build/tools/flc flrun=$(cd "$(dirname "$build/tools/flrun")" && pwd)/flrun
[ -x "$flc" ] && [ -x "$flrun" ] || { echo "bench_dist_table_scale: build first"; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_dist_table_scale: needs GNU time (/usr/bin/time)"; exit 2; }
rows=${ROWS:-20000000} steps=${STEPS:-40}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v n=$((steps * 50)) -v r=$rows 'BEGIN { for (i = 0; i < n; i++) { l = ""; for (k = 0; k < 8; k++)
    l = l ((i * 2654435761 + k * 40503 + 7) % r) ","; print l (i % 3 == 0) } }' >"$tmp/ids.csv"
cat >"$tmp/t.fl" <<FL
import fluid
from fluid import layers, optimizer, io
fluid.default_startup_program().random_seed = 1
ids = layers.data(name="ids", shape=[8], dtype="int64")
click = layers.data(name="click", shape=[1], dtype="int64")
e = layers.embedding(input=ids, size=[$rows, 64], is_sparse=True, is_distributed=True,
                     param_attr=fluid.ParamAttr(name="table"))
predict = layers.fc(input=layers.reshape(e, shape=[-1, 512]), size=2, act="softmax")
cost = layers.mean(layers.cross_entropy(input=predict, label=click))
optimizer.SGD(learning_rate=0.1).minimize(cost)
data = io.csv("ids.csv", columns={"ids": range(0, 8), "click": [8]})
fluid.train(reader=data, batch_size=25, epochs=1, fetch={"loss": cost})
FL
"$flc" build "$tmp/t.fl" -o "$tmp/t.flp"
"$flc" transpile "$tmp/t.flp" --pservers 4 --trainers 2 -o "$tmp/t.plan" | sed -n '/placement/,$p'
echo "load: $(cat /proc/loadavg)"
cat >"$tmp/rank.sh" <<SH
#!/bin/sh
exec /usr/bin/time -o "$tmp/rss.\$OMPI_COMM_WORLD_RANK" -f "%M" "$flrun" "\$@"
SH
chmod +x "$tmp/rank.sh"
job() { # EPOCHS [FLRUN OPTIONS]: the job's seconds, the ranks' lines in $tmp/rss
    t0=$(date +%s.%N)
    e=$1
    shift
    mpirun --allow-run-as-root --oversubscribe -np 6 "$tmp/rank.sh" "$tmp/t.plan" -q --epochs $e --timeout 600 "$@" \
        2>"$tmp/rss" >/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
s0=$(job 0)
s1=$(job 1 --save "$tmp/ck")
for r in 0 1 2 3 4 5; do
    awk -v r=$r '{ printf "rank %d (%s %d): peak RSS %.2f GB\n", r, r < 2 ? "trainer" : "pserver", r < 2 ? r : r - 2,
        $1 / 1048576 }' "$tmp/rss.$r"
done
echo "checkpoint: $(wc -l <"$tmp/ck/MANIFEST") files; the table's shards:"
for f in "$tmp"/ck/table%shard-*; do
    echo "  $(basename "$f"): $(stat -c %s "$f" | awk '{ printf "%.2f GB", $1 / 1073741824 }')"
done
# the steps' time is the difference of two jobs: on a loaded machine the second may even be the
# faster one, and then there is no figure
d=$(echo "$s1 - $s0" | bc)
if [ "$(echo "$d > 0" | bc)" = 1 ]; then rate="$(echo "scale=2; $steps / $d" | bc) steps/s"; else rate="no figure (load)"; fi
echo "startup (a job of 0 steps): $s0 s; the job of $steps steps and the save: $s1 s ($d s more: $rate)"
