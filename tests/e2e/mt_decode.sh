#!/bin/sh
# examples/fluid/machine_translation.fl -D decode=1 (docs/sequences.md, "Beam search"): the
# decoding program (Fluid's decode_main) decodes each batch of sources by beam search in a While
# loop over tensor arrays, from start beams fed as data of two LoD levels, and prints the ids with
# their offsets (Print's print_tensor_lod). On the first rows of its data this checks the decoded
# output's structure (two LoD levels: at most beam_size sentences per source, each starting with
# the start id, at most max_length words after it, ended by end_id or cut at max_length, end_id
# nowhere else), that two runs print the same, and, with an end_id that the decoder picks at
# several steps, that sentences end at different steps and finished sources are pruned.
# usage: mt_decode.sh FLRUN
set -eu
FLRUN=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/fluid" "$T/data"
gzip -dc "$ROOT/examples/data/mt_decode.csv.gz" | head -n 24 | gzip > "$T/data/mt_decode.csv.gz"
run() { "$FLRUN" "$ROOT/examples/fluid/machine_translation.fl" --data-dir "$T/fluid" -q -D decode=1 "$@"; }

# check END: the structure of every decoded batch; prints "sentences ended" counts
check() {
    awk -v end="$1" -v start=0 -v maxlen=8 -v beam=2 '
    function fail(msg) { print "FAIL batch " nb ": " msg; bad = 1; exit 1 }
    /^ids lod \[/ {
        # ids lod [source offsets][sentence offsets]: ids
        line = $0
        sub(/^ids lod \[/, "", line)
        i = index(line, "]["); ns = split(substr(line, 1, i - 1), src, " "); line = substr(line, i + 2)
        i = index(line, "]: "); nw = split(substr(line, 1, i - 1), w, " "); n = split(substr(line, i + 3), ids, " ")
        nb++
        if (src[1] != 0 || w[1] != 0) fail("offsets do not start at 0")
        if (ns - 1 < 1 || ns - 1 > 2) fail("sources " ns - 1)
        if (src[ns] != nw - 1) fail("the sources cut " src[ns] " sentences, there are " nw - 1)
        if (w[nw] != n) fail("the sentences cut " w[nw] " words, there are " n)
        for (s = 1; s < ns; s++) if (src[s + 1] - src[s] < 1 || src[s + 1] - src[s] > beam) fail("source " s " has " src[s + 1] - src[s] " sentences")
        for (k = 1; k < nw; k++) {
            len = w[k + 1] - w[k]
            if (len < 2 || len > maxlen + 1) fail("sentence " k " has " len " words")
            if (ids[w[k] + 1] != start) fail("sentence " k " starts with " ids[w[k] + 1])
            for (j = w[k] + 2; j < w[k + 1]; j++) if (ids[j] == end) fail("end id inside sentence " k)
            if (ids[w[k + 1]] == end) { ended++; lens[len] = 1 } else if (len != maxlen + 1) fail("sentence " k " neither ends nor reaches max_length")
            sent++
        }
    }
    END { if (bad) exit 1; if (nb == 0) { print "FAIL: no decoded batch"; exit 1 }
          nl = 0; for (l in lens) nl++
          print nb " batches, " sent " sentences, " ended + 0 " ended (" nl " lengths)" }'
}

run > "$T/a.txt"
run > "$T/b.txt"
cmp -s "$T/a.txt" "$T/b.txt" || { echo "FAIL: two runs decode differently"; diff "$T/a.txt" "$T/b.txt" | head; exit 1; }
check 1 < "$T/a.txt"
# an end id the decoder picks at different steps: of the words of the first run's sentences, the
# one first seen at the most distinct positions (then the most frequent); with it as end_id,
# sentences must end, at different lengths
e=$(awk '/^ids lod/ { sub(/^.*\]: /, ""); for (i = 1; i <= NF; i++) { if ($i == 0) { delete seen; p = 0; continue }
                       p++; if (!(($i) in seen)) { seen[$i] = 1; if (!(($i, p) in at)) { at[$i, p] = 1; npos[$i]++ } }
                       cnt[$i]++ } }
         END { for (w in npos) print npos[w], cnt[w], w }' "$T/a.txt" | sort -k1,1nr -k2,2nr -k3,3n | awk 'NR == 1 { print $3 }')
run -D end_id="$e" > "$T/c.txt"
out=$(check "$e" < "$T/c.txt")
echo "end_id $e: $out"
case $out in
*" 0 ended"*) echo "FAIL: no sentence ended with end_id $e"; exit 1 ;;
*" (1 lengths)"*) echo "FAIL: every ended sentence has the same length"; exit 1 ;;
esac
echo ok
