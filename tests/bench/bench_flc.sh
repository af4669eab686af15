#!/bin/sh
# Benchmark (prints figures, never fails on time): `flc build` of generated MLPs with 2,000 and
# 4,000 fc layers (forward, backward and SGD: about 9 ops per layer). Reports seconds, source
# lines per second, ops built per second, peak RSS, and the 4k/2k time ratio, which stays near 2
# when no pass is quadratic.
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
printf '%-8s %8s %10s %12s %12s %10s\n' layers lines seconds lines/s ops/s peak_MiB
prev=""
for n in 2000 4000; do
    gen $n "$tmp/mlp$n.fl"
    lines=$(wc -l < "$tmp/mlp$n.fl")
    # best of 3 runs
    best=""
    for r in 1 2 3; do
        /usr/bin/time -f "%e %M" -o "$tmp/t" "$flc" build "$tmp/mlp$n.fl" -o "$tmp/mlp$n.flp"
        set -- $(cat "$tmp/t")
        if [ -z "$best" ] || [ "$(echo "$1 < $best" | awk '{print ($1 < $3)}')" = 1 ]; then best=$1; rss=$2; fi
    done
    ops=$("$flc" show "$tmp/mlp$n.flp" | grep -c '^  op ')
    awk -v n=$n -v l=$lines -v s=$best -v o=$ops -v m=$rss 'BEGIN {
        t = (s > 0.001 ? s : 0.001);
        printf "%-8d %8d %10.3f %12.0f %12.0f %10.1f\n", n, l, s, l / t, o / t, m / 1024 }'
    if [ -n "$prev" ]; then
        awk -v a=$prev -v b=$best 'BEGIN { printf "time ratio 4000/2000 layers: %.2f (linear: 2.0)\n", (a > 0 ? b / a : 0) }'
    fi
    prev=$best
done
