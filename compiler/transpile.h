/* transpile.h: the distribute transpiler. It turns a single-machine training bundle (forward,
 * backward and optimizer ops in the main program, parameters and optimizer state initialised
 * by the startup program) into a plan of T trainer programs and P parameter-server programs,
 * following Paddle Fluid's DistributeTranspiler (docs/distributed.md shows a whole plan).
 *
 * Slicing. Every parameter that an optimizer op updates is cut along dim 0 into
 * pieces = min(P, numel / min_block_size, dim0), at least 1, whole rows each, the rows spread
 * as evenly as possible (earlier blocks take the extra row). A parameter cut into several
 * pieces gets the names "W.block0", "W.block1", ... and its gradient "W@GRAD.block0", ...; a
 * parameter that stays whole (one piece) KEEPS its names "W" / "W@GRAD" on every role, so a
 * trainer sends and receives it without copies. Optimizer state follows its parameter: a
 * state var of the parameter's shape is sliced like it ("W_velocity_0.block1"); other state
 * that the optimizer updates (Adam's [1]-shaped beta pow accumulators) is copied whole to each
 * block under the block's suffix, so two blocks on one server never share an update; state
 * that is only read (the LearningRate input) is copied whole under its own name.
 *
 * Placement. Blocks are numbered in parameter order (the order of the optimizer ops), block
 * by block; block i goes to pserver i mod P (round robin) or to fl_hash_bytes(block name) mod
 * P (hash: FNV-1a, deterministic across runs and machines). A parameter block and its
 * gradient block always share a server.
 *
 * Roles and ranks. plan->roles holds trainers 0..T-1 and then pservers 0..P-1; the rank map
 * is the identity: ranks 0..T-1 are the trainers (rank 0 = trainer 0, the one that writes the
 * log), ranks T..T+P-1 the pservers.
 *
 * Trainer t: the local main program without its optimizer ops and learning-rate ops (ops whose
 * results feed only optimizers' LearningRate inputs). Right after the last op before the first
 * optimizer op that writes a gradient (as Fluid's find_op_by_output_arg(reverse=True) finds
 * it; where the first optimizer op stood if none does): a `split` of the gradient into its
 * blocks (sliced parameters only) and one `send` per block (epmap: its server), so that the
 * gradients of the last layers are sent while the backward of the first ones still runs;
 * groups after the same op come in parameter order. Where the first optimizer op stood, after
 * every backward op: (sync) `send_barrier`, one `recv` per parameter block in parameter order,
 * (sync) `fetch_barrier`, and a `concat` of the blocks back into each sliced parameter. Its
 * startup program is the local one unchanged (same seeds: the same initial values as the
 * servers), its run spec the local one (each trainer reads its share of every global batch:
 * the runtime's job).
 *
 * Pserver p: its parameter blocks and their state (persistable), its gradient blocks, and one
 * `listen_and_serv` op (fanin = T) with one optimize sub-block per parameter block:
 *   sync:  `sum` of the T received gradient blocks "G.blockK.trainer_0" .. "trainer_{T-1}"
 *          into "G.blockK", `scale` by 1/T, then the optimizer op on the block;
 *   async: the optimizer op on the received "G.blockK", run for each gradient as it arrives.
 * grad_to_block maps each gradient block's name as the trainers send it to its optimize block
 * ("G.blockK:3"); X lists the vars the server receives. Learning-rate ops, if any, are cloned
 * into one more sub-block named by lr_block, run first each step.
 * Partial last batches: when the last global batch of an epoch is short, the trainers' shares
 * are unequal; the runtime then weights trainer t's gradient by w_t = T * rows_t / rows_global
 * (1 when the shares are equal) as it stores it in "G.blockK.trainer_t", so that sum and
 * scale(1/T) give exactly the gradient of the whole global batch. The IR keeps Fluid's sum and
 * 1/T.
 * Its startup program holds, for every var the server needs, the same init ops as the local
 * startup (same seeds, full shapes) writing the full var, then a `split` keeping the server's
 * rows (other rows go to "@EMPTY@") or an `assign` per block copy, so that the server starts
 * from exactly the values of the local program. A random op with seed 0 takes its seed from
 * its position in the program at run time, so the startup ops before the last such op that a
 * server needs are all kept in place.
 *
 * The ops between a parameter's gradient W@GRAD and its optimizer op (regularization, clipping)
 * stay on the trainers when they are affine in the gradient (sum, scale, add, subtract, multiply
 * or divide by a gradient-free value): averaging the trainers' results then equals running them
 * on the global batch's gradient. A path that is not (clipping) runs on the servers instead, on
 * the merged raw gradient block, between the scale(1/T) and the optimizer op: the trainers send
 * W@GRAD; its ops may read only the gradient, the parameter and constants (global-norm clipping
 * is an error), and on a cut parameter only elementwise ones (a norm is an error).
 *
 * Allreduce mode: no pservers. Each trainer runs the local main program with one `allreduce` op
 * after every backward op, where the first optimizer op stood or before the first op of a
 * gradient's path when that comes earlier: X = Out = every parameter's raw gradient (W@GRAD),
 * in parameter order; the runtime sums them over the trainers, each weighted by its
 * share of the global batch's rows, so every trainer holds the gradient of the whole global
 * batch and applies the same optimizer and learning-rate ops to the same parameters (they stay
 * equal without being sent anywhere). The startup program is the local one.
 *
 * A bundle with a driver (a script's own loop: docs/driver.md): every trainer keeps the driver,
 * its named programs and its readers, with main the trainer program (the driver's runs of main
 * are the job's steps); a named program with optimizer or distributed ops is refused (it would
 * train apart from the job), and so is a run of main from a goroutine (the runs of main are the
 * job's steps, one after the other). The pservers get no driver (startup, then listen_and_serv).
 *
 * Every program of the plan passes fl_infer_program and fl_verify_program, and the plan
 * fl_ir_validate_plan; a failure there is reported as an internal error.
 *
 * Errors (returned with e set; the user's or the caller's): P or T < 1, a negative block size,
 * an unknown mode or dispatch, a program without optimizer ops, a driver's program that trains,
 * a program that already holds
 * distributed ops, an optimizer op outside block 0, a parameter updated twice, a parameter
 * with an unknown dim, a state var shared by the optimizers of several parameters, a var name
 * the transpiler needs already taken. Messages that concern an op start with its .fl location
 * ("fit.fl:12:1: ...").
 *
 * Ownership: the input bundle is only read; *out (NULL on error) belongs to the caller
 * (fl_ir_plan_free). Thread-safety: none needed; nothing global is touched.
 */
