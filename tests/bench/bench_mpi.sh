#!/bin/sh
# Benchmark of the MPI runtime (prints figures, never fails on time), one mpirun job of two ranks
# (rank 0 trainer, rank 1 pserver), figures side by side:
#   1. a 16 MiB parameter through the pserver path (send the gradient, send_barrier, recv the
#      parameter: tests/bench/big_param.fl, P=1 T=1) vs a raw MPI_Send/MPI_Recv ping-pong of
#      16 MiB in the same job; goal: path throughput >= 0.9x raw. The path's time also holds the
#      server's SGD on 4M floats (its time per step is shown): the pserver averages, applies and
#      returns the parameter piece by piece (1 MiB) as the gradient's pieces arrive, so the update
#      and the two directions of the transfer overlap;
#   2. bytes on the wire per step (trainer + pserver) vs the minimum 2 x parameter bytes;
#      goal: <= 1% above the minimum;
#   3. the step time of the MLP 784-512-512-10 (batch 128, synthetic data) as trainer 0 of a
#      P=1 T=1 plan vs the same step run locally on the same rank; goal: <= 1.15x;
# and a second job of two ranks, both trainers:
#   4. the same MLP as an allreduce plan of 2 trainers with 64 rows each (a global batch of 128)
#      vs one local process with batch 128: samples/s, and the scaling efficiency (speed-up / 2).
# usage: tests/bench/bench_mpi.sh [BUILD_DIR]   (env: ROUNDS=20)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
flc=$build/tools/flc bench=$build/tests/mpi/bench_mpi
for f in "$flc" "$bench"; do
    [ -x "$f" ] || { echo "bench_mpi: $f not found; build first"; exit 2; }
done
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$flc" build "$here/big_param.fl" -o "$tmp/big.flp"
"$flc" transpile "$tmp/big.flp" --pservers 1 --trainers 1 -o "$tmp/big.plan" >/dev/null
"$flc" build "$here/train/mlp.fl" -o "$tmp/mlp.flp"
"$flc" transpile "$tmp/mlp.flp" --pservers 1 --trainers 1 -o "$tmp/mlp.plan" >/dev/null
"$flc" transpile "$tmp/mlp.flp" --mode allreduce --trainers 2 -o "$tmp/ar.plan" >/dev/null
mpirun --allow-run-as-root --oversubscribe -np 2 "$bench" "$tmp/big.plan" "$tmp/mlp.flp" "$tmp/mlp.plan" \
    "${ROUNDS:-20}" >"$tmp/out"
mpirun --allow-run-as-root --oversubscribe -np 2 "$bench" --allreduce "$tmp/mlp.flp" "$tmp/ar.plan" >>"$tmp/out"
awk '
{ v[$1] = $2 }
END {
    mib = 16 * 1048576
    raw = 2 * mib / (v["raw_ms"] / 1e3) / 1e9
    path = 2 * mib / (v["path_ms"] / 1e3) / 1e9
    printf "%-58s %12s %12s %8s %s\n", "figure", "fluidc", "reference", "ratio", "goal"
    printf "%-58s %9.2f GB/s %7.2f GB/s %7.2fx %s\n", "16 MiB send+recv through the pserver path vs raw ping-pong", path, raw, path / raw, ">= 0.9x"
    printf "%-58s %9.3f ms\n", "  of which the server SGD (overlapped with the transfers)", v["server_opt_ms"]
    printf "%-58s %12.0f %12.0f %7.4f%% %s\n", "bytes on the wire per step vs 2 x parameter bytes", v["wire_bytes"], v["min_bytes"], 100 * (v["wire_bytes"] / v["min_bytes"] - 1), "<= 1% over"
    printf "%-58s %9.2f ms %9.2f ms %7.2fx %s\n", "MLP step, trainer of P=1 T=1 vs local", v["dist_step_ms"], v["local_step_ms"], v["dist_step_ms"] / v["local_step_ms"], "<= 1.15x"
    ar = 128 / (v["ar_step_ms"] / 1e3); loc = 128 / (v["ar_local_ms"] / 1e3)
    printf "%-58s %7.0f /s %9.0f /s %7.2fx %s\n", "MLP samples/s, allreduce T=2 (64 rows each) vs 1 process", ar, loc, ar / loc, "(2 cores)"
    printf "%-58s %12s %12s %7.0f%%\n", "  scaling efficiency (speed-up / 2)", "", "", 50 * ar / loc
}' "$tmp/out"
