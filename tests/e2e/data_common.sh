# data_common.sh: what the data tests share, sourced by data_fluid.sh and data_text.sh once they
# have set ROOT: a temporary folder T (removed on exit), fail, the Python they check with (PY) and
# the folder of their scripts (D).
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3
D=$ROOT/tests/e2e/data
