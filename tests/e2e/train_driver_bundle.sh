#!/bin/sh
# fluid.train's loop is the bundle's driver (docs/driver.md, "Status"; docs/ir.md, "The driver"):
# 1. flc build of examples/fit_a_line.fl writes a format-3 bundle whose driver flc show prints
#    (report_open, the three while loops, run_program of main for a step and for the
#    evaluation), every op at the fluid.train call, and flc verify checks it (its op count);
# 2. the same bundle with the step's run_program fetching a var main lacks (rewritten with protoc
#    from the good one) is an error of flc verify located at that call;
# 3. flc transpile gives each trainer that driver and the pservers none; flc verify checks the
#    plan's drivers;
# 4. the bundle written as before (format 2: the run spec, no driver; made with protoc) still
#    reads: flc verify says its driver is built at load, flrun trains it to the losses the
#    bundled driver gives, and flc transpile gives its trainers the driver;
# 5. that driver (compiler/ir/train_driver.c's, for format 2) equals the one fluid.train's .fl
#    loop wrote (stdlib/fluid/_train.fl), locations aside.
# Usage: train_driver_bundle.sh FLC FLRUN REPO_ROOT
set -u
FLC=$1 FLRUN=$2 ROOT=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$ROOT" || fail "no $ROOT"
decode() { protoc --proto_path=compiler/ir --decode=fluidc.FlFile fluid.proto; }
encode() { protoc --proto_path=compiler/ir --encode=fluidc.FlFile fluid.proto; }
AT='@ fit_a_line.fl:17:1' # the fluid.train call

# 1. the driver in the bundle
"$FLC" build examples/fit_a_line.fl -o "$T/m.flp" || fail "flc build"
[ "$(protoc --decode_raw < "$T/m.flp" | sed -n 2p)" = "2: 3" ] || fail "the bundle is not format version 3"
"$FLC" show "$T/m.flp" | sed -n "/^== driver program (fluid.train's loop) ==$/,/^== run spec ==$/p" > "$T/driver.txt"
[ -s "$T/driver.txt" ] || { "$FLC" show "$T/m.flp"; fail "flc show prints no driver program (fluid.train's loop)"; }
count() { grep -c -- "$1" "$T/driver.txt"; }
[ "$(count '^  op report_open ')" = 1 ] || fail "report_open: $(count '^  op report_open ') ops, want 1"
[ "$(count '^  op while ')" = 3 ] || fail "while: $(count '^  op while ') ops, want 3 (epochs, steps, evaluation)"
[ "$(count '^  op run_program .*program="main"')" = 2 ] || fail "run_program of main: want 2 (step, evaluation)"
[ "$(count '^  op run_program .*Step=\[step\].*fetch_names=\["mean_0.tmp_0"\]')" = 1 ] || fail "no step fetching the loss"
[ "$(count '^  op run_program .*predict=true')" = 1 ] || fail "no evaluation run_program (predict)"
[ "$(grep '^  op ' "$T/driver.txt" | grep -vc -- "$AT\$")" = 0 ] || fail "driver ops not located at the fluid.train call"
ops=$(grep -c '^  op ' "$T/driver.txt")
want="$T/m.flp: ok: fluid.train's loop, a driver of $ops ops in 4 blocks"
[ "$("$FLC" verify "$T/m.flp")" = "$want" ] || { "$FLC" verify "$T/m.flp"; fail "flc verify: want '$want'"; }

# 2. a corrupted driver: the step fetches 'no_such_var'
decode < "$T/m.flp" > "$T/m.txt" || fail "protoc --decode"
awk '!done && /strs: "mean_0.tmp_0"/ { sub(/mean_0.tmp_0/, "no_such_var"); done = 1 } { print }' "$T/m.txt" |
    encode > "$T/bad.flp" || fail "protoc --encode"
if "$FLC" verify "$T/bad.flp" > "$T/out" 2> "$T/err"; then fail "flc verify accepts a driver fetching a missing var"; fi
grep -q "^flc: error: $T/bad.flp: driver (examples/fit_a_line.fl:17:1): .*'no_such_var'" "$T/err" ||
    { cat "$T/err"; fail "the bad driver's error is not located at the fluid.train call"; }

# 3. a plan: each trainer carries the driver, the pservers none
"$FLC" transpile "$T/m.flp" --pservers 1 --trainers 2 -o "$T/p.plan" > /dev/null || fail "flc transpile"
"$FLC" show "$T/p.plan" > "$T/plan.txt"
[ "$(grep -c "^== driver program (fluid.train's loop) ==$" "$T/plan.txt")" = 2 ] || fail "want a driver per trainer"
[ "$(grep -c '^== driver program' "$T/plan.txt")" = 2 ] || fail "a pserver carries a driver"
"$FLC" verify "$T/p.plan" | grep -q "ok: sync mode, 2 trainers, 1 pservers" || fail "flc verify of the plan"

# 4. a format-2 bundle (no driver) still trains, with the same losses
awk '/^  driver \{$/ { skip = 1; next } skip && /^  \}$/ { skip = 0; next } !skip' "$T/m.txt" |
    sed 's/^version: 3$/version: 2/' | encode > "$T/old.flp" || fail "protoc --encode (format 2)"
[ "$(protoc --decode_raw < "$T/old.flp" | sed -n 2p)" = "2: 2" ] || fail "the old bundle is not format version 2"
"$FLC" show "$T/old.flp" | grep -q '^== driver program' && fail "the old bundle holds a driver"
"$FLC" verify "$T/old.flp" | grep -q "ok: fluid.train's run spec without its driver" || fail "flc verify (format 2)"
losses() { "$FLRUN" "$1" --epochs 3 2> /dev/null | sed 's/  |  [0-9]* samples\/s$//'; }
losses "$T/m.flp" > "$T/new.txt" && losses "$T/old.flp" > "$T/old.txt" || fail "flrun"
[ "$(wc -l < "$T/new.txt")" = 3 ] || { cat "$T/new.txt"; fail "want 3 epoch lines"; }
cmp -s "$T/new.txt" "$T/old.txt" || { diff "$T/new.txt" "$T/old.txt"; fail "the format-2 bundle trains otherwise"; }
"$FLC" transpile "$T/old.flp" --pservers 1 --trainers 2 -o "$T/old.plan" > /dev/null || fail "flc transpile (format 2)"
[ "$("$FLC" show "$T/old.plan" | grep -c "^== driver program (fluid.train's loop) ==$")" = 2 ] ||
    fail "the old bundle's trainers carry no driver"

# 5. one loop, two builders: the driver stdlib/fluid/_train.fl wrote (the plan of the new bundle)
#    and the one compiler/ir/train_driver.c built for the format-2 bundle are equal, op for op and
#    var for var (the .fl's carry the fluid.train call's location, the other none)
drivers() { "$FLC" show "$1" | awk '/^== driver program/ { on = 1; print; next } /^== / { on = 0 } on' |
    sed "s/  $AT\$//"; }
drivers "$T/p.plan" > "$T/fl_drivers.txt" && drivers "$T/old.plan" > "$T/c_drivers.txt" || fail "flc show"
[ "$(grep -c '^  op ' "$T/fl_drivers.txt")" = $((2 * ops)) ] || fail "want the plan's 2 drivers of $ops ops"
cmp -s "$T/fl_drivers.txt" "$T/c_drivers.txt" ||
    { diff "$T/fl_drivers.txt" "$T/c_drivers.txt"; fail "the .fl loop's driver and train_driver.c's differ"; }
echo "PASS: train_driver_bundle"
