#!/bin/sh
# Paddle's book label_semantic_roles (examples/fluid/book/label_semantic_roles.fl) on the
# synthetic conll05 set (scripts/make_synthetic_datasets.sh):
#   - the whole script as written: its load_parameter (open(file, 'rb'), f.read(16),
#     np.fromfile(f, ...)) sets the frozen embedding, training stops at its criterion and saves the
#     model, and infer() runs it on sequences of 3, 4 and 2 words: their lengths, fetched with the
#     result ([[3, 4, 2]]), and its shape (9 rows of the 9 labels' scores);
#   - it learns: tests/e2e/book/srl_learn.fl imports the book script and trains its network
#     (smaller: 64 units, 2 LSTMs), CRF and optimizer for two passes, with the frozen word embedding
#     set by the book's load_parameter from conll05.get_embedding()'s file: the embedding holds the
#     file's vectors (numpy.fromfile(file, offset=16)'s sums) and training leaves it as it was
#     (trainable=False); the CRF cost falls from over 15 (about ln(9) a word) to under half of it;
#   - machine_translation (examples/fluid/book/machine_translation.fl) trains as written for its
#     five batches on the synthetic wmt14 set, and its network (tests/e2e/book/mt_learn.fl, dicts of
#     the set's 43 words) learns: the cost falls from ln(43) by 0.4 or more in two passes; its
#     decode_main() as written (-D decode=1) beam-searches the first batch's two sentences and prints
#     the translations' lengths: two sentences of at most 2 beams, each of at most max_length + 1
#     words (the start word included).
# Usage: book_nlp.sh FLRUN REPO_ROOT
set -u
FLRUN=$1 ROOT=$2
. "$ROOT/tests/e2e/data_common.sh"
synthetic_datasets
mkdir "$T/run" && cd "$T/run" || fail "cd"
# a file read as load_parameter reads it: f.read(n), f.tell(), f.seek(), np.fromfile(f, ...) from
# the position (and its offset from there), the position after the values read; a position past
# the end is the read_file op's error, naming the file
$PY -c 'import struct, sys; open(sys.argv[1], "wb").write(b"HEADER!!" + struct.pack("<6f2qd", 1, 2, 3, 4, 5, 6, 7, 8, 9.5))' values.bin ||
    fail "values.bin"
cat > values.fl <<'EOF'
import numpy as np


def load(file_name, h, w):
    with open(file_name, 'rb') as f:
        start = f.tell()
        f.read(8)  # skip header.
        head = f.tell()
        v = np.fromfile(f, dtype=np.float32, count=4, offset=8)
        after = f.tell()
        ints = np.fromfile(f, dtype=np.int64, count=2)
        f.seek(-8, 1)
        last = np.fromfile(f, dtype=np.float64, offset=8)
        print(v.reshape(h, w), start, head, after, f.seek(40))
        print(ints, last)


load('values.bin', 2, 2)
EOF
printf '[[3. 4.]\n [5. 6.]] 0 8 32 40\n[7 8] [9.5]\n' > values.want
"$FLRUN" values.fl > values.out 2> values.err && cmp -s values.out values.want ||
    { cat values.err; diff values.want values.out; fail "values.fl: a file's values as np.fromfile(f) reads them"; }
sed -i 's/f.read(8)  # skip header./f.read(100)/' values.fl
"$FLRUN" values.fl > /dev/null 2> values.err && fail "values.fl read past the end"
grep -qF "(values.fl:9:13): 'values.bin' holds 56 bytes: the offset 108 is past its end" values.err || { cat values.err; fail "the read past the end's message"; }

# label_semantic_roles as written: train(), then infer() on the saved model
"$FLRUN" "$ROOT/examples/fluid/book/label_semantic_roles.fl" > book.log 2> book.err || { cat book.log book.err; fail "label_semantic_roles.fl"; }
[ -f label_semantic_roles.inference.model/__model__ ] || fail "label_semantic_roles: the model"
grep -q '^avg_cost:\[[0-9.]*\]$' book.log && grep -qx '\[\[3, 4, 2\]\]' book.log &&
    grep -Eqx 'Inference Shape:  (\(9, 9\)|\[9 9\])' book.log || { cat book.log; fail "label_semantic_roles: infer()'s lengths and shape"; }
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
# decode_main() as written: the lengths of the first batch's translations, Python's list of lists
"$FLRUN" machine_translation.fl -D decode=1 > dec.log 2> dec.err || { cat dec.err; fail "machine_translation.fl -D decode=1"; }
tr -d '[],' < dec.log | awk 'NR == 1 { ok = $1 >= 1 && $1 <= 2 && $2 >= 1 && $2 <= 2 && NF == 2 + $1 + $2
                                        for (i = 3; i <= NF; i++) ok = ok && $i >= 2 && $i <= 9 }
                             END { exit !(NR == 1 && ok) }' ||
    { cat dec.log; fail "machine_translation: decode_main()'s lengths"; }
grep -Eqx '\[\[[12], [12]\], \[[0-9](, [0-9])*\]\]' dec.log || { cat dec.log; fail "machine_translation: the lengths as Python prints them"; }
# ... and its network learns on the synthetic dicts (43 words): from ln(43) = 3.76 by 0.4 or more
"$FLRUN" mt_learn.fl > mtl.log 2> mtl.err || { cat mtl.err; fail "mt_learn.fl"; }
awk '/^first cost/ { f = $3 } /^last cost/ { l = $3 } END { exit !(f > 3.6 && f < 3.9 && l < f - 0.4) }' mtl.log ||
    { cat mtl.log; fail "machine_translation: the cost did not fall by 0.4"; }
echo "book_nlp: ok"
