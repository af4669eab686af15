#!/bin/sh
# checkpoint_local.sh FLRUN: checkpoints during training in a local run (docs/running.md,
# "Checkpoints during training"), on tests/e2e/ckpt_dropout.fl (the digits MLP with dropout,
# 29 steps an epoch, 3 epochs):
#   - a run with --checkpoint-every logs and saves what a run without it does, byte for byte,
#     and keeps its last 2 checkpoints, each with its vars, training state and log so far;
#   - resumed from a checkpoint within an epoch (step 60) and at an epoch's end (step 58), a run
#     ends with the uninterrupted run's log and parameters, byte for byte (the dropout masks
#     too: the executor's run count is restored);
#   - DIR/STOP stops a run at its next checkpoint, writing nothing of a finished run (no log,
#     --save or picture); resumed, it ends as the uninterrupted run;
#   - what is refused: checkpoint options without their partners, a directory of another run's
#     checkpoints without --resume, a resume with another global batch, a damaged training
#     state (named by file and line), a --checkpoint that is a file, a --log inside it, --plot
#     and --tensorboard on a resumed run (its curves would miss the steps before the checkpoint).
set -u
FLRUN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; cat "$TMP/out" 2>/dev/null; exit 1; }
M=tests/e2e/ckpt_dropout.fl

"$FLRUN" $M -q --log "$TMP/ref.csv" --save "$TMP/ref" >"$TMP/out" 2>&1 || fail "the run without checkpoints"
same() { # LOG DIR: the log and the saved vars are the reference run's, byte for byte
    cmp "$TMP/ref.csv" "$1" || fail "$1 differs from the uninterrupted run's log"
    for f in "$TMP"/ref/*; do cmp "$f" "$2/${f##*/}" || fail "$2: ${f##*/} differs from the uninterrupted run's"; done
}

"$FLRUN" $M -q --log "$TMP/a.csv" --save "$TMP/a" --checkpoint "$TMP/ck" --checkpoint-every 20 >"$TMP/out" 2>&1 ||
    fail "the run with checkpoints"
same "$TMP/a.csv" "$TMP/a"
[ "$(ls "$TMP/ck" | tr '\n' ' ')" = "step-60 step-80 " ] || fail "the checkpoints kept: $(ls "$TMP/ck")"
for f in FORMAT MANIFEST TRAIN log.csv fc_0.w_0; do [ -f "$TMP/ck/step-60/$f" ] || fail "step-60 has no $f"; done
[ "$(grep -c '^train,' "$TMP/ck/step-60/log.csv")" = 60 ] || fail "step-60's log does not hold 60 steps"
sed -n 2,4p "$TMP/ck/step-60/TRAIN" | tr '\n' ' ' | grep -qx "step 60 epoch 3 batch 2 " ||
    fail "step-60's position: $(sed -n 2,4p "$TMP/ck/step-60/TRAIN")"

# the run dies after step 60's checkpoint (step-80 never written), then goes on from it
rm -r "$TMP/ck/step-80"
"$FLRUN" $M --log "$TMP/a.csv" --save "$TMP/a" --checkpoint "$TMP/ck" --checkpoint-every 20 --resume >"$TMP/out" 2>&1 ||
    fail "the run resumed from step 60"
grep -q "^resuming from '$TMP/ck/step-60': step 60, epoch 3, batch 3$" "$TMP/out" || fail "no resuming line"
same "$TMP/a.csv" "$TMP/a"
# from the end of epoch 2 (step 58): the next epoch from its first batch
rm -rf "$TMP/ck" "$TMP/a.csv"
"$FLRUN" $M -q --log "$TMP/a.csv" --save "$TMP/a" --checkpoint "$TMP/ck" --checkpoint-every 29 >"$TMP/out" 2>&1 ||
    fail "the run with a checkpoint each epoch"
rm -r "$TMP/ck/step-87"
"$FLRUN" $M -q --log "$TMP/a.csv" --save "$TMP/a" --checkpoint "$TMP/ck" --checkpoint-every 29 --resume >"$TMP/out" 2>&1 ||
    fail "the run resumed from step 58"
