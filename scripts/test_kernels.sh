#!/bin/sh
# Runs the numeric tests again under each GEMM kernel a user's machine may give them, so that a
# result only one kernel's rounding gives fails on any machine (docs/kernels.md, "Same results on
# every CPU"), in three runs: OpenBLAS's Haswell (AVX2) kernel with oneDNN off altogether
# (FL_DNNL=0: the plain loops for conv2d's and pool2d's fast paths too, in the run of the fastest
# kernel, as the slow loops and the slow SSE3 kernel together would pass the tests' time limits),
# and its SkylakeX (AVX-512) and Prescott (SSE3) kernels (FL_GEMM=openblas OPENBLAS_CORETYPE=...).
# The whole suite before it ran the machine's defaults: its own OpenBLAS kernel, and oneDNN's
# sgemm for the large products (FL_GEMM=auto); FL_GEMM=onednn, oneDNN for every product, is a
# user's choice this script leaves out (FL_GEMM=onednn sh scripts/test.sh runs the suite on it).
#   scripts/test_kernels.sh            the labels e2e, mpi, concurrency, runtime and python (the
#                                      cluster jobs left out), in the normal build (build/), but
#                                      for the tests that compute no figure a GEMM kernel could
#                                      change (bad jobs, stalls, kills, launches, errors, fuzzing,
#                                      channels and goroutines, timelines, pictures, installs):
#                                      they run once in scripts/test.sh
#                                      and, after a whole passing run of scripts/test.sh in build/
#                                      (build/kernel-marks/.complete), just the tests that ran a
#                                      GEMM or oneDNN kernel in it (build/kernel-marks/NAME): a
#                                      test that runs none computes the same bits under every one
#   FL_SANITIZE, FL_BUILD_TYPE, CC     as for scripts/test.sh (then every test of the labels)
#   FL_KERNELS="Haswell SkylakeX"      the runs to make (default all three; .ci/run leaves Prescott
#                                      to its ASan+UBSan run of the whole suite, which runs it)
# Extra arguments go to ctest (e.g. -R e2e_fluid_examples). A kernel whose instructions this CPU
# lacks (SkylakeX without AVX-512, Haswell without AVX2) is skipped with a line saying so.
set -eu
cd "$(dirname "$0")/.."
args="$*"
has() { grep -q "^flags.* $1\( \|$\)" /proc/cpuinfo; }
fail=0
same='^(mpi_bad_jobs|mpi_stall|mpi_stall_trainer|mpi_kill|mpi_launch|mpi_wrong_np|e2e_plot|e2e_timeline|mpi_timeline|e2e_profile|test_install|python_install|fuzz_.*|core_test_step_faults|conc_chan_cases|conc_go_cases|conc_deadlock|conc_docs|e2e_dist_script_errors|python_errors|python_misuse|python_docs|exits_cases|include_arrows|flc_version|flrun_version)$'
only=
if [ -z "$args" ] && [ -z "${FL_SANITIZE:-}${FL_BUILD_TYPE:-}${CC:-}" ] && [ -f build/kernel-marks/.complete ]; then
    marked=$(ls build/kernel-marks)
    [ -n "$marked" ] || { echo "scripts/test_kernels.sh: no test ran a GEMM or oneDNN kernel in the last whole run: nothing to test"; exit 1; }
    echo "== $(echo "$marked" | wc -l) tests ran a GEMM or oneDNN kernel in the last whole run of scripts/test.sh (build/kernel-marks): they run under each kernel"
    only="^($(echo "$marked" | paste -sd'|'))\$"
fi
# FL_GEMM=openblas with OPENBLAS_CORETYPE: the kernel is the test's choice, so flrun runs it
# without its warning about a kernel narrower than the CPU
for v in ${FL_KERNELS:-Haswell SkylakeX Prescott}; do
    case $v in
    Haswell|SkylakeX|Prescott) ;;
    *) echo "scripts/test_kernels.sh: FL_KERNELS: unknown kernel '$v' (Haswell, SkylakeX, Prescott)"; exit 2 ;;
    esac
    case $v in
    Haswell) has avx2 || { echo "== $v: skipped (this CPU has no AVX2)"; continue; } ;;
    SkylakeX) has avx512f || { echo "== $v: skipped (this CPU has no AVX-512)"; continue; } ;;
    esac
    case $v in
    Haswell) set -- FL_DNNL=0 FL_GEMM=openblas OPENBLAS_CORETYPE=$v ;;
    *) set -- FL_GEMM=openblas OPENBLAS_CORETYPE=$v ;;
    esac
    echo "== $*"
    env "$@" sh scripts/test.sh -L 'e2e|mpi|concurrency|runtime|python' -LE cluster -E "$same" ${only:+-R "$only"} $args || fail=1
done
exit $fail
