#!/bin/sh
# examples/fluid/dist/fleet_dataset.fl: Fluid's Dataset API in a fleet job (1 pserver, 2 trainers,
# sync): each trainer reads the whole MultiSlot file through train_from_dataset, so every loss it
# prints (every 4th of its 24 batches) is the local run's, within 1e-4.
set -u
FLC=$1 FLRUN=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sh scripts/make_multislot_ctr.sh "$TMP/data" || fail "make_multislot_ctr.sh"
CTR_DATA=$TMP/data
export CTR_DATA
F=examples/fluid/dist/fleet_dataset.fl
"$FLC" build "$F" -o "$TMP/local.flp" && "$FLRUN" "$TMP/local.flp" > "$TMP/local.txt" || fail "the script, locally"
PADDLE_PSERVERS_IP_PORT_LIST=127.0.0.1:6170 PADDLE_TRAINERS_NUM=2 "$FLC" build "$F" -o "$TMP/job.plan" > /dev/null ||
    fail "flc build (the fleet's plan)"
timeout 120 mpirun --allow-run-as-root --oversubscribe --tag-output -np 3 "$FLRUN" "$TMP/job.plan" > "$TMP/job.txt" 2>&1 ||
    { cat "$TMP/job.txt"; fail "the fleet's job"; }
awk -F '\t' '
    FNR == NR { if ($1 == "loss") { n++; v = $3; gsub(/[][]/, "", v); want[n] = v + 0 } next }
    $1 ~ /<stdout>:loss$/ { t = $1; sub(/^\[[0-9]+,/, "", t); sub(/\].*/, "", t)
                            k[t]++; v = $3; gsub(/[][]/, "", v); d = v - want[k[t]]; if (d < 0) d = -d
                            if (d > 1e-4) { print "FAIL: trainer " t " loss " k[t] ": " v ", local " want[k[t]]; bad = 1 } }
    END {
        if (n != 6) { print "FAIL: " n " local losses, expected 6"; exit 1 }
        if (k[0] != n || k[1] != n) { print "FAIL: the trainers printed " k[0] " and " k[1] " losses, expected " n; exit 1 }
        if (bad) exit 1
        print "PASS: dataset_fleet (" n " losses of each trainer equal local, " want[1] " -> " want[n] ")"
    }' "$TMP/local.txt" "$TMP/job.txt"
