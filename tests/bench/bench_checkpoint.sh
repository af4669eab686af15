#!/bin/sh
# Benchmark (prints figures, never fails on time): what checkpoints during training cost a job
# (flrun --checkpoint-every, docs/running.md): the MLP 784-512-512-10 (SGD) and ResNet-32 (Adam:
# two moments per parameter) of tests/bench/models/models.fl as P=2 T=2 plans on this machine,
# batch 32 per trainer, random data (STEPS global batches). Each net trains twice, started by
# the launcher (flrun PLAN): without checkpoints, and with one every EVERY steps; the second
# prints, with --stats, how long training stopped for each checkpoint (trainer 0 gathering the
# pservers' state and handing it to its writer; the other ranks wait on trainer 0 meanwhile)
# and how long the writes took beside training (the files, the switch, the pruning). Printed per
# net: the checkpoint's size, the stop (mean and most), the write (mean and most), the job's
# seconds per step without and with checkpoints, and the stop spread over the EVERY steps.
# usage: tests/bench/bench_checkpoint.sh [BUILD_DIR]  (env: NETS="mlp resnet", EVERY=5,
#        STEPS_mlp=200, STEPS_resnet=20, PYTHON=/usr/bin/python3)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
flrun=$build/tools/flrun flc=$build/tools/flc
for f in "$flrun" "$flc"; do [ -x "$f" ] || { echo "bench_checkpoint: $f not found; build first"; exit 2; }; done
py=${PYTHON:-/usr/bin/python3}
nets=${NETS:-mlp resnet} every=${EVERY:-5}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# data NET ROWS FILE: ROWS random rows of NET's inputs in [0, 1) and a label in 0..9 (seeded)
data() {
    "$py" - "$1" "$2" "$3" <<'PY'
import random, sys
net, rows, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n = {"resnet": 3072, "mlp": 784}[net]
r = random.Random(5)
with open(path, "w") as f:
    for _ in range(rows):
        f.write(",".join("%.3f" % r.random() for _ in range(n)) + ",%d\n" % r.randrange(10))
PY
}
now() { date +%s.%N; }

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-7s %5s %8s %9s %9s %9s %9s %11s %11s %10s\n' net steps ckpt_MB stop_s stop_max write_s write_max \
    s/step_none s/step_ckpt stop/step
for net in $nets; do
    eval "steps=\${STEPS_$net:-}"
    [ -n "$steps" ] || { [ "$net" = resnet ] && steps=20 || steps=200; }
    data "$net" $((steps * 64)) "$tmp/$net.csv"
    "$flc" build "$here/models/models.fl" -D net="$net" -D data="$tmp/$net.csv" -o "$tmp/$net.flp" >/dev/null
    "$flc" transpile "$tmp/$net.flp" --pservers 2 --trainers 2 -o "$tmp/$net.plan" >/dev/null
    t0=$(now)
    "$flrun" "$tmp/$net.plan" -q --epochs 1 --batch-size 32 --timeout 600 >/dev/null 2>"$tmp/err0" ||
        { cat "$tmp/err0"; exit 1; }
    t1=$(now)
    rm -rf "$tmp/ck"
    "$flrun" "$tmp/$net.plan" -q --epochs 1 --batch-size 32 --timeout 600 --stats --checkpoint "$tmp/ck" \
        --checkpoint-every "$every" >/dev/null 2>"$tmp/err1" || { cat "$tmp/err1"; exit 1; }
    t2=$(now)
    line=$(grep '^flrun: stats checkpoints: ' "$tmp/err1")
    mb=$(du -sb "$tmp/ck/step-$every" 2>/dev/null | awk '{ printf "%.1f", $1 / 1e6 }')
    [ -n "$mb" ] || mb=$(du -sb "$(ls -d "$tmp"/ck/step-* | head -n 1)" | awk '{ printf "%.1f", $1 / 1e6 }')
    echo "$line" | awk -v net="$net" -v steps="$steps" -v mb="$mb" -v a="$(echo "$t1 - $t0" | bc)" \
        -v b="$(echo "$t2 - $t1" | bc)" -v every="$every" '{
            stop = $8; smax = $12; sub(/^\(/, "", smax); wr = $19; wmax = $22; sub(/^\(/, "", wmax)
            printf "%-7s %5d %8s %9.4f %9.4f %9.4f %9.4f %11.4f %11.4f %10.5f\n", net, steps, mb, stop, smax, wr,
                   wmax, a / steps, b / steps, stop / every }'
done
