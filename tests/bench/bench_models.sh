#!/bin/sh
# Benchmark (prints figures, never fails on time): training samples/s and peak RSS of fluidc and
# PyTorch side by side, at 1 and at 2 threads (THREADS), on ResNet-32 (32x32x3, batch 64, Adam), VGG-16 with batch
# norm and dropout (32x32x3, batch 64, Momentum), the digits CNN (8x8, batch 64, Adam) and the
# MLP 784-512-512-10 (batch 64, SGD), and the LSTM sentiment model of bench_lstm.sh (lstm:
# embedding 128, LSTM 512 over sequences of 20 to 200 ids, batch 32, Adam; PyTorch's nn.LSTM over
# the padded batch, bench_torch_lstm.py, its faster way on the CPU; samples are sequences); then
# the inference latency of one image through ResNet-32.
# The models: tests/bench/models/models.fl (fluidc) and bench_torch_models.py (the same layers in
# PyTorch, Debian's python3-torch, torch.set_num_threads(T)); random data. Each model runs at each
# thread count T of THREADS: fluidc with flrun --threads T, PyTorch with torch.set_num_threads(T).
# What each side times: the training steps alone, the data already in memory. PyTorch times TIMED
# steps after WARM ones on 4 random batches made before the clock starts. fluidc: flrun --stats
# prints its training phase's wall and CPU seconds (the epoch: shuffling, assembling each batch
# from the rows read, the steps; reading and parsing the CSV happen before it and are left out,
# as PyTorch's making of its tensors is); flrun trains on WARM batches, then on WARM + TIMED
# batches of the same rows, and the difference of the two phases is the TIMED batches' (the
# first step's primitive creation and buffer allocation cancel out, as PyTorch's warm steps
# leave them out). Over TRIALS, fluidc keeps the shortest warm phase and the shortest full one
# and takes their difference (the best of each; a best of differences would reward a warm run
# that happened to be slow). fluidc still pays the batch assembly (a copy of the batch's rows per step)
# that PyTorch's reused tensors do not. Two columns: wall-clock samples/s, and samples per second of
# CPU time (user + sys; PyTorch's process_time), which other jobs on a shared machine do not
# distort (one thread: on an idle machine the two agree; with T threads the wall clock is the
# figure that shows the speed-up, CPU seconds show what the threads cost). Each side keeps its best of TRIALS
# runs; the two sides run back to back per model. Inference: the best and the median of RUNS
# single-image forward passes, one thread (bench_infer through the embedding API; PyTorch in
# eval mode under no_grad). Without python3-torch the PyTorch columns read n/a.
# fluidc runs with the environment's defaults (OPENBLAS_CORETYPE and FL_GEMM unset: its own choice
# of GEMM library, docs/kernels.md "Which GEMM"); PyTorch, which links the same OpenBLAS, at its
# best: OPENBLAS_CORETYPE set to the OpenBLAS kernel with the best GEMM floor on this machine
# (tests/bench/gemm_kernels.sh), printed before the table with the CPU's model name.
# usage: tests/bench/bench_models.sh [BUILD_DIR]  (env: TRIALS=2, WARM=1, RUNS=30, NETS="resnet
#        vgg cnn mlp lstm", THREADS="1 2", PYTHON=/usr/bin/python3; FL_DNNL=0 runs fluidc without oneDNN)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
flrun=$build/tools/flrun infer=$build/tests/bench/models/bench_infer
for f in "$flrun" "$infer"; do
    [ -x "$f" ] || { echo "bench_models: $f not found; build first (scripts/test.sh)"; exit 2; }
done
py=${PYTHON:-/usr/bin/python3}
trials=${TRIALS:-2} warm=${WARM:-1} runs=${RUNS:-30} nets=${NETS:-resnet vgg cnn mlp lstm}
threads_list=${THREADS:-1 2}
# OpenMP teams (oneDNN's in fluidc, PyTorch's) wait passively: spinning teams of 2 on cores that
# other jobs share ran several times slower than one thread (flrun sets this itself, docs/kernels.md)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
torch=no
[ -x "$py" ] && "$py" -c "import torch" 2>/dev/null && torch=yes
# PyTorch's best OpenBLAS kernel here (the best GEMM floor among OpenBLAS's); fluidc's defaults
pt_core=$(TRIALS=2 sh "$here/gemm_kernels.sh" "$build" |
          awk '$1 ~ /^openblas:/ { for (i = 1; i <= NF; i++) if ($i ~ /^ms_per_step=/) v = substr($i, 13) + 0
                                   if (!n++ || v < b) { b = v; k = $0 } }
               END { for (i = 1; i <= split(k, f, " "); i++) if (f[i] ~ /^kernel=/) print substr(f[i], 8) }')
unset FL_GEMM
ptenv="env OPENBLAS_CORETYPE=$pt_core"
echo "CPU: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); fluidc's GEMM: $(env -u OPENBLAS_CORETYPE \
      "$flrun" "$here/train/mlp.fl" --epochs 0 --stats -q 2>&1 | sed -n 's/^flrun: stats gemm: //p'); PyTorch: OPENBLAS_CORETYPE=$pt_core"

# get KEY TEXT: the value of key=KEY in TEXT, or "n/a"
get() { v=$(echo "$2" | sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" | head -n 1); echo "${v:-n/a}"; }
max() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b + 0 > a + 0) print b; else print a }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b + 0 < a + 0) print b; else print a }'; }
# rate WARM ALL N: N samples over the seconds the longer run took beyond the warm one
rate() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { print (b > a ? n / (b - a) : 0) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "n/a" }'; }

