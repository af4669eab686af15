#!/bin/sh
# plot_test.sh FLC FLRUN: training curves (docs/running.md, "Curves"), drawn and then opened in a
# real browser (run from the project root):
#  - flc plot of two fit_a_line logs (batch 20 and 40): one path per run and phase, the loss on a
#    log scale (it falls from ~775 to ~2), the legend naming both logs;
#  - flrun --plot of recognize_digits: a panel for the loss and one for the accuracy (linear);
#  - each picture opened by Debian's chromium, headless, and its screenshot (a PNG) decoded:
#    not blank, each run's colour drawn (tests/e2e/check_svg.py);
#  - refusals: -o naming a log (the log stays as it was), a file that is not a log, a bad row
#    (file:line), flrun --plot onto the program, flrun --plot of a program that trains nothing
#    (no run spec; refused before it runs).
# Without chromium the browser's part is skipped, said so, with exit 77 (ctest: "Skipped"); with
# FL_REQUIRE_CHROMIUM=1 (CI) its absence fails the test.
set -u
FLC=$1 FLRUN=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
CHECK="python3 tests/e2e/check_svg.py"

"$FLRUN" examples/fit_a_line.fl -q --log "$TMP/b20.csv" || fail "fit_a_line, batch 20"
"$FLRUN" examples/fit_a_line.fl -q --batch-size 40 --log "$TMP/b40.csv" || fail "fit_a_line, batch 40"
"$FLC" plot "$TMP/b20.csv" "$TMP/b40.csv" -o "$TMP/fit.svg" || fail "flc plot"
$CHECK "$TMP/fit.svg" --runs b20,b40 --metrics loss --log-scale loss || fail "flc plot's picture"
grep -q "<title>b20 vs b40</title>" "$TMP/fit.svg" || fail "the default title"
"$FLC" plot "$TMP/b20.csv" "$TMP/b40.csv" -o "$TMP/fit2.svg" || fail "flc plot again"
cmp -s "$TMP/fit.svg" "$TMP/fit2.svg" || fail "two pictures of the same logs differ"
"$FLRUN" examples/recognize_digits.fl -q --epochs 3 --log "$TMP/d.csv" --plot "$TMP/d.svg" || fail "flrun --plot"
$CHECK "$TMP/d.svg" --runs recognize_digits --metrics loss,acc --linear acc || fail "flrun --plot's picture"
ls "$TMP" | grep -q 'svg\.tmp' && fail "a temporary file was left beside a picture"

cp "$TMP/b20.csv" "$TMP/keep.csv"
"$FLC" plot "$TMP/b20.csv" -o "$TMP/b20.csv" 2>"$TMP/e1"
[ $? -eq 2 ] || fail "-o onto a log: not a usage error"
grep -q "^flc: -o '$TMP/b20.csv' is one of the logs; refusing to overwrite it$" "$TMP/e1" || { cat "$TMP/e1"; fail "-o onto a log: the message"; }
cmp -s "$TMP/b20.csv" "$TMP/keep.csv" || fail "the log was changed"
"$FLC" plot examples/fit_a_line.fl -o "$TMP/x.svg" 2>"$TMP/e2"
[ $? -eq 1 ] || fail "a program as a log: exit code"
grep -q "^flc: error: examples/fit_a_line.fl:1: not an flrun log: its header should start with 'phase,rank,epoch,step,loss' (flrun --log writes one)$" "$TMP/e2" ||
    { cat "$TMP/e2"; fail "a program as a log: the message"; }
{ head -n 3 "$TMP/b20.csv"; echo "train,0,1,x,1.5"; } >"$TMP/bad.csv"
"$FLC" plot "$TMP/bad.csv" -o "$TMP/x.svg" 2>"$TMP/e3" && fail "a bad row was drawn"
grep -q "^flc: error: $TMP/bad.csv:4: rank, epoch and step must be integers, found '0', '1', 'x'$" "$TMP/e3" ||
    { cat "$TMP/e3"; fail "a bad row: the message"; }
[ -e "$TMP/x.svg" ] && fail "a picture was written for bad logs"
"$FLRUN" examples/fit_a_line.fl -q --plot examples/fit_a_line.fl 2>"$TMP/e4"
[ $? -eq 2 ] || fail "--plot onto the program: not refused as usage"
grep -q "^flrun: --plot 'examples/fit_a_line.fl' is the program ('examples/fit_a_line.fl'); refusing to overwrite an input$" "$TMP/e4" ||
    { cat "$TMP/e4"; fail "--plot onto the program: the message"; }
"$FLRUN" examples/primes.fl --plot "$TMP/p.svg" >"$TMP/p.out" 2>"$TMP/e5" && fail "--plot of a program that trains nothing"
grep -q "^flrun: error: --plot: the program has no run spec (fluid.train): it runs once and trains nothing to show$" "$TMP/e5" ||
    { cat "$TMP/e5"; fail "--plot without a run spec: the message"; }
[ -s "$TMP/p.out" ] && fail "the program ran although its --plot was refused"

# a real browser: chromium headless, a screenshot of each picture at its size
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    [ "${FL_REQUIRE_CHROMIUM:-0}" = 1 ] && fail "chromium is not installed (FL_REQUIRE_CHROMIUM=1)"
    echo "SKIPPED: the pictures are not opened in a browser: chromium is not installed (apt-get install chromium)"
    exit 77
fi
shot() { # shot SVG PNG: the browser's screenshot of SVG, at the picture's size
    size=$(sed -n 's/^<svg [^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\1,\2/p' "$1")
    rm -rf "$TMP/profile"
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
        --user-data-dir="$TMP/profile" --screenshot="$2" --window-size="$size" "file://$1" >"$TMP/chromium.log" 2>&1
    [ -s "$2" ] || { cat "$TMP/chromium.log"; fail "chromium made no screenshot of $1"; }
}
shot "$TMP/fit.svg" "$TMP/fit.png"
$CHECK "$TMP/fit.svg" --runs b20,b40 --metrics loss --png "$TMP/fit.png" || fail "the browser's picture of flc plot"
shot "$TMP/d.svg" "$TMP/d.png"
$CHECK "$TMP/d.svg" --runs recognize_digits --metrics loss,acc --png "$TMP/d.png" || fail "the browser's picture of flrun --plot"
echo "plot_test: ok"
