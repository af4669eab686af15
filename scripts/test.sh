#!/bin/sh
# Builds fluidc and runs its whole test suite with ctest.
#   scripts/test.sh                 normal build in build/
#   FL_SANITIZE=address scripts/test.sh   ASan+UBSan build in build-address/
#   FL_SANITIZE=thread scripts/test.sh    TSan build in build-thread/ (concurrency tests, no MPI jobs)
#   FL_BUILD_TYPE=Release (default RelWithDebInfo), CC=clang: another build type or compiler, in
#                         build-<type>[-clang]/ when not the default
#   FL_WERROR=ON          warnings are errors (CI and development; a user's build never stops on one)
# Extra arguments go to ctest (e.g. -L lang).
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
san=${FL_SANITIZE:-}
type=${FL_BUILD_TYPE:-RelWithDebInfo}
dir=build${san:+-$san}
[ "$type" != RelWithDebInfo ] && dir=$dir-$(echo "$type" | tr A-Z a-z)
case "${CC:-}" in *clang*) dir=$dir-clang ;; esac
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DFL_SANITIZE="$san" -DFL_WERROR="${FL_WERROR:-OFF}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
# A new build directory has no timings of ctest's own: the long tests' seconds from
# tests/ctest_costs.txt let ctest start them first, so that no long test runs alone at the end.
if [ ! -f Testing/Temporary/CTestCostData.txt ]; then
    mkdir -p Testing/Temporary
    { grep -v '^#' ../tests/ctest_costs.txt; echo ---; } >Testing/Temporary/CTestCostData.txt
fi
# OPENBLAS_CORETYPE in the environment names the OpenBLAS kernel to test (flrun honours it); with
# FL_GEMM=openblas it is the only library, as in scripts/test_kernels.sh, and flrun's warning about
# a kernel narrower than the CPU (docs/kernels.md) stays out of the outputs the tests compare.
if [ -n "${OPENBLAS_CORETYPE:-}" ] && [ -z "${FL_GEMM:-}" ]; then
    echo "scripts/test.sh: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE: the tests run OpenBLAS's $OPENBLAS_CORETYPE kernel (FL_GEMM=openblas)"
    export FL_GEMM=openblas
fi
if [ "$san" = thread ]; then
    # The concurrency tests; MPI jobs are left out: Debian's OpenMPI is not built with TSan, so
    # TSan cannot see the synchronisation inside MPI calls and reports races that are not there.
    exec ctest --output-on-failure -j"$(nproc)" -L concurrency -LE mpi "$@"
fi
# The tests that run a GEMM or oneDNN kernel mark themselves in kernel-marks/ (FL_KERNEL_MARKS);
# a whole run with oneDNN on (whichever GEMM kernel: the marks say whether a test runs one, not
# which) starts the folder afresh and, when it passes, leaves kernel-marks/.complete, after which
# scripts/test_kernels.sh runs just the marked tests.
export FL_KERNEL_MARKS="$PWD/kernel-marks"
whole=
[ $# -eq 0 ] && [ -z "$san" ] && [ "${FL_DNNL:-}" != 0 ] && whole=1
[ -n "$whole" ] && rm -rf kernel-marks
mkdir -p kernel-marks
ctest --output-on-failure -j"$(nproc)" "$@"
[ -n "$whole" ] && touch kernel-marks/.complete
exit 0
