#!/bin/sh
# examples/fluid/gan.fl trains: two programs alternating per batch in a runtime loop of the
# driver. The generator's samples start far from the real mean (4.0: |mean - 4| > 3 at step 0)
# and end near it (each of the last four reports within 1.0 of 4.0; a GAN oscillates around the
# equilibrium, by about 0.6 here under every BLAS kernel), and the discriminator's loss ends near
# 2 ln 2 = 1.386 (within 0.25). The driver's program is one run_program per exe.run of the loop
# body (4), not 1500 unrolled copies.
# Usage: gan_trains.sh FLC FLRUN REPO_ROOT
set -u
FLC=$1 FLRUN=$2 ROOT=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$FLC" build "$ROOT/examples/fluid/gan.fl" -o "$T/gan.flp" || { echo "FAIL: gan.fl does not compile"; exit 1; }
n=$("$FLC" show "$T/gan.flp" | grep -c 'op run_program')
[ "$n" -eq 5 ] || { echo "FAIL: $n run_program ops in the driver, expected 5 (startup and the loop's 4)"; exit 1; }
# the startup, d_program, g_program (the clone) and dg_program are the bundle's named programs
"$FLC" verify "$T/gan.flp" | grep -q 'ok: a driver of .* running 4 named programs$' ||
    { echo "FAIL: flc verify does not check 4 named programs"; "$FLC" verify "$T/gan.flp"; exit 1; }
"$FLRUN" "$T/gan.flp" >"$T/out" 2>"$T/err" || { echo "FAIL: flrun exited $?"; cat "$T/err"; exit 1; }
cat "$T/out"
awk '
    $1 == "step" { n++; d[n] = $4; m[n] = $8 }
    END {
        if (n != 16) { print "FAIL: " n " reports, expected 16"; exit 1 }
        a = m[1] - 4; if (a < 0) a = -a
        if (a <= 3) { print "FAIL: the first generated mean " m[1] " is already near 4"; exit 1 }
        for (i = n - 3; i <= n; i++) {
            a = m[i] - 4; if (a < 0) a = -a
            if (a > 1.0) { print "FAIL: generated mean " m[i] " (report " i ") is not within 1.0 of 4"; exit 1 }
        }
        a = d[n] - 1.386; if (a < 0) a = -a
        if (a > 0.25) { print "FAIL: the final discriminator loss " d[n] " is not near 1.386"; exit 1 }
        print "ok: generated mean " m[1] " -> " m[n] ", discriminator loss " d[n]
    }' "$T/out"
