#!/bin/sh
# The models of examples/fluid/models/ (Fluid programs of Paddle's models repository, written as
# Fluid writes them): each compiles with every variant its flags select, and trains on its small
# data with a stated learning margin. Why a margin: a kernel's rounding (OpenBLAS's Haswell,
# SkylakeX or Prescott kernels, oneDNN's, the plain loops) moves these losses by about 1e-6 of
# their value, so a model that learns nothing can still show a fall of that size; each margin is
# far above it and at most half the smallest fall measured under all of those kernels
# (scripts/test_kernels.sh -R e2e_fluid_models).
# Usage: fluid_models.sh FLC FLRUN REPO_ROOT
set -u
FLC=$1 FLRUN=$2 ROOT=$3
M=$ROOT/examples/fluid/models
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# fall NAME LOG MARGIN: the mean training loss of the log's last epoch is below its first's by at
# least MARGIN (the log: flrun --log's CSV, phase,epoch... with the loss in column 5)
fall() {
    v=$(awk -F, -v m="$3" '
        NR == 1 { next }
        $5 != $5 + 0 || $5 ~ /nan|inf/ { bad = 1 }
        $1 == "train" { s[$3] += $5; n[$3]++; if (first == "") first = $3; last = $3 }
        END {
            if (bad || first == "") { print "FAIL: no loss, or a loss that is not a number"; exit }
            a = s[first] / n[first]; b = s[last] / n[last]
            print (b <= a - m ? "ok" : "FAIL") ": mean train loss " a " (epoch " first ") -> " b " (epoch " last "), fall " a - b " (margin " m ")"
        }' "$2")
    case $v in
    ok*) echo "ok: $1: ${v#ok: }" ;;
    *) bad "$1: ${v#FAIL: }" ;;
    esac
}
# train NAME MARGIN FLRUN-ARGS...: runs examples/fluid/models/NAME.fl and checks its fall
train() {
    name=$1 margin=$2
    shift 2
    log=$T/$name$(echo "$*" | tr -c 'a-z0-9' _).csv
    if "$FLRUN" "$M/$name.fl" -q --log "$log" "$@"; then
        fall "$name $*" "$log" "$margin"
    else
        bad "$name $*: flrun failed"
    fi
}
# same NAME FLAGS...: the losses of NAME with -D is_sparse=True and False agree step by step within
# 1e-5 (a sparse gradient holds the dense one's nonzero rows: SGD applies the same update)
same() {
    name=$1
    shift
    "$FLRUN" "$M/$name.fl" -q --log "$T/s.csv" -D is_sparse=True "$@" &&
        "$FLRUN" "$M/$name.fl" -q --log "$T/d.csv" -D is_sparse=False "$@" || { bad "$name $*: flrun failed"; return; }
    paste -d, "$T/s.csv" "$T/d.csv" | awk -F, -v what="$name $*" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == "loss") { if (!a) a = i; else b = i } next }
        $1 == "train" { n++; d = $a - $b; if (d < 0) d = -d; if (d > m) m = d }
        END { ok = n >= 50 && m <= 1e-5
              printf "%s: %s sparse and dense, %d steps, max |difference| %g\n", ok ? "ok" : "FAIL", what, n, m
              exit !ok }' || fail=1
}

# 1. skip-gram (word2vec with nce and hsigmoid). The tables' gradients are SelectedRows with
# is_sparse; sparse and dense training follow one curve. Falls over 4 epochs at lr 10: nce 0.44,
# hsigmoid 3.2, both 3.7 (measured)
for loss in nce hsigmoid both; do
    "$FLC" check -D loss=$loss "$M/skip_gram.fl" || bad "skip_gram -D loss=$loss does not compile"
done
"$FLC" show -D loss=both "$M/skip_gram.fl" >"$T/sg.txt" || bad "flc show skip_gram"
for v in nce_w embedding_0.w_0 hierarchical_sigmoid_0.w_0; do
    grep -q "var $v@GRAD : selected_rows<" "$T/sg.txt" || bad "skip_gram: $v@GRAD is not a SelectedRows"
