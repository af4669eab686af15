#!/bin/sh
# Paddle's book label_semantic_roles (examples/fluid/book/label_semantic_roles.fl) learns on the
# synthetic conll05 set (scripts/make_synthetic_datasets.sh): tests/e2e/book/srl_learn.fl imports
# the book script and trains its network (smaller: 64 units, 2 LSTMs), CRF and optimizer for two
# passes, with the frozen word embedding set from conll05.get_embedding()'s file
# (get_tensor().set(numpy.fromfile(...).reshape(...), place)):
#   - the embedding holds the file's vectors and training leaves it as it was (trainable=False);
#   - the CRF cost falls from over 15 (about ln(9) a word) to under half of it;
#   - machine_translation (examples/fluid/book/machine_translation.fl) trains as written for its
#     five batches on the synthetic wmt14 set, and its network (tests/e2e/book/mt_learn.fl, dicts of
#     the set's 43 words) learns: the cost falls from ln(43) by 0.4 or more in two passes.
# Usage: book_nlp.sh FLRUN REPO_ROOT
set -u
FLRUN=$1 ROOT=$2
. "$ROOT/tests/e2e/data_common.sh"
synthetic_datasets
mkdir "$T/run" && cd "$T/run" || fail "cd"
cp "$ROOT/examples/fluid/book/label_semantic_roles.fl" "$ROOT/tests/e2e/book/srl_learn.fl" .
"$FLRUN" srl_learn.fl > srl.log 2> srl.err || { cat srl.err; fail "srl_learn.fl"; }
set_line=$(sed -n 's/^emb set //p' srl.log) after_line=$(sed -n 's/^emb after //p' srl.log)
[ -n "$set_line" ] && [ "$set_line" = "$after_line" ] || { cat srl.log; fail "the frozen embedding changed"; }
# the synthetic emb: 29 words of 32 values in {-1, -0.5, 0.5, 1}
awk '{ exit !($2 > 100 && $2 < 29 * 32) }' <<E || { cat srl.log; fail "the embedding is not the file's"; }
$set_line
E
awk '/^first cost/ { f = $3 } /^last cost/ { l = $3 } END { exit !(f > 15 && l < f / 2) }' srl.log ||
    { cat srl.log; fail "label_semantic_roles: the CRF cost did not fall to under half"; }

# machine_translation as written: five batches of the wmt14 set through the encoder and DynamicRNN
# decoder (30000 words: a cost of ln(30000) = 10.309 at the start), the loop ended by its counter
cp "$ROOT/examples/fluid/book/machine_translation.fl" "$ROOT/tests/e2e/book/mt_learn.fl" .
"$FLRUN" machine_translation.fl > mt.log 2> mt.err || { cat mt.err; fail "machine_translation.fl"; }
awk -F'avg_cost=' '/^pass_id=0 batch=/ { n++; v = substr($2, 2, length($2) - 2) + 0
                                          if ($0 !~ ("batch=" (n - 1) " ") || v < 10.25 || v > 10.37) bad = 1 }
     END { exit !(n == 5 && !bad) }' mt.log || { cat mt.log; fail "machine_translation: five batches at ln(30000)"; }
# ... and its network learns on the synthetic dicts (43 words): from ln(43) = 3.76 by 0.4 or more
"$FLRUN" mt_learn.fl > mtl.log 2> mtl.err || { cat mtl.err; fail "mt_learn.fl"; }
awk '/^first cost/ { f = $3 } /^last cost/ { l = $3 } END { exit !(f > 3.6 && f < 3.9 && l < f - 0.4) }' mtl.log ||
    { cat mtl.log; fail "machine_translation: the cost did not fall by 0.4"; }
echo "book_nlp: ok"
