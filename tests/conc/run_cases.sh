#!/bin/sh
# run_cases.sh FLRUN TABLE: the table-driven .fl tests of channels and select (label concurrency)
# and of the driver program (tests/e2e/driver_cases.fltab).
# TABLE holds cases, each a header then a program:
#   @case NAME            starts a case
#   @go TEXT              Go's behaviour that the case checks (documentation)
#   @args ARGS            arguments given to flrun after the program (e.g. --procs 1)
#   @exit N               expected exit status (default 0)
#   @out LINE             expected stdout, one @out per Print line, reduced to "MESSAGE VALUES"
#   @line LINE            expected stdout exactly, one @line per line (all of it when given)
#   @range MSG LO HI      the Print with message MSG holds one value in [LO, HI] (fairness)
#   @err TEXT             stderr contains TEXT
#   @timeout S            the case must finish within S seconds (default 10; for the ThreadSanitizer
#                         build, where a channel hand-over takes milliseconds)
# Prints one line per failure and "N passed, N failed".
set -u
FLRUN=$1 TABLE=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '
    /^@case / { n++; name = $2; f = sprintf("%s/%03d_%s", dir, n, name); print "" > (f ".hdr"); next }
    /^@/ { print >> (f ".hdr"); next }
    n { print >> (f ".fl") }' "$TABLE"
pass=0 fail=0
for hdr in "$tmp"/*.hdr; do
    base=${hdr%.hdr}
    name=$(basename "$base" | cut -d_ -f2-)
    fl=$base.fl
    cp "$fl" "$tmp/$name.fl"
    limit=$(sed -n 's/^@timeout //p' "$hdr")
    args=$(sed -n 's/^@args //p' "$hdr")
    # shellcheck disable=SC2086 # the arguments are split as words
    timeout "${limit:-10}" "$FLRUN" "$tmp/$name.fl" $args >"$base.out" 2>"$base.err"
    rc=$?
    want=$(sed -n 's/^@exit //p' "$hdr")
    want=${want:-0}
    why=""
    [ "$rc" = "$want" ] || why="exit $rc, expected $want"
    # Print lines "MSG VAR [SHAPE] DTYPE: V..." reduced to "MSG V..."
    sed -n 's/^\([^ ]*\) [^ ]* \[[^]]*\] [a-z0-9]*\( lod [][0-9 ]*\)\{0,1\}: *\(.*\)$/\1 \3/p' "$base.out" >"$base.got"
    if grep -q '^@out ' "$hdr"; then
        sed -n 's/^@out //p' "$hdr" >"$base.want"
        cmp -s "$base.got" "$base.want" || why="$why; stdout [$(tr '\n' '|' <"$base.got")] expected [$(tr '\n' '|' <"$base.want")]"
    fi
    if grep -q '^@line' "$hdr"; then
        sed -n 's/^@line \{0,1\}//p' "$hdr" >"$base.lines"
        cmp -s "$base.out" "$base.lines" || why="$why; stdout [$(tr '\n' '|' <"$base.out")] expected [$(tr '\n' '|' <"$base.lines")]"
    fi
    sed -n 's/^@range //p' "$hdr" | while read -r msg lo hi; do
        v=$(awk -v m="$msg" '$1 == m { print $2 }' "$base.got")
        awk -v v="${v:-nan}" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(v + 0 == v && v >= lo && v <= hi) }' ||
            echo "$msg=$v outside [$lo, $hi]" >"$base.rng"
    done
    [ -e "$base.rng" ] && why="$why; $(cat "$base.rng")"
    sed -n 's/^@err //p' "$hdr" >"$base.errs"
    while read -r text; do
        grep -qF -- "$text" "$base.err" || why="$why; stderr lacks '$text'"
    done <"$base.errs"
    if [ -z "$why" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $name: $why"
        sed 's/^/    stderr: /' "$base.err" | head -5
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
