#!/bin/sh
# mpi_test.sh CASE FLC FLRUN MPI_CHECK: one MPI acceptance test (registered by CMakeLists.txt,
# label mpi; run from the project root). Every job goes through run_mpi, which adds what mpirun
# needs here: --allow-run-as-root (root in containers) and --oversubscribe (more ranks than cores).
#   regularized_p2t2              the same for digits_regularized.fl (RMSProp, L2Decay,
#                                 exponential_decay): the state sliced, the LR block on pservers
#   clip_allreduce_t2             the same model with global-norm clipping, on an allreduce plan
#   clip_p2t2                     the same model clipped by value on P=2 T=2: the pservers clip
#                                 and regularize the merged gradient blocks
#   sum_loss                      the digits MLP minimizing the sum of its rows' costs, not the
#                                 mean: P=2 T=2 and allreduce T=3 (an empty share included) sum
#                                 the trainers' gradients, equal to local training; then
#                                 digits_regularized.fl so on P=2 T=2 (L2 on the pservers)
#   fluid_dist_mnist              examples/fluid/dist_mnist.fl (a Fluid program as written) on
#                                 sync P=2 T=2 and allreduce T=2, equal to local training
#   fluid_dist_word2vec, fluid_dist_ctr, fluid_dist_transformer, fluid_dist_se_resnext
#                                 the other distributed test models of examples/fluid the same
#                                 way, on a few rows of their data (a few steps each)
#   fluid_machine_translation     examples/fluid/machine_translation.fl (a DynamicRNN decoder) on
#                                 sync P=2 T=2, equal to local training; with is_sparse=True
#                                 (L2Decay on a table of two lookups) on sync P=2 T=2 and
#                                 allreduce T=2 too
#   fluid_ssd                     examples/fluid/ssd_mobilenet.fl (its variant without batch_norm,
#                                 a sum of unnormalized losses) on sync P=2 T=2, equal to local
#   fluid_dist_simnet_bow         the same for a sequence model: io.sequence data, each trainer's
#                                 share whole sequences, sequence_pool over the shared table
#   sparse_sync                   tests/mpi/ctr_sparse.fl (two is_sparse tables: SelectedRows
#                                 gradients split by block rows and merged on the pservers) on
#                                 P=2 T=2 (lazy Adam, Adagrad) and P=3 T=1 (SGD), equal to local
#                                 training; --stats counts the rows sent
#   sparse_regularized            tests/mpi/ctr_sparse.fl with L2Decay (SGD, lazy Adam) and L1Decay
#                                 on the tables (SGD) on P=2 T=2: the pservers decay each
#                                 trainer's rows (sparse_decay) before the merge, equal to local
#                                 training (a row decayed once per lookup of the global batch);
#                                 allreduce T=2 the same; async P=2 T=2 trains
#   dist_table_regularized        tests/mpi/ctr_sparse.fl -D dist=1 with L2Decay (SGD, lazy Adam)
#                                 and L1Decay (SGD) on P=2 T=2: the pservers decay each trainer's
#                                 rows of their blocks before the merge, equal to local training;
#                                 async P=2 T=2 trains
#   sparse_shared_regularized     tests/mpi/ctr_sparse.fl -D shared=1 (table_a read by two
#                                 lookups) with L2Decay: sync P=2 T=2 and allreduce T=2 decay the
#                                 merged rows once, equal to local; the same distributed on P=2 T=2
#   sparse_multi_opt              tests/mpi/ctr_multi_opt.fl (two minimize() calls: Adam on the
#                                 fc layers, SGD or Adagrad on two is_sparse tables of 100000 and
#                                 10000 rows) on P=2 T=2 and P=3 T=1, equal to local training
#   dist_multi_opt                the same model with both tables is_distributed (-D dist=1):
#                                 SGD or Adagrad on the sharded tables, on P=2 T=2 and P=3 T=1,
#                                 equal to local training (the tables from the shards of --save)
#   sparse_async_allreduce        the same model on an allreduce pair (sparse gradients gathered
#                                 as rows; lazy Adam) equal to local training; async P=2 T=2
#                                 trains, and its tables changed in looked-up rows only
#   dist_table                    the same model with both tables is_distributed (sharded over
#                                 the pservers, rows looked up there, never whole on a rank) on
#                                 P=2 T=2 (lazy Adam) and P=3 T=1 (SGD), equal to local
#                                 training (the tables from the shards of --save); no trainer
#                                 makes or receives a table; --stats counts the looked-up rows;
#                                 async P=2 T=2 trains (the loss falls)
#   equality_p2t2, equality_p1t3  sync training on a plan follows the local run with batch T*b:
#                                 every logged step and the saved parameters and optimizer state
#                                 within 1e-4 relative; p2t2 then resumes both checkpoints (--load)
#   allreduce_t3                  the same for an allreduce plan of 3 trainers (no pservers),
#                                 its checkpoint resumed too
#   async                         P=2 T=2 async reaches test accuracy >= 0.93
#   seed                          the hand-written MPMD job (seed_server + 2 seed_workers) trains
#   kill                          SIGKILL of a trainer ends the job non-zero within 10 s, naming it
#   stall                         a stopped pserver is reported by the peer timeout, naming it
#   stall_trainer                 the same for the one trainer of P=1 T=1 jobs, sync and async
#   bad_jobs                      jobs that cannot start (a bad plan, a plan that does not
#                                 verify, one rank failing, a plan beside a program, two plans,
#                                 sync trainers and async pservers, ranks with different seeds,
#                                 epochs, batch sizes, --save or --timeout, trainers reading
#                                 different data) end at once, non-zero, saying why; --data-dir
#                                 on one rank only (the same data) trains
#   wrong_np                      -np different from the plan's ranks: both numbers, non-zero
#   checkpoint                    --checkpoint-every in a P=2 T=2 job, a pserver SIGKILLed, the job
#                                 resumed: the uninterrupted job's log and parameters, byte for
#                                 byte; the checkpoint resumed by a P=1 job within 1e-6; a
#                                 decaying learning rate and RMSProp's state, on the trainers
#                                 (allreduce T=2) and on the pservers (P=2 T=2), resumed byte
#                                 for byte
#   trainers                      --trainers N: a P=2 T=3 and an allreduce T=3 plan on 2 trainers,
#                                 a P=2 T=2 job resumed on 1 trainer, and ctr_sparse.fl's P=2 T=2
#                                 plan on 1 trainer, equal to local training on the plan's global
#                                 batch; wrong counts refused
#   launch                        flrun PLAN outside mpirun starts the job itself: the same log
#                                 as the mpirun line; bad --hosts and --hostfile refused; with
#                                 --restarts a SIGKILLed pserver's job restarts from its last
#                                 checkpoint and ends byte for byte as the uninterrupted job; a
#                                 job that fails for its own error is not restarted
#   report                        what a job shows besides its log: digits_regularized.fl (its
#                                 learning rate decaying on the pservers) on sync P=2 T=2 with
#                                 --profile --timeline, --tensorboard and --plot: trainer 0
#                                 prints one profiler table per rank, in rank order, each within
#                                 5% of that rank's op spans (tests/e2e/check_profile.py); writes
#                                 the event file, whose learning rate (asked from the pserver) is
#                                 step by step the local run's (tests/e2e/check_tfevents.py), and
#                                 the picture, named after the job's shape; a hand-written job
#                                 whose workers alone profile does not start, naming the ranks
#   threads                       kernel threads: 1 per rank by default, --threads 2 on every
#                                 rank (--stats says so), --threads 0 refused; each rank names
#                                 its GEMM library, FL_GEMM=onednn reaching every rank
set -u
CASE=$1 FLC=$2 FLRUN=$3 CHECK=$4
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
MODEL=tests/mpi/digits_mlp.fl

