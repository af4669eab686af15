#!/bin/sh
# The GEMM floor of the benchmark MLP's step (tests/bench/train/bench_gemm: the step's 8 sgemm
# calls alone) under every GEMM kernel this machine can run: OpenBLAS's kernels for the vector
# widths this CPU has, each forced by OPENBLAS_CORETYPE (Prescott: SSE3; Sandybridge: AVX;
# Haswell: AVX2; SkylakeX and Cooperlake: AVX-512, Cooperlake with BF16), OpenBLAS's own choice
# for this CPU, oneDNN's sgemm, and fluidc's own choice per product with the environment's
# defaults (the libraries fluidc may run; docs/kernels.md, "Which GEMM"). Prints one bench_gemm
# line per kernel (the best of TRIALS runs) prefixed by its name, then `best NAME LINE`, the
# fastest by the wall clock, and `best_cpu NAME LINE`, by CPU time. bench_train.sh and bench_models.sh use it to take the machine's best sgemm as the
# floor and as PyTorch's best setting.
# usage: tests/bench/gemm_kernels.sh [BUILD_DIR]   (env: TRIALS=3)
set -eu
build=${1:-build}
gemm=$build/tests/bench/train/bench_gemm
[ -x "$gemm" ] || { echo "gemm_kernels: $gemm not found; build first (scripts/test.sh)"; exit 2; }
trials=${TRIALS:-3}
# one thread per call, as fluidc runs either library (its kernel pool cuts large products)
export OPENBLAS_NUM_THREADS=1
has() { grep -q "^flags.* $1\( \|$\)" /proc/cpuinfo; }
# best_of NAME CMD...: the line of CMD's TRIALS runs with the smallest ms_per_step
best_of() {
    name=$1
    shift
    i=0
    while [ $i -lt "$trials" ]; do "$@"; i=$((i + 1)); done |
        awk -v name="$name" '{ for (i = 1; i <= NF; i++) if ($i ~ /^ms_per_step=/) v = substr($i, 13) + 0
                               if (!n++ || v < b) { b = v; line = $0 } }
                             END { if (n) print name, line }'
}
cores="Prescott"
has avx && cores="$cores Sandybridge"
has avx2 && has fma && cores="$cores Haswell"
has avx512f && has avx512bw && has avx512vl && has avx512dq && cores="$cores SkylakeX"
has avx512f && has avx512_bf16 && cores="$cores Cooperlake"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for c in $cores; do
    line=$(OPENBLAS_CORETYPE=$c best_of "openblas:$c" "$gemm")
    # a name this OpenBLAS does not know runs its own choice instead: leave it out
    case $line in *" kernel=$c "*) echo "$line" >>"$out" ;; esac
done
(unset OPENBLAS_CORETYPE; best_of "openblas:default" "$gemm") >>"$out"
best_of "onednn" "$gemm" -l onednn >>"$out"
# fluidc's own mix with the environment's defaults (by shape where OpenBLAS knows the CPU)
(unset OPENBLAS_CORETYPE FL_GEMM; best_of "fluidc" "$gemm" -l fluidc) >>"$out"
cat "$out"
# best KEY LABEL: the line with the smallest KEY (ms_per_step: wall clock; cpu_ms_per_step: CPU time)
best() {
    awk -v k="$1" -v label="$2" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) v = substr($i, length(k) + 2) + 0
                                   if (!n++ || v < b) { b = v; line = $0 } }
                                 END { print label, line }' "$out"
}
best ms_per_step best
best cpu_ms_per_step best_cpu
