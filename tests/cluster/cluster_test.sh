#!/bin/sh
# cluster_test.sh CASE FLC FLRUN MPI_CHECK: one multi-host test (label cluster, run from the
# project root as root): the job runs on hosts that tests/cluster/cluster.sh makes (network
# namespaces on a private bridge, MPI over TCP between them), and at the end nothing of the
# cluster may be left: no namespace, no state, no process of the job.
# The jobs leave no process on any host (kill_host and link_down: on the hosts that survive, and on
# the cut-off host3 within 20 s).
#   sync_p2t2       sync P=2 T=2, the trainers on host1, the pservers on host2: every logged
#                   step and the saved parameters equal local training (tests/mpi's equality)
#   sync_p2t4       sync P=2 T=4 on 4 hosts (trainers 0-1 on host1, 2-3 on host2, a pserver on
#                   host3 and one on host4), the same
#   allreduce_t4    an allreduce plan of 4 trainers, one per host, the same
#   link_down       P=2 T=2 on 3 hosts, pserver 1 alone on host3, whose link goes down while the
#                   job trains: the job ends within --timeout + 5 s, non-zero, a trainer naming
#                   "rank 3 (pserver 1 on host3)"; no process is left on host1 and host2
#                   within 5 s of the job's end (their daemons end their ranks when mpirun has
#                   gone: reachable_empty), nor on host3 within 20 s (its daemon gives mpirun
#                   up 10-15 s after the link went down)
#   loss_host       link_down's job and checks, on links through flswitch (--delay 0.1ms), host3's
#                   link set to lose every frame (cluster.sh shape 3 --loss 100%) instead
#   kill_host       the same layout, every process of host3 killed: the job ends within
#                   --timeout + 5 s, non-zero, nothing left on host1-2, and trainer 0 (rank 0,
#                   whose watch connections see rank 3's close: runtime/mpi/watch.c) names
#                   "rank 3 (pserver 1 on host3)" as gone, before mpirun ends the job
#   launch          flrun PLAN --hosts (the launcher starts mpirun itself) runs the same P=2 T=2
#                   job as cluster.sh's mpirun line: the same log and parameters, byte for byte
#   faults          a P=2 T=2 job started by the launcher with --checkpoint-every 50 and
#                   --restarts 3: pserver 1 SIGKILLed, then trainer 1, then pserver 0 stopped
#                   (SIGSTOP), each after a new checkpoint; the job completes with the log and
#                   parameters of the same job without faults, byte for byte
#   hosts           the same job with --restarts 2 on 5 hosts (two spares): host3's link cut,
#                   then host2 lost whole (killed, its link down); each restart leaves the lost
#                   host out and takes a spare; the same log and parameters, byte for byte;
#                   Linux's default tcp_retries2; nothing left on any host once the links are back
#   elastic         --elastic 1:2 on 4 hosts of a slot each: host2 (trainer 1) cut off, the job
#                   goes on with one trainer; host2 back, with two from the next checkpoint; the
#                   log and parameters equal local training on the global batch within 1e-4
#   launch_link_down  link_down's job started by the launcher, on hosts that keep Linux's
#                   default tcp_retries2 (15: mpirun would wait minutes for TCP to give host3
#                   up): the job ends within --timeout + 5 s all the same, no sysctl or MCA
#                   option given; no flrun left on host3 either, and nothing at all once its
#                   link is back
set -u
CASE=$1 FLC=$2 FLRUN=$3 CHECK=$4
HERE=$(dirname "$0")
CLUSTER=$HERE/cluster.sh