# FL_TEST_JOB marks this test's ranks (-x exports it to them), so rank_pid never picks a rank of
# another job running at the same time (ctest -j, another checkout's tests).
FL_TEST_JOB=$TMP
export FL_TEST_JOB
run_mpi() { timeout 120 mpirun --allow-run-as-root --oversubscribe -x FL_TEST_JOB "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
# The pid of the flrun process that is MPI rank $1 of this test's running job.
rank_pid() {
    for p in $(pgrep -x flrun); do
        env=$( (tr '\0' '\n' < /proc/$p/environ) 2>/dev/null) || continue
        if echo "$env" | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$env" | grep -qxF "FL_TEST_JOB=$TMP"; then
            echo $p
            return
        fi
    done
}

# Waits (60 s at most) until the job wrote a checkpoint after step $1 into $TMP/ck; CK: its step
ckpt_after() {
    TRIES=0
    while :; do
        CK=$(ls "$TMP/ck" 2>/dev/null | sed -n 's/^step-\([0-9]*\)$/\1/p' | sort -n | tail -1)
        [ -n "$CK" ] && [ "$CK" -gt "$1" ] && return 0
        TRIES=$((TRIES + 1))
        [ $TRIES -lt 600 ] || { cat "$TMP/out"; fail "no checkpoint after step $1 within 60 s"; }
        sleep 0.1
    done
}
# The job's log $1 and saved parameters $2 are the uninterrupted job's ($TMP/ref.csv, $TMP/ref),
# byte for byte
same_as_ref() {
    cmp "$TMP/ref.csv" "$1" || fail "$1 differs from the uninterrupted job's log"
    for f in "$TMP"/ref/*; do cmp "$f" "$2/${f##*/}" || fail "$2: ${f##*/} differs from the uninterrupted job's"; done
}

STATE=velocity # a var of the optimizer's state that checkpoints must hold
DEFS=""
BATCH=50  # the batch size per trainer
RUN=""    # flrun's options for the local run and the job (--data-dir, --epochs)
COLS=""   # the log's columns to compare (none: all)
SKIP=""   # what the names of vars that are not compared contain (each trainer's own state)
PTOL=1e-4 # the parameters' tolerance
# shellcheck disable=SC2086
build() { "$FLC" build $MODEL $DEFS -o "$TMP/d.flp" || fail "flc build"; }

# P T PIECE: local run with batch T*50 vs mpirun on the plan, large tensors in PIECE-byte
# messages: with pieces this small, the pservers stream the weights' Momentum updates (average,
# apply in place and answer piece by piece as they arrive) and update the biases whole
# (P = 0: an allreduce plan of T trainers.)
equality() {
    P=$1 T=$2 PIECE=$3
    build
    "$FLRUN" "$TMP/d.flp" -q $RUN --batch-size $((T * BATCH)) --log "$TMP/local.csv" --save "$TMP/local" ||
        fail "local run"
    if [ $P = 0 ]; then
        "$FLC" transpile "$TMP/d.flp" --mode allreduce --trainers $T -o "$TMP/x.plan" >/dev/null || fail "transpile"
    else
        "$FLC" transpile "$TMP/d.flp" --pservers $P --trainers $T --min-block-size 512 -o "$TMP/x.plan" >/dev/null ||
            fail "transpile"
    fi
    run_mpi -np $((P + T)) "$FLRUN" "$TMP/x.plan" -q $RUN --batch-size $BATCH --piece $PIECE --log "$TMP/dist.csv" \
        --save "$TMP/dist" || fail "mpirun"
    "$CHECK" logs "$TMP/dist.csv" "$TMP/local.csv" 1e-4 $COLS || fail "the logs differ"
    whole "$TMP/dist"
    "$CHECK" params "$WHOLE" "$TMP/local" $PTOL $SKIP || fail "the parameters differ"
    grep -q "$STATE" "$WHOLE/MANIFEST" || fail "the job's checkpoint lacks the optimizer state"
}

# WHOLE: the checkpoint $1 with its vars whole: itself, or (distributed tables saved in shards)
# the checkpoint a local run that loads it saves (the local run assembles each var from its shards)
whole() {
    WHOLE=$1
    grep -q '%shard-' "$1/MANIFEST" || return 0
    WHOLE=$1.whole
    rm -rf "$WHOLE"
    "$FLRUN" "$TMP/d.flp" -q --load "$1" --epochs 0 --save "$WHOLE" || fail "a local run assembling $1's shards"
}

# The checkpoint $1 holds var $2 of $3 rows of 16 floats in the shards $4 (FIRST-END ...) and no
# other (56 bytes of header each, then 64 bytes a row), and not whole
shards() {
    grep -qx "$2" "$1/MANIFEST" && fail "$1 holds $2 whole"
    grep "^$2%shard-" "$1/MANIFEST" | sed "s/^$2%shard-//" | tr '\n' ' ' >"$TMP/got"
    [ "$(cat "$TMP/got")" = "$4 " ] || fail "$1: the shards of $2 are $(cat "$TMP/got")instead of $4"
    for r in $4; do
        [ "$r" = "0-$3" ] && fail "$1: one shard of $2 holds all its $3 rows"
        SIZE=$(stat -c %s "$1/$2%shard-$r")
        [ "$SIZE" = $((56 + 64 * (${r#*-} - ${r%-*}))) ] || fail "$1: $2%shard-$r has $SIZE bytes"
    done
}

# After equality: both checkpoints resumed for one more epoch, the job's by the job (each pserver
# cuts its blocks and their state from the saved whole vars) and the local one locally: the same
# losses and parameters again.
resume() {
    P=$1 T=$2 PIECE=$3
    "$FLRUN" "$TMP/d.flp" -q --batch-size $((T * BATCH)) --load "$TMP/local" --epochs 1 --log "$TMP/local2.csv" \
        --save "$TMP/local2" || fail "local resumed run"
    run_mpi -np $((P + T)) "$FLRUN" "$TMP/x.plan" -q --batch-size $BATCH --piece $PIECE --load "$TMP/dist" --epochs 1 \
        --log "$TMP/dist2.csv" --save "$TMP/dist2" || fail "mpirun --load"
    "$CHECK" logs "$TMP/dist2.csv" "$TMP/local2.csv" 1e-4 || fail "the resumed logs differ"
    "$CHECK" params "$TMP/dist2" "$TMP/local2" 1e-4 || fail "the resumed parameters differ"
}

# One epoch of the plan $TMP/x.plan on 4 ranks with --stats: trainer 0's figures must match
# PATTERN (else the test fails saying --stats shows WHAT): stats_show PATTERN WHAT
stats_show() {
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" -q --epochs 1 --batch-size $BATCH --stats 2>"$TMP/stats" || fail "mpirun --stats"
    cat "$TMP/stats"
    grep -q "rank 0 (trainer 0): $1" "$TMP/stats" || fail "--stats shows $2"
}

# The first ROWS rows of examples/data/FILE in $TMP/data, and RUN reading the program's data from
# there (a few steps of training): cut_data FILE ROWS
cut_data() {
    mkdir -p "$TMP/data" "$TMP/fluid"
    case $1 in
    *.gz) gzip -dc "examples/data/$1" | head -n $2 | gzip >"$TMP/data/$1" ;;
    *) head -n $2 "examples/data/$1" >"$TMP/data/$1" ;;
    esac
    RUN="--data-dir $TMP/fluid"
}

# A program without a reader (one step per flrun, fill_constant inputs): two steps chained by
# checkpoints, locally and as a job on the plan (P = 0: allreduce, T trainers); every trainer
# prints the same loss as the local run (each share is the whole constant batch), within 1e-4, and
# the parameters after the second step are the local ones.
steps() {
    P=$1 T=$2
    build
    if [ $P = 0 ]; then
        "$FLC" transpile "$TMP/d.flp" --mode allreduce --trainers $T -o "$TMP/x.plan" >/dev/null || fail "transpile"
    else
        "$FLC" transpile "$TMP/d.flp" --pservers $P --trainers $T -o "$TMP/x.plan" >/dev/null || fail "transpile"
    fi
    rm -rf "$TMP/l1" "$TMP/l2" "$TMP/d1" "$TMP/d2"
    { "$FLRUN" "$TMP/d.flp" --save "$TMP/l1" && "$FLRUN" "$TMP/d.flp" --load "$TMP/l1" --save "$TMP/l2"; } \
        >"$TMP/local.out" || fail "local runs"
    { run_mpi -np $((P + T)) "$FLRUN" "$TMP/x.plan" --save "$TMP/d1" &&
        run_mpi -np $((P + T)) "$FLRUN" "$TMP/x.plan" --load "$TMP/d1" --save "$TMP/d2"; } >"$TMP/dist.out" ||
        fail "mpirun"
    sed -n 's/^loss .*: //p' "$TMP/local.out" >"$TMP/local.loss"
    sed -n 's/^loss .*: //p' "$TMP/dist.out" >"$TMP/dist.loss"
    cat "$TMP/local.loss" "$TMP/dist.loss"
    awk -v T=$T 'NR == FNR { l[NR] = $1; n = NR; next }
        { k = int((FNR - 1) / T) + 1; d = $1 - l[k]; if (d < 0) d = -d; m = l[k] < 0 ? -l[k] : l[k]
          if (!(d <= 1e-4 * m)) bad = 1; seen = FNR }
        END { exit !(n == 2 && seen == 2 * T && !bad) }' "$TMP/local.loss" "$TMP/dist.loss" ||
        fail "the printed losses differ (local, then the job's: one per trainer and step)"
    "$CHECK" params "$TMP/d2" "$TMP/l2" 1e-4 || fail "the parameters differ"
    grep -q "$STATE" "$TMP/d2/MANIFEST" || fail "the job's checkpoint lacks the optimizer state"
}

# Starts a long job in the background; $1: what to do to rank $2 after 1.5 s (kill -9, kill -STOP);
# $3: the job's ranks; $4: flc transpile's options; the rest: flrun's.
disturb() {
    SIG=$1 RANK=$2 NP=$3 TP=$4
    shift 4
    build
    "$FLC" transpile "$TMP/d.flp" $TP -o "$TMP/x.plan" >/dev/null || fail "transpile"
    rm -f "$TMP"/d.csv*
    run_mpi -np $NP "$FLRUN" "$TMP/x.plan" -q --epochs 1000000 --log "$TMP/d.csv" "$@" >"$TMP/out" 2>&1 &
    JOB=$!
    # the rank is disturbed once the job trains (trainer 0 has opened its log), within 60 s: a
    # fixed wait stopped it in MPI's start-up on a loaded machine, where Open MPI's own
    # MPI_Init has no peer timeout
    PID= TRIES=0
    while [ -z "$PID" ] && [ $TRIES -lt 120 ]; do
        sleep 0.5
        TRIES=$((TRIES + 1))
        ls "$TMP"/d.csv.tmp.* >/dev/null 2>&1 && PID=$(rank_pid $RANK)
    done
    [ -n "$PID" ] || fail "no rank $RANK found training"
    sleep 0.5
    T0=$(now)
    kill $SIG $PID
    wait $JOB
    RC=$?
    T1=$(now)
    cat "$TMP/out"
    SECS=$(echo "$T1 - $T0" | bc)
    echo "job ended with status $RC, $SECS s after kill $SIG of rank $RANK"
    [ $RC -ne 0 ] || fail "the job exited 0"
    [ "$(echo "$SECS <= 10" | bc)" = 1 ] || fail "the job took $SECS s to end"
    sleep 0.5
    [ -z "$(rank_pid 0)$(rank_pid 1)$(rank_pid 2)$(rank_pid 3)" ] || fail "ranks left running"
}

# tests/mpi/ctr_multi_opt.fl -D dist=$1 (Adam on the fc layers, SGD then Adagrad on the tables)
# on P=2 T=2 and P=3 T=1 against the local run
multi_opt() {
    MODEL=tests/mpi/ctr_multi_opt.fl BATCH=25
    for TABLES in sgd adagrad; do
        STATE=moment1
        [ $TABLES = adagrad ] && STATE=table_a_moment
        DEFS="-D tables=$TABLES -D dist=$1"
        equality 2 2 4096
        equality 3 1 4096
    done
}

# tests/cluster/cluster_test.sh sources this file for its functions (CASE lib) and runs the
# jobs on its hosts (its own run_mpi)
[ "$CASE" = lib ] && return 0

case $CASE in
equality_p2t2)
    equality 2 2 1024
    resume 2 2 1024
    ;;
equality_p1t3) equality 1 3 2048 ;;
regularized_p2t2)
    MODEL=tests/mpi/digits_regularized.fl STATE=mean_square
    equality 2 2 1024
    ;;
clip_p2t2)
    MODEL=tests/mpi/digits_regularized.fl STATE=mean_square DEFS="-D clip=2"
    equality 2 2 1024
    ;;
