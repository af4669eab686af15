#!/bin/sh
# fluid.contrib.decoder (docs/sequences.md, "Decoders") against the loops it stands for, on
# tests/e2e/decoder_mt.fl (machine_translation.fl's model with its decoder written with
# StateCell, TrainingDecoder and BeamSearchDecoder):
#   - training with TrainingDecoder logs the losses of the same decoder written as a DynamicRNN
#     by hand (-D by_hand=1), step for step within 1e-6 of their value, and they fall by at least
#     0.3 from the first epoch's mean to the third's (about 0.77 is measured: the margin is far
#     above any rounding, at most half the fall);
#   - BeamSearchDecoder.decode() decodes the sources as machine_translation.fl -D decode=1 does
#     with its While loop over tensor arrays (the same ids and offsets, from the same startup
#     parameters).
# usage: decoder_mt.sh FLRUN
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd) FLRUN=$1 T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/fluid" "$T/data"
# the first rows of the data ('../data/...' from the programs' --data-dir)
for cut in mt:300 mt_decode:24; do
    gzip -dc "$ROOT/examples/data/${cut%:*}.csv.gz" | head -n "${cut#*:}" | gzip > "$T/data/${cut%:*}.csv.gz"
done
run() { "$FLRUN" "$@" --data-dir "$T/fluid" -q; }

run "$ROOT/tests/e2e/decoder_mt.fl" --log "$T/dec.csv"
run "$ROOT/tests/e2e/decoder_mt.fl" --log "$T/hand.csv" -D by_hand=1
paste -d, "$T/dec.csv" "$T/hand.csv" | awk -F, '
    NR == 1 { next }
    { d = $5 - $10; if (d < 0) d = -d; if (d > 1e-6 * ($10 < 0 ? -$10 : $10) || $3 != $8 || $4 != $9) {
          print "FAIL: step " $3 "." $4 ": TrainingDecoder loss " $5 ", by hand " $10; bad = 1; exit 1 }
      s[$3] += $5; n[$3]++; rows++ }
    END { if (bad) exit 1
          if (rows < 30 || !n[1] || !n[3]) { print "FAIL: " rows " training rows"; exit 1 }
          a = s[1] / n[1]; b = s[3] / n[3]
          if (b > a - 0.3) { print "FAIL: mean loss " a " -> " b ", a fall below 0.3"; exit 1 }
          print "ok: " rows " steps alike; mean loss " a " -> " b }'
[ "$(wc -l < "$T/dec.csv")" = "$(wc -l < "$T/hand.csv")" ] || { echo "FAIL: the logs have different lengths"; exit 1; }

run "$ROOT/tests/e2e/decoder_mt.fl" -D decode=1 > "$T/dec.txt"
run "$ROOT/examples/fluid/machine_translation.fl" -D decode=1 > "$T/loop.txt"
[ "$(grep -c '^ids lod \[' "$T/dec.txt")" -ge 10 ] || { echo "FAIL: decoder_mt.fl decoded too few batches"; exit 1; }
cmp -s "$T/dec.txt" "$T/loop.txt" || { echo "FAIL: BeamSearchDecoder decodes otherwise than the While loop"; diff "$T/dec.txt" "$T/loop.txt" | head; exit 1; }
echo "ok: BeamSearchDecoder decodes $(grep -c '^ids' "$T/dec.txt") batches as the While loop"

# examples/fluid/rnn_search.fl -D decode=1: BeamSearchDecoder.decode() with the attention's
# memory given through input_var_dict (the encoder's steps, expanded to the prefixes at each
# step): every batch decodes its 2 sources into at most 2 sentences each, each the start id 0 and
# 1 to 8 words, ended by the end id 1 or cut at 8
run "$ROOT/examples/fluid/rnn_search.fl" -D decode=1 > "$T/rs.txt"
awk '/^ids lod \[/ {
        line = $0; sub(/^ids lod \[/, "", line)
        i = index(line, "]["); ns = split(substr(line, 1, i - 1), src, " "); line = substr(line, i + 2)
        i = index(line, "]: "); nw = split(substr(line, 1, i - 1), w, " "); n = split(substr(line, i + 3), ids, " ")
        nb++
        if (ns != 3 || src[ns] != nw - 1 || w[nw] != n) { print "FAIL: batch " nb ": offsets " $0; bad = 1; exit 1 }
        for (s = 1; s < ns; s++) if (src[s + 1] - src[s] < 1 || src[s + 1] - src[s] > 2) { print "FAIL: batch " nb ": a source has " src[s + 1] - src[s] " sentences"; bad = 1; exit 1 }
        for (k = 1; k < nw; k++) {
            len = w[k + 1] - w[k]
            if (len < 2 || len > 9 || ids[w[k] + 1] != 0 || (len < 9 && ids[w[k + 1]] != 1)) { print "FAIL: batch " nb ": sentence " k " of " len " words"; bad = 1; exit 1 }
        }
     }
     END { if (bad) exit 1; if (nb < 10) { print "FAIL: rnn_search decoded " nb + 0 " batches"; exit 1 }
           print "ok: rnn_search decodes " nb " batches" }' "$T/rs.txt"
