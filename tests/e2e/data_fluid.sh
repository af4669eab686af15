#!/bin/sh
# Data the Fluid way (docs/driver.md, "Data"): scripts/make_dataset_cache.sh makes a cache in a
# temporary folder (FLUIDC_DATA_HOME), from which
#   - fit_a_line trains one epoch through paddle.batch, paddle.reader.shuffle and DataFeeder, and
#     its batches (rows, sums of x and y as fed) match numpy's reading of housing.data as Paddle
#     reads it (check_uci.py: normalisation, the 80% split; the loss falls);
#   - a shuffle is the same with one seed and another with --seed 5, and each epoch has its own;
#   - mnist's first test batches match numpy's reading of the idx files (check_mnist.py);
#   - the reader cases of data_cases.fltab and the py_reader cases of pyreader_cases.fltab run
#     (tests/conc/run_cases.sh);
#   - a missing file is an error naming it and scripts/make_dataset_cache.sh.
# Usage: data_fluid.sh FLRUN FLC REPO_ROOT
set -u
FLRUN=$1 FLC=$2 ROOT=$3
. "$ROOT/tests/e2e/data_common.sh"
if ! $PY -c 'import numpy' 2>/dev/null; then
    echo "skipped: /usr/bin/python3 with numpy not found (Debian package python3-numpy)"
    exit 77
fi
if [ ! -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    echo "skipped: Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)"
    exit 77
fi
sh "$ROOT/scripts/make_dataset_cache.sh" "$T/cache" > /dev/null || fail "make_dataset_cache.sh"
export FLUIDC_DATA_HOME=$T/cache

"$FLRUN" "$D/fit_a_line_reader.fl" > "$T/uci0.log" || fail "fit_a_line_reader.fl"
$PY "$D/check_uci.py" "$T/cache/uci_housing/housing.data" "$T/uci0.log" 0 || fail "uci_housing, in file order"
"$FLRUN" "$D/fit_a_line_reader.fl" -D shuffle=1 > "$T/uci1.log" || fail "fit_a_line_reader.fl -D shuffle=1"
$PY "$D/check_uci.py" "$T/cache/uci_housing/housing.data" "$T/uci1.log" 1 || fail "uci_housing, shuffled"
"$FLRUN" "$D/fit_a_line_reader.fl" -D shuffle=1 --seed 0 > "$T/uci2.log" || fail "--seed 0"
cmp -s "$T/uci1.log" "$T/uci2.log" || fail "the shuffle with seed 0 differs from run to run"
"$FLRUN" "$D/fit_a_line_reader.fl" -D shuffle=1 --seed 5 > "$T/uci3.log" || fail "--seed 5"
$PY "$D/check_uci.py" "$T/cache/uci_housing/housing.data" "$T/uci3.log" 1 || fail "uci_housing, --seed 5"
cmp -s "$T/uci1.log" "$T/uci3.log" && fail "--seed 5 shuffled as seed 0 does"
"$FLRUN" "$D/epochs.fl" > "$T/epochs.log" || fail "epochs.fl"
[ "$(wc -l < "$T/epochs.log")" = 2 ] && [ "$(cut -d' ' -f3 "$T/epochs.log" | sort -u | wc -l)" = 2 ] ||
    { cat "$T/epochs.log"; fail "two epochs of a shuffled reader: the same first batch"; }

"$FLRUN" "$D/mnist_sums.fl" > "$T/mnist.log" || fail "mnist_sums.fl"
$PY "$D/check_mnist.py" "$T/cache/mnist" "$T/mnist.log" || fail "mnist"

sh "$ROOT/tests/conc/run_cases.sh" "$FLRUN" "$ROOT/tests/e2e/data_cases.fltab" || fail "data_cases.fltab"
sh "$ROOT/tests/conc/run_cases.sh" "$FLRUN" "$ROOT/tests/e2e/pyreader_cases.fltab" || fail "pyreader_cases.fltab"

# the bundle holds its readers (format 3) and flc show lists them
"$FLC" build "$D/fit_a_line_reader.fl" -D shuffle=1 -o "$T/fit.flp" || fail "flc build"
"$FLC" show "$T/fit.flp" > "$T/show.txt" || fail "flc show"
grep -q '^reader 1: shuffle(0) 500$' "$T/show.txt" && grep -q '^reader 2: batch(1) 20$' "$T/show.txt" ||
    { sed -n '/== readers/,$p' "$T/show.txt"; fail "flc show: the readers"; }

# a missing file: the run stops at the reader_open, naming the file and how to get it
mkdir "$T/empty"
FLUIDC_DATA_HOME=$T/empty "$FLRUN" "$T/fit.flp" > /dev/null 2> "$T/err.txt" && fail "a missing housing.data ran"
grep -qF "paddle.dataset.uci_housing: '$T/empty/uci_housing/housing.data' is missing: Paddle downloads it (python -c \"import paddle.dataset.uci_housing as m; m.fetch()\"), or make a cache with scripts/make_dataset_cache.sh" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the missing file's message"; }
FLUIDC_DATA_HOME= HOME=$T/empty "$FLRUN" "$T/fit.flp" > /dev/null 2> "$T/err.txt" && fail "a missing housing.data ran"
grep -qF "'~/.cache/paddle/dataset/uci_housing/housing.data' is missing" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the missing file in Paddle's cache folder"; }
sh "$ROOT/scripts/make_dataset_cache.sh" 2> /dev/null; [ $? = 2 ] || fail "make_dataset_cache.sh without DIR: exit 2"
echo "data_fluid: ok"