sum_loss)
    DEFS="-D loss=sum -D lr=0.0005" RUN="--epochs 1"
    equality 2 2 1024
    equality 0 3 1024
    # RMSProp and L2Decay: the regularization runs on the pservers, after the sum (left on the
    # trainers, each trainer's L2 term would be added twice: parameters off by up to 1.9).
    # RMSProp divides by the root of the mean square, so float rounding of an element whose
    # gradient is near zero weighs more: measured 5.3e-4 on one element, 7.5e-8 the median
    MODEL=tests/mpi/digits_regularized.fl STATE=mean_square DEFS="-D loss=sum" PTOL=1e-3
    equality 2 2 1024
    ;;
fluid_dist_mnist)
    # examples/fluid/dist_mnist.fl, the Fluid test model as its users write it (Momentum, batch 2
    # per trainer): sync P=2 T=2, then allreduce T=2, each against local training on batch 4
    MODEL=examples/fluid/dist_mnist.fl BATCH=2
    equality 2 2 1024
    equality 0 2 1024
    ;;
fluid_dist_word2vec)
    # SGD on the shared table; 180 training rows, batch 2 per trainer: 45 steps
    MODEL=examples/fluid/dist_word2vec.fl BATCH=2 STATE=learning_rate
    cut_data imikolov_5gram.csv 200
    equality 2 2 1048576
    equality 0 2 1048576
    ;;
fluid_dist_simnet_bow)
    # three LoD inputs summed by sequence_pool over one shared table; 90 training rows, batch 2
    # per trainer; Xavier's initial weights (Fluid's constant ones make the loss's gradient 0).
    # The accuracy divides by the compile-time batch size, so only the loss is compared
    MODEL=examples/fluid/dist_simnet_bow.fl BATCH=2 STATE=learning_rate COLS=loss DEFS="-D xavier=True"
    cut_data simnet.csv.gz 100
    equality 2 2 1048576
    equality 0 2 1048576
    ;;
fluid_machine_translation)
    # a DynamicRNN decoder (its memory, step inputs and the shared embedding 'vemb') and a
    # dynamic_lstm encoder through the transpiler: Adagrad with L2Decay, batch 2 per trainer. The
    # loss is a mean over target words, so each trainer's mean is the global one only when the
    # trainers hold as many words: the 24 pairs are those with 12-word targets (sources of any
    # length), as sync training of token means in Fluid
    # The parameters within 5e-4: two local runs under different GEMM kernels (OpenBLAS's
    # Cooperlake and Prescott, oneDNN's) already differ by up to 1.2e-4 (fc_2.w_0, the softmax
    # weights of words few targets hold: Adagrad divides their rounding by a small root), so the
    # suite's 1e-4 would hold or not by the kernel's rounding (scripts/test_kernels.sh)
    MODEL=examples/fluid/machine_translation.fl BATCH=2 STATE=moment DEFS="-D lr=0.01" PTOL=5e-4
    mkdir -p "$TMP/data" "$TMP/fluid"
    gzip -dc examples/data/mt.csv.gz | awk -F, 'split($3, w, " ") == 12' | head -n 24 | gzip >"$TMP/data/mt.csv.gz"
    RUN="--data-dir $TMP/fluid"
    equality 2 2 1048576
    # is_sparse=True: 'vemb' is read by two lookups, its gradient their merged sum (each
    # distinct row once, decayed once locally); the pserver decays the trainers' merged rows
    # after the merge (each trainer's rows decayed before it were 1.78 off), allreduce merges
    # the gathered rows before the decay
    DEFS="-D lr=0.01 -D is_sparse=True"
    equality 2 2 1048576
    "$FLC" show "$TMP/x.plan" | grep -c "op sparse_decay  X=\[vemb@GRAD.block[01]\] Param=\[vemb.block[01]\]" | grep -qx 2 ||
        fail "the pserver does not decay the merged gradient of vemb"
    equality 0 2 1048576
    ;;
fluid_dist_ctr)
    # accuracy is a mean over the rows, merged exactly; auc is not, and its stat vars are each
    # trainer's own (trainer 0's figure and state are its share's, as in Fluid)
    MODEL=examples/fluid/dist_ctr.fl BATCH=2 STATE=LR_DECAY_COUNTER COLS="loss acc" SKIP=auc_
    cut_data ctr_seq.csv.gz 200
    equality 2 2 1048576
    equality 0 2 1048576
    ;;
fluid_dist_transformer)
    # the small model (tests/e2e's sizes and warm-up), 25 training rows, batch 4 per trainer: 4
    # steps. It minimizes sum_cost, a sum over the tokens (the plans sum the trainers'
    # gradients); the logged sum_cost is the trainers' mean, not compared. The position tables
    # hold the sinusoid encoding (Fluid's test feeds it), so every gradient is a real one and the
    # parameters and Adam's moments agree within the suite's 1e-4 (docs/distributed.md)
    MODEL=examples/fluid/dist_transformer.fl BATCH=4 STATE=moment1 COLS=loss
    DEFS="-D d_model=32 -D d_inner_hid=64 -D d_key=8 -D d_value=8 -D n_layer=2 -D vocab=64"
    cut_data wmt_synth.csv.gz 33
    equality 2 2 1048576
    equality 0 2 1048576
    ;;
