#!/bin/sh
# The text datasets of Paddle's book's NLP chapters (docs/data.md) on the made-up files of
# scripts/make_synthetic_datasets.sh (FLUIDC_DATA_HOME):
#   - conll05's get_dict, get_embedding and test() match check_conll05.py, which reads the files
#     as Paddle's conll05.py does (tarfile, gzip, Paddle's algorithm), through DataFeeder's
#     sequence feeds;
#   - wmt14's and wmt16's get_dict and readers match check_wmt.py (Paddle's algorithms), and a
#     wmt16 LANG_SIZE.dict in the cache is read as Paddle reads it;
#   - the errors: a missing file, arguments the modules refuse, a damaged props file.
# Usage: data_nlp.sh FLRUN FLC REPO_ROOT
set -u
FLRUN=$1 FLC=$2 ROOT=$3
. "$ROOT/tests/e2e/data_common.sh"
synthetic_datasets

"$FLRUN" "$D/conll05_seqs.fl" > "$T/conll05.log" || fail "conll05_seqs.fl"
$PY "$D/check_conll05.py" "$T/cache/conll05st" "$T/conll05.log" || fail "conll05"
"$FLRUN" "$D/wmt_seqs.fl" > "$T/wmt.log" || fail "wmt_seqs.fl"
$PY "$D/check_wmt.py" "$T/cache" "$T/wmt.log" || fail "wmt14, wmt16"

# flc show lists wmt16's arguments
"$FLC" build "$D/wmt_seqs.fl" -o "$T/wmt.flp" || fail "flc build wmt_seqs.fl"
"$FLC" show "$T/wmt.flp" > "$T/show.txt" || fail "flc show"
grep -q '^reader [0-9]*: dataset() wmt16.validation 20 25 de$' "$T/show.txt" ||
    { sed -n '/== readers/,$p' "$T/show.txt"; fail "flc show: the wmt16 reader"; }

# a wmt16 dict of the cache with dict_size lines is read (ids by line), one of other lengths not
cat > "$T/dict.fl" <<'FL'
import paddle
en = paddle.dataset.wmt16.get_dict('en', 5)
print('e0 %d e9 %s' % (en['e0'], 'e9' in en))
FL
printf '<s>\n<e>\n<unk>\ne9\ne0\n' > "$T/cache/wmt16/en_5.dict"
"$FLRUN" "$T/dict.fl" > "$T/dict.log" 2>&1 && grep -qx 'e0 4 e9 True' "$T/dict.log" ||
    { cat "$T/dict.log"; fail "wmt16: the cache's en_5.dict"; }
printf '<s>\n<e>\n<unk>\ne9\n' > "$T/cache/wmt16/en_5.dict"
"$FLRUN" "$T/dict.fl" > "$T/dict.log" 2>&1 && grep -qx 'e0 3 e9 False' "$T/dict.log" ||
    { cat "$T/dict.log"; fail "wmt16: a dict file of 4 lines for 5 words is built anew"; }

# errors, located at the call
err() { # NAME TEXT WANT: the script TEXT fails to compile with WANT in its message
    printf '%s\n' "$2" > "$T/$1.fl"
    "$FLC" build "$T/$1.fl" -o "$T/x.flp" 2> "$T/err.txt" && fail "$1 compiled"
    grep -qF -- "$3" "$T/err.txt" || { cat "$T/err.txt"; fail "$1: want: $3"; }
}
err lang "import paddle
r = paddle.dataset.wmt16.train(10, 10, 'fr')" "lang.fl:2:5: error: paddle.dataset.wmt16.train: src_lang is 'fr'; it is 'en' (English) or 'de' (German) (ValueError in Paddle)"
err size "import paddle
r = paddle.dataset.wmt14.test(0)" "size.fl:2:5: error: paddle.dataset.wmt14.test(dict_size): dict_size is 0; it must be at least 1"
err conll_train "import paddle
r = paddle.dataset.conll05.train()" "conll_train.fl:2:5: error: paddle.dataset.conll05 has no reader 'train' (it has test)"
err conll_args "import paddle
r = paddle.dataset.conll05.test(5)" "conll_args.fl:2:5: error: test() takes 0 positional arguments but 1 was given"
mkdir -p "$T/empty"
FLUIDC_DATA_HOME=$T/empty err missing "import paddle.dataset.conll05 as conll05
e = conll05.get_embedding()" "missing.fl:2:5: error: paddle.dataset.conll05: '$T/empty/conll05st/emb' is missing: Paddle downloads it (python -c \"import paddle.dataset.conll05 as m; m.fetch()\"), or scripts/make_synthetic_datasets.sh makes made-up files for tests"

# a props file with a label Paddle's reader does not know stops the run at its line
mkdir -p "$T/bad/conll05st/conll05st-release/test.wsj/words" "$T/bad/conll05st/conll05st-release/test.wsj/props"
cp "$T/cache/conll05st/"*.txt "$T/cache/conll05st/emb" "$T/bad/conll05st/"
printf 'the\ndog\nsaw\n\n' | gzip -n > "$T/bad/conll05st/conll05st-release/test.wsj/words/test.wsj.words.gz"
printf -- '- (A0*\n- *)\nsaw [V]\n\n' | gzip -n > "$T/bad/conll05st/conll05st-release/test.wsj/props/test.wsj.props.gz"
(cd "$T/bad/conll05st" && tar -czf conll05st-tests.tar.gz conll05st-release)
FLUIDC_DATA_HOME=$T/bad "$FLRUN" "$D/conll05_seqs.fl" > /dev/null 2> "$T/err.txt" && fail "a bad props file ran"
grep -qF "paddle.dataset.conll05: conll05st-tests.tar.gz: test.wsj.props.gz:3: unexpected label '[V]' (RuntimeError in Paddle's reader)" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the bad label's message"; }
echo "data_nlp: ok"
