/* simulate.h: a discrete-event model of one step of a sync plan on a described cluster, from a
 * calibration of the machine's kernels (`flc calibrate`, `flc simulate`; docs/simulate.md).
 *
 * Inputs, each a small text file of its own:
 *   - a calibration (FlSimCalib): GEMM GFLOP/s at a few shapes, element-wise, optimizer and
 *     memcpy bandwidths (GB/s), the executor's fixed cost per op (µs). `NAME VALUE UNIT` lines.
 *   - a cluster spec (FlSimCluster): hosts, where the ranks go, each host's link (bandwidth,
 *     latency) and compute factor, the link between ranks of one host (`local`). `;` may stand
 *     for a newline, so a spec fits on a command line.
 * Both parsers report the first error as "WHERE:LINE: message" (WHERE: the file's name, or
 * "<cluster>" / "<calibration>" for text given inline) and set nothing else.
 *
 * The model (fl_sim_run) walks the plan's real programs: each trainer's main block in order
 * (ops' shapes with the batch dimension set → FLOPs and bytes → seconds from the calibration),
 * a send posting its gradient in pieces of `piece` bytes on the links at the moment the
 * gradient is produced, the GETs of the run of recv ops posted at its first recv; each pserver
 * (one thread) updating a block's piece once every trainer's piece of it is in (the pserver's
 * streamed update), answering the GETs piece by piece. A link is a resource per host and
 * direction (ranks of a host share it), which the messages on it at once share fairly (`links
 * shared`, the default) or take one after the other (`links fifo`); ranks of one host share the
 * host's `local` channel, first come, first served. A
 * message between hosts above the sender's eager limit waits for Open MPI's rendezvous (a round
 * trip, the receiver's look, the sender's next MPI call) before its data takes the links.
 * The step ends when every trainer has every parameter back, or, when that is later, when the
 * busiest core has done the work of its ranks (cores shared by ranks, `machine ... bind=core`:
 * a core does its ranks' compute, updates, message handling and shared-memory copies one after
 * the other). Deterministic: the same inputs
 * give the same figures, bit for bit.
 *
 * Ownership: results and parsed structures are owned by the caller and released with their
 * _fini; the plan is borrowed. Not thread-safe per object; no globals.
 */
#ifndef FL_SIMULATE_H
#define FL_SIMULATE_H

#include "base/base.h"
#include "compiler/ir/ir.h"

typedef FL_VEC(int64_t) FlSimInts;

/* ---- what the model takes (docs/simulate.md, "Bounds"): beyond these figures no machine or
 * network is described and a step's figures would lose their sense (a step of 1e300 s); the
 * parsers and fl_sim_run refuse them, naming the limit ---- */
#define FL_SIM_TIME_MAX 10.0     /* s: a latency, a message's cost, a wake-up, a look */
#define FL_SIM_RATE_MIN 125.0    /* bytes/s of a link or a switch thread: 1 kbit/s */
#define FL_SIM_RATE_MAX 1e13     /* bytes/s: 10 TB/s */
#define FL_SIM_COMPUTE_MIN 1e-3  /* a host's compute= factor */
#define FL_SIM_COMPUTE_MAX 1e3
#define FL_SIM_CALIB_RATE_MIN 1e-3 /* GFLOP/s, GB/s of a calibration */
#define FL_SIM_CALIB_RATE_MAX 1e6
#define FL_SIM_CALIB_US_MAX 1e7   /* µs of a calibration's op_overhead, wakeup, pollwait: 10 s */
#define FL_SIM_BATCH_MAX (1 << 24) /* rows per trainer per step */

/* ---- calibration ---- */
typedef struct FlSimGemm {
    int64_t m, n, k; /* C[m, n] = A[m, k] B[k, n] */
    double gflops;
} FlSimGemm;

typedef struct FlSimOptRate {
    int op;      /* FlOpId of an optimizer op (compiler/ops.h) */
    double gbps; /* GB/s of every input and output it names, run by the executor */
    int line;    /* where the calibration gives it */
} FlSimOptRate;

