#!/bin/sh
# dist_script_test.sh FLC FLRUN: Paddle's distributed MNIST test as a script
# (examples/fluid/dist/dist_mnist.fl: dist_mnist.py with test_dist_base.py's runtime_main folded
# in) on real mpirun jobs (label mpi; run from the project root). Three launches:
#   1. `flc build` of the script with Paddle's environment (PADDLE_PSERVER_ENDPOINTS: two pservers,
#      PADDLE_TRAINERS_NUM=2) makes a P=2 T=2 plan, one compilation per role; each trainer feeds
#      its half of every batch of 2 (the script's get_data); the mean of the two trainers' losses
#      is the local run's loss, step by step, within 1e-4 (Paddle's test allows 1e-3). Its
#      programs are those `flc transpile` makes of the local bundle (the drivers aside).
#   2. `flc transpile` of the local bundle (a driver: the script's own loop): each trainer feeds
#      the whole batch, so each trainer's loss is the local loss.
#   3. examples/fluid/dist/fleet_fit_a_line.fl through fluid.incubate.fleet (PaddleCloudRoleMaker,
#      distributed_optimizer, init_server/run_server, init_worker/stop_worker): each trainer's loss
#      is the local loss, step by step.
# The data: Paddle's mnist cache made from Debian's Fashion-MNIST (skipped when it is absent).
set -u
FLC=$1 FLRUN=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FL_TEST_JOB=$TMP
export FL_TEST_JOB
run_mpi() { timeout 120 mpirun --allow-run-as-root --oversubscribe -x FL_TEST_JOB -x FLUIDC_DATA_HOME "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
if [ ! -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    echo "skipped: Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)"
    exit 77
fi
sh scripts/make_dataset_cache.sh "$TMP/cache" > /dev/null || fail "make_dataset_cache.sh"
FLUIDC_DATA_HOME=$TMP/cache
export FLUIDC_DATA_HOME
S=examples/fluid/dist/dist_mnist.fl

# the local run: no endpoints, so the script's run_trainer without is_dist
"$FLC" build "$S" -o "$TMP/local.flp" || fail "flc build (local)"
"$FLRUN" "$TMP/local.flp" > "$TMP/local.txt" || fail "flrun (local)"
[ "$(wc -l < "$TMP/local.txt")" = 10 ] || { cat "$TMP/local.txt"; fail "the local run printed no 10 losses"; }

# 1. the script's own plan
PADDLE_PSERVER_ENDPOINTS=127.0.0.1:6170,127.0.0.1:6171 PADDLE_TRAINERS_NUM=2 \
    "$FLC" build "$S" -o "$TMP/dist.plan" > "$TMP/build.txt" || fail "flc build (the plan)"
grep -q "^$TMP/dist.plan: sync mode, 2 trainers (ranks 0-1), 2 pservers (ranks 2-3)" "$TMP/build.txt" ||
    { cat "$TMP/build.txt"; fail "flc build: no plan of 2 trainers and 2 pservers"; }
run_mpi --tag-output -np 4 "$FLRUN" "$TMP/dist.plan" > "$TMP/dist.txt" 2>&1 || { cat "$TMP/dist.txt"; fail "the job"; }
python3 tests/mpi/check_dist_losses.py "$TMP/local.txt" "$TMP/dist.txt" mean || fail "the job's losses"

# its programs are flc transpile's (the trainers' drivers take their halves)
"$FLC" transpile "$TMP/local.flp" --pservers 2 --trainers 2 -o "$TMP/local.plan" > /dev/null || fail "flc transpile"
no_drivers() { "$FLC" show "$1" | awk '/^=== role/ { skip = 0 } /^== driver program ==/ { skip = 1; next } /^== / { skip = 0 } !skip'; }
no_drivers "$TMP/local.plan" > "$TMP/a.txt" && no_drivers "$TMP/dist.plan" > "$TMP/b.txt" || fail "flc show"
cmp -s "$TMP/a.txt" "$TMP/b.txt" || { diff "$TMP/a.txt" "$TMP/b.txt" | head -20; fail "the script's plan is not flc transpile's"; }

# 2. flc transpile of the local bundle: each trainer runs the script's loop on whole batches
# (with --stats: each rank's traffic and time at the end; a trainer's 10 steps are the script's
# runs of main, and their time is compute beside the communication)
run_mpi --tag-output -np 4 "$FLRUN" "$TMP/local.plan" --stats > "$TMP/lp.txt" 2> "$TMP/lp_err.txt" ||
    { cat "$TMP/lp.txt" "$TMP/lp_err.txt"; fail "the job (flc transpile)"; }
python3 tests/mpi/check_dist_losses.py "$TMP/local.txt" "$TMP/lp.txt" each || fail "the transpiled local bundle's losses"
for t in 0 1; do
    grep -Eq "flrun: stats rank $t \(trainer $t\): 10 steps, sent [1-9][0-9]* bytes .*compute [0-9.]*[1-9][0-9]* s" \
        "$TMP/lp_err.txt" || { cat "$TMP/lp_err.txt"; fail "--stats: trainer $t's line"; }
done
# 3. the same through fluid.incubate.fleet: each trainer feeds the whole batch of 8
F=examples/fluid/dist/fleet_fit_a_line.fl
"$FLC" build "$F" -o "$TMP/fleet.flp" && "$FLRUN" "$TMP/fleet.flp" > "$TMP/fleet_local.txt" || fail "the fleet script, locally"
PADDLE_PSERVERS_IP_PORT_LIST=127.0.0.1:6170,127.0.0.1:6171 PADDLE_TRAINERS_NUM=2 \
    "$FLC" build "$F" -o "$TMP/fleet.plan" > /dev/null || fail "flc build (the fleet's plan)"
run_mpi --tag-output -np 4 "$FLRUN" "$TMP/fleet.plan" > "$TMP/fleet.txt" 2>&1 || { cat "$TMP/fleet.txt"; fail "the fleet's job"; }
python3 tests/mpi/check_dist_losses.py "$TMP/fleet_local.txt" "$TMP/fleet.txt" each || fail "the fleet's losses"
echo "PASS: dist_script"
