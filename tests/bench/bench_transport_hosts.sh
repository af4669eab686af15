#!/bin/sh
# Benchmark of the MPI transport between two hosts (prints figures, never fails on time; root):
# a test cluster of 2 hosts (tests/cluster/cluster.sh) whose links are shaped by flswitch to
# RATE each way and DELAY one way (default 1gbit, 0.5ms: a frame from host1 to host2 takes 1 ms,
# a round trip 2 ms), rank 0 (the trainer) on host1, rank 1 (the pserver) on host2, one job
# (bench_mpi --transfer) with both figures:
#   - a 16 MiB parameter through the pserver path (tests/bench/big_param.fl, P=1 T=1: the
#     trainer sends the 16 MiB gradient, send_barrier, receives the 16 MiB parameter) vs a raw
#     MPI_Send/MPI_Recv ping-pong of 16 MiB between the same two ranks, through the same switch:
#     seconds per step (best of ROUNDS) and the ratio raw/path (goal >= 0.9x);
#   - the bytes per step on host1's link (Ethernet frames received + sent by its eth0) and the
#     bytes MPI carried per step, vs the plan's minimum: 2 x 16 MiB per step per trainer link;
#   - the time the link's rate alone allows (16 MiB of frames at RATE: once for the path, whose
#     two directions overlap, twice for the ping-pong), and the switch's CPU: seconds per Gbit it
#     forwarded in the job, and the share of a core it needs to fill the link both ways at RATE
#     (near 100%, the switch, not the link, bounds the figures).
# usage: tests/bench/bench_transport_hosts.sh [BUILD_DIR]
#        (env: ROUNDS=10 RATE=1gbit DELAY=0.5ms MTU=9000: the links' MTU, cluster.sh --mtu;
#        MPI_ARGS: more options for mpirun, such as --mca NAME VALUE)
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
flc=$build/tools/flc bench=$(readlink -f "$build/tests/mpi/bench_mpi") sw=$build/tests/cluster/flswitch
for f in "$flc" "$bench" "$sw"; do
    [ -x "$f" ] || { echo "bench_transport_hosts: $f not found; build first"; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "bench_transport_hosts: needs root (the test cluster's network namespaces)"; exit 2; }
RATE=${RATE:-1gbit} DELAY=${DELAY:-0.5ms} ROUNDS=${ROUNDS:-10} MTU=${MTU:-9000}
export OPENBLAS_NUM_THREADS=1 FLC_SWITCH="$sw" MPI_ARGS="${MPI_ARGS:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$flc" build "$here/big_param.fl" -o "$tmp/big.flp"
"$flc" transpile "$tmp/big.flp" --pservers 1 --trainers 1 -o "$tmp/big.plan" >/dev/null

# inside the cluster: the switch's CPU time (clock ticks) and the bytes of host1's link (every
# frame of the job crosses it) around the job
cat >"$tmp/job.sh" <<'EOF'
set -eu
swpid=$(ip netns pids "$FLC_CLUSTER-sw")
ticks() { awk '{ print $14 + $15 }' /proc/$swpid/stat; }
bytes() { "$FLC_CLUSTER_SH" exec "$FLC_CLUSTER" 1 cat /proc/net/dev | awk '$1 == "eth0:" { print $2 + $10 }'; }
c0=$(ticks) b0=$(bytes)
# shellcheck disable=SC2086
"$FLC_CLUSTER_SH" mpirun "$FLC_CLUSTER" -np 2 -x OPENBLAS_NUM_THREADS -x FL_BENCH_LINK=eth0 ${MPI_ARGS:-} "$@"
c1=$(ticks) b1=$(bytes)
echo "switch_cpu_per_gbit $(echo "($c1 - $c0) / $(getconf CLK_TCK) / (($b1 - $b0) * 8 / 10^9)" | bc -l)"
# the switch's counters: frames its full queues dropped (TCP then slows down)
log=/run/flcluster/$FLC_CLUSTER/switch.log
kill -USR1 "$swpid"
for i in $(seq 50); do grep -q " down " "$log" && break; sleep 0.05; done
awk '$3 == "up" || $3 == "down" { d += $7 } END { print "queue_drops", d + 0 }' "$log"
EOF
bash "$here/../cluster/cluster.sh" run 2 --rate "$RATE" --delay "$DELAY" --mtu "$MTU" -- \
    sh "$tmp/job.sh" "$bench" --transfer "$tmp/big.plan" "$ROUNDS" >"$tmp/out"
awk -v rate="$RATE" -v delay="$DELAY" -v mtu="$MTU" '
function bits(r) { # a cluster.sh rate in bits/s
    if (r ~ /gbit$/) return r * 1e9; if (r ~ /mbit$/) return r * 1e6; if (r ~ /kbit$/) return r * 1e3
    if (r ~ /gbps$/) return r * 8e9; if (r ~ /mbps$/) return r * 8e6; if (r ~ /kbps$/) return r * 8e3
    if (r ~ /bps$/) return r * 8; return r + 0
}
{ v[$1] = $2 }
END {
    mib = 16 * 1048576
    # 16 MiB in frames of the MTU: MTU - 52 bytes of TCP payload (IP, TCP with timestamps) per
    # frame of MTU + 14 (Ethernet)
    wire = bits(rate) ? mib / (mtu - 52) * (mtu + 14) * 8 / bits(rate) : 0 # rate none: no bound
    printf "2 hosts, links of %s each way with %s one-way delay each, MTU %d (flswitch), rank 0 (trainer) on host1, rank 1 on host2\n", rate, delay, mtu
    printf "%-62s %10s %10s %8s %s\n", "figure", "path", "raw MPI", "ratio", "goal"
    printf "%-62s %8.3f s %8.3f s %7.2fx %s\n", "seconds per step: 16 MiB each way (pserver path vs ping-pong)", v["path_ms"] / 1e3, v["raw_ms"] / 1e3, v["raw_ms"] / v["path_ms"], ">= 0.9x"
    if (wire) printf "%-62s %8.3f s %8.3f s\n", "  the link rate alone (both directions at once / one after the other)", wire, 2 * wire
    printf "%-62s %10.0f %10.0f %7.4f%% %s\n", "bytes per step on host1 link (frames) vs 2 x 16 MiB", v["link_bytes"], v["min_bytes"], 100 * (v["link_bytes"] / v["min_bytes"] - 1), sprintf("(headers: %.2f%%)", 6600 / (mtu - 52))
    printf "%-62s %10.0f %10.0f %7.4f%%\n", "bytes per step MPI carried (both ranks) vs 2 x 16 MiB", v["wire_bytes"], v["min_bytes"], 100 * (v["wire_bytes"] / v["min_bytes"] - 1)
    need = v["switch_cpu_per_gbit"] * 2 * bits(rate) / 1e9
    printf "%-62s %10d\n", "frames the switch dropped (queues full) in the job", v["queue_drops"]
    printf "%-62s %8.3f s\n", "the switch CPU per Gbit it forwarded", v["switch_cpu_per_gbit"]
    if (need) printf "%-62s %8.0f %%\n", "  of one core, to fill the link both ways at the rate", 100 * need
    if (need > 0.85) print "note: the switch needs most of a core at this rate: it, not the link, may bound these figures (docs/cluster.md)"
}' "$tmp/out"
