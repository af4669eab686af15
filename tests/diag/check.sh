#!/bin/sh
# Golden diagnostics: `flc check FILE.fl` must exit 1 and print exactly FILE.expected on stderr.
# Run from the repository root (paths in the expected output are relative to it).
# A first line "# flc-args: ARGS" passes ARGS to flc (e.g. -D name=value); "# flc-env: NAME=VALUE..."
# runs flc with those environment variables.
# usage: check.sh FLC FILE.fl
flc=$1
src=$2
exp=${src%.fl}.expected
args=$(head -n 1 "$src" | sed -n 's/^# flc-args: //p')
envs=$(head -n 1 "$src" | sed -n 's/^# flc-env: //p')
# shellcheck disable=SC2086
out=$(env $envs "$flc" check "$src" $args 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 1 ]; then
    echo "FAIL $src: exit code $rc, expected 1"
    printf '%s\n' "$out"
    exit 1
fi
if [ "$out" != "$(cat "$exp")" ]; then
    echo "FAIL $src: diagnostics differ from $exp"
    printf '%s\n' "$out" > "${TMPDIR:-/tmp}/fl_diag_actual.txt"
    diff -u "$exp" "${TMPDIR:-/tmp}/fl_diag_actual.txt"
    exit 1
fi
echo "ok $src"