if [ "${FLC_CLUSTER:-}" = "" ]; then
    # outside: the cluster around the case, then the check that it is gone
    [ "$(id -u)" = 0 ] || { echo "FAIL: the cluster tests need root (network namespaces): run ctest as root, or -LE cluster"; exit 1; }
    probe=flprobe$$
    if ! ip netns add $probe 2>/tmp/$probe.err; then
        echo "FAIL: cannot make a network namespace here ($(cat /tmp/$probe.err)); the cluster tests need CAP_SYS_ADMIN"
        rm -f /tmp/$probe.err
        exit 1
    fi
    ip netns del $probe
    rm -f /tmp/$probe.err
    case $CASE in
    sync_p2t2) UP="2 --slots 2" ;;
    sync_p2t4) UP="4 --slots 2,2,1,1" ;;
    allreduce_t4) UP="4" ;;
    link_down | kill_host | launch) UP="3 --slots 2,1,1" ;;
    launch_link_down) UP="3 --slots 2,1,1 --tcp-retries 15" ;;
    faults) UP="3 --slots 2,1,1" ;;
    hosts) UP="5 --slots 2,1,1,1,1 --tcp-retries 15" ;;
    elastic) UP="4" ;;
    loss_host) UP="3 --slots 2,1,1 --delay 0.1ms" ;;
    *) echo "FAIL: unknown case '$CASE'" && exit 1 ;;
    esac
    T0=$(date +%s.%N)
    # shellcheck disable=SC2086
    bash "$CLUSTER" run $UP -- sh "$0" "$@" &
    RUN=$!
    wait $RUN
    RC=$?
    ID=fl$RUN
    echo "cluster $ID: $(echo "$(date +%s.%N) - $T0" | bc) s in all, up and down included"
    . "$HERE/left_behind.sh"
    left_behind "$ID" || exit 1
    [ $RC = 0 ] && echo "PASS: $CASE, nothing left behind"
    exit $RC
fi

# inside: the functions of tests/mpi (equality, fail, build ...), their jobs on the cluster
WHAT=$CASE
set -- lib "$FLC" "$FLRUN" "$CHECK"
. tests/mpi/mpi_test.sh
run_mpi() { timeout 120 "$FLC_CLUSTER_SH" mpirun "$FLC_CLUSTER" -x FL_TEST_JOB -x OPENBLAS_NUM_THREADS "$@"; }
# flrun (ARGS: a plan and its options) as the launcher on host1, the ranks on hosts $HOSTS
HOSTS=host1:2,host2,host3
launch() { timeout 120 "$FLC_CLUSTER_SH" launch "$FLC_CLUSTER" sh -c 'exec "$@" --network "$FLC_CLUSTER_NET"' - "$FLRUN" "$@" --hosts $HOSTS; }
on() { "$FLC_CLUSTER_SH" pids "$FLC_CLUSTER" "$1"; }

# fault WHAT: P=2 T=2 on host1 (trainers), host2 (pserver 0), host3 (pserver 1), --timeout 3;
# once the job trains, WHAT is done to host3; the job must end within 8 s, non-zero.
TIMEOUT=3
fault() {
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/x.plan" >/dev/null || fail "transpile"
    if [ "$1" = launch_link_down ]; then
        launch "$TMP/x.plan" -q --epochs 1000000 --timeout $TIMEOUT --log "$TMP/d.csv" >"$TMP/out" 2>&1 &
    else
        run_mpi -np 4 "$FLRUN" "$TMP/x.plan" -q --epochs 1000000 --timeout $TIMEOUT --log "$TMP/d.csv" >"$TMP/out" 2>&1 &
    fi
    JOB=$!
    TRIES=0
    until ls "$TMP"/d.csv.tmp.* >/dev/null 2>&1; do
        TRIES=$((TRIES + 1))
        [ $TRIES -lt 120 ] || fail "the job did not start training within 60 s"
        sleep 0.5
    done
    sleep 1
    T0=$(now)
    case $1 in
    link_down | launch_link_down) "$FLC_CLUSTER_SH" link "$FLC_CLUSTER" 3 down || fail "link down" ;;
    loss_host) "$FLC_CLUSTER_SH" shape "$FLC_CLUSTER" 3 --loss 100% || fail "shape 3 --loss 100%" ;;
    kill_host) "$FLC_CLUSTER_SH" kill "$FLC_CLUSTER" 3 || fail "kill host3" ;;
    esac
    wait $JOB
    RC=$?
    SECS=$(echo "$(now) - $T0" | bc)
    cat "$TMP/out"
    echo "job ended with status $RC, $SECS s after $1 of host3 (--timeout $TIMEOUT)"
    [ $RC -ne 0 ] || fail "the job exited 0"
    [ $RC -ne 124 ] || fail "the job did not end (killed by timeout 120)"
    [ "$(echo "$SECS <= $TIMEOUT + 5" | bc)" = 1 ] || fail "the job took $SECS s to end"
    reachable_empty
}

