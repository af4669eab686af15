#!/bin/sh
# Benchmark (prints figures, never fails on time): goroutines and channels of runtime/sched
# against Go (Debian's golang-go), the same programs side by side in one run
# (tests/bench/chan/bench_chan.{c,go}): unbuffered ping-pong round trips/s, buffered (capacity
# 128) throughput msgs/s, spawn-and-join of 10,000 goroutines (ms). Best of several runs each;
# ratio = ours/Go (for time: Go/ours), so > 1 means faster than Go. Goal: >= 0.5 on each.
# usage: tests/bench/bench_chan.sh        (from the repository root; needs cc, and go for Go)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
$cc -std=gnu11 -O2 -g -I"$root" -o "$tmp/bench_c" "$root/tests/bench/chan/bench_chan.c" \
    "$root/runtime/sched/sched.c" "$root/runtime/sched/chan.c" "$root/runtime/sched/ctx.c" \
    "$root/base/base.c" -lpthread
"$tmp/bench_c" > "$tmp/c.txt"
if command -v go > /dev/null 2>&1; then
    cp "$root/tests/bench/chan/bench_chan.go" "$tmp/main.go"
    (cd "$tmp" && GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOFLAGS=-mod=mod GOPROXY=off \
        GO111MODULE=off go build -o bench_go main.go) && "$tmp/bench_go" > "$tmp/go.txt"
else
    echo "bench_chan: 'go' not found (apt-get install -y golang-go): Go figures skipped" >&2
fi
[ -f "$tmp/go.txt" ] || : > "$tmp/go.txt"
get() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
printf '%-34s %14s %14s %8s\n' benchmark fluidc go ratio
for k in pingpong buffered spawn_ms; do
    c=$(get "$tmp/c.txt" $k); g=$(get "$tmp/go.txt" $k)
    case $k in
    pingpong) name="unbuffered ping-pong (round trips/s)" ;;
    buffered) name="buffered cap 128 (msgs/s)" ;;
    spawn_ms) name="spawn+join 10,000 goroutines (ms)" ;;
    esac
    awk -v n="$name" -v c="$c" -v g="${g:-}" -v k=$k 'BEGIN {
        r = "-"
        if (g != "" && c > 0 && g > 0) r = sprintf("%.2f", k == "spawn_ms" ? g / c : c / g)
        printf "%-34s %14s %14s %8s\n", n, c, (g == "" ? "-" : g), r }'
done
echo "(fluidc: $(get "$tmp/c.txt" threads) worker threads, $(get "$tmp/c.txt" stacks) stacks mmap'd; $(nproc) cores; $(go version 2>/dev/null || echo 'no go'))"
