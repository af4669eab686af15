#!/bin/sh
# Doc tests: every ```fl block of the docs compiles with `flc check` (from a directory next to
# examples/, so relative data paths read as in the examples). Prints "N passed, N failed".
# usage: test_docs.sh FLC DOC.md...
set -u
flc=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
for doc in "$@"; do
    awk -v dir="$tmp" -v base="$(basename "$doc" .md)" '
        /^```fl[ \t]*$/ { n++; f = sprintf("%s/%s_%02d.fl", dir, base, n); inb = 1; next }
        /^```/ { inb = 0; next }
        inb { print > f }' "$doc"
done
for f in "$tmp"/*.fl; do
    [ -e "$f" ] || continue
    if out=$("$flc" check "$f" 2>&1); then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $(basename "$f"):"
        printf '%s\n' "$out"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
