#!/bin/sh
# SelectedRows gradients in training: the embedding model of selrows_embed.fl trained with its
# table's gradient sparse (embedding(is_sparse=True)) and dense, step by step; the losses of each
# step must agree within 1e-5 for SGD, Adagrad, Adam (lazy_mode=False) and Momentum, whose sparse
# updates equal the dense ones, also with a padding_idx. Adam lazy_mode=True and FTRL update the
# looked-up rows only, so they must train (finite losses that fall) and lazy Adam must differ
# from dense Adam. Inside a DynamicRNN step the table's gradient stays dense (selrows_drnn.fl).
# Usage: test_selrows_train.sh FLRUN FLC SRCDIR
set -eu
flrun=$1
flc=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fl=$src/selrows_embed.fl
"$flc" show "$fl" -D is_sparse=True | grep -q 'var tbl@GRAD : selected_rows<float32\[2073, 8\]>' ||
    { echo "flc show: tbl@GRAD is not a selected_rows var"; exit 1; }
run() { # opt pad sparse
    "$flrun" "$fl" -D opt=$1 -D pad=$2 -D is_sparse=$3 -q --log "$tmp/$1_$2_$3.csv" ||
        { echo "flrun failed: opt=$1 pad=$2 is_sparse=$3"; exit 1; }
}
compare() { # opt pad: the sparse and dense losses, step by step
    run "$1" "$2" True
    run "$1" "$2" False
    paste -d, "$tmp/$1_$2_True.csv" "$tmp/$1_$2_False.csv" | awk -F, -v opt="$1" -v pad="$2" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == "loss") { if (!a) a = i; else b = i } next }
        $1 == "train" { n++; d = $a - $b; if (d < 0) d = -d; if (d > m) m = d
                        if (d > 1e-5) { printf "%s pad %s step %d: sparse %s, dense %s\n", opt, pad, n, $a, $b; bad = 1 } }
        END { printf "%s pad %s: %d steps, max |sparse - dense| = %g\n", opt, pad, n, m; exit bad || n < 100 }'
}
compare sgd -1
compare sgd 0
compare adagrad -1
compare adam -1
compare momentum -1
# lazy Adam and FTRL: trained, and lazy Adam is not dense Adam
for o in adam_lazy ftrl; do
    run $o -1 True
    awk -F, -v opt=$o 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "loss") c = i; next }
        $1 == "train" { n++; if ($c != $c + 0 || $c > 1e9) bad = 1; if (n <= 10) f += $c; l[n % 10] = $c }
        END { for (k in l) t += l[k]; printf "%s sparse: first 10 steps %.4f, last 10 %.4f\n", opt, f / 10, t / 10
              exit bad || !(t < f) }' "$tmp/${o}_-1_True.csv"
done
if cmp -s "$tmp/adam_lazy_-1_True.csv" "$tmp/adam_-1_True.csv"; then echo "lazy Adam equals Adam"; exit 1; fi
# an is_sparse lookup inside a DynamicRNN step: the update equals the dense one, and moves the table
d=$src/selrows_drnn.fl
"$flrun" "$d" -D is_sparse=True >"$tmp/drnn_sparse.txt" 2>&1
"$flrun" "$d" -D is_sparse=False >"$tmp/drnn_dense.txt" 2>&1
cmp "$tmp/drnn_sparse.txt" "$tmp/drnn_dense.txt" || { echo "DynamicRNN: sparse and dense updates differ"; exit 1; }
# the looked-up rows (1, 2, 3, 5) moved, the others (0, 4, 6, 7) did not
awk '$1 == "before" || $1 == "after" { for (i = 6; i <= NF; i++) v[$1, i - 6] = $i; n = NF - 5 }
     END { if (n != 16) { print "DynamicRNN: no table printed"; exit 1 }
           for (k = 0; k < 16; k++) { row = int(k / 2); moved = v["before", k] != v["after", k]
               want = (row == 1 || row == 2 || row == 3 || row == 5)
               if (moved != want) { printf "DynamicRNN: table row %d %s\n", row, want ? "did not move" : "moved"; bad = 1 } }
           exit bad }' "$tmp/drnn_sparse.txt" || { cat "$tmp/drnn_sparse.txt"; exit 1; }
echo ok
