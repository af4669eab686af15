# run_fl_common.sh: sourced by e2e scripts that run small .fl programs with flrun and check what
# they print. Needs FLRUN; sets and keeps fail=1 on the first failure (the caller exits with it).
fail=0
# run NAME WANT_EXIT: runs NAME.fl (from stdin) and keeps its output in NAME.out and NAME.err
run() {
    cat >"$1.fl"
    "$FLRUN" "$1.fl" >"$1.out" 2>"$1.err"
    rc=$?
    [ "$rc" = "$2" ] || { echo "FAIL: $1 exited $rc, expected $2"; cat "$1.err"; fail=1; }
}
# expect_err NAME TEXT: NAME's stderr holds TEXT
expect_err() {
    grep -qF -- "$2" "$1.err" || { echo "FAIL: $1: stderr lacks '$2'"; cat "$1.err"; fail=1; }
}