# data NET ROWS FILE: ROWS random rows of NET's pixels in [0, 1) and a label in 0..9 (seeded)
data() {
    "$py" - "$1" "$2" "$3" <<'PY'
import random, sys
net, rows, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n = {"resnet": 3072, "vgg": 3072, "cnn": 64, "mlp": 784}[net]
r = random.Random(5)
with open(path, "w") as f:
    for _ in range(rows):
        f.write(",".join("%.3f" % r.random() for _ in range(n)) + ",%d\n" % r.randrange(10))
PY
}
# lstm_data ROWS FILE: ROWS sequences of 20 to 200 word ids < 10000 and a label in 0..1 (seeded)
lstm_data() {
    "$py" - "$1" "$2" <<'PY'
import random, sys
rows, path = int(sys.argv[1]), sys.argv[2]
r = random.Random(5)
with open(path, "w") as f:
    for _ in range(rows):
        ids = " ".join(str(r.randrange(10000)) for _ in range(r.randrange(20, 201)))
        f.write("%s,%d\n" % (ids, r.randrange(2)))
PY
}
# flrun's training-phase wall seconds and CPU seconds (--stats), and its peak RSS (KB), training
# NET on FILE with T threads
fl() {
    if [ "$1" = lstm ]; then set -- "$here/lstm/sentiment_lstm.fl" "$2" "$3"
    else set -- "$here/models/models.fl" "$2" "$3" -D net="$1"; fi
    prog=$1 d=$2 thr=$3
    shift 3
    /usr/bin/time -f "%M" -o "$tmp/t" env -u OPENBLAS_CORETYPE "$flrun" "$prog" -q --stats "$@" -D data="$d" \
        --threads "$thr" >/dev/null 2>"$tmp/stats"
    awk -v rss="$(cat "$tmp/t")" '/^flrun: stats epoch/ { w += $8; c += $10; n++ }
        END { if (!n) { print "bench_models: flrun printed no stats" > "/dev/stderr"; exit 1 }
              print w, c, rss }' "$tmp/stats"
}

printf 'Training, batch 64, lstm 32 (best of %d; samples/s by the wall clock and per CPU second)\n' "$trials"
printf '%-8s %3s %10s %10s %7s | %10s %10s %7s | %8s %8s\n' model thr fluidc PyTorch ratio fl/CPU-s \
    pt/CPU-s ratio "fl RSS" "pt RSS"
for net in $nets; do
  case $net in resnet) timed=${TIMED:-4} ;; vgg) timed=${TIMED:-2} ;; cnn) timed=${TIMED:-400} ;; *) timed=${TIMED:-40} ;; esac
  bs=64
  [ "$net" = lstm ] && bs=32 timed=${TIMED:-12}
  for f in warm:$warm all:$((warm + timed)); do
      if [ "$net" = lstm ]; then lstm_data $((bs * ${f#*:})) "$tmp/${f%:*}.csv"
      else data "$net" $((bs * ${f#*:})) "$tmp/${f%:*}.csv"; fi
  done
  for thr in $threads_list; do
    aw=n/a ac=n/a bw=n/a bc=n/a frss=0 pw=n/a pc=n/a prss=n/a
    i=0
    while [ $i -lt "$trials" ]; do
        set -- $(fl "$net" "$tmp/warm.csv" "$thr")
        aw=$(min "$aw" "$1") ac=$(min "$ac" "$2")
        set -- $(fl "$net" "$tmp/all.csv" "$thr")
        bw=$(min "$bw" "$1") bc=$(min "$bc" "$2") frss=$3
        if [ $torch = yes ]; then
            if [ "$net" = lstm ]; then  # steps to samples (sequences)
                out=$($ptenv BENCH_THREADS=$thr "$py" "$here/lstm/bench_torch_lstm.py" "$tmp/all.csv" "$warm" \
                      "$timed" padded | awk '{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2 &&
                      kv[1] ~ /^steps_per/) { sub(/^steps/, "samples", kv[1]); $i = kv[1] "=" kv[2] * 32 } print }')
            else
                out=$($ptenv BENCH_THREADS=$thr "$py" "$here/models/bench_torch_models.py" "$net" "$warm" "$timed")
            fi
            pw=$(max "$pw" "$(get samples_per_s "$out")")
            pc=$(max "$pc" "$(get samples_per_cpu_s "$out")")
            prss=$(get peak_rss_kb "$out")
        fi
        i=$((i + 1))
    done
    fw=$(rate "$aw" "$bw" $((bs * timed))) fc=$(rate "$ac" "$bc" $((bs * timed)))
    printf '%-8s %3s %10.1f %10s %7s | %10.1f %10s %7s | %6d MB %8s\n' "$net" "$thr" "$fw" "$pw" \
        "$(ratio "$fw" "$pw")" "$fc" "$pc" "$(ratio "$fc" "$pc")" $((frss / 1024)) \
        "$(awk -v r="$prss" 'BEGIN { if (r + 0 > 0) printf "%d MB", r / 1024; else print "n/a" }')"
  done
done

out=$(env -u OPENBLAS_CORETYPE "$infer" "$build/tests/bench/models/resnet_infer.flp" 3 32 32 "$runs")
fb=$(get best_ms "$out") fm=$(get median_ms "$out") pb=n/a pm=n/a
if [ $torch = yes ]; then
    out=$($ptenv "$py" "$here/models/bench_torch_models.py" infer "$runs")
    pb=$(get best_ms "$out") pm=$(get median_ms "$out")
fi
printf '\nInference, ResNet-32, one 32x32x3 image (%d runs)\n' "$runs"
printf '%-8s %10s %10s %7s\n' "" fluidc PyTorch "pt/fl"
printf '%-8s %10s %10s %7s\n' "best ms" "$fb" "$pb" "$(ratio "$pb" "$fb")"
printf '%-8s %10s %10s %7s\n' "median" "$fm" "$pm" "$(ratio "$pm" "$fm")"