done
grep -q "var nce_b@GRAD : float32" "$T/sg.txt" || bad "skip_gram: nce_b@GRAD is not dense"
same skip_gram -D loss=both --epochs 1
train skip_gram 0.2 --epochs 4
train skip_gram 1.5 --epochs 4 -D loss=hsigmoid

# 2. DCGAN on MNIST (Fashion-MNIST from Debian's dataset-fashion-mnist through
# scripts/make_dataset_cache.sh): D and G alternate in the script's own loop, G twice a batch; G's
# minimize takes parameter_list from the clone of G's program, so it trains G's parameters alone
# and D learns to tell the real images from G's. At a small size (8 and 16 filters, fc 64 and 32,
# batches of 32), 81 batches: D's loss (real called real, G's images called fake) falls from
# 1.4199 to 1.380-1.383 (a fall of 0.036-0.042 under every kernel): at least 0.015; G's loss
# meanwhile rises a little as D wins the first rounds. D's last layer is a sigmoid whose output
# the loss reads as a logit, as the model writes it, so the losses stay within (0.31, 0.70) per
# term.
"$FLC" check "$M/dcgan.fl" || bad "dcgan does not compile"
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    sh "$ROOT/scripts/make_dataset_cache.sh" "$T/cache" >/dev/null || bad "make_dataset_cache.sh"
    if FLUIDC_DATA_HOME=$T/cache "$FLRUN" "$M/dcgan.fl" -D gf_dim=8 -D df_dim=8 -D gfc_dim=64 -D dfc_dim=32 \
        -D batch_size=32 -D epoch=1 -D max_batches=81 >"$T/gan.txt" 2>&1; then
        awk '/^Epoch ID=/ { n++; split($0, f, "D-Loss="); v = f[2] + 0; if (n == 1) a = v; b = v }
            END { ok = n == 9 && b <= a - 0.015
                  printf "%s: dcgan: %d reports, D loss %g -> %g (fall %g, margin 0.015)\n", ok ? "ok" : "FAIL", n, a, b, a - b
                  exit !ok }' "$T/gan.txt" || { cat "$T/gan.txt"; fail=1; }
    else
        cat "$T/gan.txt"
        bad "dcgan: flrun failed"
    fi
else
    echo "skipped: dcgan's training (Debian's dataset-fashion-mnist is not installed)"
fi

# 3. NER: word and mark embeddings, two stacks of dynamic_lstm joined by fc(param_attr=[...]),
# linear_chain_crf and crf_decoding sharing "crfw", chunk_eval. At hidden_dim 32 on the 540
# training sentences of ner.csv.gz the mean CRF cost falls from 19.10 to 16.25 in 4 epochs
# (2.85 under every kernel): at least 1.0
"$FLC" check "$M/ner.fl" || bad "ner does not compile"
train ner 1.0 --epochs 4 -D hidden_dim=32

# 4. MobileNetV2 (inverted residuals, depthwise convs, relu6, batch norm; Momentum, L2 decay,
# cosine_decay) at scale 0.25 on the 230 training images of cifar_synth.csv.gz, 6 epochs of 10
# batches: the mean loss falls from about 2.66 by 0.23 to 0.59 depending on the kernel (the batch
# norms of the 1x1 maps amplify a kernel's rounding within a few steps, so each kernel follows its
# own curve: falls 0.59 oneDNN, 0.32 plain loops, 0.54 Prescott, 0.23 Haswell measured): at least
# 0.1. The default size compiles.
"$FLC" check "$M/mobilenet_v2.fl" || bad "mobilenet_v2 does not compile"
train mobilenet_v2 0.1 -D scale=0.25

# 5. OCR CRNN-CTC: convs with batch norm, im2sequence, two dynamic_gru, warpctc, the greedy
# decoding and its edit distance, Momentum with L2 decay. At rnn_hidden_size 32 on the 360
# training lines of ocr.csv.gz the batch's summed CTC cost falls from 191.36 to 144.53 in 3
# epochs (46.8 under every kernel): at least 20 (the header says why it reads no character yet)
"$FLC" check "$M/ocr_crnn_ctc.fl" || bad "ocr_crnn_ctc does not compile"
train ocr_crnn_ctc 20 --epochs 3 -D rnn_hidden_size=32

exit $fail