same "$TMP/a.csv" "$TMP/a"

refused() { # STATUS PATTERN flrun-arguments...: exits STATUS saying PATTERN
    ST=$1 PAT=$2
    shift 2
    "$FLRUN" "$@" >"$TMP/out" 2>&1
    RC=$?
    [ $RC = "$ST" ] || fail "$*: exit status $RC, not $ST"
    grep -qF -- "$PAT" "$TMP/out" || fail "$*: no message '$PAT'"
}
refused 2 "flrun: --checkpoint-every needs --checkpoint DIR (where the checkpoints are)" $M --checkpoint-every 5
refused 2 "flrun: --resume needs --checkpoint DIR (where the checkpoints are)" $M --resume
refused 2 "flrun: --checkpoint ck needs --checkpoint-every STEPS (when to write one), or --resume (to go on from the last)" \
    $M --checkpoint ck
refused 2 "flrun: --resume and --load: --resume loads the last checkpoint of --checkpoint; give one of them" \
    $M --checkpoint "$TMP/ck" --resume --load "$TMP/a"
refused 2 "flrun: --log '$TMP/ck/l.csv' is inside --checkpoint '$TMP/ck'; each output needs its own path" \
    $M --checkpoint "$TMP/ck" --checkpoint-every 5 --log "$TMP/ck/l.csv"
refused 1 "flrun: error: --checkpoint: '$TMP/ck' holds the checkpoints of another run (the last after step 87); give --resume to go on with it, or another directory" \
    $M -q --checkpoint "$TMP/ck" --checkpoint-every 5
refused 1 "flrun: error: the checkpoint's run trains on global batches of 50 rows, this one on 25 (--batch-size is per trainer)" \
    $M -q --checkpoint "$TMP/ck" --resume --batch-size 25
sed -i 's/^batch 0$/batch x/' "$TMP/ck/step-87/TRAIN"
refused 1 "flrun: error: $TMP/ck/step-87/TRAIN:4: expected 'batch' and its value, found 'batch x'" \
    $M -q --checkpoint "$TMP/ck" --resume
refused 2 "flrun: --plot: a run resumed from a checkpoint would draw only the steps after it; draw its --log (which holds them all) with flc plot" \
    $M --checkpoint "$TMP/ck" --resume --plot "$TMP/p.svg"
refused 2 "flrun: --tensorboard: a run resumed from a checkpoint would draw only the steps after it; draw its --log (which holds them all) with flc plot" \
    $M --checkpoint "$TMP/ck" --resume --tensorboard "$TMP/tb"
touch "$TMP/file"
refused 1 "flrun: error: --checkpoint: '$TMP/file' exists and is not a directory" $M -q --checkpoint "$TMP/file" --checkpoint-every 5
# DIR/STOP: the run stops after its next checkpoint (step 20) and writes nothing of a finished
# run (no log, no --save, no picture); resumed from that checkpoint it ends as the uninterrupted run
rm -rf "$TMP/ck" "$TMP/a" "$TMP/a.csv"
mkdir "$TMP/ck" && touch "$TMP/ck/STOP"
"$FLRUN" $M -q --log "$TMP/a.csv" --save "$TMP/a" --plot "$TMP/a.svg" --checkpoint "$TMP/ck" --checkpoint-every 20 \
    >"$TMP/out" 2>&1 || fail "the run stopped by DIR/STOP"
[ "$(ls "$TMP/ck" | tr '\n' ' ')" = "STOPPED step-20 " ] || fail "after DIR/STOP: $(ls "$TMP/ck")"
for f in a.csv a a.svg; do [ -e "$TMP/$f" ] && fail "the run stopped at its checkpoint wrote $f"; done
"$FLRUN" $M -q --log "$TMP/a.csv" --save "$TMP/a" --checkpoint "$TMP/ck" --checkpoint-every 20 --resume >"$TMP/out" 2>&1 ||
    fail "the run resumed after DIR/STOP"
same "$TMP/a.csv" "$TMP/a"
echo "checkpoint_local: ok"
