#!/bin/sh
# primes.sh FLRUN: examples/primes.fl (Go's concurrent prime sieve) prints the first 100 primes.
set -u
got=$("$1" examples/primes.fl 2>/dev/null | sed -n 's/^prime .*: //p' | tr '\n' ' ')
want=$(awk 'BEGIN { for (n = 2; c < 100; n++) { p = 1; for (d = 2; d * d <= n; d++) if (n % d == 0) p = 0; if (p) { printf "%d ", n; c++ } } }')
[ "$got" = "$want" ] && echo "the first 100 primes, up to 541" && exit 0
echo "FAIL: got [$got]"
exit 1
