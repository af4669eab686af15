#!/bin/sh
# profile_test.sh FLRUN: the profiler and TensorBoard's event files on local runs (docs/running.md,
# "Profiling" and "TensorBoard"; run from the project root):
#  - flrun --profile --timeline on recognize_digits: Fluid's table, sorted as asked (calls, ave),
#    whose calls and totals per op type are the timeline's op spans within 5%
#    (tests/e2e/check_profile.py); --profile-sort none keeps the order in which op types first
#    ended (the startup's initialisers first);
#  - a fluid.profiler region around fit_a_line's fluid.train with sorted_key='max' and
#    profile_path: the table printed without --profile, against the trace of the profiled span
#    written to profile_path (the startup's ops are outside it);
#  - --tensorboard on digits_regularized.fl (a decaying learning rate): one event file whose
#    records' CRCs hold and which `protoc --decode` reads against tools/tfevents.proto, each log
#    row's figures at its step, samples/s and the learning rate per step
#    (tests/e2e/check_tfevents.py);
#  - refusals: an unknown --profile-sort, --profile-sort with nothing profiled (usage, exit 2),
#    profile_path naming the --log file, --tensorboard naming a file.
set -u
FLRUN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
CHECK="python3 tests/e2e/check_profile.py"

"$FLRUN" examples/recognize_digits.fl -q --epochs 2 --profile --profile-sort calls --timeline "$TMP/a.json" \
    >"$TMP/a.out" || fail "--profile --timeline"
$CHECK "$TMP/a.out" "$TMP/a.json" --sort calls || fail "--profile-sort calls against the timeline"
grep -q "^Sorted by number of calls in descending order" "$TMP/a.out" || fail "the sorting's line"
"$FLRUN" examples/recognize_digits.fl -q --epochs 1 --profile --profile-sort ave --timeline "$TMP/b.json" \
    >"$TMP/b.out" || fail "--profile-sort ave"
$CHECK "$TMP/b.out" "$TMP/b.json" --sort ave || fail "--profile-sort ave against the timeline"
"$FLRUN" examples/recognize_digits.fl -q --epochs 1 --profile --profile-sort none >"$TMP/c.out" || fail "--profile-sort none"
first=$(sed -n '/^Event /{n;p;q}' "$TMP/c.out" | cut -d' ' -f1)
[ "$first" = uniform_random ] || fail "--profile-sort none: '$first' first, not the startup's uniform_random"

sed 's/^fluid.train(/with fluid.profiler.profiler("CPU", sorted_key="max", profile_path="prof.json"):\n    fluid.train(/' \
    examples/fit_a_line.fl >"$TMP/fit.fl"
(cd "$TMP" && "$FLRUN" fit.fl --data-dir "$OLDPWD/examples" -q --epochs 3 >r.out) || fail "a fluid.profiler region"
$CHECK "$TMP/r.out" "$TMP/prof.json" --sort max || fail "the region's table against its profile_path"
grep -q "uniform_random" "$TMP/prof.json" "$TMP/r.out" && fail "the startup's ops are in the profiled span"
grep -q "^Process: flrun fit.fl$" "$TMP/r.out" || fail "the table does not name the process"

"$FLRUN" tests/mpi/digits_regularized.fl -q --batch-size 100 --log "$TMP/l.csv" --tensorboard "$TMP/tb" ||
    fail "--tensorboard"
python3 tests/e2e/check_tfevents.py "$TMP/tb" --proto tools/tfevents.proto --log "$TMP/l.csv" --lr ||
    fail "the event file"

"$FLRUN" examples/fit_a_line.fl -q --profile --profile-sort Total 2>"$TMP/e1"
[ $? -eq 2 ] || fail "--profile-sort Total: not a usage error"
grep -q "^flrun: --profile-sort needs calls, total, max, min, ave or none" "$TMP/e1" || { cat "$TMP/e1"; fail "--profile-sort Total: the message"; }
"$FLRUN" examples/fit_a_line.fl -q --profile-sort total 2>"$TMP/e2"
[ $? -eq 2 ] || fail "--profile-sort alone: not a usage error"
grep -q "^flrun: --profile-sort sorts the profiler's table: give --profile too" "$TMP/e2" || { cat "$TMP/e2"; fail "--profile-sort alone: the message"; }
(cd "$TMP" && "$FLRUN" fit.fl --data-dir "$OLDPWD/examples" -q --log prof.json 2>e3)
[ $? -eq 2 ] || fail "profile_path onto --log: not refused as usage"
grep -q "^flrun: --log 'prof.json' and profile_path 'prof.json' are the same path; each output needs its own$" "$TMP/e3" ||
    { cat "$TMP/e3"; fail "profile_path onto --log: the message"; }
touch "$TMP/file"
"$FLRUN" examples/fit_a_line.fl -q --tensorboard "$TMP/file" 2>"$TMP/e4" && fail "--tensorboard onto a file"
grep -q "^flrun: error: --tensorboard '$TMP/file' exists and is not a directory$" "$TMP/e4" || { cat "$TMP/e4"; fail "--tensorboard onto a file: the message"; }
echo "profile_test: ok"
