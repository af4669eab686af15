#!/bin/sh
# Benchmark (prints figures, never fails on time): concurrency.
#  1. goroutines and channels of runtime/sched against the same programs in Go (bench_chan.sh):
#     unbuffered ping-pong round trips/s, buffered (capacity 128) msgs/s, spawn+join of 10,000
#     goroutines; goal >= 0.5x Go on each;
#  2. the same ping-pong written in .fl and run by flrun (each round trip also runs the loop's
#     counter and condition ops), per round trip, from the time difference of two sizes;
#  3. parallel_for speed-up of a 2-iteration GEMM body (512x512x512) on 2 cores with one kernel
#     thread (flrun --threads 1: each GEMM on its own thread, so the iterations are the only
#     parallelism; with the default pool each GEMM splits over the cores already): the two matmuls
#     one after the other vs as parallel_for iterations; goal >= 1.7x.
# usage: tests/bench/bench_conc.sh [BUILD_DIR]     (from the repository root)
set -eu
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
flc=$build/tools/flc
flrun=$build/tools/flrun
[ -x "$flrun" ] || { echo "bench_conc: $flrun not found; build first"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
echo "== goroutines and channels (runtime/sched) vs Go"
sh "$root/tests/bench/bench_chan.sh"
secs() { # best wall time of 3 runs of: flrun FILE.flp [OPTIONS]
    best=""
    for r in 1 2 3; do
        /usr/bin/time -f "%e" -o "$tmp/t" "$flrun" -q "$@" > /dev/null 2>&1
        t=$(cat "$tmp/t")
        if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
    done
    echo "$best"
}
echo
echo "== the ping-pong as a .fl program on the executor"
"$flc" build "$root/tests/bench/conc/pingpong.fl" -D n=2000 -o "$tmp/pp1.flp"
"$flc" build "$root/tests/bench/conc/pingpong.fl" -D n=22000 -o "$tmp/pp2.flp"
t1=$(secs "$tmp/pp1.flp"); t2=$(secs "$tmp/pp2.flp")
awk -v a="$t1" -v b="$t2" 'BEGIN { d = b - a; if (d <= 0) d = 0.001;
    printf "%-44s %10.0f round trips/s (%.2f us each)\n", ".fl ping-pong through flrun", 20000 / d, d / 20000 * 1e6 }'
echo
echo "== parallel_for speed-up of a 2-iteration GEMM body ($(nproc) cores, 1 kernel thread)"
for par in 0 1; do
    "$flc" build "$root/tests/bench/conc/gemm2.fl" -D reps=10 -D par=$par -o "$tmp/g${par}a.flp"
    "$flc" build "$root/tests/bench/conc/gemm2.fl" -D reps=50 -D par=$par -o "$tmp/g${par}b.flp"
done
s0=$(awk -v a="$(secs "$tmp/g0a.flp" --threads 1)" -v b="$(secs "$tmp/g0b.flp" --threads 1)" 'BEGIN { print (b - a) / 40 }')
s1=$(awk -v a="$(secs "$tmp/g1a.flp" --threads 1)" -v b="$(secs "$tmp/g1b.flp" --threads 1)" 'BEGIN { print (b - a) / 40 }')
awk -v s0="$s0" -v s1="$s1" 'BEGIN {
    printf "%-44s %10.2f ms\n", "two matmuls one after the other", s0 * 1000
    printf "%-44s %10.2f ms\n", "the same as parallel_for (2 iterations)", s1 * 1000
    printf "%-44s %10.2fx (goal >= 1.7x)\n", "speed-up", (s1 > 0 ? s0 / s1 : 0) }'