fluid_ssd)
    # examples/fluid/ssd_mobilenet.fl (LoD ground truth read by io.sequence, ssd_loss,
    # detection_output, metrics.DetectionMAP) without batch_norm and with ssd_loss unnormalized:
    # the loss is the sum of the images' losses, whose gradients the trainers add. 2 epochs of its
    # 64 images, batch 8 per trainer, on sync P=2 T=2 against the local run on batch 16: every
    # step's per-image loss and the parameters within 1e-4. The logged sum is each trainer's share's
    # (averaged: half the local one) and the mAP state each trainer's own, so neither is compared
    MODEL=examples/fluid/ssd_mobilenet.fl BATCH=8 STATE=moment1 COLS=image_loss SKIP=map_eval
    DEFS="-D batch_norm=False -D normalize=False -D epochs=2"
    equality 2 2 1048576
    ;;
fluid_dist_se_resnext)
    # the 50 layers on 32x32 images, 32 filters in the first stage; batch_norm included: the
    # constant batch makes each trainer's share the whole batch (docs/distributed.md)
    MODEL=examples/fluid/dist_se_resnext.fl DEFS="-D image_size=32 -D filters=32"
    steps 2 2
    steps 0 2
    ;;
sparse_sync)
    # tests/mpi/ctr_sparse.fl: two is_sparse tables whose SelectedRows gradients are split by
    # block rows (split_selected_rows), sent packed and merged on the pservers; every step's loss
    # and the tables (and optimizer state) against the local run on the global batch; batch 25
    # per trainer: 480 rows make a last global batch of 30 (25 + 5) at T=2
    MODEL=tests/mpi/ctr_sparse.fl BATCH=25 STATE=moment1 DEFS="-D opt=lazy_adam"
    equality 2 2 1024
    STATE=moment DEFS="-D opt=adagrad"
    equality 2 2 2048
    STATE=learning_rate DEFS="-D opt=sgd"
    equality 3 1 1024
    # the trainers sent rows, not dense tables: --stats counts the sparse traffic
    stats_show "sparse gradients: [1-9][0-9]* rows, [0-9]* bytes in [0-9]* messages" "no sparse traffic"
    ;;
dist_table)
    # tests/mpi/ctr_sparse.fl -D dist=1: both tables sharded over every pserver; the trainers
    # look their rows up (distributed_lookup_table) and send row gradients; --save gathers the
    # shards into the whole tables, which must equal the local run's
    MODEL=tests/mpi/ctr_sparse.fl BATCH=25 STATE=moment1 DEFS="-D opt=lazy_adam -D dist=1"
    equality 2 2 1024
    # no trainer program makes, reads or receives a table; each server's startup makes its rows
    "$FLC" show "$TMP/x.plan" >"$TMP/show" || fail "flc show"
    sed -n '/=== role trainer 0/,/=== role pserver 0/p' "$TMP/show" | grep -E "(Out|W|Param)=\[table_[ab]\]|Out=\[table_[ab]\.block" &&
        fail "a trainer makes, reads or receives a table"
    grep -c "op distributed_lookup_table " "$TMP/show" | grep -qx 4 || fail "the trainers do not look the tables up"
    sed -n '/=== role pserver 0/,$p' "$TMP/show" | grep -E "op (uniform_random|split) .*Out=\[table_a\]" &&
        fail "a pserver makes table_a whole"
    STATE=learning_rate DEFS="-D opt=sgd -D dist=1"
    equality 3 1 1024
    stats_show "distributed tables: [1-9][0-9]* rows looked up in [0-9]* requests" "no lookups"
    # async P=2 T=2: lookups answered at once, each trainer's rows applied on arrival; it trains
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 --mode async -o "$TMP/a.plan" >/dev/null || fail "transpile"
    run_mpi -np 4 "$FLRUN" "$TMP/a.plan" -q --epochs 3 --batch-size 20 --log "$TMP/a.csv" || fail "mpirun async"
    "$CHECK" falls "$TMP/a.csv" || fail "the loss did not fall (async)"
    ;;
dist_table_regularized)
    # tests/mpi/ctr_sparse.fl -D dist=1 with L2Decay (SGD, lazy Adam) and L1Decay (SGD) on the
    # distributed tables: the servers, which hold the rows, decay each trainer's received rows
    # of their blocks (sparse_decay, coeff * T) before the merge, as for is_sparse tables; the
    # trainers never read the tables. Equal to local training (the tables from --save)
    MODEL=tests/mpi/ctr_sparse.fl BATCH=25 STATE=learning_rate DEFS="-D opt=sgd -D dist=1 -D reg=l2"
    equality 2 2 1024
    "$FLC" show "$TMP/x.plan" >"$TMP/show" || fail "flc show"
    grep -c "op sparse_decay .*X=\[table_a@GRAD.block[01].trainer_[01]\] Param=\[table_a.block[01]\]" "$TMP/show" |
        grep -qx 4 || fail "the pservers do not decay each trainer's rows of table_a"
    sed -n '/=== role trainer 0/,/=== role pserver 0/p' "$TMP/show" | grep "op sparse_decay" &&
        fail "a trainer decays a distributed table"
    STATE=moment1 DEFS="-D opt=lazy_adam -D dist=1 -D reg=l2"
    equality 2 2 1024
    STATE=learning_rate DEFS="-D opt=sgd -D dist=1 -D reg=l1"
    equality 2 2 1024
    # async P=2 T=2: each trainer's rows decayed on arrival; it trains
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 --mode async -o "$TMP/a.plan" >/dev/null || fail "transpile"
    "$FLC" show "$TMP/a.plan" | grep -c "op sparse_decay .*X=\[table_a@GRAD.block[01]\]" | grep -qx 2 ||
        fail "async: no sparse_decay on the pservers"
    run_mpi -np 4 "$FLRUN" "$TMP/a.plan" -q --epochs 3 --batch-size 20 --log "$TMP/a.csv" || fail "mpirun async"
    "$CHECK" falls "$TMP/a.csv" || fail "the loss did not fall (async)"
    ;;
dist_table_ckpt)
    # checkpoints of distributed tables in shards: a P=2 T=2 job (lazy Adam) saves each table
    # and its moments as the pservers' rows, equal to the local run's once assembled
    MODEL=tests/mpi/ctr_sparse.fl BATCH=25 STATE=moment1 DEFS="-D opt=lazy_adam -D dist=1"
    equality 2 2 1024
    for v in table_a table_a_moment1_0 table_a_moment2_0; do shards "$TMP/dist" $v 1000 "0-500 500-1000"; done
    for v in table_b table_b_moment1_0 table_b_moment2_0; do shards "$TMP/dist" $v 300 "0-150 150-300"; done
    grep -qx "table_a_beta1_pow_acc_0" "$TMP/dist/MANIFEST" || fail "the tables' beta powers are not saved whole"
    # resumed for one epoch of the global batch of 50: the local checkpoint locally, the job's on
    # P=3 T=1 (each server reads the rows of its block from the shards that overlap it) and
    # locally (the tables assembled): the same losses as the local run, and the P=3 job's
    # checkpoint (three shards a table) the local one
    "$FLRUN" "$TMP/d.flp" -q --batch-size 50 --load "$TMP/local" --epochs 1 --log "$TMP/local2.csv" \
        --save "$TMP/local2" || fail "local resumed run"
    "$FLRUN" "$TMP/d.flp" -q --batch-size 50 --load "$TMP/dist" --epochs 1 --log "$TMP/dl.csv" ||
        fail "the job's checkpoint resumed locally"
    "$CHECK" logs "$TMP/dl.csv" "$TMP/local2.csv" 1e-4 || fail "the job's checkpoint resumed locally: the logs differ"
    "$FLC" transpile "$TMP/d.flp" --pservers 3 --trainers 1 -o "$TMP/y.plan" >/dev/null || fail "transpile P=3"
    run_mpi -np 4 "$FLRUN" "$TMP/y.plan" -q --batch-size 50 --load "$TMP/dist" --epochs 1 --log "$TMP/dist2.csv" \
        --save "$TMP/dist2" || fail "mpirun --load on P=3 T=1"
    "$CHECK" logs "$TMP/dist2.csv" "$TMP/local2.csv" 1e-4 || fail "the job resumed on P=3 T=1: the logs differ"
    shards "$TMP/dist2" table_a 1000 "0-334 334-667 667-1000"
    whole "$TMP/dist2"
    "$CHECK" params "$WHOLE" "$TMP/local2" 1e-4 || fail "the job resumed on P=3 T=1: the parameters differ"
    # a shard missing: the servers that need its rows fail, naming themselves, the file and the var
    rm "$TMP/dist/table_a%shard-500-1000"
    run_mpi -np 4 "$FLRUN" "$TMP/y.plan" -q --batch-size 50 --load "$TMP/dist" --epochs 1 >"$TMP/out" 2>&1 &&
        fail "a job loaded a checkpoint with a shard missing"
    cat "$TMP/out"
    grep -q "rank [23] (pserver [12]): error: --load $TMP/dist: cannot read the shard 'table_a%shard-500-1000' of 'table_a' (rows \[500, 1000)): No such file or directory" \
        "$TMP/out" || fail "no clear error for a missing shard"
    ;;
