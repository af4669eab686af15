#!/bin/sh
# actor_learner.sh FLRUN N: examples/actor_learner.fl runs N times in a row (2 epochs each),
# each run exiting 0 with finite figures and nothing on stderr (under ThreadSanitizer a report
# fails the run: TSAN_OPTIONS=halt_on_error=1 exitcode=66 is set by CMake).
set -u
FLRUN=$1 N=$2
i=0
while [ $i -lt "$N" ]; do
    out=$("$FLRUN" examples/actor_learner.fl --epochs 2 -q 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || [ -n "$out" ]; then
        echo "FAIL run $i: exit $rc"
        printf '%s\n' "$out" | head -20
        exit 1
    fi
    i=$((i + 1))
done
echo "$N runs passed"
