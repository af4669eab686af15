#!/bin/sh
# flrun --threads: two trainings with one seed and one thread count log the same bytes, at 1 and
# at 2 threads, for the MLP 784-512-512-10 of tests/bench/models/models.fl (its GEMMs are cut in
# blocks, its updates and activations in chunks) and for the digits CNN of
# examples/fluid/recognize_digits_conv.fl (oneDNN with an OpenMP team of the thread count); 1 and
# 2 threads log the same losses within float rounding (relative 1e-4), the cuts of a GEMM being
# the only difference; --threads 0, -2 and 'two' are usage errors (exit 2, the flag named).
# Usage: threads_same_logs.sh FLRUN REPO_ROOT
set -u
FLRUN=$1 ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# 4 batches of 64 rows: 784 pixels in [0, 1) and a label (awk's seeded generator)
awk 'BEGIN { srand(5); for (r = 0; r < 256; r++) { l = ""; for (i = 0; i < 784; i++) l = l sprintf("%.3f,", rand());
    print l int(rand() * 10) } }' > "$T/mlp.csv"
mkdir -p "$T/data" "$T/fluid"
gzip -dc "$ROOT/examples/data/digits.csv.gz" | head -n 400 | gzip > "$T/data/digits.csv.gz"
mlp() { "$FLRUN" "$ROOT/tests/bench/models/models.fl" -q -D net=mlp -D data="$T/mlp.csv" --threads "$1" \
            --log "$T/$2.csv" || fail "flrun mlp ($2)"; }
cnn() { "$FLRUN" "$ROOT/examples/fluid/recognize_digits_conv.fl" -q --epochs 1 --seed 3 --data-dir "$T/fluid" \
            --threads "$1" --log "$T/$2.csv" || fail "flrun cnn ($2)"; }
same() { cmp -s "$T/$1.csv" "$T/$2.csv" || { diff "$T/$1.csv" "$T/$2.csv" | head; fail "$3"; }; }
close() { # losses of logs $1 and $2 within 1e-4 relative, row by row
    [ "$(wc -l < "$T/$1.csv")" = "$(wc -l < "$T/$2.csv")" ] || fail "$1 and $2: different row counts"
    paste -d, "$T/$1.csv" "$T/$2.csv" | awk -F, -v n="$(head -n 1 "$T/$1.csv" | awk -F, '{ print NF }')" '
        NR > 1 { a = $5; b = $(n + 5); d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
                 if (d > 1e-4 * m + 1e-6) { print "FAIL: step " $4 ": loss " a " vs " b; bad = 1 } }
        END { exit bad }' || fail "$1 and $2 differ beyond float rounding"
}
for model in mlp cnn; do
    $model 1 ${model}1a
    $model 1 ${model}1b
    $model 2 ${model}2a
    $model 2 ${model}2b
    [ "$(wc -l < "$T/${model}1a.csv")" -gt 3 ] || fail "$model: too few log lines"
    same ${model}1a ${model}1b "$model: two runs with --threads 1 logged differently"
    same ${model}2a ${model}2b "$model: two runs with --threads 2 logged differently"
    close ${model}1a ${model}2a
done
for bad in 0 -2 two; do
    out=$("$FLRUN" "$ROOT/examples/fit_a_line.fl" --threads "$bad" 2>&1)
    rc=$?
    [ $rc = 2 ] || fail "--threads $bad: exit $rc, expected 2"
    echo "$out" | grep -qxF "flrun: --threads needs a number of threads from 1 to 256, found '$bad'" ||
        fail "--threads $bad: message '$out'"
done
echo "ok: identical logs run to run at 1 and at 2 threads (mlp, cnn); 1 vs 2 within 1e-4; bad --threads refused"
