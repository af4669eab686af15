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
# the goroutines' product: mean(big (big big)) of 256x256 matrices of 0.01 is 256 * 0.01 *
# (256 * 0.01 * 0.01) = 0.065536 exactly; float32 sums of 256 terms may be off by up to
# 256 * 2^-24 relative (1.5e-5, 1e-6 here) depending on the kernel's order, so 2e-6 absolute
awk -F, 'NR > 1 { n++; d = $6 - 0.065536; if (d < -2e-6 || d > 2e-6) bad = 1 }
         END { exit !(n > 0 && !bad) }' "$T/a.csv" ||
    { echo "FAIL: the goroutines' products are not 0.065536 +- 2e-6 in the log"; head -3 "$T/a.csv"; exit 1; }
echo "ok: 2 runs, same log, no report"