sparse_regularized)
    MODEL=tests/mpi/ctr_sparse.fl BATCH=25 STATE=learning_rate DEFS="-D opt=sgd -D reg=l2"
    equality 2 2 1024
    "$FLC" show "$TMP/x.plan" | grep -c "op sparse_decay .*table_a@GRAD.block[01].trainer_[01]\]" | grep -qx 4 ||
        fail "the pservers do not decay each trainer's rows of table_a"
    DEFS="-D opt=sgd -D reg=l1"
    equality 2 2 1024
    # lazy Adam with L2 (2.2e-5 measured); with L1, Adam's step of a near-zero sum (the gradient
    # nearly cancelling coeff * sign) is a whole step of either sign: 6e-4, as Adagrad from 0
    STATE=moment1 DEFS="-D opt=lazy_adam -D reg=l2"
    equality 2 2 1024
    # allreduce: the decay of the gathered rows (every trainer's, duplicates kept)
    STATE=learning_rate DEFS="-D opt=sgd -D reg=l2"
    equality 0 2 1024
    # async P=2 T=2: each trainer's rows decayed on arrival; it trains
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 --mode async -o "$TMP/a.plan" >/dev/null || fail "transpile"
    "$FLC" show "$TMP/a.plan" | grep -q "op sparse_decay .*X=\[table_a@GRAD\]" || fail "async: no sparse_decay on the pservers"
    run_mpi -np 4 "$FLRUN" "$TMP/a.plan" -q --epochs 3 --batch-size 20 --log "$TMP/a.csv" || fail "mpirun async"
    "$CHECK" falls "$TMP/a.csv" || fail "the loss did not fall (async)"
    ;;
sparse_shared_regularized)
    # tests/mpi/ctr_sparse.fl -D shared=1: table_a read by two lookups, L2Decay: its gradient is
    # their merged sum (each distinct row once, decayed once locally); the pservers decay the
    # merged rows of the trainers after the merge, allreduce merges the gathered rows first;
    # then the same table distributed
    MODEL=tests/mpi/ctr_sparse.fl BATCH=25 STATE=learning_rate DEFS="-D opt=sgd -D shared=1 -D reg=l2"
    equality 2 2 1024
    "$FLC" show "$TMP/x.plan" | grep -c "op sparse_decay  X=\[table_a@GRAD.block[01]\]" | grep -qx 2 ||
        fail "the pservers do not decay the merged rows of table_a"
    equality 0 2 1024
    DEFS="-D opt=sgd -D shared=1 -D reg=l2 -D dist=1"
    equality 2 2 1024
    ;;
sparse_multi_opt)
    # each minimize's gradients are the forward's before any update, locally as on the plan's
    # trainers (which run both backwards and no update): every step's loss, the tables, the fc
    # layers and both optimizers' state against the local run on the global batch
    multi_opt 0
    grep -q "learning_rate_1" "$TMP/dist/MANIFEST" || fail "the job's checkpoint lacks the second optimizer's learning rate"
    ;;
dist_multi_opt)
    # the same with both tables is_distributed (sharded over the pservers, each table's rows and
    # its SGD or Adagrad state made and updated there, Adam on the fc layers), the tables
    # gathered from the shards by --save
    multi_opt 1
    "$FLC" show "$TMP/x.plan" | grep -c "op distributed_lookup_table " | grep -qx 2 ||
        fail "the trainer does not look the tables up"
    ;;
sparse_async_allreduce)
    # an allreduce pair gathers the sparse gradients as rows (lazy Adam then updates only the
    # global batch's rows, as locally): equal to local training
    MODEL=tests/mpi/ctr_sparse.fl BATCH=25 STATE=moment1 DEFS="-D opt=lazy_adam"
    equality 0 2 1024
    # async P=2 T=2, SGD: each trainer's rows applied on arrival; the loss falls, and the tables
    # differ from their initial values in rows the data's ids name, and in no other
    DEFS="-D opt=sgd"
    build
    "$FLRUN" "$TMP/d.flp" -q --epochs 0 --save "$TMP/start" || fail "saving the initial values"
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 --mode async --min-block-size 512 -o "$TMP/a.plan" >/dev/null ||
        fail "transpile"
    run_mpi -np 4 "$FLRUN" "$TMP/a.plan" -q --epochs 3 --batch-size 20 --log "$TMP/a.csv" --save "$TMP/async" ||
        fail "mpirun"
    "$CHECK" falls "$TMP/a.csv" || fail "the loss did not fall"
    cut -d, -f1-4 tests/mpi/ctr_sparse.csv | tr , '\n' >"$TMP/ids_a"
    cut -d, -f5-7 tests/mpi/ctr_sparse.csv | tr , '\n' >"$TMP/ids_b"
    "$CHECK" touched "$TMP/async" "$TMP/start" table_a "$TMP/ids_a" || fail "table_a changed outside the looked-up rows"
    "$CHECK" touched "$TMP/async" "$TMP/start" table_b "$TMP/ids_b" || fail "table_b changed outside the looked-up rows"
    ;;
clip_allreduce_t2)
    MODEL=tests/mpi/digits_regularized.fl STATE=mean_square DEFS="-D clip=1"
    equality 0 2 1024
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/p.plan" 2>"$TMP/err" &&
        fail "a pserver plan of a clipped model was made"
    grep -q "global-norm clipping needs every gradient" "$TMP/err" || fail "no clear error for global-norm clipping in a pserver plan"
    ;;
allreduce_t3)
    equality 0 3 1024
    resume 0 3 1024
    ;;
async)
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 --mode async --min-block-size 512 -o "$TMP/a.plan" >/dev/null ||
        fail "transpile"
    run_mpi -np 4 "$FLRUN" "$TMP/a.plan" -q --epochs 10 --log "$TMP/a.csv" || fail "mpirun"
    "$CHECK" min "$TMP/a.csv" acc 0.93 || fail "accuracy below 0.93"
    ;;
seed)
    "$FLC" build examples/seed_server.fl -o "$TMP/ss.flp" && "$FLC" build examples/seed_worker.fl -o "$TMP/sw.flp" ||
        fail "flc build"
    # 16-byte pieces: the hand-written server's payloads (and its answers) in many messages each
    run_mpi -np 1 "$FLRUN" "$TMP/ss.flp" --piece 16 : -np 2 "$FLRUN" "$TMP/sw.flp" -q --piece 16 --log "$TMP/seed.csv" ||
        fail "mpirun"
    "$CHECK" falls "$TMP/seed.csv" || fail "the loss did not fall"
    ;;
kill)
    disturb -9 1 4 "--pservers 2 --trainers 2"
    grep -q "rank 1" "$TMP/out" || fail "the message does not name rank 1"
    ;;
stall)
    disturb -STOP 3 4 "--pservers 2 --trainers 2" --timeout 2
    grep -q "rank 3 (pserver 1)" "$TMP/out" || fail "the message does not name rank 3 (pserver 1)"
    grep -q "peer timeout" "$TMP/out" || fail "no timeout message"
    ;;
stall_trainer)
    # the lone trainer stopped between steps: the pserver has no request of its own to time out
    # (it waited without limit); its heartbeats stop, and the pserver names it
    for mode in sync async; do
        disturb -STOP 0 2 "--pservers 1 --trainers 1 --mode $mode" --timeout 2
        grep -q "rank 1 (pserver 0): error: .*no message from rank 0 (trainer 0) for 2 s (the peer timeout" "$TMP/out" ||
            fail "$mode: the pserver does not name the stopped trainer"
    done
    ;;
