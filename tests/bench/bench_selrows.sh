#!/bin/sh
# Benchmark (prints figures, never fails on time): local training of a CTR-style model (8 ids per
# row in one embedding table of 100,000 x 16, fc 64 relu, softmax 2; SGD, batch 256, one thread)
# with the table's gradient sparse (embedding(is_sparse=True): a SelectedRows of the looked-up
# rows) and dense (a [100000, 16] tensor each step), side by side with PyTorch's
# nn.Embedding(sparse=True) + SGD (Debian's python3-torch; n/a without it): training steps/s.
# fluidc's steps/s: flrun trains on WARM batches, then on WARM + TIMED batches of the same rows;
# the difference of the two wall times is the TIMED steps' (compiling, startup and reading cancel
# out). Each keeps its best of TRIALS runs.
# usage: tests/bench/bench_selrows.sh [BUILD_DIR]   (env: TRIALS=2, WARM=5, TIMED=40, PYTHON=/usr/bin/python3)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
flrun=$build/tools/flrun
[ -x "$flrun" ] || { echo "bench_selrows: $flrun not found; build first"; exit 2; }
py=${PYTHON:-/usr/bin/python3}
trials=${TRIALS:-2} warm=${WARM:-5} timed=${TIMED:-40}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the data: 256 * (warm + timed) rows of 8 ids (skewed toward small ids, as CTR features are) and a label
python3 - "$tmp" "$warm" "$timed" <<'PY'
import random, sys
d, warm, timed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(5)
rows = []
for _ in range(256 * (warm + timed)):
    ids = [min(99999, int(rnd.paretovariate(1.2)) * 7 % 100000) for _ in range(8)]
    rows.append(ids + [int(sum(ids) % 3 == 0)])
for name, n in (("warm.csv", 256 * warm), ("all.csv", len(rows))):
    with open(f"{d}/{name}", "w") as f:
        f.writelines(",".join(map(str, r)) + "\n" for r in rows[:n])
PY

run() { # is_sparse data -> wall seconds
    /usr/bin/time -f "%e" -o "$tmp/t" "$flrun" "$here/selrows/ctr_embed.fl" -q -D is_sparse="$1" -D data="$2" >/dev/null
    cat "$tmp/t"
}
fl_speed() { # is_sparse -> best steps/s
    best=0 i=0
    while [ $i -lt "$trials" ]; do
        t1=$(run "$1" "$tmp/warm.csv")
        t2=$(run "$1" "$tmp/all.csv")
        best=$(awk -v a="$best" -v t1="$t1" -v t2="$t2" -v n="$timed" 'BEGIN { s = t2 > t1 ? n / (t2 - t1) : 0; print (s > a ? s : a) }')
        i=$((i + 1))
    done
    echo "$best"
}
sparse=$(fl_speed True)
dense=$(fl_speed False)

torch=n/a
if [ -x "$py" ] && "$py" -c "import torch" 2>/dev/null; then
    torch=0 i=0
    while [ $i -lt "$trials" ]; do
        s=$("$py" "$here/selrows/bench_torch_ctr.py" "$tmp/all.csv" "$warm" "$timed" | sed -n 's/.*steps_per_s=\([^ ]*\).*/\1/p')
        torch=$(awk -v a="$torch" -v s="$s" 'BEGIN { print (s > a ? s : a) }')
        i=$((i + 1))
    done
fi
echo "CTR-style model, table 100000 x 16, 8 ids per row, batch 256, SGD, 1 thread: training steps/s"
printf '%-36s %10s\n' "fluidc is_sparse=True" "$sparse"
printf '%-36s %10s\n' "fluidc is_sparse=False" "$dense"
printf '%-36s %10s\n' "PyTorch nn.Embedding(sparse=True)" "$torch"
