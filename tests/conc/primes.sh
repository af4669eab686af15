#!/bin/sh
# primes.sh FLRUN: examples/primes.fl (Go's concurrent prime sieve: a chain of 100 goroutines)
# prints the first 100 primes, with a processor per core and with one (--procs 1).
set -u
want=$(awk 'BEGIN { for (n = 2; c < 100; n++) { p = 1; for (d = 2; d * d <= n; d++) if (n % d == 0) p = 0; if (p) { printf "%d ", n; c++ } } }')
for procs in "" "--procs 1"; do
    # shellcheck disable=SC2086
    got=$("$1" examples/primes.fl $procs 2>/dev/null | sed -n 's/^prime .*: //p' | tr '\n' ' ')
    [ "$got" = "$want" ] || { echo "FAIL ($procs): got [$got]"; exit 1; }
done
echo "the first 100 primes, up to 541, with a processor per core and with --procs 1"