bad_jobs)
    # jobs that cannot start end at once, non-zero, saying why (each mistake was once a hang, a
    # misleading message or MPI_ERR_TRUNCATE)
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 1 --trainers 1 -o "$TMP/s.plan" >/dev/null &&
        "$FLC" transpile "$TMP/d.flp" --pservers 1 --trainers 1 --mode async -o "$TMP/a.plan" >/dev/null ||
        fail "transpile"
    expect() { # WHAT PATTERN mpirun-arguments...: the job fails within 10 s and says PATTERN
        WHAT=$1 PAT=$2
        shift 2
        T0=$(now)
        run_mpi "$@" >"$TMP/out" 2>&1
        RC=$?
        SECS=$(echo "$(now) - $T0" | bc)
        sed -n '/^flrun/p' "$TMP/out"
        [ $RC -ne 0 ] || fail "$WHAT: exit status 0"
        [ "$(echo "$SECS <= 10" | bc)" = 1 ] || fail "$WHAT: the job took $SECS s to end"
        grep -q "$PAT" "$TMP/out" || fail "$WHAT: no message '$PAT'"
    }
    "$CHECK" spoil "$TMP/s.plan" "$TMP/mode.plan" mode=bogus || fail "spoil"
    expect "bogus mode" "mode.plan' is invalid: the plan's mode is 'bogus'; expected sync, async or allreduce" \
        -np 2 "$FLRUN" "$TMP/mode.plan" -q
    "$CHECK" spoil "$TMP/s.plan" "$TMP/short.plan" ranks=1 || fail "spoil"
    expect "short rank map" "the plan's rank map has 1 ranks for 2 roles (1 trainers + 1 pservers): one rank per role" \
        -np 1 "$FLRUN" "$TMP/short.plan" -q
    "$CHECK" spoil "$TMP/s.plan" "$TMP/long.plan" ranks=3 || fail "spoil"
    expect "long rank map" "the plan's rank map has 3 ranks for 2 roles" -np 3 "$FLRUN" "$TMP/long.plan" -q
    # a plan whose program does not verify: every rank refuses it before any work, rank 0 says
    # why, once (flc verify's check)
    "$CHECK" spoil "$TMP/s.plan" "$TMP/op.plan" badop=1 || fail "spoil"
    expect "plan refused" "op.plan: pserver 0's main program: unknown op 'no_such_op' (rule: every program passes the IR verifier)" \
        -np 2 "$FLRUN" "$TMP/op.plan" -q --epochs 1000000 --timeout 2
    [ "$(grep -c "unknown op 'no_such_op'" "$TMP/out")" = 1 ] || fail "plan refused: the message is not printed once"
    # one rank's program fails to prepare (its roles as programs of their own, which flrun does
    # not check as a plan): that rank says so and the whole job ends
    "$CHECK" role "$TMP/s.plan" 0 "$TMP/st0.flp" && "$CHECK" role "$TMP/op.plan" 1 "$TMP/bad_ps.flp" || fail "role"
    expect "one rank fails" "rank 1 (pserver 0): error: .*unknown op 'no_such_op'" \
        -np 1 "$FLRUN" "$TMP/st0.flp" -q --epochs 1000000 --timeout 2 : -np 1 "$FLRUN" "$TMP/bad_ps.flp" -q --timeout 2
    # a plan beside a hand-written program (it was MPI_ERR_TRUNCATE)
    "$FLC" build examples/seed_worker.fl -o "$TMP/sw.flp" || fail "flc build"
    expect "plan and program" "the job mixes a plan with hand-written programs: ranks 0-1 run the plan '.*s.plan' and rank 2 runs their own program ('.*sw.flp')" \
        -np 2 "$FLRUN" "$TMP/s.plan" -q : -np 1 "$FLRUN" "$TMP/sw.flp" -q
    expect "two plans" "the ranks run different plans: rank 0 runs '.*s.plan', rank 1 '.*a.plan'" \
        -np 1 "$FLRUN" "$TMP/s.plan" -q : -np 1 "$FLRUN" "$TMP/a.plan" -q
    # programs of their own that announce their roles: an async pserver and a sync trainer
    "$CHECK" role "$TMP/a.plan" 1 "$TMP/aps.flp" && "$CHECK" role "$TMP/s.plan" 0 "$TMP/str.flp" || fail "role"
    expect "sync and async" "the job mixes sync and async: sync trainers on rank 1, async pservers on rank 0" \
        -np 1 "$FLRUN" "$TMP/aps.flp" : -np 1 "$FLRUN" "$TMP/str.flp" -q
    # job-wide options that differ between ranks: named with their values and ranks at the start
    # (different seeds trained overlapping shares and exited 0; different epochs or batch sizes
    # ended after timeouts blaming a peer; a --save on one rank only was ignored)
    "$FLC" transpile "$TMP/d.flp" --mode allreduce --trainers 2 -o "$TMP/ar2.plan" >/dev/null || fail "transpile"
    expect "two seeds" "the ranks run with different --seed: 1 on rank 0 (trainer 0), 2 on rank 1 (trainer 1); every rank of a job needs the same --seed" \
        -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --seed 1 --timeout 3 : -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --seed 2 --timeout 3
    expect "two epochs" "the ranks run with different --epochs: 2 (the program's) on rank 0 (trainer 0), 1 on rank 1 (trainer 1); every trainer of a job needs the same --epochs" \
        -np 1 "$FLRUN" "$TMP/ar2.plan" -q --timeout 3 : -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --timeout 3
    expect "two batch sizes" "the ranks run with different --batch-size: 7 on rank 0 (trainer 0), 50 (the program's) on rank 1 (trainer 1)" \
        -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --batch-size 7 --timeout 3 : -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --timeout 3
    expect "pserver's seed" "the ranks run with different --seed: 7 on rank 0 (trainer 0), 0 (the program's) on rank 1 (pserver 0)" \
        -np 1 "$FLRUN" "$TMP/s.plan" -q --epochs 1 --seed 7 --timeout 3 : -np 1 "$FLRUN" "$TMP/s.plan" -q --epochs 1 --timeout 3
    expect "save on one rank" "the ranks run with different --save: none on rank 0 (trainer 0), '$TMP/ck' on rank 1 (trainer 1)" \
        -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 : -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --save "$TMP/ck"
    expect "timeouts" "the ranks run with different --timeout: 60 s on rank 0 (trainer 0), 3 s on rank 1 (trainer 1)" \
        -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 : -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --timeout 3
    [ -e "$TMP/ck" ] && fail "a job that did not start saved"
    # --data-dir on one rank only: each host may read its own copy (it was "the ranks run different
    # plans: rank 0 runs 'ar2.plan', rank 1 'ar2.plan'"); the same data trains, other data is named
    run_mpi -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --data-dir "$PWD/tests/mpi" : \
        -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "--data-dir on one rank, the same data"; }
    mkdir -p "$TMP/cut/a" "$TMP/examples/data"
    gzip -dc examples/data/digits.csv.gz | head -n 500 | gzip >"$TMP/examples/data/digits.csv.gz"
    expect "other data" "rank 0 (trainer 0): error: the trainers read different data: trainer 0 has 400 training rows (of '$TMP/cut/a/../../examples/data/digits.csv.gz'), trainer 1 has 1438" \
        -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --data-dir "$TMP/cut/a" --timeout 3 : -np 1 "$FLRUN" "$TMP/ar2.plan" -q --epochs 1 --timeout 3
    ;;
wrong_np)
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/x.plan" >/dev/null || fail "transpile"
    run_mpi -np 3 "$FLRUN" "$TMP/x.plan" -q >"$TMP/out" 2>&1
    RC=$?
    cat "$TMP/out"
    [ $RC -ne 0 ] || fail "exit status 0"
    grep -q "needs 4 ranks.*has 3" "$TMP/out" || fail "the message does not name 4 and 3"
    ;;