# Open MPI's daemons on host1-2 (still reachable) end their ranks, and themselves, once mpirun is
# gone: at once when mpirun ended the job, asynchronously when the launcher SIGKILLed a mpirun
# stuck on the cut-off host (each daemon then sees its connection to mpirun close); 5 s at most
reachable_empty() {
    TRIES=0 T1=$(now)
    while LEFT="$(on 1)$(on 2)" && [ -n "$LEFT" ]; do
        TRIES=$((TRIES + 1))
        if [ $TRIES -ge 20 ]; then
            for p in $LEFT; do echo "left: $p $(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | cut -c1-100)"; done
            fail "processes left on host1-2 5 s after the job: $(echo $LEFT)"
        fi
        sleep 0.25
    done
    echo "host1-2 empty $(echo "$(now) - $T1" | bc) s after the job's end"
}

# nothing may be left running on hosts 1..$1 once the jobs have ended (cluster.sh down would
# kill it, and hide it)
idle() {
    for h in $(seq "$1"); do
        [ -z "$(on $h)" ] || fail "processes left on host$h after the jobs: $(on $h)"
    done
}

# A P=2 T=2 job of 100 epochs (1500 steps) with a checkpoint every 50 steps and --restarts $1,
# started by the launcher on $HOSTS in the background (JOB_PID, its output in $TMP/out); first
# the same plan without faults on this machine, the reference ($TMP/ref.csv, $TMP/ref)
CKJOB="-q --epochs 100 --timeout 3"
ckjob_start() {
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/x.plan" >/dev/null || fail "transpile"
    # shellcheck disable=SC2086
    timeout 120 "$FLRUN" "$TMP/x.plan" $CKJOB --log "$TMP/ref.csv" --save "$TMP/ref" || fail "the reference job"
    # shellcheck disable=SC2086
    launch "$TMP/x.plan" $CKJOB --log "$TMP/d.csv" --save "$TMP/d" --checkpoint "$TMP/ck" --checkpoint-every 50 \
        --restarts "$1" >"$TMP/out" 2>&1 &
    JOB_PID=$!
}
# Waits (60 s at most) for the launcher's restart $1; FROM: the step it goes on from
restarted() {
    TRIES=0
    until grep -q "restart $1 of" "$TMP/out"; do
        TRIES=$((TRIES + 1))
        [ $TRIES -lt 600 ] || { cat "$TMP/out"; fail "no restart $1 within 60 s"; }
        sleep 0.1
    done
    FROM=$(sed -n "s/.*restart $1 of .*from the checkpoint after step \([0-9]*\) .*/\1/p" "$TMP/out")
    [ -n "$FROM" ] || { cat "$TMP/out"; fail "restart $1 is not from a checkpoint"; }
}
# The pid of rank $2's flrun on host $1: the youngest, since on a loaded machine the rank of the
# attempt a restart ended may still be on its way out beside the new attempt's
rank_on() {
    BEST= BEST_T=-1
    for p in $(on "$1"); do
        [ "$(cat /proc/$p/comm 2>/dev/null)" = flrun ] || continue
        tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" || continue
        T=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f20) # starttime, field 22
        [ -n "$T" ] && [ "$T" -gt "$BEST_T" ] && BEST=$p BEST_T=$T
    done
    [ -n "$BEST" ] && echo "$BEST"
}
# The job ended well, with the reference job's log and parameters, byte for byte
ckjob_same() {
    wait $JOB_PID
    RC=$?
    cat "$TMP/out"
    [ $RC = 0 ] || fail "the job with restarts ended with status $RC"
    same_as_ref "$TMP/d.csv" "$TMP/d"
    echo "the job's log and parameters are the uninterrupted job's, byte for byte"
}

# host3 gives its processes up within $1 s (its daemon loses mpirun)
host3_empties() {
    TRIES=0
    while [ -n "$(on 3)" ]; do
        TRIES=$((TRIES + 1))
        [ $TRIES -lt $(($1 * 4)) ] || fail "processes left on host3 $1 s after $2: $(on 3)"
        sleep 0.25
    done
}

