#!/bin/sh
# csp_worker.sh FLC FLRUN MPI_CHECK (label mpi): the seed's CSP worker job
#   mpirun -np 1 flrun seed_server.flp : -np 2 flrun seed_csp_worker.flp
# trains and logs the same per-step losses as the plain worker job (seed_worker.flp) with the
# same server, within 1e-5 relative. Run from the project root.
# The distributed ops send a block received from a channel under its tag (ops_dist.c's
# real_name consults fl_var_label, scope.h).
set -u
FLC=$1 FLRUN=$2 CHECK=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run_mpi() { timeout 120 mpirun --allow-run-as-root --oversubscribe "$@"; }
"$FLC" build examples/seed_server.fl -o "$TMP/ss.flp" && "$FLC" build examples/seed_worker.fl -o "$TMP/sw.flp" &&
    "$FLC" build examples/seed_csp_worker.fl -o "$TMP/sc.flp" || fail "flc build"
run_mpi -np 1 "$FLRUN" "$TMP/ss.flp" : -np 2 "$FLRUN" "$TMP/sw.flp" -q --epochs 3 --log "$TMP/plain.csv" ||
    fail "mpirun (plain workers)"
# the CSP job with 16-byte pieces: goroutines send and receive many-piece messages at once
run_mpi -np 1 "$FLRUN" "$TMP/ss.flp" --piece 16 : -np 2 "$FLRUN" "$TMP/sc.flp" -q --piece 16 --epochs 3 --log "$TMP/csp.csv" ||
    fail "mpirun (CSP workers)"
"$CHECK" logs "$TMP/csp.csv" "$TMP/plain.csv" 1e-5 || fail "the losses differ"
