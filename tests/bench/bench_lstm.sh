#!/bin/sh
# Benchmark (prints figures, never fails on time): training the LSTM sentiment model (embedding
# 128, an LSTM of 512 over sequences of 20 to 200 word ids, its last step to a softmax of 2, Adam;
# batch 32, one thread) in fluidc (tests/bench/lstm/sentiment_lstm.fl: fc + dynamic_lstm, which
# is what nn.LSTM computes) and in PyTorch (bench_torch_lstm.py, Debian's python3-torch: nn.LSTM
# over packed sequences, and over the padded batch, two rows: PyTorch's packed backward grows with
# the square of the length on the CPU, see its header), side by side: training steps/s and peak RSS;
# the ratio is against PyTorch's faster way.
# fluidc's steps/s: flrun trains on WARM batches, then on WARM + TIMED batches of the same rows;
# the difference of the two wall times is the TIMED steps' (compiling, startup and reading cancel
# out). Each side keeps its best of TRIALS runs. Goal: >= 1.0x PyTorch.
# Without python3-torch the PyTorch column reads n/a.
# usage: tests/bench/bench_lstm.sh [BUILD_DIR]   (env: TRIALS=2, WARM=3, TIMED=12, PYTHON=/usr/bin/python3)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
flrun=$build/tools/flrun
[ -x "$flrun" ] || { echo "bench_lstm: $flrun not found; build first (scripts/test.sh)"; exit 2; }
py=${PYTHON:-/usr/bin/python3}
trials=${TRIALS:-2} warm=${WARM:-3} timed=${TIMED:-12}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the data: 32 * (warm + timed) rows, lengths uniform in 20..200 (seeded)
python3 - "$tmp" "$warm" "$timed" <<'PY'
import random, sys
d, warm, timed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(5)
rows = [(" ".join(str(rnd.randrange(10000)) for _ in range(rnd.randrange(20, 201))), rnd.randrange(2))
        for _ in range(32 * (warm + timed))]
for name, n in (("warm.csv", 32 * warm), ("all.csv", len(rows))):
    with open(f"{d}/{name}", "w") as f:
        f.writelines(f"{s},{y}\n" for s, y in rows[:n])
PY
tokens=$(awk -F, '{ n += split($1, a, " ") } END { print n }' "$tmp/all.csv")

run() { /usr/bin/time -f "%e %M" -o "$tmp/t" "$flrun" "$here/lstm/sentiment_lstm.fl" -q -D data="$1" >/dev/null; cat "$tmp/t"; }
best_fl=0 rss_fl=0
i=0
while [ $i -lt "$trials" ]; do
    set -- $(run "$tmp/warm.csv")
    t1=$1
    set -- $(run "$tmp/all.csv")
    t2=$1 rss_fl=$2
    best_fl=$(awk -v a="$best_fl" -v t1="$t1" -v t2="$t2" -v n="$timed" 'BEGIN { s = t2 > t1 ? n / (t2 - t1) : 0; print (s > a ? s : a) }')
    i=$((i + 1))
done

# torch MODE: PyTorch's best steps/s over TRIALS runs and the peak RSS (KB) of the last, or n/a
torch() {
    if ! [ -x "$py" ] || ! "$py" -c "import torch" 2>/dev/null; then echo "n/a n/a"; return; fi
    best=0 i=0
    while [ $i -lt "$trials" ]; do
        out=$("$py" "$here/lstm/bench_torch_lstm.py" "$tmp/all.csv" "$warm" "$timed" "$1")
        s=$(echo "$out" | sed -n 's/.*steps_per_s=\([^ ]*\).*/\1/p')
        rss=$(echo "$out" | sed -n 's/.*peak_rss_kb=\([^ ]*\).*/\1/p')
        best=$(awk -v a="$best" -v s="$s" 'BEGIN { print (s > a ? s : a) }')
        i=$((i + 1))
    done
    echo "$best $rss"
}
set -- $(torch packed)
pt_packed=$1 rss_packed=$2
set -- $(torch padded)
pt_padded=$1 rss_padded=$2
best_pt=$(awk -v a="$pt_packed" -v b="$pt_padded" 'BEGIN { if (a + 0 > b + 0) print a; else if (b + 0 > 0) print b; else print "n/a" }')
ratio=$(awk -v a="$best_fl" -v b="$best_pt" 'BEGIN { if (b + 0 > 0) printf "%.2fx", a / b; else print "n/a" }')
mb() { awk -v r="$1" 'BEGIN { if (r + 0 > 0) print int(r / 1024); else print "n/a" }'; }
printf 'LSTM sentiment (emb 128, hidden 512, lengths 20-200, %d tokens in %d batches of 32), 1 thread\n' \
    "$tokens" "$((warm + timed))"
printf '%-28s %12s %16s %16s %8s\n' "" fluidc "PyTorch packed" "PyTorch padded" ratio
printf '%-28s %12.3f %16s %16s %8s\n' "training steps/s" "$best_fl" "$pt_packed" "$pt_padded" "$ratio"
printf '%-28s %12s %16s %16s\n' "peak RSS (MB)" "$((rss_fl / 1024))" "$(mb "$rss_packed")" "$(mb "$rss_padded")"
