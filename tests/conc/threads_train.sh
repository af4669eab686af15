#!/bin/sh
# threads_train.sh FLRUN: tests/conc/threads_train.fl (a training on a kernel pool of 2 threads
# while goroutines run GEMMs of their own on the same pool) runs twice: each run exits 0 with
# nothing on stderr (under ThreadSanitizer a report fails the run: CMake sets TSAN_OPTIONS) and
# the two logs hold the same bytes (the pool's sharing rule keeps results deterministic).
set -u
FLRUN=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for run in a b; do
    "$FLRUN" tests/conc/threads_train.fl -q --threads 2 --log "$T/$run.csv" 2>"$T/err"
    rc=$?
    if [ $rc -ne 0 ] || [ -s "$T/err" ]; then
        echo "FAIL run $run: exit $rc"
        head -30 "$T/err"
        exit 1
    fi
done
[ "$(wc -l < "$T/a.csv")" -gt 4 ] || { echo "FAIL: too few log lines"; exit 1; }
cmp "$T/a.csv" "$T/b.csv" || { echo "FAIL: two runs logged differently"; diff "$T/a.csv" "$T/b.csv" | head; exit 1; }
# 'other' is the mean of big^3: 256 * 256 * 0.01^3 = 0.065536, up to float32 rounding
awk -F, 'NR > 1 { d = $6 - 0.065536; if (d < 0) d = -d; if (d > 1e-5) bad = 1; n++ } END { exit bad || !n }' "$T/a.csv" ||
    { echo "FAIL: the goroutines' products are not in the log (0.065536 +- 1e-5)"; head -3 "$T/a.csv"; exit 1; }
echo "ok: 2 runs, same log, no report"