checkpoint)
    # a P=2 T=2 job (Momentum: the velocities on the pservers) with a checkpoint every 50 steps
    # logs what the job without them does; SIGKILLed (pserver 1) after some checkpoints and
    # resumed, it ends with the uninterrupted job's log and parameters, byte for byte; its
    # checkpoint resumed by a P=1 T=2 job (another plan) ends within 1e-6 of them
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/x.plan" >/dev/null &&
        "$FLC" transpile "$TMP/d.flp" --pservers 1 --trainers 2 -o "$TMP/p1.plan" >/dev/null || fail "transpile"
    JOB="-q --epochs 80 --timeout 5"
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" $JOB --log "$TMP/ref.csv" --save "$TMP/ref" || fail "the uninterrupted job"
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" $JOB --log "$TMP/d.csv" --save "$TMP/d" --checkpoint "$TMP/ck" \
        --checkpoint-every 50 >"$TMP/out" 2>&1 &
    JOB_PID=$!
    ckpt_after 250
    kill -9 "$(rank_pid 3)"
    wait $JOB_PID && fail "the job with a killed pserver exited 0"
    [ -e "$TMP/d.csv" ] && fail "the killed job wrote its log"
    LAST=$(ls "$TMP/ck" | sed -n 's/^step-//p' | sort -n | tail -1)
    echo "killed after the checkpoint of step $LAST"
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" $JOB --log "$TMP/d.csv" --save "$TMP/d" --checkpoint "$TMP/ck" \
        --checkpoint-every 50 --resume >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "the resumed job"; }
    same_as_ref "$TMP/d.csv" "$TMP/d"
    # resumed from the checkpoint after the last step, a job trains nothing and logs and saves
    # what the uninterrupted job did (the pservers answer a request before any step)
    rm -r "$TMP/d" "$TMP/d.csv"
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" $JOB --log "$TMP/d.csv" --save "$TMP/d" --checkpoint "$TMP/ck" \
        --checkpoint-every 50 --resume >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "the job resumed after its last step"; }
    same_as_ref "$TMP/d.csv" "$TMP/d"
    # the last two checkpoints are kept (1150 and 1200): the P=1 job goes on from step 1150
    rm -r "$TMP/ck/step-1200" || fail "no checkpoint after the last step"
    PREV=$(ls "$TMP/ck" | sed -n 's/^step-//p')
    [ "$PREV" = 1150 ] || fail "the checkpoints kept: $(ls "$TMP/ck")"
    run_mpi -np 3 "$FLRUN" "$TMP/p1.plan" $JOB --log "$TMP/p1.csv" --save "$TMP/p1" --checkpoint "$TMP/ck" --resume ||
        fail "the P=1 job resumed from step $PREV"
    "$CHECK" logs "$TMP/p1.csv" "$TMP/ref.csv" 1e-6 || fail "the P=1 job's log"
    "$CHECK" params "$TMP/p1" "$TMP/ref" 1e-6 || fail "the P=1 job's parameters"
    # digits_regularized.fl (RMSProp, a decaying learning rate) as an allreduce T=2 job (the
    # optimizer's state and the learning-rate counter on the trainers) and a P=2 T=2 one (on the
    # pservers): their checkpoints hold both, and a job resumed from the one before the last
    # ends as the uninterrupted job, byte for byte
    "$FLC" transpile tests/mpi/digits_regularized.fl --mode allreduce --trainers 2 -o "$TMP/ra.plan" >/dev/null &&
        "$FLC" transpile tests/mpi/digits_regularized.fl --pservers 2 --trainers 2 -o "$TMP/rp.plan" >/dev/null ||
        fail "transpile digits_regularized.fl"
    for NP in 2 4; do
        [ $NP = 2 ] && PL="$TMP/ra.plan" || PL="$TMP/rp.plan"
        JOB="-q --epochs 6 --timeout 5"
        rm -rf "$TMP/ref" "$TMP/ref.csv" "$TMP/ck" "$TMP/d" "$TMP/d.csv"
        run_mpi -np $NP "$FLRUN" "$PL" $JOB --log "$TMP/ref.csv" --save "$TMP/ref" || fail "$PL: the uninterrupted job"
        CK="--checkpoint $TMP/ck --checkpoint-every 30"
        run_mpi -np $NP "$FLRUN" "$PL" $JOB $CK --log "$TMP/d.csv" --save "$TMP/d" || fail "$PL: the job with checkpoints"
        same_as_ref "$TMP/d.csv" "$TMP/d"
        [ "$(ls "$TMP/ck" | tr '\n' ' ')" = "step-60 step-90 " ] || fail "$PL: the checkpoints kept: $(ls "$TMP/ck")"
        for v in @LR_DECAY_COUNTER@ mean_square; do
            grep -q "$v" "$TMP/ck/step-60/MANIFEST" || fail "$PL: the checkpoint lacks $v"
        done
        rm -r "$TMP/ck/step-90" "$TMP/d" "$TMP/d.csv"
        run_mpi -np $NP "$FLRUN" "$PL" $JOB $CK --resume --log "$TMP/d.csv" --save "$TMP/d" >"$TMP/out" 2>&1 ||
            { cat "$TMP/out"; fail "$PL: the job resumed from step 60"; }
        same_as_ref "$TMP/d.csv" "$TMP/d"
    done
    ;;
trainers)
    # --trainers N runs N of a plan's trainers with the plan's global batch: a P=2 T=3 plan on 2
    # trainers (batch 25: global batches of 75 rows in shares of 38 and 37, the last one 13 + 0)
    # and an allreduce T=3 plan on 2 equal local training on batch 75; a P=2 T=2 job's
    # checkpoint resumed on one trainer (an elastic change) ends equal to local training on 100
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 3 -o "$TMP/t3.plan" >/dev/null &&
        "$FLC" transpile "$TMP/d.flp" --mode allreduce --trainers 3 -o "$TMP/a3.plan" >/dev/null &&
        "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/x.plan" >/dev/null || fail "transpile"
    "$FLRUN" "$TMP/d.flp" -q --batch-size 75 --log "$TMP/l75.csv" --save "$TMP/l75" || fail "local run"
    for plan in t3 a3; do
        NP=4
        [ $plan = a3 ] && NP=2
        run_mpi -np $NP "$FLRUN" "$TMP/$plan.plan" -q --batch-size 25 --trainers 2 --log "$TMP/$plan.csv" \
            --save "$TMP/$plan" || fail "$plan on 2 trainers"
        "$CHECK" logs "$TMP/$plan.csv" "$TMP/l75.csv" 1e-4 || fail "$plan on 2 trainers: the log"
        "$CHECK" params "$TMP/$plan" "$TMP/l75" 1e-4 || fail "$plan on 2 trainers: the parameters"
    done
    "$FLRUN" "$TMP/d.flp" -q --batch-size 100 --epochs 4 --log "$TMP/l100.csv" --save "$TMP/l100" || fail "local run"
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" -q --epochs 4 --checkpoint "$TMP/ck" --checkpoint-every 20 --log "$TMP/e.csv" ||
        fail "the job on 2 trainers"
    rm -r "$TMP/ck/step-60" || fail "no checkpoint at the end"
    run_mpi -np 3 "$FLRUN" "$TMP/x.plan" -q --epochs 4 --checkpoint "$TMP/ck" --checkpoint-every 20 --resume \
        --trainers 1 --log "$TMP/e.csv" --save "$TMP/e" || fail "the job resumed on 1 trainer"
    "$CHECK" logs "$TMP/e.csv" "$TMP/l100.csv" 1e-4 || fail "2 trainers, then 1: the log"
    "$CHECK" params "$TMP/e" "$TMP/l100" 1e-4 || fail "2 trainers, then 1: the parameters"
    # sparse gradients (SelectedRows, Adagrad): the absent trainer's copies hold no rows
    MODEL=tests/mpi/ctr_sparse.fl DEFS="-D opt=adagrad"
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/s.plan" >/dev/null || fail "transpile"
    "$FLRUN" "$TMP/d.flp" -q --batch-size 50 --log "$TMP/l50.csv" --save "$TMP/l50" || fail "local run"
    run_mpi -np 3 "$FLRUN" "$TMP/s.plan" -q --batch-size 25 --trainers 1 --log "$TMP/s.csv" --save "$TMP/s" ||
        fail "the sparse plan on 1 trainer"
    "$CHECK" logs "$TMP/s.csv" "$TMP/l50.csv" 1e-4 || fail "the sparse plan on 1 trainer: the log"
    "$CHECK" params "$TMP/s" "$TMP/l50" 1e-4 || fail "the sparse plan on 1 trainer: the parameters"
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" -q --trainers 1 >"$TMP/out" 2>&1 && fail "-np 4 with --trainers 1 was accepted"
    grep -q "flrun: error: the job runs 1 of the plan's 2 trainers (--trainers): it needs 3 ranks (1 trainer + 2 pservers) but has 4: run mpirun -np 3 flrun .*x.plan --trainers 1" \
        "$TMP/out" || { cat "$TMP/out"; fail "-np 4 with --trainers 1: no message"; }
    "$FLRUN" "$TMP/x.plan" -q --trainers 3 >"$TMP/out" 2>&1
    [ $? = 2 ] && grep -q "flrun: --trainers 3: the plan has 2 trainers; a job runs at most its plan's (transpile it for more)" \
        "$TMP/out" || { cat "$TMP/out"; fail "--trainers 3 of 2"; }
    ;;
