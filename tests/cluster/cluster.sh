#!/bin/bash
# cluster.sh: a cluster of N hosts on this machine, for multi-host MPI jobs (docs/cluster.md).
# Run as root. See `cluster.sh --help`.
#
# Each host is a network namespace with a UTS namespace of its own (hostname hostI) and one
# interface, eth0 (10.213.S.I/24), a veth whose other end is a port of a bridge that sits in a
# namespace of its own (the switch): nothing of a cluster is in the machine's own namespace, no
# route leads out of it, so its traffic reaches its hosts and nothing else. With --rate, --delay
# or --loss the switch is flswitch (tests/cluster/flswitch.c), a program in that namespace whose
# TAP devices are the hosts' eth0, and which shapes every frame (the kernel has no netem here).
# A run is named fl<pid> (the pid of the `up` or `run`); its namespaces are fl<pid>-h1..hN and
# fl<pid>-sw, its state /run/flcluster/fl<pid>/ (hostfile, rsh agent, the UTS namespaces' files,
# the switch's log), so runs never collide and a crashed run's leftovers are found by name
# (`down --stale`).
set -u
ME=$(readlink -f "$0")
STATE=/run/flcluster

usage() {
    cat <<'EOF'
usage: cluster.sh up N [--slots S1,S2,...] [--rate R1,...] [--delay D1,...] [--loss L1,...] [--mtu M]
                       [--tcp-retries R]
       cluster.sh run N [up's options] -- COMMAND [ARG]...
       cluster.sh mpirun ID [mpirun's options]...
       cluster.sh launch ID COMMAND [ARG]...
       cluster.sh exec ID HOST COMMAND [ARG]...
       cluster.sh pids ID HOST
       cluster.sh kill ID HOST
       cluster.sh link ID HOST up|down
       cluster.sh shape ID HOST [--rate R] [--delay D] [--loss L]
       cluster.sh down ID... | --stale | --all
       cluster.sh list

Hosts for multi-host MPI jobs on one machine (root needed): network namespaces host1..hostN on
a private bridge, subnet 10.213.S.0/24 (host I is 10.213.S.I), reachable only from each other.

  up N        makes the hosts and prints the cluster's ID (fl<pid>); they stay until `down ID`.
              --slots   each host's slots in the hostfile (one number for all; default 1)
              --rate R  each host's link carries R each way (200mbit, 1gbit, none)
              --delay D each host's link delays a frame by D each way (0.5ms, 2ms, 0): a
                        frame from host A to host B takes A's D + B's D, a round trip twice that
              --loss L  each host's link loses a frame with probability L each way (1%, 100%)
              --rate, --delay and --loss take a list like --slots (host I's value, the last
              for the hosts beyond); with any of them a userspace switch (flswitch, found
              next to the build, or at $FLC_SWITCH) replaces the kernel's bridge
              --mtu M   the links' MTU (576..65000; default 9000 through the switch, 1500
                        on the bridge): larger frames cost the switch less CPU per byte
              --tcp-retries R  the hosts' net.ipv4.tcp_retries2 (1..15): how long TCP
                        retransmits to a silent host (1: ~0.6 s, the default; 3 with --rate or
                        --loss; 15: Linux's own default, up to 15 minutes)
  run N ... -- COMMAND  up, COMMAND with FLC_CLUSTER=ID and FLC_CLUSTER_SH=this script in its
              environment, then down (also on failure, Ctrl-C or TERM); exits with COMMAND's status
  mpirun ID ...  runs mpirun on host1 with the cluster's hostfile, its rsh agent
              (--mca plm_rsh_agent), and MPI's TCP traffic pinned to the test subnet
              (btl tcp,vader,self: shared memory only between ranks of one host)
  launch ID CMD  runs CMD on host1 as a launcher that starts mpirun itself (flrun PLAN
              --hosts ...): with OMPI_MCA_plm_rsh_agent set to the cluster's agent, and
              FLC_CLUSTER_NET to its subnet (for --network)
  exec ID HOST CMD  runs CMD on HOST (1..N or hostI), inside its namespaces
  pids ID HOST      the pids of the processes on HOST
  kill ID HOST      SIGKILLs every process on HOST
  link ID HOST up|down  sets HOST's interface up or down (a cable pulled)
  shape ID HOST ...  changes HOST's link while the cluster runs (--loss 100%: a host cut off;
              a cluster made with --rate, --delay or --loss only: its switch does it)
  down ID...  kills the hosts' processes and removes the hosts, the switch and the state
              --stale: every run whose `run` process is gone (a crashed run), or left half
              made; --all: every run, those made by `up` included
  list        the runs that exist, with their owner's pid
EOF
}

die() {
    echo "cluster.sh: $*" >&2
    exit 1
}

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (it makes network namespaces)"
    for t in ip nsenter unshare; do
        command -v $t >/dev/null || die "'$t' is missing (Debian packages iproute2, util-linux)"
    done
}

