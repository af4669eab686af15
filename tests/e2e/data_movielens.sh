#!/bin/sh
# paddle.dataset.movielens (docs/data.md) on the made-up ml-1m.zip of
# scripts/make_synthetic_datasets.sh (FLUIDC_DATA_HOME):
#   - train() and test(), their dicts and maxima match check_movielens.py, which reads the zip as
#     Paddle's movielens.py does (zipfile, numpy.random's split seeded with 0), through DataFeeder's
#     plain and sequence feeds;
#   - a missing zip names it (when the script compiles: max_user_id() reads it), a damaged line
#     names its file and line, a size no deflate stream gives is an error;
#   - the cases of movielens_cases.fltab run (tests/conc/run_cases.sh);
#   - Paddle's book recommender_system as written (examples/fluid/book/recommender_system.fl):
#     it trains until a test batch costs under 6.0, saves its model, and infer() scores the user
#     and movie it names, whose ids (movie 783, title words up to 4140) are the real set's: the
#     test adds unrated movies up to id 3952 with 4240 title words to the made-up zip; and its
#     model learns (tests/e2e/book/rec_learn.fl): the test cost falls by 40% or more in 5 passes.
# Usage: data_movielens.sh FLRUN REPO_ROOT
set -u
FLRUN=$1 ROOT=$2
. "$ROOT/tests/e2e/data_common.sh"
synthetic_datasets numpy

"$FLRUN" "$D/movielens_sums.fl" > "$T/sums.log" || fail "movielens_sums.fl"
$PY "$D/check_movielens.py" "$T/cache/movielens/ml-1m.zip" "$T/sums.log" || fail "movielens against Paddle's reading"

mkdir -p "$T/empty" "$T/bad/movielens" "$T/badx"
FLUIDC_DATA_HOME=$T/empty "$FLRUN" "$D/movielens_sums.fl" > /dev/null 2> "$T/err.txt" && fail "no zip ran"
grep -qF "movielens_sums.fl:9:" "$T/err.txt" && grep -qF "error: paddle.dataset.movielens: '$T/empty/movielens/ml-1m.zip' is missing: Paddle downloads it (python -c \"import paddle.dataset.movielens as m; m.fetch()\"), or scripts/make_synthetic_datasets.sh makes made-up files for tests" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the missing zip's message"; }
(cd "$T/badx" && unzip -q "$T/cache/movielens/ml-1m.zip" && sed -i '3s/::[0-9]*$//' ml-1m/ratings.dat &&
    zip -q "$T/bad/movielens/ml-1m.zip" ml-1m/movies.dat ml-1m/users.dat ml-1m/ratings.dat) || fail "the damaged zip"
FLUIDC_DATA_HOME=$T/bad "$FLRUN" "$D/movielens_sums.fl" > /dev/null 2> "$T/err.txt" && fail "a damaged line ran"
grep -qF "paddle.dataset.movielens: ml-1m.zip: ratings.dat:3: 3 fields separated by '::', expected 4" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the damaged line's message"; }

# a directory whose sizes claim more than deflate can give: an error, not an allocation of them
mkdir -p "$T/huge/movielens"
$PY -c 'import sys; z = bytearray(open(sys.argv[1], "rb").read()); c = z.rfind(b"PK\x01\x02")
z[c + 24:c + 28] = (0xfffffff0).to_bytes(4, "little"); open(sys.argv[2], "wb").write(z)' \
    "$T/cache/movielens/ml-1m.zip" "$T/huge/movielens/ml-1m.zip" || fail "the zip of a huge size"
FLUIDC_DATA_HOME=$T/huge "$FLRUN" "$D/movielens_sums.fl" > /dev/null 2> "$T/err.txt" && fail "a huge size ran"
grep -qF "paddle.dataset.movielens: ml-1m.zip: ml-1m/ratings.dat claims 4294967280 bytes from" "$T/err.txt" ||
    { cat "$T/err.txt"; fail "the huge size's message"; }

sh "$ROOT/tests/conc/run_cases.sh" "$FLRUN" "$ROOT/tests/e2e/movielens_cases.fltab" || fail "movielens_cases.fltab"

# recommender_system as written, on the made-up zip with the real set's ids that infer() names
mkdir -p "$T/rec/movielens" "$T/recx" "$T/run" && (cd "$T/recx" && unzip -q "$T/cache/movielens/ml-1m.zip" &&
    LC_ALL=C awk 'BEGIN { for (m = 3900; m <= 3952; m++) { t = ""
                              for (k = 0; k < 80; k++) t = t sprintf("w%04d ", (m - 3900) * 80 + k)
                              printf "%d::%s(1999)::Drama\n", m, t } }' >> ml-1m/movies.dat &&
    zip -q "$T/rec/movielens/ml-1m.zip" ml-1m/movies.dat ml-1m/users.dat ml-1m/ratings.dat) || fail "the zip of 3952 movies"
cd "$T/run" || fail "cd"
FLUIDC_DATA_HOME=$T/rec "$FLRUN" "$ROOT/examples/fluid/book/recommender_system.fl" > rec.log 2> rec.err ||
    { cat rec.log rec.err; fail "recommender_system.fl"; }
[ -f recommender_system.inference.model/__model__ ] || fail "recommender_system: the model"
# one score: 5 times a cosine
sed -n 's/^inferred score:  \[\[\(.*\)\]\]$/\1/p' rec.log | awk '{ n++; s = $1 } END { exit !(n == 1 && s >= -5 && s <= 5) }' ||
    { cat rec.log; fail "recommender_system: infer()'s score"; }
cp "$ROOT/examples/fluid/book/recommender_system.fl" "$ROOT/tests/e2e/book/rec_learn.fl" .
"$FLRUN" rec_learn.fl > learn.log 2> learn.err || { cat learn.err; fail "rec_learn.fl"; }
awk '/^untrained test cost/ { f = $4 } /^test cost/ { l = $3 } END { exit !(f > 6 && l < 0.6 * f) }' learn.log ||
    { cat learn.log; fail "recommender_system: the test cost did not fall by 40%"; }
echo "data_movielens: ok ($(tr '\n' ' ' < learn.log))"
