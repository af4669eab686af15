#!/bin/sh
# driver_threads.sh FLRUN: Fluid's multi-thread example (examples/fluid/multi_thread.fl, as
# written) and fluidc's shared-executor version (multi_thread_shared.fl) run ten threads, as
# goroutines of the driver program, each of which runs the program with its own input: each
# thread's line must hold its own index back (in any order, each thread once), then the time line
# comes last. With a processor per core and with one (--procs 1). Label concurrency: the
# ThreadSanitizer build runs it too.
set -u
FLRUN=$1
fail=0
want=$(for i in 0 1 2 3 4 5 6 7 8 9; do echo "thread idx: $i, ideal output: $i, real output: [$i]"; done)
for ex in multi_thread multi_thread_shared; do
    for procs in "" "--procs 1"; do
        # shellcheck disable=SC2086
        out=$("$FLRUN" "examples/fluid/$ex.fl" $procs) || { echo "FAIL $ex $procs: flrun exit $?"; fail=1; continue; }
        got=$(printf '%s\n' "$out" | grep '^thread idx' | sort -t: -k2 -n)
        sorted=$(printf '%s\n' "$want" | sort -t: -k2 -n)
        [ "$got" = "$sorted" ] || { echo "FAIL $ex $procs: thread lines:"; printf '%s\n' "$out"; fail=1; }
        last=$(printf '%s\n' "$out" | tail -n 1)
        printf '%s\n' "$last" | grep -Eq '^time: [0-9]+\.[0-9]+(e-[0-9]+)?$' ||
            { echo "FAIL $ex $procs: last line '$last' is not the time"; fail=1; }
        n=$(printf '%s\n' "$out" | wc -l)
        [ "$n" -eq 11 ] || { echo "FAIL $ex $procs: $n lines, expected 11"; fail=1; }
    done
done
[ $fail = 0 ] && echo "10 threads each got their own input back, in both versions, with any number of processors"
exit $fail
