#!/bin/sh
# Every program of examples/fluid/ compiles (with each variant its flags select), and the ones small
# enough train a few steps with a falling loss: the mean training loss of the last epoch is below
# the first's ("train"), or the test loss falls from epoch to epoch ("test"). The data sets are cut
# to a few rows in a temporary --data-dir, so the whole test runs in well under a minute.
# Usage: fluid_examples.sh FLC FLRUN REPO_ROOT
set -u
FLC=$1 FLRUN=$2 ROOT=$3
EX=$ROOT/examples/fluid
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
SMALL_TR="-D d_model=32 -D d_inner_hid=64 -D d_key=8 -D d_value=8 -D n_layer=2 -D vocab=64"

# 1. compile: every file, and the variants of its flags
for f in "$EX"/*.fl; do
    "$FLC" check "$f" || { echo "FAIL: $f does not compile"; fail=1; }
done
for loss in hsigmoid hsigmoid_default; do
    "$FLC" check -D loss=$loss "$EX/skip_gram.fl" || { echo "FAIL: skip_gram $loss does not compile"; fail=1; }
done
"$FLC" check -D net=vgg "$EX/image_classification.fl" || { echo "FAIL: vgg does not compile"; fail=1; }
"$FLC" check $SMALL_TR "$EX/dist_transformer.fl" || { echo "FAIL: small transformer does not compile"; fail=1; }
for net in dyn_rnn stacked_lstm; do
    "$FLC" check -D net=$net "$EX/understand_sentiment.fl" || { echo "FAIL: sentiment $net does not compile"; fail=1; }
done
"$FLC" check -D decode=1 "$EX/rnn_search.fl" || { echo "FAIL: rnn_search's decoding does not compile"; fail=1; }
"$FLC" check -D dropout=0.2 "$EX/ptb_lm.fl" || { echo "FAIL: ptb_lm with dropout does not compile"; fail=1; }

# 2. the data, cut: DIR/fluid is where the programs' '../data/...' paths are resolved from
mkdir -p "$T/data" "$T/fluid"
cut_csv() { head -n "$2" "$ROOT/examples/data/$1" > "$T/data/$1"; }
cut_gz() { gzip -dc "$ROOT/examples/data/$1" | head -n "$2" | gzip > "$T/data/$1"; }
cut_gz digits.csv.gz 600
cut_csv imikolov_5gram.csv 400
cut_gz ctr_seq.csv.gz 400
cut_gz cifar_synth.csv.gz 48
cut_gz wmt_synth.csv.gz 64
cut_gz sentiment.csv.gz 1000
cut_gz movielens.csv.gz 2000
cut_gz srl.csv.gz 200
cut_gz simnet.csv.gz 600
cut_gz mt.csv.gz 300
cut_gz skipgram.csv.gz 2000
cut_gz det_boxes.csv.gz 64

# 3. train: NAME HOW MARGIN OPTIONS... HOW says what must fall by at least MARGIN (an absolute
# loss): "train", the mean training loss from the first epoch to the last; "test", the test loss
# from the first evaluation to the last (and no evaluation above the one before it by more than
# MARGIN); "runs" only checks that it trains. Why a margin: a kernel's rounding (OpenBLAS's
# Haswell, SkylakeX or Prescott kernels, oneDNN's, the plain loops) moves these losses by about
# 1e-6 of their value (the logs agree to 6 digits under every kernel), so a model that learns
# nothing can still show a fall of that size; each MARGIN is far above it and at most half the
# smallest fall measured under all of those kernels (docs/kernels.md, "Same results on every CPU").
train() {
    name=$1 how=$2 margin=$3
    shift 3
    log=$T/$name.$how.csv
    if ! "$FLRUN" "$EX/$name.fl" --data-dir "$T/fluid" -q --log "$log" "$@"; then
        echo "FAIL: $name $*: flrun failed"
        fail=1
        return
    fi
    verdict=$(awk -F, -v how="$how" -v m="$margin" '
        NR == 1 { next }
        $5 != $5 + 0 || $5 ~ /nan|inf/ { bad = 1 }
        $1 == "train" { s[$3] += $5; n[$3]++; if (!first) first = $3; last = $3 }
        $1 == "test" { t[++nt] = $5 }
        END {
            if (bad) { print "a loss is not a number"; exit }
            if (how == "train") {
                a = s[first] / n[first]; b = s[last] / n[last]
                print (b <= a - m ? "ok" : "FAIL") ": mean train loss " a " (epoch " first ") -> " b " (epoch " last "), fall " a - b " (margin " m ")"
            } else if (how == "test") {
                if (nt < 2) { print "FAIL: fewer than 2 test rows"; exit }
                for (i = 2; i <= nt; i++) if (t[i] > t[i - 1] + m) { print "FAIL: test loss " t[i - 1] " -> " t[i] " rose by more than " m; exit }
                print (t[nt] <= t[1] - m ? "ok" : "FAIL") ": test loss " t[1] " -> " t[nt] ", fall " t[1] - t[nt] " (margin " m ")"
            } else print "ok: runs"
        }' "$log")
    case $verdict in
    ok*) echo "ok: $name $how $*: ${verdict#ok: }" ;;
    *) echo "FAIL: $name $*: ${verdict#FAIL: }"; fail=1 ;;
    esac
}
train recognize_digits_mlp test 0.3 --epochs 3
train recognize_digits_conv test 0.5 --epochs 3
train word2vec train 0.01 --epochs 8
train dist_word2vec train 0.04 --epochs 2
train dist_mnist train 0.012 --epochs 6
train dist_ctr test 0.01 --epochs 3
train image_classification train 0.9 --epochs 2 --batch-size 12
# the transformer: Fluid's test model at a small size, its learning rate's warm-up cut from 4000
# steps to 100 so that 5 epochs of 6 steps move it (the loss starts at ln 64)
train dist_transformer test 0.025 --epochs 5 --batch-size 8 $SMALL_TR -D warmup_steps=100
# sequences: the conv net beats chance clearly (accuracy checked below), the LSTM nets train
train understand_sentiment test 0.02 --epochs 3 --batch-size 32
# figure WHAT FIGURES CONDITION: ok when the awk CONDITION on the figures v[1], v[2]... holds
figure() {
    if awk -v f="$2" "BEGIN { n = split(f, v, \" \"); exit !(n > 0 && ($3)) }"; then
        echo "ok: $1 $2"
    else
        echo "FAIL: $1 '$2'"
        fail=1
    fi
}
acc=$(awk -F, '$1 == "test" { a = $6 } END { print a }' "$T/understand_sentiment.test.csv")
figure "understand_sentiment conv test accuracy (at least 0.65; 0.5 is chance)" "$acc" "v[1] + 0 >= 0.65"
train understand_sentiment train 0.04 --epochs 2 --batch-size 64 -D net=stacked_lstm -D epochs=2
train recommender_system train 0.2 --epochs 4 --batch-size 32
train label_semantic_roles train 2 --epochs 2 -D hidden_dim=16 -D depth=2
train dist_simnet_bow test 0.0025 --epochs 3 --batch-size 32 -D xavier=True
train understand_sentiment train 0.006 --epochs 2 --batch-size 64 -D net=dyn_rnn -D epochs=2
train rnn_encoder_decoder train 0.15 --epochs 3 -D lr=0.02
train machine_translation train 0.05 --epochs 3 --batch-size 16 -D lr=0.05
# RNNsearch (attention, contrib.decoder's TrainingDecoder): a fall of 0.36 over 3 epochs measured
train rnn_search train 0.15 --epochs 3
# the PTB LSTM language model (StaticRNN) on the 5-gram windows: a fall of 3.03 over 3 epochs
train ptb_lm train 1.0 --epochs 3
# word2vec's skip-gram with its three losses over the 2073 words (falls of 0.67, 3.6 and 4.1 over
# 6 epochs measured)
train skip_gram train 0.3 --epochs 6
train skip_gram train 1.5 --epochs 6 -D loss=hsigmoid
train skip_gram train 1.5 --epochs 6 -D loss=hsigmoid_default
# detection on the 64 images of coloured squares (docs/detection.md), 4 batches an epoch, about 3 s
# each. MobileNet-SSD, 12 epochs: the mean loss falls from 11.39 to 2.59 (8.797 under every
# kernel), and the accumulated mAP (metrics.DetectionMAP over every batch of the run, on the
# training images) from 0.019 after the first batch to 0.1624-0.1625 at the end: at least 0.08.
# YOLOv3, 10 epochs: from 636.8 to 121.4-121.8 (a fall of 515.0 to 515.3). The Faster R-CNN RPN,
# 10 epochs: from 0.752 to 0.0556 (0.696)
train ssd_mobilenet train 3.5
maps=$(awk -F, 'NR == 2 { first = $7 } NR > 1 { last = $7 } END { print first, last }' "$T/ssd_mobilenet.train.csv")
figure "ssd_mobilenet accumulated mAP (first batch below 0.04, all batches at least 0.08)" "$maps" \
    "v[1] + 0 < 0.04 && v[2] + 0 >= 0.08"
train yolov3 train 150
train faster_rcnn_rpn train 0.2

# dist_se_resnext has no reader (fill_constant inputs): each flrun is one step; chain two by a
# checkpoint and compare the losses Print shows: the second below the first by 0.05 (about 0.1
# measured under every kernel)
se() { "$FLRUN" "$EX/dist_se_resnext.fl" -D image_size=32 "$@" 2>&1 | sed -n 's/^loss .*: //p'; }
l1=$(se --save "$T/se") && l2=$(se --load "$T/se" --save "$T/se")
if awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(a != "" && b != "" && b + 0 <= a - 0.05) }'; then
    echo "ok: dist_se_resnext $l1 -> $l2"
else
    echo "FAIL: dist_se_resnext loss '$l1' -> '$l2'"
    fail=1
fi
exit $fail
