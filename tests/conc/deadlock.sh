#!/bin/sh
# deadlock.sh FLRUN DIR: every DIR/*.fl deadlocks. Each run must exit 1 by itself (found, not
# killed: a run still going after 15 s has missed the deadlock; a run takes well under a second
# alone, and a few under ASan on a loaded machine), print "deadlock: all goroutines are blocked"
# first and then exactly the goroutine lines its "# expect: ..." comments give (in order).
set -u
FLRUN=$1 DIR=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for f in "$DIR"/*.fl; do
    name=$(basename "$f")
    t0=$(date +%s%N)
    timeout 15 "$FLRUN" "$f" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    sed -n 's/^# expect: /  /p' "$f" >"$tmp/want"
    { echo "deadlock: all goroutines are blocked"; cat "$tmp/want"; } >"$tmp/want2"
    why=""
    [ $rc -eq 1 ] || why="exit $rc"
    [ $rc -eq 124 ] && why="$why (killed after $ms ms: the deadlock was not found)"
    cmp -s "$tmp/err" "$tmp/want2" || why="$why; report differs"
    if [ -z "$why" ]; then
        pass=$((pass + 1))
        echo "ok $name ($ms ms)"
    else
        fail=$((fail + 1))
        echo "FAIL $name: $why"
        diff "$tmp/want2" "$tmp/err" | head -10
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -ge 5 ]
