# data_common.sh: what the data tests share, sourced by the data_*.sh tests once
# they have set ROOT: a temporary folder T (removed on exit), fail, the Python they check with (PY) and
# the folder of their scripts (D).
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3
D=$ROOT/tests/e2e/data
# synthetic_datasets [numpy]: FLUIDC_DATA_HOME set to scripts/make_synthetic_datasets.sh's files in
# $T/cache (the checks need Python, and with "numpy" its numpy: skipped without them)
synthetic_datasets() {
    [ -x $PY ] || { echo "skipped: /usr/bin/python3 not found"; exit 77; }
    if [ "${1:-}" = numpy ]; then
        $PY -c 'import numpy' 2> /dev/null || { echo "skipped: /usr/bin/python3 with numpy not found"; exit 77; }
    fi
    sh "$ROOT/scripts/make_synthetic_datasets.sh" "$T/cache" > /dev/null || fail "make_synthetic_datasets.sh"
    export FLUIDC_DATA_HOME=$T/cache
}
