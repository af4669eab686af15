#!/bin/sh
# The text datasets of paddle.dataset (docs/data.md) on the made-up files of
# scripts/make_synthetic_datasets.sh (FLUIDC_DATA_HOME):
#   - imikolov's build_dict and n-gram readers match check_imikolov.py, which reads the archive as
#     Paddle's imikolov.py does (Python's tarfile, Paddle's algorithm);
#   - the word2vec N-gram network trains on imikolov to the book's criterion (a loss under 5.0)
#     from a first loss near ln(dict_size), within one pass;
#   - imdb's word_dict, build_dict and sequence readers match check_imdb.py (Paddle's algorithm),
#     through DataFeeder's sequence feeds;
#   - understand_sentiment's convolution_net trains on imdb from a test accuracy near chance to
#     over 0.8;
#   - flc show lists a reader's word dict; a missing archive names it (compile time, for
#     build_dict) and a corrupt one says so;
#   - the cases of text_cases.fltab run (tests/conc/run_cases.sh).
# Usage: data_text.sh FLRUN FLC REPO_ROOT
set -u
FLRUN=$1 FLC=$2 ROOT=$3
. "$ROOT/tests/e2e/data_common.sh"
synthetic_datasets

"$FLRUN" "$D/imikolov_grams.fl" > "$T/grams.log" || fail "imikolov_grams.fl"
$PY "$D/check_imikolov.py" "$T/cache/imikolov/simple-examples.tgz" "$T/grams.log" || fail "imikolov"

"$FLRUN" "$D/word2vec_train.fl" > "$T/w2v.log" || { cat "$T/w2v.log"; fail "word2vec_train.fl"; }
awk '/^dict_size/ { n = $2 } /^first/ { first = $2 } /^under 5.0/ { last = $NF }
     END { exit !(n > 300 && first > log(n) - 0.3 && first > 5.6 && last < 5.0) }' "$T/w2v.log" ||
    { cat "$T/w2v.log"; fail "word2vec: the loss did not fall from ln(dict_size) to under 5.0"; }

"$FLRUN" "$D/imdb_seqs.fl" > "$T/imdb.log" || fail "imdb_seqs.fl"
$PY "$D/check_imdb.py" "$T/cache/imdb/aclImdb_v1.tar.gz" "$T/imdb.log" || fail "imdb"

"$FLRUN" "$D/sentiment_train.fl" > "$T/sent.log" || { cat "$T/sent.log"; fail "sentiment_train.fl"; }
awk '/^untrained test accuracy/ { a0 = $4 } /^test accuracy/ { a1 = $3 } /^first/ { c0 = $2 } /^pass 4/ { c4 = $3 }
     END { exit !(a0 < 0.7 && a1 > 0.8 && a1 - a0 > 0.15 && c4 < c0 - 0.2) }' "$T/sent.log" ||
    { cat "$T/sent.log"; fail "understand_sentiment: the test accuracy did not rise from chance to over 0.8"; }

"$FLC" build "$D/word2vec_train.fl" -o "$T/w2v.flp" || fail "flc build word2vec_train.fl"
"$FLC" show "$T/w2v.flp" > "$T/show.txt" || fail "flc show"
grep -q '^reader 0: dataset() imikolov.train 5 word_idx of 311 words data_type 1$' "$T/show.txt" ||
    { sed -n '/== readers/,$p' "$T/show.txt"; fail "flc show: the imikolov reader"; }

# a missing archive: build_dict stops the compilation naming it; a corrupt one is not a tar
mkdir -p "$T/empty" "$T/bad/imikolov"
FLUIDC_DATA_HOME=$T/empty "$FLC" build "$D/word2vec_train.fl" -o "$T/x.flp" 2> "$T/err.txt" && fail "no archive compiled"
grep -qF "word2vec_train.fl:16:13: error: paddle.dataset.imikolov: '$T/empty/imikolov/simple-examples.tgz' is missing: Paddle downloads it (python -c \"import paddle.dataset.imikolov as m; m.fetch()\"), or scripts/make_synthetic_datasets.sh makes made-up files for tests" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the missing archive's message"; }
head -c 3000 /dev/zero | tr '\0' 'x' | gzip > "$T/bad/imikolov/simple-examples.tgz"
FLUIDC_DATA_HOME=$T/bad "$FLRUN" "$T/w2v.flp" > /dev/null 2> "$T/err.txt" && fail "a corrupt archive ran"
grep -qF "paddle.dataset.imikolov: simple-examples.tgz: not a tar archive (a bad header at byte 0)" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the corrupt archive's message"; }

sh "$ROOT/tests/conc/run_cases.sh" "$FLRUN" "$ROOT/tests/e2e/text_cases.fltab" || fail "text_cases.fltab"
echo "data_text: ok"
