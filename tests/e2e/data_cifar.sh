#!/bin/sh
# paddle.dataset.cifar (docs/data.md) on the made-up archives of scripts/make_synthetic_datasets.sh
# (FLUIDC_DATA_HOME), and Paddle's book image_classification on them:
#   - the four readers match check_cifar.py, which reads the archives as Paddle's cifar.py does
#     (tarfile, pickle.load(encoding='bytes'), numpy);
#   - the same archives with their pickles written again by Python 3 at protocols 0, 2, 4 and 5
#     (numpy's own reduce of the arrays: _codecs.encode, BINBYTES, frames, _frombuffer) read the
#     same;
#   - a missing archive names it, a truncated pickle says where it ends;
#   - examples/fluid/book/image_classification.fl as written, resnet and vgg: trains, returns out
#     of its runtime loops at the test's bar, saves its inference model, and infer() predicts a
#     random image with the model and its InferenceTranspiler copy (asserted equal to 6 decimals
#     when the driver runs): 10 probabilities that sum to 1;
#   - it learns: the book's resnet_cifar10 (depth 8) with its data, reader and optimizer goes from
#     a test accuracy near chance (under 0.3) to over 0.9 in two passes (tests/e2e/book/
#     cifar_learn.fl);
#   - the cases of cifar_cases.fltab run (tests/conc/run_cases.sh).
# Usage: data_cifar.sh FLRUN REPO_ROOT
set -u
FLRUN=$1 ROOT=$2
. "$ROOT/tests/e2e/data_common.sh"
synthetic_datasets numpy

"$FLRUN" "$D/cifar_sums.fl" > "$T/sums.log" || fail "cifar_sums.fl"
$PY "$D/check_cifar.py" "$T/cache/cifar" "$T/sums.log" || fail "cifar against Paddle's reading"
for p in 0 2 4 5; do
    mkdir -p "$T/p$p/cifar"
    $PY "$D/check_cifar.py" --repickle "$T/cache/cifar" "$T/p$p/cifar" $p || fail "repickle at protocol $p"
    FLUIDC_DATA_HOME=$T/p$p "$FLRUN" "$D/cifar_sums.fl" > "$T/p$p.log" || fail "cifar_sums.fl (protocol $p)"
    cmp -s "$T/sums.log" "$T/p$p.log" || fail "the pickles of protocol $p read otherwise"
done

mkdir -p "$T/empty" "$T/bad/cifar" "$T/badx/cifar-10-batches-py"
FLUIDC_DATA_HOME=$T/empty "$FLRUN" "$D/cifar_sums.fl" > /dev/null 2> "$T/err.txt" && fail "no archive ran"
grep -qF "paddle.dataset.cifar: '$T/empty/cifar/cifar-10-python.tar.gz' is missing: Paddle downloads it (python -c \"import paddle.dataset.cifar as m; m.fetch()\"), or scripts/make_synthetic_datasets.sh makes made-up files for tests" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the missing archive's message"; }
(cd "$T/badx" && tar xzf "$T/cache/cifar/cifar-10-python.tar.gz" &&
    head -c 5000 cifar-10-batches-py/data_batch_1 > x && mv x cifar-10-batches-py/data_batch_1 &&
    tar czf "$T/bad/cifar/cifar-10-python.tar.gz" cifar-10-batches-py) || fail "the truncated archive"
FLUIDC_DATA_HOME=$T/bad "$FLRUN" "$D/cifar_sums.fl" > /dev/null 2> "$T/err.txt" && fail "a truncated pickle ran"
grep -qF "paddle.dataset.cifar: cifar-10-python.tar.gz: cifar-10-batches-py/data_batch_1: not a pickle Python reads (a string past the end at byte 160)" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the truncated pickle's message"; }

mkdir "$T/run" && cd "$T/run" || fail "cd"
B=$ROOT/examples/fluid/book
for net in resnet vgg; do
    "$FLRUN" "$B/image_classification.fl" -D vgg=$([ $net = vgg ] && echo 1 || echo 0) > $net.log 2> $net.err ||
        { cat $net.err; fail "image_classification.fl ($net)"; }
    grep -q "^train $net" $net.log && grep -q '^PassID 0, BatchID .*, Test Loss .*, Acc ' $net.log ||
        { cat $net.log; fail "image_classification ($net): the training's lines"; }
    [ -f image_classification_$net.inference.model/__model__ ] || fail "image_classification ($net): the inference model"
    awk -f "$ROOT/tests/e2e/book/infer_probs.awk" $net.log ||
        { cat $net.log; fail "image_classification ($net): infer() gives 10 probabilities"; }
done

cp "$B/image_classification.fl" "$ROOT/tests/e2e/book/cifar_learn.fl" .
"$FLRUN" cifar_learn.fl > learn.log || { cat learn.log; fail "cifar_learn.fl"; }
awk '/^untrained test accuracy/ { a0 = $4 } /^test accuracy/ { a1 = $3 }
     END { exit !(a0 < 0.3 && a1 > 0.9) }' learn.log ||
    { cat learn.log; fail "image_classification: the test accuracy did not rise from chance to over 0.9"; }

sh "$ROOT/tests/conc/run_cases.sh" "$FLRUN" "$ROOT/tests/e2e/cifar_cases.fltab" || fail "cifar_cases.fltab"
echo "data_cifar: ok ($(tr '\n' ' ' < learn.log))"