#ifndef FL_TRANSPILE_H
#define FL_TRANSPILE_H

#include "base/base.h"
#include "compiler/ir/ir.h"

#define FL_TRANSPILE_MIN_BLOCK_SIZE 8192

typedef enum FlTranspileMode {
    FL_TRANSPILE_SYNC = 0,
    FL_TRANSPILE_ASYNC = 1,
    FL_TRANSPILE_ALLREDUCE = 2, /* no pservers: trainers sum their gradients (Horovod's way) */
    FL_TRANSPILE_MODE_COUNT
} FlTranspileMode;

typedef enum FlTranspileDispatch {
    FL_TRANSPILE_ROUND_ROBIN = 0,
    FL_TRANSPILE_HASH = 1,
    FL_TRANSPILE_DISPATCH_COUNT
} FlTranspileDispatch;

/* Zero-initialised options mean: sync, round robin, block size 8192 (pservers and trainers
 * must still be set). */
typedef struct FlTranspileOptions {
    int64_t pservers, trainers;   /* P >= 1 (P = 0 for allreduce), T >= 1 */
    FlTranspileMode mode;
    int64_t min_block_size;       /* elements; 0: FL_TRANSPILE_MIN_BLOCK_SIZE */
    FlTranspileDispatch dispatch;
} FlTranspileOptions;

FlStatus fl_transpile(const FlBundle *local, const FlTranspileOptions *opt, FlPlan **out,
                      FlErr *e) FL_WARN_UNUSED;

/* "sync" / "async" / "allreduce" and "round_robin" / "hash"; anything else is an error naming
 * the choices. */
FlStatus fl_transpile_parse_mode(const char *s, FlTranspileMode *out, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_transpile_parse_dispatch(const char *s, FlTranspileDispatch *out,
                                     FlErr *e) FL_WARN_UNUSED;
const char *fl_transpile_mode_name(FlTranspileMode m);
const char *fl_transpile_dispatch_name(FlTranspileDispatch d);

/* The placement of a transpiled plan as a readable table: one line per parameter (its shape,
 * its blocks' rows and servers), then the blocks, elements and bytes each pserver holds.
 * It is read back from trainer 0's recv and concat ops, so it works on any plan file that
 * this transpiler wrote; on another plan it prints what it can find. */
void fl_transpile_show_placement(const FlPlan *plan, FlBuf *out);

/* What a pserver role of a plan holds, for checkpoints (flrun --save / --load of MPI jobs): each
 * persistable var of its main program and the local program's var it is part of, read from
 * the role's startup program: a `split` output is rows [row0, row0 + rows) of the split's input,
 * an `assign` output a whole copy of its input, a fill op's output "W.blockK" with a
 * shard_offset is rows [shard_offset / (W's elements per row), + its dim 0) of the declared W,
 * a var the startup initialises itself is the local var under its own name (rows = -1 for the
 * copy and the var itself). `full` describes the local var (dtype and
 * full shape). Vars no startup op writes are left out. Names and descs are borrowed from the
 * bundle; *out is malloc'd (NULL when none). */
typedef struct FlPlanVar {
    const char *var;
    const FlVarDesc *full;
    int64_t row0, rows;
} FlPlanVar;
size_t fl_transpile_pserver_vars(const FlBundle *pserver, FlPlanVar **out);

#endif
