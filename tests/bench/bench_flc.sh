#!/bin/sh
# Benchmark (prints figures, never fails on time): `flc build` of generated MLPs with 2,000 and
# 4,000 fc layers (forward, backward and SGD: about 9 ops per layer). Reports seconds (wall, and
# the CPU time user + system, which other work on a shared machine disturbs less), source lines
# per second, ops built per second, peak RSS, and the 4k/2k time ratios, which stay near 2 when
# no pass is quadratic. Each figure is the best of 3 runs.
# usage: tests/bench/bench_flc.sh [BUILD_DIR]
set -eu
build=${1:-build}
flc=$build/tools/flc
[ -x "$flc" ] || { echo "bench_flc: $flc not found; build first (scripts/test.sh)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen() { # N FILE
    {
        echo "import fluid"
        echo "from fluid import layers, optimizer"
        echo "x = layers.data(name=\"x\", shape=[16])"
        echo "y = layers.data(name=\"y\", shape=[1])"
        echo "h = x"
        i=0
        while [ $i -lt "$1" ]; do echo "h = layers.fc(h, size=16, act=\"relu\")"; i=$((i + 1)); done
        echo "pred = layers.fc(h, size=1)"
        echo "loss = layers.mean(layers.square_error_cost(pred, y))"
        echo "optimizer.SGD(learning_rate=0.01).minimize(loss)"
    } > "$2"
}
printf '%-8s %8s %10s %8s %12s %12s %12s %10s\n' layers lines seconds cpu_s lines/s cpu_lines/s ops/s peak_MiB
prev=""
prevcpu=""
for n in 2000 4000; do
    gen $n "$tmp/mlp$n.fl"
    lines=$(wc -l < "$tmp/mlp$n.fl")
    # best of 3 runs, wall and CPU time each
    best=""
    cpu=""
    for r in 1 2 3; do
        /usr/bin/time -f "%e %M %U %S" -o "$tmp/t" "$flc" build "$tmp/mlp$n.fl" -o "$tmp/mlp$n.flp"
        set -- $(cat "$tmp/t")
        if [ -z "$best" ] || [ "$(echo "$1 $best" | awk '{print ($1 < $2)}')" = 1 ]; then best=$1; rss=$2; fi
        c=$(echo "$3 $4" | awk '{print $1 + $2}')
        if [ -z "$cpu" ] || [ "$(echo "$c $cpu" | awk '{print ($1 < $2)}')" = 1 ]; then cpu=$c; fi
    done
    ops=$("$flc" show "$tmp/mlp$n.flp" | grep -c '^  op ')
    awk -v n=$n -v l=$lines -v s=$best -v u=$cpu -v o=$ops -v m=$rss 'BEGIN {
        t = (s > 0.001 ? s : 0.001); tu = (u > 0.001 ? u : 0.001);
        printf "%-8d %8d %10.3f %8.3f %12.0f %12.0f %12.0f %10.1f\n", n, l, s, u, l / t, l / tu, o / t, m / 1024 }'
    if [ -n "$prev" ]; then
        awk -v a=$prev -v b=$best -v ca=$prevcpu -v cb=$cpu 'BEGIN {
            printf "time ratio 4000/2000 layers: %.2f wall, %.2f cpu (linear: 2.0)\n", (a > 0 ? b / a : 0), (ca > 0 ? cb / ca : 0) }'
    fi
    prev=$best
    prevcpu=$cpu
done
