#!/bin/sh
# shaping_test.sh FLSWITCH FLNETPROBE: the shaped links of a test cluster (label cluster, run from
# the project root as root). One cluster of 4 hosts through flswitch,
#   --rate 200mbit --delay 2ms --loss 0,0,100%,10%
# (the delay is each link's, one way: a frame from host1 to host2 takes 2 + 2 ms, a round trip
# 8 ms), measured with flnetprobe from host1:
#   - the round trip to host2 (UDP echoes): the least of 20 within 8..11 ms;
#   - a TCP transfer of 24 MB to host2: 200 Mbit/s within +-15% (TCP's payload: the frames'
#     headers take 0.7% of a 9000-byte frame);
#   - host3 (loss 100%) is unreachable: a TCP connect has no answer within 2 s, while host2
#     answers one at once;
#   - host4 (loss 10% on its link, each way): 81% of 100 echoes expected back, 65..95% accepted;
# and at the end nothing of the cluster is left: no namespace, no state, no switch, no link.
set -u
SWITCH=$1 PROBE=$2
HERE=$(dirname "$0")

if [ "${FLC_CLUSTER:-}" = "" ]; then
    [ "$(id -u)" = 0 ] || { echo "FAIL: the cluster tests need root (network namespaces): run ctest as root, or -LE cluster"; exit 1; }
    [ -c /dev/net/tun ] || { echo "FAIL: no /dev/net/tun: the shaped links need the kernel's tun module"; exit 1; }
    T0=$(date +%s.%N)
    FLC_SWITCH=$SWITCH bash "$HERE/cluster.sh" run 4 --rate 200mbit --delay 2ms --loss 0,0,100%,10% -- sh "$0" "$@" &
    RUN=$!
    wait $RUN
    RC=$?
    ID=fl$RUN
    echo "cluster $ID: $(echo "$(date +%s.%N) - $T0" | bc) s in all, up and down included"
    LEFT=""
    ip netns list | grep -q "^$ID-" && LEFT="$LEFT namespaces($(ip netns list | grep "^$ID-" | tr '\n' ' '))"
    [ -e /run/flcluster/$ID ] && LEFT="$LEFT state(/run/flcluster/$ID)"
    ip -o link | grep -q "$ID" && LEFT="$LEFT links"
    P=$(pgrep -f "/run/flcluster/$ID/")
    [ -n "$P" ] && LEFT="$LEFT processes($P)"
    [ -z "$LEFT" ] || { echo "FAIL: left behind:$LEFT"; exit 1; }
    [ $RC = 0 ] && echo "PASS: shaping, nothing left behind"
    exit $RC
fi

fail() {
    echo "FAIL: $*"
    exit 1
}
on() {
    h=$1
    shift
    "$FLC_CLUSTER_SH" exec "$FLC_CLUSTER" "$h" "$@"
}
SUB=$(sed 's|\.0/24$||' "/run/flcluster/$FLC_CLUSTER/subnet")
[ "$(on 1 ip -o link show eth0 | sed 's/.* mtu \([0-9]*\).*/\1/')" = 9000 ] ||
    fail "host1's eth0 has not the switch's MTU 9000"
for h in 2 3 4; do
    on $h "$PROBE" serve 5000 30 &
done
sleep 0.3

OUT=$(on 1 "$PROBE" rtt "$SUB.2" 5000 20) || fail "no echo from host2: $OUT"
echo "host1 -> host2, --delay 2ms on each link: $OUT (expected 8 ms and a little)"
MIN=$(echo "$OUT" | awk '{ print $3 }')
[ "$(echo "$MIN >= 8 && $MIN < 11" | bc)" = 1 ] || fail "round trip $MIN ms, not within 8..11 ms"

OUT=$(on 1 "$PROBE" send "$SUB.2" 5000 24000000) || fail "transfer to host2: $OUT"
echo "host1 -> host2, --rate 200mbit: $OUT"
MBIT=$(echo "$OUT" | awk '{ print $(NF - 1) }')
[ "$(echo "$MBIT >= 170 && $MBIT <= 230" | bc)" = 1 ] || fail "$MBIT Mbit/s, not within 200 Mbit/s +-15%"

OUT=$(on 1 "$PROBE" reach "$SUB.2" 9 2) || fail "host2 does not answer a connect: $OUT"
OUT=$(on 1 "$PROBE" reach "$SUB.3" 9 2) && fail "host3 (--loss 100%) answers: $OUT"
echo "host1 -> host3, --loss 100%: $OUT"
OUT=$(on 1 "$PROBE" rtt "$SUB.3" 5000 3 300) && fail "host3 (--loss 100%) echoes: $OUT"

OUT=$(on 1 "$PROBE" rtt "$SUB.4" 5000 100 100) || fail "no echo from host4: $OUT"
echo "host1 -> host4, --loss 10% on host4's link: $OUT (81% expected)"
GOT=$(echo "$OUT" | sed 's/.*(\([0-9]*\) of.*/\1/')
[ "$GOT" -ge 65 ] && [ "$GOT" -le 95 ] || fail "$GOT of 100 echoes answered, not 65..95"
echo "PASS: shaping"