# host_of ID HOST: sets NS (the host's net namespace name), UTS (its UTS namespace file), HI.
host_of() {
    local id=$1 h=$2
    HI=${h#host}
    case $HI in '' | *[!0-9]*) die "bad host '$h' (1..N or hostI)" ;; esac
    NS=$id-h$HI UTS=$STATE/$id/uts/h$HI
    [ -e /run/netns/$NS ] || die "no host $HI in cluster $id"
}

# The processes of a net namespace: ip netns pids, plus nothing else (every process of a host
# runs in its net namespace: the agent enters it before starting anything).
ns_pids() { ip netns pids "$1" 2>/dev/null; }

# Kills every process of namespace $1 and waits (up to 5 s) until none is left.
ns_kill() {
    local i p
    for i in $(seq 50); do
        p=$(ns_pids "$1")
        [ -z "$p" ] && return 0
        # shellcheck disable=SC2086
        kill -9 $p 2>/dev/null
        sleep 0.1
    done
    echo "cluster.sh: processes left in $1: $(ns_pids "$1")" >&2
    return 1
}

# down_one ID: removes every piece of run ID that exists (any order of a half-made run).
down_one() {
    local id=$1 ns f rc=0
    case $id in fl[0-9]*) ;; *) die "bad cluster ID '$id' (fl<pid>)" ;; esac
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -x "$id-\(h[0-9]*\|sw\)"); do
        ns_kill "$ns" || rc=1
        ip netns del "$ns" 2>/dev/null || rc=1
    done
    for f in "$STATE/$id"/uts/*; do
        [ -e "$f" ] || continue
        umount "$f" 2>/dev/null
        rm -f "$f"
    done
    rm -rf "${STATE:?}/$id"
    return $rc
}

# The runs that exist: their IDs (from namespaces and state folders).
runs() {
    { ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^\(fl[0-9][0-9]*\)-\(h[0-9]*\|sw\)$/\1/p'
      ls "$STATE" 2>/dev/null | grep -x 'fl[0-9]*'; } | sort -u
}

# stale ID: the run's `run` process is gone, or it was left half made (a cluster made by `up`
# stays until `down ID`).
stale() {
    local o
    o=$(cat "$STATE/$1/owner" 2>/dev/null) || return 0
    [ "$o" = up ] && return 1
    ! kill -0 "$o" 2>/dev/null
}

# Parses up's options into N SLOTS RATE DELAY LOSS; the rest (after --) in REST.
parse_up() {
    N=${1:-}
    case $N in '' | *[!0-9]*) die "up needs the number of hosts (1..200)" ;; esac
    [ "$N" -ge 1 ] && [ "$N" -le 200 ] || die "up needs 1..200 hosts, not $N"
    shift
    SLOTS=1 RATE="" DELAY="" LOSS="" MTU="" TCP_RETRIES=""
    while [ $# -gt 0 ]; do
        case $1 in
        --slots) SLOTS=${2:?--slots needs a value} && shift ;;
        --rate) RATE=${2:?--rate needs a value} && shift ;;
        --delay) DELAY=${2:?--delay needs a value} && shift ;;
        --loss) LOSS=${2:?--loss needs a value} && shift ;;
        --mtu) MTU=${2:?--mtu needs a value} && shift ;;
        --tcp-retries) TCP_RETRIES=${2:?--tcp-retries needs a value} && shift ;;
        --) shift && break ;;
        *) die "unknown option '$1' (cluster.sh --help)" ;;
        esac
        shift
    done
    REST=("$@")
    case $MTU in
    '') ;;
    *[!0-9]*) die "bad --mtu '$MTU' (576..65000)" ;;
    *) [ "$MTU" -ge 576 ] && [ "$MTU" -le 65000 ] || die "bad --mtu '$MTU' (576..65000)" ;;
    esac
    case $TCP_RETRIES in
    '') ;;
    *[!0-9]*) die "bad --tcp-retries '$TCP_RETRIES' (1..15)" ;;
    *) [ "$TCP_RETRIES" -ge 1 ] && [ "$TCP_RETRIES" -le 15 ] || die "bad --tcp-retries '$TCP_RETRIES' (1..15)" ;;
    esac
}

# The switch program for shaped links: $FLC_SWITCH, or the build's.
switch_path() {
    local p
    for p in "${FLC_SWITCH:-}" "$(dirname "$ME")/../../build/tests/cluster/flswitch"; do
        [ -n "$p" ] && [ -x "$p" ] && { readlink -f "$p"; return 0; }
    done
    die "--rate, --delay and --loss need the test switch flswitch: build it (cmake --build build --target flswitch) or set FLC_SWITCH=PATH"
}

# start_switch ID: flswitch in the switch namespace, its TAPs t1..tN made (they become the
# hosts' eth0). A `run` cluster's switch ends with the run (--parent); an `up` one stays until
# `down` kills it with the namespace's processes.
start_switch() {
    local id=$1 dir=$STATE/$1 sw pid i parent=""
    sw=$(switch_path) || exit 1
    [ "$OWNER" = up ] || parent="--parent $$"
    mkfifo "$dir/switch.ctl" || die "cannot make $dir/switch.ctl"
    # shellcheck disable=SC2086
    ip netns exec "$id-sw" "$sw" --ports "$N" ${RATE:+--rate "$RATE"} ${DELAY:+--delay "$DELAY"} \
        ${LOSS:+--loss "$LOSS"} --mtu "${MTU:-9000}" --ready "$dir/switch.ready" --control "$dir/switch.ctl" $parent \
        </dev/null >"$dir/switch.log" 2>&1 &
    pid=$!
    disown "$pid" # `down` kills it: no word from bash about that
    for i in $(seq 100); do
        [ -e "$dir/switch.ready" ] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    die "the switch did not start: $(cat "$dir/switch.log")"
}

# lost_all I: host I's link loses every frame (its --loss is 100%)
lost_all() {
    echo "$LOSS" | awk -F, -v i="$1" '{ v = (i <= NF) ? $i : $NF } END { exit !(v ~ /%$/ && v + 0 >= 100) }'
}

# up_run ID: makes the cluster (the caller removes it on failure).
up_run() {
    local id=$1 sub i s ns dir=$STATE/$1
    # the test subnet must be unknown to the machine (no address, no route in its namespace)
    if ip -4 addr show | grep -q 'inet 10\.213\.' || ip -4 route show table all | grep -q '^\(local \|broadcast \)\?10\.213\.'; then
        die "10.213.0.0/16 is in use on this machine; the test cluster needs it for itself"
    fi
    sub=10.213.$(($$ % 250 + 1))
    RETRIES=1
    [ -n "$RATE$LOSS" ] && RETRIES=3
    [ -n "$TCP_RETRIES" ] && RETRIES=$TCP_RETRIES
    mkdir -p "$dir/uts" || die "cannot make $dir"
    echo "$OWNER" >"$dir/owner"
    echo "$sub.0/24" >"$dir/subnet"
    ip netns add "$id-sw" || die "cannot make a network namespace (ip netns add): is this root with CAP_SYS_ADMIN?"
    ip -n "$id-sw" link set lo up || die "cannot set up the switch's namespace"
    if [ -n "$RATE$DELAY$LOSS" ]; then
        start_switch "$id"
    else
        ip -n "$id-sw" link add br0 type bridge && ip -n "$id-sw" link set br0 up || die "cannot make the bridge"
    fi
    : >"$dir/hosts"
    {
        echo "#!/bin/sh"
        echo "# Open MPI's rsh agent for cluster $id: agent HOST COMMAND..., COMMAND run in HOST's namespaces"
        echo 'h=$1; shift'
        echo 'case $h in'
    } >"$dir/agent"
    for i in $(seq "$N"); do
        ns=$id-h$i
        s=$(echo "$SLOTS" | awk -F, -v i="$i" '{ print (i <= NF) ? $i : $NF }')
        case $s in '' | *[!0-9]*) die "bad --slots '$SLOTS'" ;; esac
        ip netns add "$ns" || die "cannot make namespace $ns"
        : >"$dir/uts/h$i"
        unshare --uts="$dir/uts/h$i" hostname "host$i" || die "cannot make the UTS namespace of host$i"
        if [ -n "$RATE$DELAY$LOSS" ]; then
            # the switch's TAP moves into the host (the switch keeps its file open) and is its eth0
            ip -n "$id-sw" link set "t$i" netns "$ns" && ip -n "$ns" link set "t$i" name eth0 ||
                die "cannot move the switch's t$i into host$i"
        else
            ip -n "$id-sw" link add "p$i" type veth peer name eth0 netns "$ns" || die "cannot make host$i's link"
            ip -n "$id-sw" link set "p$i" master br0 && ip -n "$id-sw" link set "p$i" up ||
                die "cannot plug host$i's link into the bridge"
            if [ -n "$MTU" ]; then
                ip -n "$id-sw" link set "p$i" mtu "$MTU" && ip -n "$ns" link set eth0 mtu "$MTU" ||
                    die "cannot set the MTU of host$i's link to $MTU"
            fi
        fi
        ip -n "$ns" link set lo up && ip -n "$ns" addr add "$sub.$i/24" dev eth0 &&
            ip -n "$ns" link set eth0 up || die "cannot set up host$i's link"
        # a host that drops off the network is given up after ~0.6 s of retransmissions (Linux's
        # default, 15 retries, takes 15 minutes, while mpirun waits to kill the host's ranks); a
        # link with a rate or a loss drops packets by design: 3 retries, ~3 s, not to lose a
        # connection (a delay alone drops none)
        ip netns exec "$ns" sh -c "echo $RETRIES >/proc/sys/net/ipv4/tcp_retries2" || die "cannot set host$i's tcp_retries2"
        echo "host$i slots=$s" >>"$dir/hosts"
        echo "$sub.$i|host$i) n=$ns u=$dir/uts/h$i ;;" >>"$dir/agent"
    done
    {
        echo '*) echo "agent: no host $h in cluster '"$id"'" >&2; exit 255 ;;'
        echo 'esac'
        echo 'exec nsenter --net=/run/netns/$n --uts=$u -- sh -c "$*"'
    } >>"$dir/agent"
    chmod +x "$dir/agent"
    # every host reaches every other (a TCP connect to a closed port is refused: an answer),
    # but those whose link loses every frame (--loss 100%)
    for i in $(seq 2 "$N"); do
        if lost_all 1 || lost_all "$i"; then continue; fi
        nsenter --net=/run/netns/$id-h1 -- bash -c "exec 3<>/dev/tcp/$sub.$i/9" 2>&1 | grep -q refused ||
            die "host1 cannot reach host$i ($sub.$i)"
    done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
-h | --help | help) usage ;;
up)
    need_root
    parse_up "$@"
    [ ${#REST[@]} = 0 ] || die "up takes no command (run N -- COMMAND does)"
    ID=fl$$ OWNER=up
    trap 'down_one $ID; exit 130' INT TERM HUP
    trap 'rc=$?; [ $rc = 0 ] || down_one $ID; exit $rc' EXIT
    up_run $ID
    echo $ID
    ;;
run)
    need_root
    parse_up "$@"
    [ ${#REST[@]} -gt 0 ] || die "run needs a command after --"
    ID=fl$$ OWNER=$$
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    trap 'rc=$?; trap "" INT TERM HUP; [ -n "${CPID:-}" ] && kill $CPID 2>/dev/null; down_one $ID || rc=1; exit $rc' EXIT
    up_run $ID
    export FLC_CLUSTER=$ID FLC_CLUSTER_SH=$ME
    # in the background, so that a signal reaches the trap at once
    "${REST[@]}" &
    CPID=$!
    wait $CPID
    rc=$?
    CPID=
    exit $rc
    ;;
mpirun)
    need_root
    ID=${1:?mpirun needs the cluster ID}
    shift
    [ -f "$STATE/$ID/hosts" ] || die "no cluster $ID"
    SUB=$(cat "$STATE/$ID/subnet")
    host_of "$ID" 1
    # mpirun's connections probe a silent host (TCP keepalive) and give it up 10-15 s after it
    # fell silent: a host cut off ends the job, and its own orted, which loses mpirun, ends its
    # ranks; later than flrun's peer timeout of a few seconds, so that a rank names the host
    # first (a probe can fall just after the link goes down: the 10 s are 5 probes 2 s apart)
    exec nsenter --net=/run/netns/$NS --uts=$UTS -- mpirun --allow-run-as-root --oversubscribe \
        --hostfile "$STATE/$ID/hosts" --mca plm_rsh_agent "$STATE/$ID/agent" \
        --mca btl tcp,vader,self --mca btl_tcp_if_include "$SUB" --mca oob_tcp_if_include "$SUB" \
        --mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 5 "$@"
    ;;
launch)
    need_root
    [ $# -ge 2 ] || die "launch needs ID COMMAND"
    ID=$1
    shift
    [ -f "$STATE/$ID/hosts" ] || die "no cluster $ID"
    host_of "$ID" 1
    exec nsenter --net=/run/netns/$NS --uts=$UTS -- env OMPI_MCA_plm_rsh_agent="$STATE/$ID/agent" \
        FLC_CLUSTER_NET="$(cat "$STATE/$ID/subnet")" "$@"
    ;;
exec)
    need_root
    [ $# -ge 3 ] || die "exec needs ID HOST COMMAND"
    host_of "$1" "$2"
    shift 2
    exec nsenter --net=/run/netns/$NS --uts=$UTS -- "$@"
    ;;
pids)
    need_root
    host_of "${1:?pids needs ID HOST}" "${2:?pids needs ID HOST}"
    ns_pids "$NS"
    ;;
kill)
    need_root
    host_of "${1:?kill needs ID HOST}" "${2:?kill needs ID HOST}"
    ns_kill "$NS"
    ;;
link)
    need_root
    host_of "${1:?link needs ID HOST up|down}" "${2:?link needs ID HOST up|down}"
    case ${3:-} in up | down) ;; *) die "link needs up or down" ;; esac
    ip -n "$NS" link set eth0 "$3"
    ;;
shape)
    need_root
    host_of "${1:?shape needs ID HOST and --rate, --delay or --loss}" "${2:?shape needs ID HOST and --rate, --delay or --loss}"
    ID=$1
    shift 2
    R=- D=- L=-
    while [ $# -gt 0 ]; do
        case $1 in
        --rate) R=${2:?--rate needs a value} && shift ;;
        --delay) D=${2:?--delay needs a value} && shift ;;
        --loss) L=${2:?--loss needs a value} && shift ;;
        *) die "unknown option '$1' of shape (--rate, --delay, --loss)" ;;
        esac
        shift
    done
    [ "$R$D$L" != "---" ] || die "shape needs --rate, --delay or --loss"
    for v in "$R" "$D" "$L"; do
        case $v in *[[:space:],]* | '') die "shape takes one value per option, not '$v'" ;; esac
    done
    CTL=$STATE/$ID/switch.ctl
    [ -p "$CTL" ] || die "cluster $ID has no switch to shape its links (made without --rate, --delay or --loss)"
    SEQ=$$.$(date +%s%N)
    echo "$SEQ $HI $R $D $L" >"$CTL"
    # the switch answers in switch.ctl.ack once the link is shaped
    for i in $(seq 100); do
        A=$(cat "$CTL.ack" 2>/dev/null)
        case $A in
        "$SEQ ok") exit 0 ;;
        "$SEQ "*) die "${A#"$SEQ error: "}" ;;
        esac
        sleep 0.02
    done
    die "the switch of cluster $ID did not answer (see $STATE/$ID/switch.log)"
    ;;
down)
    need_root
    [ $# -gt 0 ] || die "down needs a cluster ID, --stale or --all"
    rc=0
    case $1 in
    --all) set -- $(runs) ;;
    --stale)
        ids=""
        for id in $(runs); do
            stale "$id" && ids="$ids $id"
        done
        # shellcheck disable=SC2086
        set -- $ids
        ;;
    esac
    for id in "$@"; do down_one "$id" || rc=1; done
    exit $rc
    ;;
list)
    for id in $(runs); do
        if stale "$id"; then st="stale (its run ${id#fl} is gone)"
        elif [ "$(cat "$STATE/$id/owner")" = up ]; then st="made by up, kept until down"
        else st="in use by run ${id#fl}"; fi
        echo "$id: $(ip netns list 2>/dev/null | grep -c "^$id-h") hosts, $st"
    done
    ;;
*)
    usage >&2
    exit 2
    ;;
esac
