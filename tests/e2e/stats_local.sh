#!/bin/sh
# stats_local.sh FLRUN: flrun --stats on a local run (docs/running.md) prints one line per epoch
# on stderr, the training phase alone: fit_a_line.fl's 405 training rows (506 rows, split 0.8),
# positive wall and CPU seconds, samples/s equal to rows / seconds; -q leaves stdout empty;
# without --stats no such line; with a test set the line counts the training rows only.
set -u
FLRUN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; cat "$TMP/err" "$TMP/out" 2>/dev/null; exit 1; }

"$FLRUN" examples/fit_a_line.fl -q --epochs 3 --stats >"$TMP/out" 2>"$TMP/err" || fail "fit_a_line --stats"
[ -s "$TMP/out" ] && fail "-q --stats wrote to stdout"
n=$(grep -c '^flrun: stats epoch [0-9]*: 405 rows in [0-9.]* s, [0-9.]* CPU s: [0-9.]* samples/s, [0-9.]* per CPU second$' "$TMP/err")
[ "$n" -eq 3 ] || fail "$n well-formed stats lines, not 3"
for k in 1 2 3; do grep -q "^flrun: stats epoch $k: " "$TMP/err" || fail "no line for epoch $k"; done
awk '/^flrun: stats epoch/ { s = $8 + 0; c = $10 + 0; r = $5 / s
        if (!(s > 0) || !(c > 0)) { print "non-positive seconds: " $0; exit 1 }
        d = r - $13; tol = r * (1e-6 / s + 1e-4)  # the seconds are printed to the microsecond
        if (d * d > tol * tol) { print "samples/s is not rows / seconds: " $0; exit 1 } }' \
    "$TMP/err" || fail "the figures"
"$FLRUN" examples/fit_a_line.fl -q --epochs 1 >"$TMP/out" 2>"$TMP/err" || fail "fit_a_line without --stats"
grep -q "stats" "$TMP/err" && fail "stats printed without --stats"
echo "stats_local: ok"
