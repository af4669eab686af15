#!/bin/sh
# timeline_local.sh FLRUN: flrun --timeline on local runs (docs/running.md, "Timeline"), checked
# by check_timeline.py (Chrome trace-event JSON, op spans with their .fl lines, per-thread times
# in order):
#  - fit_a_line.fl trains with a timeline: the file validates, and holds a span per op run
#    (each step's mul among them);
#  - primes.fl (goroutines): each goroutine is a lane of its own, named;
#  - --timeline-events 40: the first 40 events are kept, a warning says how many were dropped,
#    the file still validates and its process label says so;
#  - the validator fails on a file whose spans go back in time on one thread (it can fail);
#  - refusals: --timeline onto the program itself (the file is left as it was), onto the --log
#    file, --timeline-events without --timeline; a timeline that cannot be written.
set -u
FLRUN=$1
CHECK="python3 tests/e2e/check_timeline.py"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$FLRUN" examples/fit_a_line.fl -q --epochs 2 --timeline "$TMP/t.json" || fail "fit_a_line with --timeline"
$CHECK "$TMP/t.json" --span mul --span sgd || fail "fit_a_line's timeline"
# one mul span per training step and per test batch at least: 2 epochs of 404 rows, batch 20
n=$(grep -c '"name":"mul","cat":"op"' "$TMP/t.json")
[ "$n" -ge 42 ] || fail "only $n mul spans"
grep -q '"line":"fit_a_line.fl:[0-9]*:[0-9]*"' "$TMP/t.json" || fail "no op names its fit_a_line.fl line"
ls "$TMP" | grep -q tmp && fail "a temporary file was left beside the timeline"

"$FLRUN" examples/primes.fl --timeline "$TMP/p.json" >/dev/null 2>&1 || fail "primes with --timeline"
$CHECK "$TMP/p.json" --span channel_send --span channel_recv || fail "primes' timeline"
g=$(grep -c '"name":"thread_name".*"goroutine [0-9]*"' "$TMP/p.json")
[ "$g" -ge 100 ] || fail "only $g goroutine lanes in primes' timeline"

"$FLRUN" examples/fit_a_line.fl -q --epochs 1 --timeline "$TMP/c.json" --timeline-events 40 2>"$TMP/c.err" ||
    fail "--timeline-events 40"
grep -q "^flrun: warning: --timeline: the limit of 40 events was reached; [0-9]* later events were dropped (raise --timeline-events)$" \
    "$TMP/c.err" || { cat "$TMP/c.err"; fail "no warning at the event limit"; }
$CHECK "$TMP/c.json" || fail "the capped timeline"
k=$(grep -c '"ph":"X"' "$TMP/c.json")
[ "$k" -eq 40 ] || fail "$k spans kept, not 40"
grep -q 'events dropped at the --timeline-events limit (40)' "$TMP/c.json" || fail "the capped file does not say so"

# the validator itself: spans going back in time on one thread fail it
python3 - "$TMP/c.json" "$TMP/bad.json" <<'PY' || fail "making the bad file"
import json, sys
d = json.load(open(sys.argv[1]))
xs = [e for e in d["traceEvents"] if e["ph"] == "X"]
xs[1]["ts"] = xs[0]["ts"] - 1  # the second span of the same thread starts before the first
json.dump(d, open(sys.argv[2], "w"))
PY
$CHECK "$TMP/bad.json" >"$TMP/bad.out" && fail "the validator accepted spans out of order"
grep -q "comes after" "$TMP/bad.out" || fail "the validator's message: $(cat "$TMP/bad.out")"

cp examples/fit_a_line.fl "$TMP/fit.fl"
cp examples/fit_a_line.fl "$TMP/fit.orig"
"$FLRUN" "$TMP/fit.fl" -q --epochs 1 --data-dir examples --timeline "$TMP/fit.fl" 2>"$TMP/r.err"
[ $? -eq 2 ] || fail "--timeline onto the program: not exit 2"
grep -q "^flrun: --timeline '$TMP/fit.fl' is the program ('$TMP/fit.fl'); refusing to overwrite an input$" "$TMP/r.err" ||
    { cat "$TMP/r.err"; fail "--timeline onto the program: the message"; }
cmp -s "$TMP/fit.fl" "$TMP/fit.orig" || fail "the program was changed"
"$FLRUN" examples/fit_a_line.fl -q --epochs 1 --log "$TMP/l.csv" --timeline "$TMP/l.csv" 2>"$TMP/r.err"
[ $? -eq 2 ] || fail "--timeline onto --log: not exit 2"
grep -q "^flrun: --log '$TMP/l.csv' and --timeline '$TMP/l.csv' are the same path; each output needs its own$" "$TMP/r.err" ||
    { cat "$TMP/r.err"; fail "--timeline onto --log: the message"; }
"$FLRUN" examples/fit_a_line.fl --timeline-events 10 2>"$TMP/r.err"
[ $? -eq 2 ] || fail "--timeline-events alone: not exit 2"
grep -q "give --timeline FILE.json too" "$TMP/r.err" || fail "--timeline-events alone: the message"
"$FLRUN" examples/fit_a_line.fl -q --epochs 1 --timeline "$TMP/no/such/dir/t.json" 2>"$TMP/r.err"
[ $? -eq 1 ] || fail "an unwritable timeline: not exit 1"
grep -q "^flrun: error: --timeline '$TMP/no/such/dir/t.json': cannot write in '$TMP/no/such/dir': No such file or directory$" "$TMP/r.err" || { cat "$TMP/r.err"; fail "an unwritable timeline: the message"; }
echo "timeline_local: ok"
