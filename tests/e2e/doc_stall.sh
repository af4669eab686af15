#!/bin/sh
# Stops (SIGSTOP) one rank of a long job of examples/fit_a_line.fl once it trains, and waits for
# the job to end, so that docs/distributed.md's peer-timeout messages are printed
# (tests/e2e/doc_quotes.txt). Run from a repository root with flc and flrun on PATH.
# usage: doc_stall.sh RANK NP TRANSPILE-OPTIONS
rank=$1 np=$2 opts=$3
FL_DOC_JOB=$PWD/model.plan # marks this job's ranks (-x passes it on), so no other job's rank is stopped
export FL_DOC_JOB
# shellcheck disable=SC2086
flc transpile examples/fit_a_line.fl $opts -o model.plan >/dev/null || exit 1
timeout 120 mpirun --allow-run-as-root --oversubscribe -x FL_DOC_JOB -np "$np" flrun model.plan -q \
    --epochs 1000000 --timeout 2 --log stall.csv &
job=$!
# the rank's pid, once the job trains (trainer 0 has opened its log), within 60 s
pid=
tries=0
while [ -z "$pid" ] && [ $tries -lt 120 ]; do
    sleep 0.5
    tries=$((tries + 1))
    ls stall.csv.tmp.* >/dev/null 2>&1 || continue
    for p in $(pgrep -x flrun); do
        env=$( (tr '\0' '\n' </proc/"$p"/environ) 2>/dev/null) || continue
        if echo "$env" | grep -qx "OMPI_COMM_WORLD_RANK=$rank" &&
            echo "$env" | grep -qxF "FL_DOC_JOB=$FL_DOC_JOB"; then
            pid=$p
        fi
    done
done
if [ -z "$pid" ]; then
    echo "doc_stall.sh: rank $rank did not start training"
    kill "$job"
    exit 1
fi
sleep 0.5
kill -STOP "$pid"
wait $job
