#!/bin/sh
# fuzz_plan.sh FLC FLRUN PLAN_MUTATE FIRST COUNT: mutated plans under a 4-rank mpirun.
# The digits MLP is transpiled for 2 pservers and 2 trainers; seeds FIRST..FIRST+COUNT-1 each
# mutate it (tests/fuzz/plan_mutate.c) and the job runs one epoch with a 3 s peer timeout. Any
# outcome is fine (most mutations are refused, some train) except: a hang (the job must end
# within the timeout's bound), a crash or sanitizer report on any rank, an internal error, or a
# rank left running. Run from the project root. tests/fuzz/CMakeLists.txt registers a few seeds
# as a test; a campaign runs many: sh tests/fuzz/fuzz_plan.sh build/tools/flc build/tools/flrun
# build/tests/fuzz/plan_mutate 1 300
set -u
FLC=$1 FLRUN=$2 MUTATE=$3 FIRST=$4 COUNT=$5
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FL_TEST_JOB=$TMP
# under ASan a tensor of a mutated, huge shape must meet malloc's NULL (and the runtime's clean
# "out of memory" error), as without it, instead of ASan's own abort
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}
export FL_TEST_JOB OPENBLAS_NUM_THREADS=1 ASAN_OPTIONS
# the job's ranks, found by the marker exported to them
ranks() {
    for p in $(pgrep -x flrun); do
        (tr '\0' '\n' < /proc/$p/environ) 2>/dev/null | grep -qxF "FL_TEST_JOB=$TMP" && echo $p
    done
}
# copy the model beside its data path's expectations: it reads ../../examples/data
mkdir -p "$TMP/a/b" && cp tests/mpi/digits_mlp.fl "$TMP/a/b/" && mkdir -p "$TMP/examples" &&
    ln -s "$PWD/examples/data" "$TMP/examples/data" || exit 1
"$FLC" build "$TMP/a/b/digits_mlp.fl" -o "$TMP/d.flp" >/dev/null || { echo "FAIL: flc build"; exit 1; }
"$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/x.plan" >/dev/null || { echo "FAIL: transpile"; exit 1; }
bad=0 refused=0 trained=0
s=$FIRST
while [ "$s" -lt $((FIRST + COUNT)) ]; do
    what=$("$MUTATE" "$TMP/x.plan" "$s" "$TMP/m.plan" | tr '\n' ';')
    start=$(date +%s)
    timeout -s KILL 60 mpirun --allow-run-as-root --oversubscribe -x FL_TEST_JOB -x OPENBLAS_NUM_THREADS \
        -np 4 "$FLRUN" "$TMP/m.plan" -q --epochs 1 --timeout 3 >"$TMP/out" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    why=""
    [ $rc -eq 137 ] && why="hung (killed after 60 s)"
    [ -z "$why" ] && [ $secs -gt 30 ] && why="took $secs s to end"
    if grep -Eq 'ERROR: (AddressSanitizer|LeakSanitizer)|UndefinedBehaviorSanitizer|\.c:[0-9]+:[0-9]+: runtime error|internal error|on signal (6|7|8|11)|Segmentation fault' "$TMP/out"; then
        why="crashed"
    fi
    sleep 0.2
    left=$(ranks)
    if [ -n "$left" ]; then
        why="${why:+$why, }ranks left running"
        kill -9 $left 2>/dev/null
    fi
    if [ -n "$why" ]; then
        bad=$((bad + 1))
        echo "FAIL: seed $s ($what): $why, exit $rc"
        sed 's/^/    /' "$TMP/out" | head -30
        cp "$TMP/m.plan" "$TMP/../fuzz_plan_seed$s.plan" 2>/dev/null
    elif [ $rc -eq 0 ]; then trained=$((trained + 1))
    else refused=$((refused + 1))
    fi
    s=$((s + 1))
done
echo "fuzz_plan: $COUNT mutated plans: $refused refused or failed cleanly, $trained ran to the end, $bad bad"
[ $bad -eq 0 ]
