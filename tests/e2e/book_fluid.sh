#!/bin/sh
# Paddle's book tests as written (examples/fluid/book/, docs/driver.md), on a cache made by
# scripts/make_dataset_cache.sh in a temporary folder:
#   - fit_a_line trains until a batch's loss is under 10 (from over 100), returns out of its two
#     runtime loops (no AssertionError), saves its inference model and predicts 10 test rows;
#   - recognize_digits, the MLP and the conv net, passes its test's bar, saves its model and
#     predicts a random image (numpy.random on the driver): 10 probabilities that sum to 1;
#   - they learn: the book's networks, data and optimizer (tests/e2e/book/digits_learn.fl imports
#     the book script) reach a test accuracy of 0.80 on Fashion-MNIST (the MLP after 900 batches,
#     about 0.83; the conv net after 200, about 0.82).
# Usage: book_fluid.sh FLRUN REPO_ROOT
set -u
FLRUN=$1 ROOT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
if [ ! -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
    echo "skipped: Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)"
    exit 77
fi
sh "$ROOT/scripts/make_dataset_cache.sh" "$T/cache" > /dev/null || fail "make_dataset_cache.sh"
export FLUIDC_DATA_HOME=$T/cache
B=$ROOT/examples/fluid/book
mkdir "$T/run" && cd "$T/run" || fail "cd"

"$FLRUN" "$B/fit_a_line.fl" > fit.log 2> fit.err || { cat fit.err; fail "fit_a_line.fl"; }
awk '/^\[[-0-9.e+]+\]$/ { n++; v = substr($0, 2, length($0) - 2) + 0; if (n == 1) first = v; last = v }
     END { if (n < 2 || first <= 100 || last >= 10) { print n, first, last; exit 1 } }' fit.log ||
    fail "fit_a_line: the loss falls from over 100 to under 10"
grep -q '^infer shape: ' fit.log && [ "$(grep -c '^ *\[\[*[-0-9.]*\]' fit.log)" -ge 20 ] ||
    { cat fit.log | tail -25; fail "fit_a_line: infer() predicts the first test batch"; }
[ -f fit_a_line.inference.model/fc_0.w_0 ] || fail "fit_a_line: the inference model"

for nn in mlp conv; do
    "$FLRUN" "$B/recognize_digits.fl" -D conv=$([ $nn = conv ] && echo 1 || echo 0) > $nn.log 2> $nn.err ||
        { cat $nn.err; fail "recognize_digits.fl ($nn)"; }
    [ -d recognize_digits_$nn.inference.model ] || fail "recognize_digits ($nn): the inference model"
    awk -f "$ROOT/tests/e2e/book/infer_probs.awk" $nn.log ||
        { cat $nn.log; fail "recognize_digits ($nn): infer() gives 10 probabilities"; }
done

cp "$B/recognize_digits.fl" "$ROOT/tests/e2e/book/digits_learn.fl" .
"$FLRUN" digits_learn.fl -D batches=900 > learn_mlp.log || fail "digits_learn.fl (mlp)"
"$FLRUN" digits_learn.fl -D batches=200 -D conv=1 > learn_conv.log || fail "digits_learn.fl (conv)"
for nn in mlp conv; do
    awk '/^test accuracy / { a = $3 + 0; found = 1 } END { if (!found || a < 0.80) exit 1 }' learn_$nn.log ||
        { cat learn_$nn.log; fail "recognize_digits ($nn): test accuracy 0.80"; }
done
echo "book_fluid: ok ($(cat learn_mlp.log); conv: $(cat learn_conv.log))"
