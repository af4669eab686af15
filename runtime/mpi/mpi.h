/* mpi.h: the MPI transport of the parameter-server runtime: roles, messages, the pserver loop,
 * failure handling and statistics (docs/distributed.md, "Launching" and "Failures").
 *
 * A job is T trainers and P pservers, one MPI rank each. Roles come from a plan's rank map
 * (fl_mpi_assign_plan: every rank reads the same .plan) or, for MPMD jobs of hand-written
 * programs (`mpirun -np 1 flrun server.flp : -np 2 flrun worker.flp`), from each rank
 * announcing the role its program has (fl_mpi_assign_announce); both go through one announce
 * exchange, so every rank knows what the others run; trainers and pservers are numbered in
 * rank order.
 *
 * Protocol (all on MPI_COMM_WORLD; trainer -> pserver on FL_MPI_TAG_HDR/FL_MPI_TAG_DATA,
 * replies on a per-request tag pair). Every message starts with a fixed header (kind, flags,
 * step, the trainer's rows for the step and the global batch's rows, dtype, shape, payload bytes,
 * reply tag, piece size) followed by the var's name; a payload of at most FL_MPI_INLINE bytes
 * rides in the same message (one small copy), a larger one follows in data messages of
 * FlMpiOptions.piece bytes (FL_MPI_PIECE, 1 MiB; the last may be shorter), sent straight from
 * the tensor's buffer and received straight into the new tensor's buffer (no copies).
 *   GRAD   trainer -> pserver: a gradient (flag ZERO: rows_t = 0, no payload, a zero gradient)
 *   GET    trainer -> pserver: a recv request; the pserver answers with a PARAM message on the
 *          request's tag once the block's update for the step is done (sync) or at once (async);
 *          a sync update of one large gradient with an element-wise optimizer is streamed: the
 *          pserver averages and applies each piece as it has it from every trainer and sends
 *          that piece of the parameter at once, so receiving, updating and answering overlap
 *   PARAM  pserver -> trainer: the reply (ERROR: the reply carries a message instead)
 *   SAVE   trainer 0 -> pserver: write your shards of a checkpoint (fl_mpi_save_ask below)
 *   DONE   trainer -> pserver: the trainer has finished; a pserver returns when all T have
 * Messages of one sender are posted under one lock, so MPI's non-overtaking rule pairs every
 * header with its payload even when several threads of a trainer send at once.
 * Allreduce jobs (no pservers): the FlDist allreduce packs a step's gradients and runs a ring over
 * the trainers' communicator (raw chunks, no headers), one reduction at a time per process.
 *
 * Waiting: every wait is a non-blocking request polled with a short spin, then yields and short
 * sleeps, so no rank sits forever in a blocking MPI call; a peer that stays silent for the
 * timeout (FlMpiOptions.timeout, flrun --timeout) is an error naming its rank and role; waits
 * with no request of their own (a pserver between steps, the barrier before MPI_Finalize) go by
 * heartbeats, which every rank sends every timeout/4 s from a thread of its own. A rank
 * that fails calls fl_mpi_fail, which prints "flrun: rank R (trainer t): message" and ends the
 * whole job with MPI_Abort; a rank killed by a signal makes mpirun end the job.
 *
 * Thread-safety: send/recv (the FlDist) may be called from several threads at once; the rest is
 * for the one thread that drives flrun. MPI is initialised with MPI_THREAD_MULTIPLE.
 * Ownership: fl_mpi_init's FlMpi belongs to the caller; fl_mpi_free finalises MPI.
 */
#ifndef FL_MPI_H
#define FL_MPI_H

#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/rules.h"
#include "runtime/core/dist.h"
#include "runtime/trace.h"

#define FL_MPI_INLINE 8192         /* payloads up to this many bytes travel inside the header */
#define FL_MPI_PIECE (1u << 20)    /* a larger payload travels in data messages of this many bytes */
#define FL_MPI_PIECE_MAX FL_RULE_PIECE_MAX
#define FL_MPI_DEFAULT_TIMEOUT 60.0 /* seconds */

/* How a rank names a peer it lost: a wait that gave up on a silent peer ends its message with
 * FL_MPI_PEER_TIMEOUT, the watch's message on a peer whose connection closed holds
 * FL_MPI_PEER_GONE. The launcher tells a lost peer from a program's own error by them
 * (tools/launch.c: it restarts a job for the first, not for the second). */
#define FL_MPI_PEER_TIMEOUT "(the peer timeout, flrun --timeout)"
#define FL_MPI_PEER_GONE "is gone: its connection to this rank closed without a goodbye"

typedef enum FlMpiRole { FL_MPI_TRAINER, FL_MPI_PSERVER, FL_MPI_ROLE_COUNT } FlMpiRole;