launch)
    # flrun PLAN outside mpirun starts the job itself (mpirun -np 4 on this machine): the same
    # log, byte for byte, as the mpirun line; the launcher's options are refused where they do
    # not apply, and hosts without the plan's slots before any work
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 2 --trainers 2 -o "$TMP/x.plan" >/dev/null || fail "transpile"
    run_mpi -np 4 "$FLRUN" "$TMP/x.plan" -q --epochs 1 --log "$TMP/m.csv" || fail "mpirun"
    timeout 120 "$FLRUN" "$TMP/x.plan" -q --epochs 1 --log "$TMP/l.csv" || fail "the launcher"
    cmp "$TMP/m.csv" "$TMP/l.csv" || fail "the launcher's job logs other figures than mpirun's"
    usage() { # WHAT PATTERN flrun-arguments...: exit 2 and PATTERN, nothing run
        WHAT=$1 PAT=$2
        shift 2
        "$@" >"$TMP/out" 2>&1
        RC=$?
        cat "$TMP/out"
        [ $RC = 2 ] || fail "$WHAT: exit status $RC"
        grep -q "$PAT" "$TMP/out" || fail "$WHAT: no message '$PAT'"
    }
    usage "hosts for a program" "flrun: --hosts runs a plan's job: give a .plan (flc transpile)" \
        "$FLRUN" "$TMP/d.flp" --hosts a:2
    usage "few slots" "flrun: the plan needs 4 ranks (2 trainers + 2 pservers) but the hosts have 3 slots (a:2,b:1)" \
        "$FLRUN" "$TMP/x.plan" --hosts a:2,b
    usage "bad hosts" "flrun: --hosts: expected HOST or HOST:SLOTS (slots a number from 1), found 'b:0' in 'a:2,b:0'" \
        "$FLRUN" "$TMP/x.plan" --hosts a:2,b:0
    printf 'a slots=2\n# b\nb max_slots=2\n' >"$TMP/hosts"
    usage "bad hostfile" "flrun: $TMP/hosts:3: expected 'HOST' or 'HOST slots=N', found 'b max_slots=2'" \
        "$FLRUN" "$TMP/x.plan" --hostfile "$TMP/hosts"
    usage "hosts under mpirun" "flrun: --hosts is the launcher's: run flrun PLAN without mpirun" \
        run_mpi -np 4 "$FLRUN" "$TMP/x.plan" --hosts a:4
    usage "elastic without restarts" "flrun: --elastic needs --checkpoint DIR --checkpoint-every STEPS (where the job goes on from) and --restarts N" \
        "$FLRUN" "$TMP/x.plan" --elastic 1:2
    usage "reprobe without elastic" "flrun: --reprobe is how often an elastic job probes the hosts that did not answer: give --elastic MIN:MAX too" \
        "$FLRUN" "$TMP/x.plan" --reprobe 1
    usage "reprobe of 0 s" "flrun: --reprobe needs seconds from 0.1 to 3600, found '0'" \
        "$FLRUN" "$TMP/x.plan" --checkpoint "$TMP/ck" --checkpoint-every 50 --restarts 1 --elastic 1:2 --reprobe 0
    usage "curves of a restarted job" "flrun: --plot: a restarted job goes on from a checkpoint and would draw only the steps after it; draw its --log (which holds them all) with flc plot" \
        "$FLRUN" "$TMP/x.plan" --checkpoint "$TMP/ck" --checkpoint-every 50 --restarts 1 --plot "$TMP/p.svg"
    # --restarts 1: pserver 1 SIGKILLed after some checkpoints, the job restarts from the last
    # and ends with the uninterrupted job's log and parameters, byte for byte
    JOB="-q --epochs 60 --timeout 5"
    timeout 120 "$FLRUN" "$TMP/x.plan" $JOB --log "$TMP/ref.csv" --save "$TMP/ref" || fail "the uninterrupted job"
    timeout 120 "$FLRUN" "$TMP/x.plan" $JOB --log "$TMP/r.csv" --save "$TMP/r" --checkpoint "$TMP/ck" \
        --checkpoint-every 50 --restarts 1 >"$TMP/out" 2>&1 &
    JOB_PID=$!
    ckpt_after 150
    kill -9 "$(rank_pid 3)"
    wait $JOB_PID || { cat "$TMP/out"; fail "the job with --restarts 1 failed"; }
    cat "$TMP/out"
    grep -q "^flrun: launcher [0-9:]*: restart 1 of 1: 4 ranks (2 trainers, 2 pservers) on this machine, from the checkpoint after step [0-9]* " \
        "$TMP/out" || fail "no restart said"
    same_as_ref "$TMP/r.csv" "$TMP/r"
    # an error of the program's own (its data is not there) is not restarted
    timeout 120 "$FLRUN" "$TMP/x.plan" -q --data-dir "$TMP" --restarts 2 >"$TMP/out" 2>&1 && fail "a job without data exited 0"
    cat "$TMP/out"
    grep -q "the job failed with an error of its own (above), which a restart would meet again: no restart" "$TMP/out" ||
        fail "the job without data was not said unrestartable"
    grep -q "restart 1 of" "$TMP/out" && fail "the job without data was restarted"
    ;;
threads)
    # kernel threads in a job: 1 per rank by default, --threads N honoured on every rank
    build
    "$FLC" transpile "$TMP/d.flp" --pservers 1 --trainers 1 -o "$TMP/x.plan" >/dev/null || fail "transpile"
    for n in default 2; do
        [ $n = default ] && opt="" || opt="--threads $n"
        # shellcheck disable=SC2086
        run_mpi -np 2 "$FLRUN" "$TMP/x.plan" -q --epochs 1 --stats $opt >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "job ($n)"; }
        [ $n = default ] && want="1 kernel thread" || want="$n kernel threads"
        [ "$(grep -c "^flrun: stats rank [01] ([a-z]* 0): $want, gemm \(openblas\|onednn\|onednn+openblas\) [A-Za-z0-9_+]* (" "$TMP/out")" = 2 ] ||
            { cat "$TMP/out"; fail "--threads $n: both ranks should report '$want' and their GEMM"; }
    done
    # the GEMM library each rank runs: FL_GEMM in the job's environment reaches every rank
    (unset FL_DNNL; FL_GEMM=onednn run_mpi -np 2 "$FLRUN" "$TMP/x.plan" -q --epochs 1 --stats) >"$TMP/out" 2>&1 ||
        { cat "$TMP/out"; fail "job (FL_GEMM=onednn)"; }
    [ "$(grep -c "^flrun: stats rank [01] ([a-z]* 0): 1 kernel thread, gemm onednn " "$TMP/out")" = 2 ] ||
        { cat "$TMP/out"; fail "FL_GEMM=onednn: both ranks should report 'gemm onednn'"; }
    run_mpi -np 2 "$FLRUN" "$TMP/x.plan" -q --threads 0 >"$TMP/out" 2>&1 && fail "--threads 0 was accepted"
    grep -q "flrun: --threads needs a number of threads from 1 to 256, found '0'" "$TMP/out" || { cat "$TMP/out"; fail "--threads 0: no message"; }
    ;;
report)
    "$FLRUN" tests/mpi/digits_regularized.fl -q --batch-size 100 --log "$TMP/local.csv" --tensorboard "$TMP/tb_local" ||
        fail "the local run"
    "$FLC" transpile tests/mpi/digits_regularized.fl --pservers 2 --trainers 2 -o "$TMP/digits_regularized.plan" >/dev/null || fail "transpile"
    run_mpi -np 4 "$FLRUN" "$TMP/digits_regularized.plan" -q --profile --timeline "$TMP/t.json" --log "$TMP/job.csv" \
        --tensorboard "$TMP/tb_job" --plot "$TMP/job.svg" >"$TMP/job.out" || fail "the job"
    python3 tests/e2e/check_profile.py "$TMP/job.out" "$TMP/t.json" --ranks 4 --sort total || fail "the job's tables"
    for r in "rank 0 (trainer 0)" "rank 1 (trainer 1)" "rank 2 (pserver 0)" "rank 3 (pserver 1)"; do
        grep -q "^Process: $r on " "$TMP/job.out" || fail "no table of $r"
    done
    sed -n '/^Process: rank 2/,/^Process: rank 3/p' "$TMP/job.out" | grep -q "^rmsprop " || fail "pserver 0 ran no rmsprop"
    python3 tests/e2e/check_tfevents.py "$TMP/tb_job" --proto tools/tfevents.proto --log "$TMP/job.csv" --lr \
        --same-lr "$TMP/tb_local" || fail "the job's event file"
    python3 tests/e2e/check_svg.py "$TMP/job.svg" --runs "digits_regularized (P=2 T=2)" --metrics loss,acc ||
        fail "the job's picture"

    "$FLC" build examples/seed_server.fl -o "$TMP/s.flp" && "$FLC" build examples/seed_worker.fl -o "$TMP/w.flp" || fail "build"
    run_mpi -np 1 "$FLRUN" "$TMP/s.flp" : -np 2 "$FLRUN" "$TMP/w.flp" --profile >"$TMP/m.out" 2>&1 &&
        fail "a job where some ranks profile started"
    grep -q "^flrun: error: the ranks run with different --profile: off on rank 0 (pserver 0), on (--profile) on ranks 1-2; every rank of a job needs the same --profile$" \
        "$TMP/m.out" || { cat "$TMP/m.out"; fail "the ranks that disagree: the message"; }
    ;;
*) fail "unknown case '$CASE'" ;;
esac
echo "PASS: $CASE"