case $WHAT in
sync_p2t2) equality 2 2 1024 && idle 2 ;;
launch)
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 --min-block-size 512 -o "$TMP/x.plan" >/dev/null ||
        fail "transpile"
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" -q --log "$TMP/m.csv" --save "$TMP/m" || fail "cluster.sh mpirun"
    launch "$TMP/x.plan" -q --log "$TMP/l.csv" --save "$TMP/l" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "the launcher"; }
    cat "$TMP/out"
    cmp "$TMP/m.csv" "$TMP/l.csv" || fail "the launcher's job logs other figures than mpirun's"
    for f in "$TMP"/m/*; do cmp "$f" "$TMP/l/${f##*/}" || fail "the launcher's job saves other values ($f)"; done
    [ "$(ls "$TMP/m" | wc -l)" = "$(ls "$TMP/l" | wc -l)" ] || fail "the checkpoints hold different files"
    idle 3
    ;;
faults)
    # pserver 1 (host3) SIGKILLed, then trainer 1 (host1), then pserver 0 (host2) stopped: each
    # failure restarts the job from its last checkpoint on the same hosts, which all answer
    ckjob_start 3
    ckpt_after 0
    kill -9 "$(rank_on 3 3)" || fail "no pserver 1 on host3"
    restarted 1
    ckpt_after "$FROM"
    kill -9 "$(rank_on 1 1)" || fail "no trainer 1 on host1"
    restarted 2
    ckpt_after "$FROM"
    kill -STOP "$(rank_on 2 2)" || fail "no pserver 0 on host2"
    restarted 3
    ckjob_same
    grep -q "no answer from rank 2 (pserver 0 on host2) for 3 s\|no gradient from\|no message from" "$TMP/out" ||
        fail "no rank names the stopped pserver"
    idle 3
    ;;
hosts)
    # host3's link cut: the job (--timeout 3) restarts on host1, host2 and the spare host4; then
    # host2 lost whole (its processes killed, its link down): on host1, host4 and host5. The hosts
    # keep Linux's default tcp_retries2 (15): the launcher ends each failed attempt itself
    HOSTS=host1:2,host2,host3,host4,host5
    ckjob_start 2
    ckpt_after 0
    T0=$(now)
    "$FLC_CLUSTER_SH" link "$FLC_CLUSTER" 3 down || fail "link down"
    restarted 1
    echo "restart 1 said $(echo "$(now) - $T0" | bc) s after host3's link went down"
    grep -q "host3 does not answer: left out" "$TMP/out" || fail "host3 is not left out"
    grep -q "restart 1 of 2: 4 ranks (2 trainers, 2 pservers) on host1:2,host2:1,host4:1," "$TMP/out" ||
        fail "restart 1 is not on host1, host2 and host4"
    ckpt_after "$FROM"
    "$FLC_CLUSTER_SH" kill "$FLC_CLUSTER" 2 && "$FLC_CLUSTER_SH" link "$FLC_CLUSTER" 2 down || fail "losing host2"
    restarted 2
    grep -q "restart 2 of 2: 4 ranks (2 trainers, 2 pservers) on host1:2,host4:1,host5:1," "$TMP/out" ||
        fail "restart 2 is not on host1, host4 and host5"
    ckjob_same
    "$FLC_CLUSTER_SH" link "$FLC_CLUSTER" 2 up && "$FLC_CLUSTER_SH" link "$FLC_CLUSTER" 3 up || fail "links up"
    host3_empties 40 "its link came back"
    idle 5
    ;;
