#!/bin/sh
# examples/fluid/ctr_dataset.fl trains a CTR model from MultiSlot files through Fluid's Dataset API
# (exe.train_from_dataset over an InMemoryDataset, infer_from_dataset over a QueueDataset): on the
# click log of scripts/make_multislot_ctr.sh (about half the 600 test impressions are clicks, so
# guessing gives 0.5), the loss printed at batch 90 of each pass falls from the first pass to the
# third, and the test accuracy reaches 0.85 (about 0.92 here). The driver reads the files: one
# reader_open per dataset, and the runs of the loop's programs are driver ops, not unrolled batches.
# Usage: dataset_ctr.sh FLC FLRUN REPO_ROOT
set -u
FLC=$1 FLRUN=$2 ROOT=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
sh "$ROOT/scripts/make_multislot_ctr.sh" "$T/data" || { echo "FAIL: make_multislot_ctr.sh"; exit 1; }
[ "$(wc -l < "$T/data/train_0.txt")" -eq 1500 ] || { echo "FAIL: train_0.txt has not 1500 lines"; exit 1; }
CTR_DATA=$T/data "$FLC" build "$ROOT/examples/fluid/ctr_dataset.fl" -o "$T/ctr.flp" ||
    { echo "FAIL: ctr_dataset.fl does not compile"; exit 1; }
n=$("$FLC" show "$T/ctr.flp" | grep -c 'op reader_open')
[ "$n" -eq 2 ] || { echo "FAIL: $n reader_open ops in the driver, expected 2 (the two datasets)"; exit 1; }
"$FLC" show "$T/ctr.flp" | grep -q '^reader 0: multislot() slots dense_input:float:13 C1:uint64:0 .* click:uint64:1 files ' ||
    { echo "FAIL: flc show does not print the MultiSlot reader"; "$FLC" show "$T/ctr.flp" | grep '^reader'; exit 1; }
"$FLC" verify "$T/ctr.flp" >/dev/null || { echo "FAIL: flc verify"; exit 1; }
"$FLRUN" "$T/ctr.flp" >"$T/out" 2>"$T/err" || { echo "FAIL: flrun exited $?"; cat "$T/err"; exit 1; }
cat "$T/out"
awk -F '\t' '
    $1 ~ /^pass [0-9]+ loss$/ { n++; v = $3; gsub(/[][]/, "", v); loss[n] = v + 0 }
    $1 == "test accuracy" { v = $3; gsub(/[][]/, "", v); acc = v + 0; seen = 1 }
    END {
        if (n != 3) { print "FAIL: " n " loss lines, expected 3 (one per pass)"; exit 1 }
        if (!(loss[3] < loss[1])) { print "FAIL: the loss does not fall: " loss[1] " -> " loss[3]; exit 1 }
        if (!seen) { print "FAIL: no test accuracy printed"; exit 1 }
        if (acc < 0.85) { print "FAIL: test accuracy " acc " is below 0.85"; exit 1 }
        print "ok: loss " loss[1] " -> " loss[3] ", test accuracy " acc
    }' "$T/out"