typedef struct FlMpiOptions {
    double timeout; /* seconds a peer may stay silent while this rank waits on it; <= 0: default */
    bool stats;     /* count bytes, messages and time (fl_mpi_print_stats) */
    uint32_t piece; /* bytes per data message of a large payload (a multiple of 8); 0: FL_MPI_PIECE */
    FlTrace *trace; /* NULL, or the recorder of this rank's timeline (flrun --timeline; borrowed):
                     * every rank of the job must have one or none (the announce exchange checks);
                     * then the roles' assignment also measures the clock offsets (fl_mpi_clock)
                     * and sends, receives, barriers and server updates are recorded */
} FlMpiOptions;

typedef struct FlMpi FlMpi;

/* MPI_Init_thread(MPI_THREAD_MULTIPLE). Errors: MPI provides a lower thread level. */
FlStatus fl_mpi_init(const FlMpiOptions *opt, FlMpi **out, FlErr *e) FL_WARN_UNUSED;
/* Waits (polled, with the peer timeout: a silent rank ends the job) until every rank is here,
 * then finalises MPI and frees m (NULL is a no-op). */
void fl_mpi_free(FlMpi *m);

int fl_mpi_rank(const FlMpi *m);
int fl_mpi_size(const FlMpi *m);

/* Roles, collectively: every rank announces what it runs (a plan or its own program, its role
 * and mode, whether it could take the role) in one exchange, and every rank decides from the
 * same records; so on an error every rank returns the same message, which names the ranks at
 * fault (then rank 0 may print it, and every rank calls fl_mpi_free and exits), and on success
 * every rank has its role and a heartbeat thread runs until fl_mpi_free (mpi.c, "liveness").
 * `file`: what this rank runs, for messages. A rank that never joins the exchange within the
 * timeout ends the job (fl_mpi_fail).
 * fl_mpi_assign_plan: roles from the plan's rank map (fl_ir_validate_plan checked the map).
 * `trainers` (1 up to the plan's T; 0: T) of the plan's trainers run: the job's ranks are
 * trainers 0..trainers-1, then the pservers (fl_mpi_plan_role), and the pservers count the
 * absent trainers' gradients as zero ones (a job that lost trainers keeps the plan's global
 * batch: docs/distributed.md, "Elastic jobs").
 * Errors: the job's size differs from the plan's ranks (both numbers and the command to run);
 * ranks running different plans, or a plan beside hand-written programs. */
FlStatus fl_mpi_assign_plan(FlMpi *m, const FlPlan *plan, int trainers, const char *file, FlErr *e) FL_WARN_UNUSED;
/* The plan's role (its index in plan->roles) of rank `rank` in a job of `trainers` of its
 * trainers (0: all). */
int64_t fl_mpi_plan_role(const FlPlan *plan, int trainers, int rank);
/* Roles by announcement, for hand-written MPMD programs: a program with listen_and_serv (or the
 * role "pserver") is a pserver, the others trainers. Errors: no trainer; a plan beside them;
 * sync trainers (barriers, sends marked sync) with async pservers, allreduce trainers with
 * pservers or with other trainers (the message names the ranks and their modes). */
FlStatus fl_mpi_assign_announce(FlMpi *m, const FlBundle *b, const char *file, FlErr *e) FL_WARN_UNUSED;
/* Before the roles are assigned: an option of the job that every rank (trainers_only: every
 * trainer) must have alike, such as flrun's --epochs or --seed. The announce exchange compares
 * them, with the transport's own --timeout and --piece (every rank), and a job whose ranks
 * differ does not start: the message names the option, its values and the ranks holding each
 * ("the ranks run with different --seed: 1 on rank 0 (trainer 0), 2 on rank 1 (trainer 1); ...").
 * `key` is what is compared (any length: its hash travels), `shown` what the message shows of
 * the value (at most FLM_AGREE_SHOWN - 1 bytes are kept). At most FL_MPI_AGREE_MAX options. */
#define FL_MPI_AGREE_MAX 16
void fl_mpi_agree(FlMpi *m, const char *option, const char *key, const char *shown, bool trainers_only);

FlMpiRole fl_mpi_role(const FlMpi *m);
int fl_mpi_index(const FlMpi *m); /* trainer or pserver number */
int fl_mpi_trainers(const FlMpi *m);
int fl_mpi_pservers(const FlMpi *m);
/* "rank 2 (pserver 0)"; "rank 2" before roles are known. Owned by m. */
const char *fl_mpi_who(const FlMpi *m);

/* The transport to attach to the root scope (dist.h); owned by m. */
FlDist *fl_mpi_dist(FlMpi *m);

/* Trainers: the step about to run (0-based, counted over the whole run), the trainer's rows in
 * it and the global batch's rows (0, 0 when unknown: equal weights). */
void fl_mpi_step_begin(FlMpi *m, int64_t step, size_t rows, size_t rows_global);
/* Trainers: completes the step's outstanding sends. */
FlStatus fl_mpi_step_end(FlMpi *m, FlErr *e) FL_WARN_UNUSED;
/* Trainers: gathers n doubles from every trainer to trainer 0, into all[t * n + i] (all may be
 * NULL on the other trainers). Collective over the trainers. */
