#!/bin/sh
# Benchmark (prints figures, never fails on time): training the MLP 784-512-512-10 (relu,
# softmax + cross-entropy, mean, SGD; batch 128, synthetic data, OPENBLAS_NUM_THREADS=1), with
# the figures side by side in one table:
#   1. fluidc steps/s (tests/bench/train/bench_mlp: the embedding API, one executor and scope,
#      fl_executor_run with feeds every step) vs the same model in PyTorch
#      (tests/bench/train/bench_torch.py, Debian's python3-torch, torch.set_num_threads(1));
#   2. the GEMM floor: the step's 8 sgemm calls alone, with the kernels' shapes and transposes
#      (tests/bench/train/bench_gemm), by the best sgemm this machine has: every OpenBLAS kernel
#      its CPU runs and oneDNN's, the fastest at these shapes (tests/bench/gemm_kernels.sh); and
#      fluidc's share of it: floor ms / fluidc ms per step;
#   3. the per-op time through the executor on a chain of 10,000 tiny ops
#      (tests/runtime/core/bench_dispatch.c), next to PyTorch's eager per-op time on the same chain;
#   4. peak RSS of fluidc's benchmark process and of PyTorch's.
# Goals: >= 1.0x PyTorch, >= 0.95 of the GEMM floor, <= 0.2 us per tiny op, RSS <= PyTorch's.
# fluidc runs with the environment's defaults (OPENBLAS_CORETYPE and FL_GEMM unset: its own
# choice of library, docs/kernels.md "Which GEMM"); PyTorch, which links the same OpenBLAS, at
# its best: OPENBLAS_CORETYPE set to the OpenBLAS kernel with the best floor here.
# Each side keeps its best of TRIALS alternating runs (each itself the best of 5 rounds of 40
# steps after 5 warm-up steps), since other jobs on a shared machine only ever slow a run down.
# Details follow the table: each side's raw figures (fluidc's include page faults and buffer
# cache misses per timed step), PyTorch's own share of the GEMM floor, and fluidc once more with
# its buffer cache off (FLUIDC_BUFFER_CACHE_MB=0: each step's buffers go back to malloc, whose
# heap trimming makes the next step fault them in again; runtime/tensor.h).
# Without python3-torch the PyTorch columns read n/a.
# usage: tests/bench/bench_train.sh [BUILD_DIR]    (env: TRIALS=3, PYTHON=/usr/bin/python3)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/tests/bench/train
mlp=$bin/bench_mlp gemm=$bin/bench_gemm flp=$bin/mlp.flp
disp=$build/tests/runtime/core/core_bench_dispatch
for f in "$mlp" "$gemm" "$flp"; do
    [ -e "$f" ] || { echo "bench_train: $f not found; build first (scripts/test.sh)"; exit 2; }
