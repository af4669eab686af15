#!/bin/sh
# Benchmark (prints figures, never fails on time): the Python actor-learner (examples/rl).
#  1. environment steps/s of examples/rl/cartpole.py (A2C on CartPole, N actor threads predicting
#     through one shared fluidc.Executor while a learner thread trains it) with 1, 2 and 4 actors,
#     fluidc vs the same script with --backend torch (the same algorithm, model and threads in
#     PyTorch), a fixed budget of STEPS steps each (--keep-going: the run does not stop when it
#     solves), best of 2 runs; goal >= 1.0x;
#  2. the cost of one call from Python (tests/bench/rl/bench_call.py): a tiny model's predict and
#     training step, and the actors' A2C predict, fluidc vs torch (no_grad, 1 thread); goal >= 1.0x;
#  3. (with --seeds) the solve check of docs/python.md: seeds 1, 2 and 3 with 4 actors must each
#     solve CartPole (avg100 >= 195) within the budget of BUDGET steps; exits 1 if one does not.
# "n/a" where PyTorch (Debian python3-torch) is missing.
# usage: tests/bench/bench_rl.sh [--seeds] [BUILD_DIR]     (from the repository root)
#        env STEPS (default 30000), BUDGET (default 300000)
set -eu
seeds=0
if [ "${1:-}" = "--seeds" ]; then seeds=1; shift; fi
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
[ -x "$build/tools/flc" ] && [ -f "$build/python/fluidc/libfluidc_py.so" ] ||
    { echo "bench_rl: $build/tools/flc or $build/python/fluidc not found; build first"; exit 2; }
export PYTHONPATH="$build/python" FLUIDC_FLC="$build/tools/flc" OPENBLAS_NUM_THREADS=1
steps=${STEPS:-30000}
budget=${BUDGET:-300000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
havetorch=0
"$py" -c 'import torch' > /dev/null 2>&1 && havetorch=1
echo "load before: $(cat /proc/loadavg), $(nproc) cores"

rate() { # best steps/s of 2 runs of: cartpole.py --backend $1 --actors $2
    best=0
    for r in 1 2; do
        "$py" "$root/examples/rl/cartpole.py" --backend "$1" --actors "$2" --seed 1 \
            --max-steps "$steps" --keep-going --quiet > "$tmp/out" 2>&1 || true
        v=$(sed -n 's/.* \([0-9][0-9]*\) steps\/s.*/\1/p' "$tmp/out" | tail -1)
        [ -n "$v" ] || { echo "bench_rl: cartpole.py failed:" >&2; cat "$tmp/out" >&2; exit 1; }
        [ "$v" -gt "$best" ] && best=$v
    done
    echo "$best"
}
echo
echo "== actor-learner steps/s (A2C on CartPole, $steps steps, best of 2)"
printf "%-8s %12s %12s %8s\n" actors fluidc torch ratio
for n in 1 2 4; do
    f=$(rate fluidc "$n")
    if [ "$havetorch" = 1 ]; then
        t=$(rate torch "$n")
        printf "%-8s %12s %12s %7.2fx\n" "$n" "$f" "$t" "$(echo "$f / $t" | bc -l)"
    else
        printf "%-8s %12s %12s %8s\n" "$n" "$f" n/a n/a
    fi
done
echo "(bounded by the GIL: the environment, the returns and the feeds are Python code that holds"
echo " it; only the executor's calls run outside it)"

echo
echo "== one call from Python (us per call, best of 5 rounds)"
"$FLUIDC_FLC" build "$root/examples/embed/train.fl" -o "$tmp/train.flp"
"$FLUIDC_FLC" build "$root/examples/rl/a2c.fl" -o "$tmp/a2c.flp"
"$py" "$root/tests/bench/rl/bench_call.py" "$tmp/train.flp" "$tmp/a2c.flp" > "$tmp/call"
get() { sed -n "s/^$1=//p" "$tmp/call"; }
printf "%-34s %10s %10s %8s\n" call fluidc torch ratio
for k in tiny_predict tiny_run a2c_predict; do
    f=$(get "fluidc_${k}_us"); t=$(get "torch_${k}_us")
    if [ -n "$t" ]; then
        printf "%-34s %10s %10s %7.2fx\n" "$k" "$f" "$t" "$(echo "$t / $f" | bc -l)"
    else
        printf "%-34s %10s %10s %8s\n" "$k" "$f" n/a n/a
    fi
done
[ "$havetorch" = 1 ] && echo "(torch $(get torch))"
echo "load after: $(cat /proc/loadavg)"

if [ "$seeds" = 1 ]; then
    echo
    echo "== solve check: seeds 1 2 3, 4 actors, budget $budget steps"
    fail=0
    for s in 1 2 3; do
        "$py" "$root/examples/rl/cartpole.py" --actors 4 --seed "$s" --max-steps "$budget" --quiet || fail=1
    done
    [ "$fail" = 0 ] || { echo "bench_rl: a seed did not solve within the budget"; exit 1; }
fi
