#!/bin/sh
# The oneDNN paths are deterministic: training a conv + batch_norm + pool net twice with one seed
# gives byte-identical step logs (examples/fluid/recognize_digits_conv.fl, a cut of the digits,
# one epoch); a run with oneDNN off (FL_DNNL=0: the kernels' own loops) gives the same losses
# within float32 rounding (relative 1e-3 after a few dozen steps of Adam).
# Usage: dnnl_same_logs.sh FLRUN REPO_ROOT
set -u
FLRUN=$1 ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/data" "$T/fluid"
gzip -dc "$ROOT/examples/data/digits.csv.gz" | head -n 800 | gzip > "$T/data/digits.csv.gz"
run() {
    "$FLRUN" "$ROOT/examples/fluid/recognize_digits_conv.fl" -q --epochs 1 --seed 3 \
        --data-dir "$T/fluid" --log "$T/$1.csv" || { echo "FAIL: flrun ($1)"; exit 1; }
}
run a
run b
FL_DNNL=0 FL_GEMM=auto run ref  # (auto: a FL_GEMM=onednn around this test would contradict FL_DNNL=0)
[ "$(wc -l < "$T/a.csv")" -gt 5 ] || { echo "FAIL: too few log lines"; cat "$T/a.csv"; exit 1; }
cmp "$T/a.csv" "$T/b.csv" || { echo "FAIL: two runs with one seed logged differently"; diff "$T/a.csv" "$T/b.csv" | head; exit 1; }
paste -d, "$T/a.csv" "$T/ref.csv" | awk -F, 'NR > 1 { d = $5 - $11; if (d < 0) d = -d;
    if (d > 1e-3 * ($11 < 0 ? -$11 : $11) + 1e-6) { print "FAIL: step " $4 ": loss " $5 " with oneDNN, " $11 " without"; bad = 1 } }
    END { exit bad }' || exit 1
echo "ok: $(($(wc -l < "$T/a.csv") - 1)) steps logged identically twice, and as without oneDNN"