typedef struct FlSimCalib {
    FL_VEC(FlSimGemm) gemm;
    FL_VEC(FlSimOptRate) optimizers; /* `optimizer OP VALUE GB/s` lines: that op's own rate */
    double elementwise_gbps; /* GB/s (1e9 bytes) touched by an element-wise kernel */
    double optimizer_gbps;   /* GB/s touched by an optimizer update (param, grad, state): the
                                rate of an optimizer op without a line of its own */
    double memcpy_gbps;      /* GB/s copied (feeds) */
    double op_overhead_us;   /* the executor's fixed cost per op, µs */
    double wakeup_us;        /* optional (-1: not measured): a thread blocked in a read, woken by a
                                write, runs this long after it, µs (the scheduling latency) */
    double pollwait_us;      /* optional (-1: not measured): a thread waiting as an MPI rank waits
                                (spin, yield, 50 µs sleeps) sees a flag this long after it is set */
} FlSimCalib;

/* Parses a calibration. Every key but gemm must appear once; at least one gemm line. */
FlStatus fl_sim_calib_parse(const char *text, const char *where, FlSimCalib *c, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_sim_calib_load(const char *path, FlSimCalib *c, FlErr *e) FL_WARN_UNUSED;
void fl_sim_calib_fini(FlSimCalib *c);

/* ---- cluster ---- */
typedef struct FlSimHost {
    char *name;
    int64_t slots;    /* ranks it takes when ranks are placed by slot; 0: not given */
    double bandwidth; /* bytes/s of its link, each direction; 0: not given */
    double latency;   /* s, one way, of its link */
    double msgcost;   /* s a pserver of this host spends on each message it takes (its one
                         thread, in turn): the handling, and on a loaded machine the wait to be
                         scheduled again; 0: none */
    double compute;   /* compute times are multiplied by this (1: this machine) */
    int64_t cores;    /* 0: not given; else its ranks beyond it share the cores (compute x ranks/cores) */
    int64_t eager;    /* bytes: a message it sends to another host above this waits for Open MPI's
                         rendezvous (btl_tcp_eager_limit; default 65536) */
    int machine;      /* index into FlSimCluster.machines: the host shares that machine's cores; -1: its own */
    bool trainers, pservers;    /* roles=trainers / roles=pservers */
    FlSimInts t_idx, p_idx; /* roles=t0,p1: these trainers and pservers */
    int line;
} FlSimHost;

/* `machine cores=N hosts=A,B [bind=core] [switch=yes [switchrate=RATE]] [wakeup=TIME pollwait=TIME]`: hosts that are one
 * machine's network namespaces or containers (tests/cluster/cluster.sh), sharing its cores */
typedef struct FlSimMachine {
    int64_t cores;
    bool userswitch;          /* switch=yes: their links go through a switch thread on the machine */
    double wakeup, pollwait;  /* s; -1: the calibration's */
    double switchrate;        /* bytes/s the switch thread forwards, both ways together; 0: no limit */
    bool bind;                /* bind=core: its ranks, in rank order, are bound to its cores in turn
                                 (mpirun --map-by core --bind-to core) */
    char *host_list;          /* hosts=, as given (resolved into FlSimHost.machine) */
    int line;
} FlSimMachine;

typedef struct FlSimCluster {
    char *where;
    FL_VEC(FlSimHost) hosts;
    FL_VEC(FlSimMachine) machines;
    double local_bandwidth, local_latency; /* ranks of one host; bandwidth 0: no 'local' line */
    int local_line;
    bool links_shared; /* `links shared`: the messages on a link at once share it (TCP's fair
                          share) instead of taking it one after the other (`links fifo`) */
    int links_line;
} FlSimCluster;

/* Parses a spec. `where` names it in messages. */
FlStatus fl_sim_cluster_parse(const char *text, const char *where, FlSimCluster *c, FlErr *e) FL_WARN_UNUSED;
/* arg names a readable file: that file; else the text itself (inline, "<cluster>"). */
FlStatus fl_sim_cluster_load(const char *arg, FlSimCluster *c, FlErr *e) FL_WARN_UNUSED;
void fl_sim_cluster_fini(FlSimCluster *c);

/* ---- the model ---- */
typedef struct FlSimOptions {
    int64_t batch;  /* rows per trainer per step, 1 to FL_SIM_BATCH_MAX */
    int64_t piece;  /* flrun --piece: message size of larger tensors, a multiple of 8 from 8 to
                       FL_RULE_PIECE_MAX */
} FlSimOptions;

typedef struct FlSimLinkLoad {
    double out_bytes, in_bytes; /* payload bytes per step over the host's link, each way */
    double local_bytes;         /* between ranks of this host */
} FlSimLinkLoad;

typedef struct FlSimServerLoad {
    int host;
    int64_t blocks, elements;
    double in_bytes, out_bytes; /* payload per step */
    double update_s;            /* its optimize blocks' time per step */
    double busy_until;          /* when its last answer left, s from the step's start */
} FlSimServerLoad;

typedef struct FlSimResult {
    double step_s;                                  /* the slowest trainer's step */
    double compute_s, transfer_s, update_s, wait_s; /* the critical path; with cores_s, step_s */
    double cores_s;           /* beyond the path: the step's wait for the busiest core's work (its
                                 ranks' compute, updates, message handling and shared-memory copies
                                 one after the other), when that is longer; 0 when it is not */
    int busiest_machine, busiest_host; /* the busiest cores: a machine's, or a host's own cores= (-1: not that) */
    int busiest_core;                  /* bind=core: which of them (-1: all of them together) */
    double busiest_work_s;             /* their work per step (per core) */
    FlBuf busiest_ranks;               /* " t0 p0": the ranks on them */
    int critical_trainer;
    double trainer_compute_s; /* the critical trainer's own compute (its ops, feeds) */
    int64_t messages;         /* per step, every rank */
    int nhosts;
    FlSimLinkLoad *links; /* per host */
    int64_t P, T;
    FlSimServerLoad *servers; /* per pserver */
    int *trainer_host, *pserver_host;
} FlSimResult;

/* Simulates one step of `plan` (sync mode). Errors: another mode, a batch or piece beyond the
 * bounds, a rank without a host, a message between hosts whose link has no bandwidth, ranks
 * sharing a host without a 'local' line, a role whose program the model cannot read, a step
 * whose time overflows (a var too large to time). Ends on any input: every event is handled
 * once, and each flow event ends a message. */
FlStatus fl_sim_run(const FlPlan *plan, const FlSimCalib *calib, const FlSimCluster *cl, const FlSimOptions *o,
                    FlSimResult *r, FlErr *e) FL_WARN_UNUSED;
void fl_sim_result_fini(FlSimResult *r);
/* The readable report of `flc simulate`. */
void fl_sim_report(const FlPlan *plan, const FlSimCluster *cl, const FlSimOptions *o, const FlSimResult *r,
                   FlBuf *out);

/* "1..4" or "1,2,4" or "3" into a list of whole numbers in [1, 4096]; NULL on success. */
FlStatus fl_sim_parse_range(const char *s, FlSimInts *out, FlErr *e) FL_WARN_UNUSED;

/* Bytes per second from "1gbit", "200mbit", "10GB/s", "500MB/s", "1e9" (bytes/s), from
 * FL_SIM_RATE_MIN to FL_SIM_RATE_MAX; seconds from "0.5ms", "20us", "1s", from 0 to
 * FL_SIM_TIME_MAX. */
FlStatus fl_sim_parse_rate(const char *s, double *out, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_sim_parse_time(const char *s, double *out, FlErr *e) FL_WARN_UNUSED;

#endif