elastic)
    # --elastic 1:2 on 4 hosts of one slot (trainer 0, trainer 1, pserver 0, pserver 1): host2's
    # link cut, the job goes on with one trainer (host1, host3, host4) from its checkpoint; the
    # link back, the launcher sees host2 answer (probing every 0.5 s: the job on one trainer lasts
    # only a few seconds on an idle machine, less than the default 5 s) and the job goes on with two from its next
    # checkpoint; it ends equal to local training on the global batch (100 rows) within 1e-4. The
    # model is softmax regression (convex): the 64-32-10 MLP amplifies the rounding of two trainers'
    # averaged gradients over these 6400 steps to 5.3e-4, also without faults (docs/cluster.md)
    MODEL=tests/mpi/digits_softmax.fl HOSTS=host1,host2,host3,host4 CKJOB="-q --epochs 400 --timeout 3"
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/x.plan" >/dev/null || fail "transpile"
    # shellcheck disable=SC2086
    "$FLRUN" "$TMP/d.flp" $CKJOB --batch-size 100 --log "$TMP/local.csv" --save "$TMP/local" || fail "local run"
    # shellcheck disable=SC2086
    launch "$TMP/x.plan" $CKJOB --log "$TMP/d.csv" --save "$TMP/d" --checkpoint "$TMP/ck" --checkpoint-every 50 \
        --restarts 2 --elastic 1:2 --reprobe 0.5 >"$TMP/out" 2>&1 &
    JOB_PID=$!
    ckpt_after 0
    "$FLC_CLUSTER_SH" link "$FLC_CLUSTER" 2 down || fail "link down"
    restarted 1
    grep -q "restart 1 of 2: 3 ranks (1 trainer, 2 pservers) on host1:1,host3:1,host4:1," "$TMP/out" ||
        fail "restart 1 is not one trainer on host1, pservers on host3 and host4"
    ckpt_after "$FROM"
    "$FLC_CLUSTER_SH" link "$FLC_CLUSTER" 2 up || fail "link up"
    wait $JOB_PID
    RC=$?
    cat "$TMP/out"
    [ $RC = 0 ] || fail "the elastic job ended with status $RC"
    grep -q "host2 answers: the job stops at its next checkpoint to go on with 2 trainers" "$TMP/out" ||
        fail "host2's return is not said"
    grep -q "the job stopped after its checkpoint of step [0-9]*: 4 ranks (2 trainers, 2 pservers) on host1:1,host2:1,host3:1,host4:1 from now on" \
        "$TMP/out" || fail "the job did not go on with 2 trainers"
    "$CHECK" logs "$TMP/d.csv" "$TMP/local.csv" 1e-4 || fail "the elastic job's log differs from local training's"
    "$CHECK" params "$TMP/d" "$TMP/local" 1e-4 || fail "the elastic job's parameters differ from local training's"
    idle 4
    ;;
launch_link_down)
    fault launch_link_down
    grep -q "rank [01] (trainer [01] on host1): error: .*no answer from rank 3 (pserver 1 on host3) for $TIMEOUT s" "$TMP/out" ||
        fail "no trainer names rank 3 (pserver 1 on host3)"
    # the ranks on the cut-off host3 end themselves (their peer timeout); Open MPI's daemon there
    # keeps its connection to the gone mpirun until TCP gives up (15 retries: minutes) or the link
    # is back, when the launching host refuses it
    for p in $(on 3); do [ "$(cat /proc/$p/comm 2>/dev/null)" = flrun ] && fail "flrun left on the cut-off host3 ($p)"; done
    "$FLC_CLUSTER_SH" link "$FLC_CLUSTER" 3 up || fail "link up"
    host3_empties 40 "its link came back"
    ;;
sync_p2t4) equality 2 4 1024 && idle 4 ;;
allreduce_t4) equality 0 4 1024 && idle 4 ;;
link_down | loss_host)
    fault "$WHAT"
    grep -q "rank [01] (trainer [01] on host1): error: .*no answer from rank 3 (pserver 1 on host3) for $TIMEOUT s" "$TMP/out" ||
        fail "no trainer names rank 3 (pserver 1 on host3)"
    # host3 is cut off: its own daemon gives up on mpirun (TCP keepalive) and ends its ranks
    host3_empties 20 "the job"
    ;;
kill_host)
    fault kill_host
    grep -q "flrun: rank 0 (trainer 0 on host1): error: rank 3 (pserver 1 on host3) is gone" "$TMP/out" ||
        fail "trainer 0 does not name rank 3 (pserver 1 on host3) as gone"
    ;;
*) fail "unknown case '$WHAT'" ;;
esac
echo "PASS: $WHAT"
