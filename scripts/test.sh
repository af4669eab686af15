#!/bin/sh
# Builds fluidc and runs its whole test suite with ctest.
#   scripts/test.sh                 normal build in build/
#   FL_SANITIZE=address scripts/test.sh   ASan+UBSan build in build-address/
#   FL_SANITIZE=thread scripts/test.sh    TSan build in build-thread/ (concurrency tests, no MPI jobs)
# Extra arguments go to ctest (e.g. -L lang).
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
san=${FL_SANITIZE:-}
dir=build${san:+-$san}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_SANITIZE="$san" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
if [ "$san" = thread ]; then
    # The concurrency tests; MPI jobs are left out: Debian's OpenMPI is not built with TSan, so
    # TSan cannot see the synchronisation inside MPI calls and reports races that are not there.
    exec ctest --output-on-failure -L concurrency -LE mpi "$@"
fi
exec ctest --output-on-failure -j"$(nproc)" "$@"
