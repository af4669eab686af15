#!/bin/sh
# timeline_test.sh FLC FLRUN: flrun --timeline in an MPI job (docs/running.md, "Timeline"), two
# launches (run from the project root):
#  - the digits MLP on a sync plan of 2 pservers and 2 trainers with --timeline: trainer 0
#    writes one file that check_timeline.py validates as trace JSON with every rank (pids 0-3)
#    named by its metadata, op spans on each, the transport's spans (send grad, recv grad, update,
#    barrier wait, recv param, reply param), and every gradient's send joined to its pserver's receipt by a flow
#    (each "s" has one "f"), the receipt no earlier than the send on trainer 0's clock (within
#    the clocks' measured error + 20 us);
#  - --timeline onto the .plan itself: the job ends non-zero at once, trainer 0 saying why, and
#    the plan is left as it was.
set -u
FLC=$1 FLRUN=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run_mpi() { timeout 120 mpirun --allow-run-as-root --oversubscribe "$@"; }

"$FLC" build tests/mpi/digits_mlp.fl -o "$TMP/d.flp" || fail "flc build"
"$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 --min-block-size 512 -o "$TMP/x.plan" >/dev/null ||
    fail "transpile"
cp "$TMP/x.plan" "$TMP/x.orig"
run_mpi -np 4 "$FLRUN" "$TMP/x.plan" -q --epochs 1 --timeline "$TMP/t.json" || fail "mpirun with --timeline"
python3 tests/e2e/check_timeline.py "$TMP/t.json" --ranks 4 --flows 20 --span "send grad" --span "recv grad" \
    --span update --span "barrier wait (send)" --span "recv param" --span "reply param" || fail "the job's timeline"
# 1 epoch of 1437 rows, global batch 100: 15 steps, each trainer sending its 5 gradient blocks
n=$(grep -c '"ph":"s"' "$TMP/t.json")
[ "$n" -eq 150 ] || fail "$n sends with an arrow, not 2 trainers x 15 steps x 5 blocks"
grep -q '"clock":"trainer 0 (rank 0)"' "$TMP/t.json" || fail "the file does not say whose clock it is on"
ls "$TMP" | grep -q 'json\.tmp' && fail "a temporary file was left beside the timeline"

run_mpi -np 4 "$FLRUN" "$TMP/x.plan" -q --epochs 1 --timeline "$TMP/x.plan" >"$TMP/r.out" 2>&1 &&
    fail "--timeline onto the plan: the job succeeded"
grep -q "^flrun: --timeline '$TMP/x.plan' is the program ('$TMP/x.plan'); refusing to overwrite an input$" \
    "$TMP/r.out" || { cat "$TMP/r.out"; fail "--timeline onto the plan: the message"; }
cmp -s "$TMP/x.plan" "$TMP/x.orig" || fail "the plan was changed"
echo "timeline_test: ok"