FlStatus fl_mpi_gather_trainers(FlMpi *m, const double *mine, size_t n, double *all, FlErr *e) FL_WARN_UNUSED;
/* Trainers: trainer 0's n bytes of buf into every trainer's buf (a checkpoint's word whether
 * training goes on). Collective over the trainers; the wait on trainer 0 is the peer timeout's
 * (up to three timeouts while it is alive: it may be writing a checkpoint). */
FlStatus fl_mpi_bcast_trainers(FlMpi *m, void *buf, size_t n, FlErr *e) FL_WARN_UNUSED;
/* Trainers: tells every pserver that this trainer is done. */
FlStatus fl_mpi_finish(FlMpi *m, FlErr *e) FL_WARN_UNUSED;

/* ---- checkpoints whose shards the pservers write (flrun --save of distributed tables) ----
 * Trainer 0 asks every pserver to write its shards into dir (fl_mpi_save_ask: a SAVE message
 * each, before fl_mpi_finish). A pserver holds the request until its loop ends (every trainer
 * done, every update applied: in async mode too, the state after the last trainer's last
 * gradient); then fl_mpi_save_request gives dir (NULL when nobody asked), the pserver writes
 * and answers with fl_mpi_save_answer (error: NULL, or the message trainer 0 fails with, after
 * "rank R (pserver p): "; files and bytes: what it wrote). Trainer 0's fl_mpi_save_wait (after
 * fl_mpi_finish) waits for every answer (the peer timeout applies) and sums the figures. */
FlStatus fl_mpi_save_ask(FlMpi *m, const char *dir, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_mpi_save_wait(FlMpi *m, int64_t *files, int64_t *bytes, FlErr *e) FL_WARN_UNUSED;
const char *fl_mpi_save_request(const FlMpi *m);
FlStatus fl_mpi_save_answer(FlMpi *m, const char *error, int64_t files, int64_t bytes, FlErr *e) FL_WARN_UNUSED;

/* ---- the timeline (FlMpiOptions.trace; timeline.c) ----
 * Clocks: when the roles are assigned, trainer 0 measures every other rank's clock against its
 * own with FLM_CLOCK_ROUNDS ping-pongs (t0 its send, t_r the rank's clock at the reply, t1 its
 * receipt) and keeps the round with the smallest round trip: offset = t_r - (t0 + t1) / 2,
 * off by at most half that round trip. Each rank gets its offset and trainer 0's trace origin. */
typedef struct FlMpiClock {
    int64_t offset_ns; /* this rank's clock minus trainer 0's (0 on trainer 0) */
    int64_t rtt_ns;    /* the round trip of the sample the offset comes from (0 on trainer 0) */
    int64_t origin_ns; /* trainer 0's fl_trace_origin, in trainer 0's clock */
} FlMpiClock;
/* The clock as measured (all zero without a trace). */
void fl_mpi_clock(const FlMpi *m, FlMpiClock *out);
/* Whether this rank is trainer 0 (the rank that writes the job's log and timeline). */
bool fl_mpi_is_lead(const FlMpi *m);
/* This rank's host name (as the announce exchange told it). */
const char *fl_mpi_host(const FlMpi *m);
/* Collective over every rank: trainer 0 gets the n bytes of every rank, in rank order, appended
 * to *all (the others leave it as it is). `what` names the bytes in messages ("the timeline");
 * hint (or NULL) says how to make them fewer when the job's are more than MPI gathers (2 GiB).
 * Polled with the peer timeout. */
FlStatus fl_mpi_gather_bytes(FlMpi *m, const char *what, const char *hint, const char *mine, size_t n, FlBuf *all,
                             FlErr *e) FL_WARN_UNUSED;
/* fl_mpi_gather_bytes of the timeline's events. */
FlStatus fl_mpi_gather_timeline(FlMpi *m, const char *mine, size_t n, FlBuf *all, FlErr *e) FL_WARN_UNUSED;

/* Prints "flrun: rank R (role i): msg" on stderr and ends the whole job (MPI_Abort, exit 1). */
FL_NORETURN void fl_mpi_fail(FlMpi *m, const char *msg);

/* With FlMpiOptions.stats: one line for this rank (steps, bytes and messages sent in total and
 * per step, time in communication and in compute). */
void fl_mpi_print_stats(FlMpi *m, FILE *out);
/* The numbers fl_mpi_print_stats prints (for benchmarks). */
typedef struct FlMpiStats {
    uint64_t bytes, msgs; /* sent by this rank, headers included */
    /* of them, the SelectedRows gradients a trainer sent: their rows, bytes (header and packed
     * payload) and messages */
    uint64_t sparse_rows, sparse_bytes, sparse_msgs;
    int64_t steps;
    double comm, compute; /* seconds */
} FlMpiStats;
void fl_mpi_get_stats(const FlMpi *m, FlMpiStats *out);
/* Compute time measured by the caller (trainers: a step's run minus its communication; the
 * steps a driver marks through FlDist's step_begin/step_end count their own). */
void fl_mpi_add_compute(FlMpi *m, double seconds);

#endif