done
py=${PYTHON:-/usr/bin/python3}
trials=${TRIALS:-3}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# get KEY FILE: the value of key=KEY on the file's (first matching) line, or "n/a"
get() { v=$(sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" "$2" | head -n 1); echo "${v:-n/a}"; }
# best FILE KEY [min]: the largest (or smallest) value of KEY over the file's lines
best() { awk -v k="$2" -v mode="${3:-max}" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) {
            v = substr($i, length(k) + 2) + 0
            if (!n++ || (mode == "max" ? v > b : v < b)) { b = v; line = $0 } } }
        END { if (n) print line }' "$1"; }

have_torch=0
if [ -x "$py" ] && "$py" -c "import torch" 2>/dev/null; then have_torch=1; fi

# the machine's GEMM kernels: the best one's floor, and the best OpenBLAS kernel for PyTorch
sh "$here/gemm_kernels.sh" "$build" >"$tmp/kernels"
best_kernel=$(sed -n 's/^best \([^ ]*\) .*/\1/p' "$tmp/kernels")
sed -n 's/^best [^ ]* //p' "$tmp/kernels" >"$tmp/gmbest"
best_cpu_kernel=$(sed -n 's/^best_cpu \([^ ]*\) .*/\1/p' "$tmp/kernels")
gm_cpu=$(sed -n 's/^best_cpu .*cpu_ms_per_step=\([^ ]*\).*/\1/p' "$tmp/kernels")
pt_core=$(awk '$1 ~ /^openblas:/ { for (i = 1; i <= NF; i++) if ($i ~ /^ms_per_step=/) v = substr($i, 13) + 0
                                    if (!n++ || v < b) { b = v; k = $0 } }
               END { for (i = 1; i <= split(k, f, " "); i++) if (f[i] ~ /^kernel=/) print substr(f[i], 8) }' "$tmp/kernels")
fl_env="env -u OPENBLAS_CORETYPE -u FL_GEMM"

: > "$tmp/fl" ; : > "$tmp/pt"
i=0
# diagnostic: bench_mlp again without the buffer cache (what recycling buffers saves)
: > "$tmp/flt"
while [ $i -lt "$trials" ]; do
    $fl_env "$mlp" "$flp" >> "$tmp/fl" || { echo "bench_train: bench_mlp failed"; exit 1; }
    FLUIDC_BUFFER_CACHE_MB=0 $fl_env "$mlp" "$flp" >> "$tmp/flt" 2>/dev/null || :
    if [ $have_torch = 1 ]; then
        OPENBLAS_CORETYPE=$pt_core "$py" "$here/train/bench_torch.py" >> "$tmp/pt" || have_torch=0
    fi
    i=$((i + 1))
done
best "$tmp/fl" steps_per_s > "$tmp/fl1"
cp "$tmp/gmbest" "$tmp/gm1"
best "$tmp/pt" steps_per_s > "$tmp/pt1"
: > "$tmp/d"; : > "$tmp/pd"
if [ -x "$disp" ]; then "$disp" > "$tmp/d" || :; fi
if [ $have_torch = 1 ]; then OPENBLAS_CORETYPE=$pt_core "$py" "$here/train/bench_torch.py" dispatch > "$tmp/pd" || :; fi
d_exec=$(sed -n 's/.*: \([0-9.]*\) ns\/op through the executor.*/\1/p' "$tmp/d")
d_kern=$(sed -n 's/.*, \([0-9.]*\) ns\/op kernel alone.*/\1/p' "$tmp/d")
d_over=$(sed -n 's/.*dispatch overhead \([0-9.-]*\) ns\/op.*/\1/p' "$tmp/d")

fl_sps=$(get steps_per_s "$tmp/fl1") fl_ms=$(get ms_per_step "$tmp/fl1")
fl_cpu=$(best "$tmp/fl" cpu_ms_per_step min > "$tmp/flc1"; get cpu_ms_per_step "$tmp/flc1")
fl_rss=$(get peak_rss_kib "$tmp/fl1")
pt_sps=$(get steps_per_s "$tmp/pt1") pt_ms=$(get ms_per_step "$tmp/pt1")
pt_rss=$(get peak_rss_kib "$tmp/pt1")
gm_ms=$(get ms_per_step "$tmp/gm1")
pt_op=$(get ns_per_op "$tmp/pd")

flt_ms=$(best "$tmp/flt" ms_per_step min > "$tmp/flt1"; get ms_per_step "$tmp/flt1")
flt_pf=$(get faults_per_step "$tmp/flt1")

awk -v fs="$fl_sps" -v ps="$pt_sps" -v fm="$fl_ms" -v pm="$pt_ms" -v gm="$gm_ms" -v fc="$fl_cpu" -v gc="$gm_cpu" \
    -v fr="$fl_rss" -v pr="$pt_rss" -v de="${d_exec:-n/a}" -v pd="$pt_op" 'BEGIN {
    printf "%-32s %10s %10s %7s  %-15s %s\n", "metric", "fluidc", "reference", "ratio", "goal", "met"
    row("train steps/s (ref: PyTorch)", fs, ps, fs, ps, "%10.1f", div(fs, ps),
        "ratio >= 1.0", div(fs, ps) >= 1.0, 1)
    row("ms/step (ref: GEMM floor)", fm, gm, fm, gm, "%10.3f", div(gm, fm),
        "ratio >= 0.95", div(gm, fm) >= 0.95, 1)
    row("CPU ms/step (ref: floor CPU ms)", fc, gc, fc, gc, "%10.3f", div(gc, fc),
        "ratio >= 0.95", div(gc, fc) >= 0.95, 1)
    row("us per tiny op (ref: PyTorch)", de, pd, de / 1000, pd / 1000, "%10.3f", div(de, pd),
        "fluidc <= 0.2", de / 1000 <= 0.2, 0)
    row("peak RSS MiB (ref: PyTorch)", fr, pr, fr / 1024, pr / 1024, "%10.1f", div(fr, pr),
        "ratio <= 1.0", div(fr, pr) <= 1.0, 1)
    print "ratio = fluidc / reference, except ms/step: floor / fluidc (fluidc'"'"'s share of the floor; by CPU"
    print "time too, the figure other jobs on a shared machine distort least)"
}
function bad(v) { return v == "" || v == "n/a" }
function div(x, y) { return y + 0 == 0 ? 0 : x / y }
# ra, rb: the raw figures (n/a when missing); a, b: as printed; needref: the goal needs rb
function row(name, ra, rb, a, b, fmt, r, goal, ok, needref,   sa, sb, sr, met) {
    sa = bad(ra) ? sprintf("%10s", "n/a") : sprintf(fmt, a)
    sb = bad(rb) ? sprintf("%10s", "n/a") : sprintf(fmt, b)
    sr = bad(ra) || bad(rb) ? sprintf("%7s", "n/a") : sprintf("%7.2f", r)
    met = bad(ra) || (needref && bad(rb)) ? "?" : (ok ? "yes" : "NO")
    printf "%-32s %s %s %s  %-15s %s\n", name, sa, sb, sr, goal, met
}'
echo
echo "details:"
echo "  fluidc:  $(cat "$tmp/fl1")"
echo "  pytorch: $( [ -s "$tmp/pt1" ] && cat "$tmp/pt1" || echo "n/a (no $py with torch)")"
echo "  floor:   $best_kernel $(cat "$tmp/gm1")"
echo "  floor by CPU time: $best_cpu_kernel, $gm_cpu CPU ms a step"
echo "  fluidc's GEMM: $($fl_env "$build/tools/flrun" "$here/train/mlp.fl" --epochs 0 --stats -q 2>&1 | sed -n 's/^flrun: stats gemm: //p')"
echo "  PyTorch: OPENBLAS_CORETYPE=$pt_core (the OpenBLAS kernel with the best floor here)"
echo "  the machine's GEMM kernels (bench_gemm, best of 3 each):"
sed 's/^/    /' "$tmp/kernels"
echo "  CPU: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
awk -v pm="$pt_ms" -v gm="$gm_ms" -v tm="$flt_ms" -v tf="$flt_pf" 'BEGIN {
    if (pm != "n/a" && pm > 0)
        printf "  PyTorch: %.3f ms/step, its share of the GEMM floor %.2f\n", pm, gm / pm
    if (tm != "n/a" && tm > 0)
        printf "  fluidc with its buffer cache off: %.3f ms/step, floor share %.2f, %s page faults/step\n",
               tm, gm / tm, tf }'
echo "  tiny ops: ${d_exec:-n/a} ns/op through the executor = ${d_kern:-n/a} kernel alone +" \
     "${d_over:-n/a} dispatch; PyTorch eager torch.add on [1]: $pt_op ns/op"
