/* flrun: runs a compiled fluidc program, locally or as one rank of an MPI job.
 *
 *   flrun FILE.{fl,flp} [--epochs N] [--batch-size B] [--seed S] [--threads N] [--procs N]
 *         [--log FILE.csv] [--save DIR] [--load DIR] [--predict DATA] [--predict-var NAME]
 *         [--data-dir DIR] [--timeline FILE.json [--timeline-events N]] [-D name=value]... [-q]
 *         [--plot FILE.svg] [--tensorboard DIR] [--profile [--profile-sort KEY]]
 *   mpirun -np P+T flrun FILE.plan [same options] [--timeout SECONDS] [--piece BYTES] [--stats]
 *   mpirun -np 1 flrun server.flp : -np 2 flrun worker.flp      (hand-written MPMD programs)
 *
 * With a run spec (fluid.train in the program): runs the startup program once (or loads the
 * parameters), then the main program once per batch for every epoch, evaluates the test reader
 * after each epoch, prints one progress line per epoch (and a progress bar on a terminal), and
 * writes every step's figures with --log. Without a run spec: startup, then main once.
 * Exit codes: 0 success, 1 a user error (bad program, bad data, a runtime error), 2 bad usage.
 *
 * Distributed (a .plan, or a program holding distributed ops): MPI starts, each rank takes its
 * role (runtime/mpi/mpi.h) and attaches the MPI transport to its root scope. A trainer reads its
 * share of every global batch (T trainers, batch b each: rows [t*b, (t+1)*b) of the global batch
 * of T*b rows) and tells the transport its rows and the global rows before each step; a share
 * that is empty (a partial last batch) still runs the step, on one borrowed row, and sends zero
 * gradients with rows 0. At each epoch's end trainer 0 gathers every trainer's per-step figures
 * and writes the log with each step's figures averaged over the trainers, weighted by rows (the
 * local run's figures on the global batch), evaluates the test set alone and prints progress;
 * --save and --predict run on trainer 0 (but each pserver writes its rows of distributed tables
 * into the checkpoint as shards, asked by trainer 0). A pserver runs its startup program and its main program
 * (listen_and_serv) once. Any error on any rank ends the whole job (fl_mpi_fail). Before any
 * rank starts work on a plan, every rank checks it (fl_plan_verify, what `flc verify` runs): a
 * plan whose roles do not fit together ends the job with exit 1 and rank 0's report of it.
 * The training driver (epochs, figures, trainer shares, evaluation, prediction) is the runtime
 * module runtime/train/train.h; this file parses the arguments, sets up the MPI roles, checks
 * and writes the outputs (log, checkpoints, predictions) and decides what to print. The plan
 * checkpoints (save_plan, save_shards, load_server) stay here: they need the transpiler's placement rule.
 * --timeline records every op run (and, in MPI jobs, the transport's sends, receives, barrier
 * waits and server updates) in a runtime/trace.h recorder, and writes it as one Chrome
 * trace-event file: in an MPI job every rank's events go to trainer 0, their times put on trainer
 * 0's clock with the offsets measured when the roles were assigned (mpi.h).
 * --plot, --tensorboard and the profiler (--profile, or a fluid.profiler region in the program)
 * are tools/report.h's: this file makes the report, hands it the rows and steps, and finishes it.
 * The tool sits on top of every layer; nothing includes it.
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compiler/ir/ir.h"
#include "compiler/ir/train_driver.h"
#include "compiler/ops.h"
#include "compiler/plan_verify.h"
#include "compiler/transpile.h"
#include "compiler/verify.h"
#include "lang/eval.h"
#include "runtime/api.h"
#include "runtime/core/conc.h"
#include "runtime/core/dist.h"
#include "runtime/core/driver.h"
#include "runtime/core/scope.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/par.h"
#include "runtime/mpi/mpi.h"
#include "runtime/params.h"
#include "runtime/train/ckpt.h"
#include "runtime/train/train.h"
#include "tools/flrun_model.h"
#include "tools/launch.h"
#include "tools/report.h"
#include "tools/tool.h"

static const char *usage_text =
    "usage: flrun FILE.{fl,flp} [options]\n"
    "\n"
    "Run a fluidc program: train it as its fluid.train(...) run spec says, or run it once.\n"
    "\n"
    "options:\n"
    "  --epochs N          epochs to train (overrides the run spec)\n"
    "  --batch-size B      rows per batch (per trainer; overrides the run spec)\n"
    "  --seed S            shuffling seed (overrides the run spec)\n"
    "  --threads N         kernel threads: large matrix products, convolutions and the other\n"
    "                      kernels split their work over N threads (1 to 256; default: one per\n"
    "                      core for a local run, 1 per rank in an MPI job); results are the\n"
    "                      same run to run for a given N\n"
    "  --log FILE.csv      write one row per training step and per evaluation:\n"
    "                      phase,rank,epoch,step,loss,<each other fetch>\n"
    "  --save DIR          save the persistable vars (parameters, optimizer state) after training\n"
    "  --load DIR          load them after the startup program (MPI jobs: every rank its part);\n"
    "                      DIR may be Paddle's save, or DIR/FILE its combined file\n"
    "  --checkpoint DIR    where checkpoints during training go: DIR/step-N after N steps, the\n"
    "                      vars, the reader's position, the epoch's figures, the random state and\n"
    "                      the log so far, each written whole before it appears (the last 2 kept)\n"
    "  --checkpoint-every STEPS\n"
    "                      write one after every STEPS training steps (training stops only to\n"
    "                      take it: a thread writes it meanwhile)\n"
    "  --resume            go on from the last checkpoint in --checkpoint DIR (none yet: from\n"
    "                      the start): the steps after it as the uninterrupted run takes them\n"
    "  --predict DATA      after training (or --load), print the model's predictions for the\n"
    "                      feature rows of the CSV file DATA (no header lines; the features at\n"
    "                      the training data's column indices; one output line per row)\n"
    "  --predict-var NAME  the var to print (default: the model's output, the input of the first\n"
    "                      op that reads the label)\n"
    "  --data-dir DIR      read the program's data files from DIR: their paths as written in the\n"
    "                      .fl resolve against DIR instead of the program's own folder\n"
    "  -D name=value       compile-time flag for fluid.flag (when FILE is a .fl)\n"
    "  -q, --quiet         no progress output\n"
    "  --timeout SECONDS   MPI jobs: how long a rank waits on a silent peer before it fails\n"
    "                      the job, naming the peer (default 60)\n"
    "  --procs N           processors (worker threads) for goroutines and parallel_for's\n"
    "                      iterations (default: one per core; the main program runs on its own\n"
    "                      thread beside them)\n"
    "  --trainers N        a plan's job: run N of its trainers (ranks 0..N-1; the pservers count\n"
    "                      the others' gradients as zeros), keeping its global batch: each\n"
    "                      trainer's share grows (the launcher's --elastic passes it)\n"
    "  --piece BYTES       MPI jobs: tensors larger than this travel in messages of this many\n"
    "                      bytes (a multiple of 8; default 1048576); a pserver averages, applies\n"
    "                      and returns a large parameter piece by piece as it arrives\n"
    "  --stats             local runs: print on stderr the GEMM library and its kernel, then\n"
    "                      each epoch's training time (wall clock and CPU seconds of the\n"
    "                      steps, batch assembly included; reading the data and evaluation\n"
    "                      left out) and its samples/s; MPI jobs: print each rank's kernel\n"
    "                      threads and GEMM, its bytes and messages sent (in total and per\n"
    "                      step) and its time in communication vs compute at the end; a\n"
    "                      script's own loop: the GEMM library, then the run's time\n"
    "  --timeline FILE.json\n"
    "                      write a Chrome trace-event file (chrome://tracing, Perfetto): a\n"
    "                      span per op run (its type, .fl line, output vars); in MPI jobs also\n"
    "                      every rank's sends, receives, barrier waits and server updates, on\n"
    "                      trainer 0's clock, each gradient's send joined to its receipt by an\n"
    "                      arrow; trainer 0 writes the file (one process per rank)\n"
    "  --timeline-events N keep at most N events per process (default 1000000); later ones\n"
    "                      are dropped with a warning\n"
    "  --plot FILE.svg     draw the training curves (each figure over the steps, train and test,\n"
    "                      epochs marked) into a self-contained SVG picture at the end; flc plot\n"
    "                      draws several logs in one (not with --resume: draw its --log)\n"
    "  --tensorboard DIR   write TensorBoard event files into DIR (made if new) as training goes:\n"
    "                      each step's figures, learning rate and samples/s, each evaluation's\n"
    "                      figures (tensorboard --logdir DIR); in MPI jobs trainer 0 writes them\n"
    "  --profile           profile the whole run: at the end print Fluid's profiler table (per op\n"
    "                      type: calls, total, min, max and average time, ratio); MPI jobs: one\n"
    "                      table per rank, printed by trainer 0 (a fluid.profiler region in the\n"
    "                      program profiles its training without this option)\n"
    "  --profile-sort KEY  the table's order: calls, total (the default), max, min, ave, or none\n"
    "                      (the order in which op types first ended); overrides the region's\n"
    "                      sorted_key\n"
    "  -h, --help          show this help\n"
    "  --version           show the version\n"
    "\n"
    "Distributed plans (.plan, from flc transpile) run one rank per role. Run outside mpirun,\n"
    "flrun starts the job itself through Open MPI's mpirun (the options above reach every rank):\n"
    "  flrun FILE.plan [--hosts H1:S1,H2:S2,... | --hostfile FILE] [--network CIDR] [--restarts N]\n"
    "                  [--elastic MIN:MAX] [options]\n"
    "  --hosts LIST        the machines and their slots (ranks each takes), trainers first:\n"
    "                      host1:2,host2:2 (slots 1 when not given); default: this machine\n"
    "  --hostfile FILE     the same from a file, Open MPI's syntax: 'HOST [slots=N]' per line\n"
    "  --network CIDR      the network MPI's traffic takes between machines (10.1.0.0/16)\n"
    "  --restarts N        a job that loses a rank or a host starts again, up to N times, on\n"
    "                      the hosts that still answer (a spare takes a lost one's place), from\n"
    "                      the last checkpoint of --checkpoint DIR (--checkpoint-every)\n"
    "  --elastic MIN:MAX   trainers that come and go: each start runs as many of the plan's\n"
    "                      trainers as the hosts that answer take (MIN to MAX), keeping the plan's\n"
    "                      global batch; a host that comes back (or joins the --hostfile) is\n"
    "                      taken at the next checkpoint (needs --checkpoint-every, --restarts)\n"
    "  --reprobe S         with --elastic: seconds between probes of the hosts that did not\n"
    "                      answer (default 5)\n"
    "(the launcher adds --allow-run-as-root for root, --oversubscribe for more ranks than\n"
    "cores, and Open MPI's keepalive settings; once a rank has failed, mpirun gets 2 s to end\n"
    "the job, then the launcher ends it)\n"
    "or under mpirun, as one rank each:\n"
    "  mpirun -np P+T flrun FILE.plan [options]\n"
    "(every rank first checks that the plan's roles fit together, as flc verify does, and the\n"
    "job ends with exit 1 and the issues before any work when they do not)\n"
    "Hand-written server and worker programs run as one MPMD job:\n"
    "  mpirun -np 1 flrun server.flp : -np 2 flrun worker.flp\n"
    "(as root add --allow-run-as-root; more ranks than cores need --oversubscribe)\n"
    "\n"
    "environment:\n"
    "  FL_GEMM=auto|openblas|onednn   the library of the matrix products (auto: OpenBLAS unless\n"
    "                      its kernel for this CPU is narrower than the CPU's vectors, then\n"
    "                      oneDNN's sgemm; --stats names it; docs/kernels.md \"Which GEMM\")\n"
    "  OPENBLAS_CORETYPE   OpenBLAS's kernel, honoured as set (a warning when it is narrower than\n"
    "                      the CPU's and FL_GEMM does not name the library)\n"
    "  FL_DNNL=0           oneDNN off: the kernels' own loops for conv2d and pool2d, OpenBLAS\n"
    "\n"
    "exit status: 0 success, 1 error in the program, its data or at run time, 2 bad usage\n";

typedef struct Opts {
    const char *file, *log, *save, *load, *predict, *predict_var, *data_dir, *timeline;
    const char *hosts, *hostfile, *network; /* the launcher's (launch.h) */
    int64_t restarts;
    int64_t elastic_min, elastic_max; /* --elastic MIN:MAX */
    double reprobe;                   /* --reprobe S (0: FL_LAUNCH_REWATCH) */
    const char *checkpoint; /* --checkpoint DIR */
    int64_t checkpoint_every;
    int64_t trainers; /* --trainers N: N of the plan's trainers run (0: all) */
    bool resume;
    char *resume_from; /* --resume: the checkpoint found in DIR (then also `load`), or NULL */
    const char *plot, *tensorboard, *profile_sort; /* tools/report.h */
    bool profile;
    int64_t epochs, batch, seed, threads, timeline_events;
    double timeout;
    uint32_t piece;
    int procs; /* goroutine processors; 0: one per core */
    bool quiet, stats;
    FL_VEC(const char *) defines;
} Opts;

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "flrun: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'flrun --help'.\n");
    return 2;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static bool parse_int(const char *s, int64_t min, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min) return false;
    *out = v;
    return true;
}

/* ---------------------------------------------------------------- printing */

typedef struct Run {
    Opts *o;
    FlLoadedProgram *prog;
    const FlBundle *bundle;
    FlExecutor *ex;
    FlScope *scope;
    FlTrainer *tr;
    FlTrainPredictInput *pin; /* --predict's rows, read before training */
    FILE *log;                /* --log, written to log_tmp and renamed at the end */
    FlBuf log_tmp;
    bool tty;
    FlMpi *mpi;         /* NULL: a local run */
    const FlPlan *plan; /* a plan's job: its roles (this rank's taken), for checkpoints */
    FlTrace *trace;     /* --timeline's recorder (or profile_path's), else NULL */
    FlReport *report;   /* curves, TensorBoard, the profiler (tools/report.h) */
    FlTrainState resumed; /* --resume from a checkpoint: its training state (trainers) */
    FlCkptWriter *writer; /* trainer 0 (the local run) with --checkpoint-every */
    int ckpt_n;           /* checkpoints taken, and the seconds training stopped for them */
    double ckpt_secs, ckpt_max;
} Run;

static FlStatus log_row(void *ctx, const char *phase, int64_t epoch, int64_t step, const double *v, FlErr *e) {
    Run *r = ctx;
    if (fl_report_row(r->report, phase, epoch, step, v, e) != FL_OK) return FL_ERROR;
    if (!r->log) return FL_OK;
    size_t n = fl_train_fetch_count(r->tr), loss = fl_train_loss_index(r->tr);
    fprintf(r->log, "%s,%d,%lld,%lld,%.9g", phase, r->mpi ? fl_mpi_rank(r->mpi) : 0, (long long)epoch, (long long)step,
            v[loss]);
    for (size_t i = 0; i < n; i++)
        if (i != loss) fprintf(r->log, ",%.9g", v[i]);
    fputc('\n', r->log);
    return FL_OK;
}

static void progress_bar(void *ctx, int64_t epoch, int64_t epochs, size_t b, size_t nb, double loss) {
    Run *r = ctx;
    if (!r->tty || r->o->quiet) return;
    int width = 30, done = nb ? (int)((double)(b + 1) * width / (double)nb) : width;
    fprintf(stdout, "\repoch %lld/%lld [", (long long)epoch, (long long)epochs);
    for (int i = 0; i < width; i++) fputc(i < done ? '=' : ' ', stdout);
    fprintf(stdout, "] %zu/%zu loss %.5g", b + 1, nb, loss);
    fflush(stdout);
}

static void progress_line(void *ctx, const FlTrainEpoch *ep) {
    Run *r = ctx;
    if (r->o->stats && !r->mpi) /* the training phase alone: the data were read before it */
        fprintf(stderr, "flrun: stats epoch %lld: %.0f rows in %.6f s, %.6f CPU s: %.2f samples/s, %.2f per CPU second\n",
                (long long)ep->epoch, ep->rows, ep->seconds, ep->cpu_seconds,
                ep->seconds > 0 ? ep->rows / ep->seconds : 0.0, ep->cpu_seconds > 0 ? ep->rows / ep->cpu_seconds : 0.0);
    if (r->o->quiet) return;
    size_t n = fl_train_fetch_count(r->tr);
    if (r->tty) fputs("\r\033[K", stdout);
    int64_t epochs = ep->epochs;
    printf("epoch %*lld/%lld", epochs >= 100 ? 3 : epochs >= 10 ? 2 : 1, (long long)ep->epoch, (long long)epochs);
    for (size_t i = 0; i < n; i++) printf("  %s %.5g", fl_train_fetch_name(r->tr, i), ep->train[i]);
    if (ep->test) {
        printf("  |  test");
        for (size_t i = 0; i < n; i++) printf(" %s %.5g", fl_train_fetch_name(r->tr, i), ep->test[i]);
    }
    printf("  |  %.0f samples/s\n", ep->seconds > 0 ? ep->rows / ep->seconds : 0.0);
    fflush(stdout);
}

/* ---------------------------------------------------------------- paths of the command line */

/* path made absolute, its longest existing prefix resolved by realpath (links, "." and "..")
 * and the rest applied as written: two spellings of one place resolve alike, whether the place
 * exists yet or not. */
static char *resolve_path(const char *path) {
    FlBuf abs = {0};
    if (path[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        fl_buf_printf(&abs, "%s/", cwd ? cwd : "");
        free(cwd);
    }
    fl_buf_puts(&abs, path);
    while (abs.len > 1 && abs.data[abs.len - 1] == '/') abs.data[--abs.len] = 0;
    char *pre = fl_xstrdup(fl_buf_str(&abs)), *real;
    while (!(real = realpath(pre, NULL)) && strcmp(pre, "/") != 0) {
        char *up = fl_path_dir(pre); /* a prefix of pre: abs is absolute */
        free(pre);
        pre = up;
    }
    const char *rest = fl_buf_str(&abs) + strlen(pre);
    while (*rest == '/') rest++;
    char *out = real ? fl_path_join(real, rest) : fl_xstrdup(fl_buf_str(&abs));
    free(real);
    free(pre);
    fl_buf_free(&abs);
    return out;
}

/* A path of the command line: an output the run writes or an input it reads. */
typedef struct PathArg {
    const char *what; /* "--log", "the program", ... */
    const char *path; /* as given */
    bool output;
    bool dir;   /* a directory (--save, --load): other paths may lie inside it */
    char *real; /* resolve_path */
} PathArg;

/* Whether b is the same place as a, or (a being a directory) inside it: by their resolved
 * paths, and the same also as one existing file under two names (hard links). */
static bool path_within(const PathArg *a, const PathArg *b, bool *same) {
    struct stat sa, sb;
    size_t n = strlen(a->real);
    *same = !strcmp(a->real, b->real) ||
            (stat(a->path, &sa) == 0 && stat(b->path, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
    return *same || (a->dir && !strncmp(a->real, b->real, n) && (b->real[n] == '/' || (n == 1 && b->real[1])));
}

/* Every output of the command line (--log, --timeline, --save, --checkpoint, --plot, --tensorboard;
 * and the program's profile_path, once it is known) against every other and against every input
 * it names (the program, --predict, --load): none may be the same place as another,
 * nor inside another's directory (a --log in the --save directory, a --save inside the --load
 * checkpoint, the --load checkpoint inside the --save directory that replaces it), but --save
 * may name the --load checkpoint (read before training, replaced after). Checked
 * before anything runs; a clash is bad usage (exit 2) naming both options and the paths. The
 * data files the program reads are checked once it is loaded (check_output). */
static int check_paths(const Opts *o, const char *profile_path) {
    enum { LOG, TIMELINE, SAVE, CHECKPOINT, PLOT, TENSORBOARD, PROFILE, PROGRAM, PREDICT, LOAD, N };
    PathArg args[N] = {[LOG] = {"--log", o->log, true, false, NULL},
                       [TIMELINE] = {"--timeline", o->timeline, true, false, NULL},
                       [SAVE] = {"--save", o->save, true, true, NULL},
                       [CHECKPOINT] = {"--checkpoint", o->checkpoint, true, true, NULL},
                       [PLOT] = {"--plot", o->plot, true, false, NULL},
                       [TENSORBOARD] = {"--tensorboard", o->tensorboard, true, true, NULL},
                       [PROFILE] = {"profile_path", profile_path, true, false, NULL},
                       [PROGRAM] = {"the program", o->file, false, false, NULL},
                       [PREDICT] = {"the --predict file", o->predict, false, false, NULL},
                       [LOAD] = {"the --load checkpoint", o->load, false, true, NULL}};
    size_t n = N;
    for (size_t i = 0; i < n; i++) args[i].real = args[i].path ? resolve_path(args[i].path) : NULL;
    FlBuf msg = {0};
    for (size_t i = 0; i < n && !msg.len; i++)
        for (size_t j = i + 1; args[i].output && args[i].real && j < n && !msg.len; j++) {
            const PathArg *a = &args[i], *b = &args[j];
            bool same = false, in_a = b->real && path_within(a, b, &same);
            bool in_b = b->real && !in_a && path_within(b, a, &same);
            if (!in_a && !in_b) continue;
            if (same && i == SAVE && j == LOAD) continue;
            const PathArg *inner = in_a ? b : a, *outer = in_a ? a : b;
            if (same && b->output)
                fl_buf_printf(&msg, "%s '%s' and %s '%s' are the same path; each output needs its own", a->what, a->path,
                              b->what, b->path);
            else if (same)
                fl_buf_printf(&msg, "%s '%s' is %s ('%s'); refusing to overwrite an input", a->what, a->path, b->what,
                              b->path);
            else if (b->output)
                fl_buf_printf(&msg, "%s '%s' is inside %s '%s'; each output needs its own path", inner->what,
                              inner->path, outer->what, outer->path);
            else if (inner == a)
                fl_buf_printf(&msg, "%s '%s' is inside %s ('%s'); refusing to write into an input", a->what, a->path,
                              b->what, b->path);
            else
                fl_buf_printf(&msg, "%s '%s' holds %s ('%s'); refusing to replace an input", a->what, a->path,
                              b->what, b->path);
        }
    for (size_t i = 0; i < n; i++) free(args[i].real);
    int rc = msg.len ? 2 : -1;
    if (msg.len) fprintf(stderr, "flrun: %s\nTry 'flrun --help'.\n", fl_buf_str(&msg));
    fl_buf_free(&msg);
    return rc;
}

/* ---------------------------------------------------------------- outputs */

/* Is `path` the file (or directory) st describes? */
static bool is_file(const char *path, const struct stat *st) {
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_dev == st->st_dev && sb.st_ino == st->st_ino;
}

/* Refuses an output file (`flag` names its option: --log, --timeline) that is one of the
 * readers' data files or a file of the --load directory (compared by device and inode, so hard
 * links count too), or that is not a regular file. (The paths of the command line were
 * compared with each other before anything ran: check_paths.) */
static FlStatus check_output(Run *r, const char *flag, const char *file, FlErr *e) {
    Opts *o = r->o;
    struct stat out;
    if (!file || stat(file, &out) != 0) return FL_OK; /* a new file: nothing to overwrite */
    if (!S_ISREG(out.st_mode)) return fl_err(e, "%s: '%s' exists and is not a regular file", flag, file);
    const char *what = NULL, *which = NULL;
    for (size_t i = 0; !what && r->tr && i < fl_train_input_count(r->tr); i++)
        if (is_file(fl_train_input_path(r->tr, i), &out)) what = "a data file", which = fl_train_input_path(r->tr, i);
    FlBuf path = {0};
    DIR *d = o->load ? opendir(o->load) : NULL;
    for (struct dirent *ent; !what && d && (ent = readdir(d));) {
        path.len = 0;
        fl_buf_printf(&path, "%s/%s", o->load, ent->d_name);
        if (is_file(fl_buf_str(&path), &out)) what = "a file of the --load checkpoint", which = fl_buf_str(&path);
    }
    if (d) closedir(d);
    FlStatus st = what ? fl_err(e, "%s '%s' is %s ('%s'); refusing to overwrite an input", flag, file, what, which)
                       : FL_OK;
    fl_buf_free(&path);
    return st;
}

/* Every output file the run writes, checked (check_output). */
static FlStatus check_outputs(Run *r, FlErr *e) {
    Opts *o = r->o;
    const char *flags[] = {"--log", "--timeline", "--plot", "profile_path"};
    const char *files[] = {o->log, o->timeline, o->plot, r->report ? fl_report_profile_path(r->report) : NULL};
    for (size_t i = 0; i < FL_ARRAY_LEN(files); i++) {
        if (!files[i]) continue;
        if (check_output(r, flags[i], files[i], e) != FL_OK) return FL_ERROR;
        if (i > 0) { /* written at the end: its directory now, so nothing runs for a file that fails */
            char *dir = fl_path_dir(files[i]);
            bool ok = access(dir, W_OK) == 0;
            FlStatus st = ok ? FL_OK : fl_err(e, "%s '%s': cannot write in '%s': %s", flags[i], files[i], dir, strerror(errno));
            free(dir);
            if (!ok) return st;
        }
    }
    return FL_OK;
}

/* Opens the log under a temporary name beside it (renamed into place by close_log). */
static FlStatus open_log(Run *r, FlErr *e) {
    fl_buf_printf(&r->log_tmp, "%s.tmp.%d", r->o->log, (int)getpid());
    r->log = fopen(fl_buf_str(&r->log_tmp), "w");
    if (!r->log) return fl_err(e, "cannot write '%s': %s", r->o->log, strerror(errno));
    size_t n = fl_train_fetch_count(r->tr), loss = fl_train_loss_index(r->tr);
    FlBuf head = {0};
    fl_buf_puts(&head, "phase,rank,epoch,step,loss");
    for (size_t i = 0; i < n; i++)
        if (i != loss) fl_buf_printf(&head, ",%s", fl_train_fetch_name(r->tr, i));
    fl_buf_putc(&head, '\n');
    /* resumed from a checkpoint: the log starts with its rows, the steps before it */
    FlBuf path = {0};
    size_t len = 0;
    char *rows = NULL;
    if (r->o->resume_from) {
        fl_buf_printf(&path, "%s/log.csv", r->o->resume_from);
        if (access(fl_buf_str(&path), F_OK) == 0 && !(rows = fl_read_regular_file(fl_buf_str(&path), &len, e))) {
            fl_buf_free(&head);
            fl_buf_free(&path);
            return FL_ERROR;
        }
    }
    FlStatus st = FL_OK;
    if (rows && (len < head.len || memcmp(rows, head.data, head.len) != 0))
        st = fl_err(e, "--resume: the checkpoint's log '%s' has other columns than this run's ('%.*s')",
                    fl_buf_str(&path), (int)head.len - 1, head.data);
    else if (rows)
        fwrite(rows, 1, len, r->log);
    else
        fputs(fl_buf_str(&head), r->log);
    free(rows);
    fl_buf_free(&head);
    fl_buf_free(&path);
    return st;
}

static FlStatus close_log(Run *r, FlErr *e) {
    bool ok = fclose(r->log) == 0;
    r->log = NULL;
    if (ok && rename(fl_buf_str(&r->log_tmp), r->o->log) == 0) return FL_OK;
    fl_err(e, "cannot write '%s': %s", r->o->log, strerror(errno));
    remove(fl_buf_str(&r->log_tmp));
    return FL_ERROR;
}

/* --timeline: this process's events (an MPI job: gathered to trainer 0, every rank's times on
 * trainer 0's clock since its trace began), written to `path` by the local run or trainer 0; with
 * `window`, only those of the span the profiler was on (fluid.profiler's profile_path). A process
 * whose recorder reached its cap says so on stderr and in its process label. */
static FlStatus write_timeline(Run *r, const char *path, bool window, FlErr *e) {
    FlTrace *tr = r->trace;
    FlBuf mine = {0}, all = {0}, name = {0}, labels = {0}, other = {0};
    int pid = 0;
    int64_t origin = fl_trace_origin(tr);
    bool lead = !r->mpi || fl_mpi_is_lead(r->mpi);
    char who[64] = "flrun";
    if (r->mpi) {
        FlMpiClock c;
        fl_mpi_clock(r->mpi, &c);
        pid = fl_mpi_rank(r->mpi);
        origin = c.origin_ns + c.offset_ns; /* trainer 0's origin, on this rank's clock */
        bool server = fl_mpi_role(r->mpi) == FL_MPI_PSERVER;
        snprintf(who, sizeof who, "flrun: rank %d (%s %d)", pid, server ? "pserver" : "trainer", fl_mpi_index(r->mpi));
        fl_buf_printf(&name, "rank %d (%s %d) on %s", pid, server ? "pserver" : "trainer", fl_mpi_index(r->mpi),
                      fl_mpi_host(r->mpi));
        if (fl_mpi_is_lead(r->mpi))
            fl_buf_puts(&labels, "the job's clock (trainer 0)");
        else
            fl_buf_printf(&labels, "clock offset %+.1f us against trainer 0 (round trip %.1f us)",
                          (double)c.offset_ns / 1e3, (double)c.rtt_ns / 1e3);
    } else {
        fl_buf_printf(&name, "flrun %s", r->o->file);
    }
    size_t dropped = fl_trace_dropped(tr);
    if (dropped) {
        fprintf(stderr, "%s: warning: --timeline: the limit of %zu events was reached; %zu later events were dropped "
                "(raise --timeline-events)\n", who, fl_trace_cap(tr), dropped);
        fl_buf_printf(&labels, "%s%zu events dropped at the --timeline-events limit (%zu)", labels.len ? "; " : "",
                      dropped, fl_trace_cap(tr));
    }
    int64_t from = INT64_MIN, to = INT64_MAX;
    if (window && !fl_prof_window(fl_report_prof(r->report), &from, &to)) from = to = 0; /* never on: nothing */
    fl_trace_format_window(tr, pid, fl_buf_str(&name), labels.len ? fl_buf_str(&labels) : NULL, origin, from, to, &mine);
    FlStatus st = FL_OK;
    if (r->mpi) st = fl_mpi_gather_timeline(r->mpi, fl_buf_str(&mine), mine.len, &all, e);
    else fl_buf_append(&all, fl_buf_str(&mine), mine.len);
    if (st == FL_OK && lead) {
        fl_buf_puts(&other, "\"tool\":\"flrun\",\"program\":");
        fl_trace_json_str(&other, r->o->file);
        fl_buf_printf(&other, ",\"ranks\":%d", r->mpi ? fl_mpi_size(r->mpi) : 1);
        if (r->mpi) fl_buf_printf(&other, ",\"clock\":\"trainer 0 (rank %d)\"", pid);
        st = fl_trace_write(path, fl_buf_str(&all), all.len, fl_buf_str(&other), e);
    }
    fl_buf_free(&mine);
    fl_buf_free(&all);
    fl_buf_free(&name);
    fl_buf_free(&labels);
    fl_buf_free(&other);
    return st;
}

static FlStatus checkpoint(void *ctx, const FlTrainState *st, bool *stop, FlErr *e);

static FlStatus step_done(void *ctx, const FlTrainStep *s, FlErr *e) {
    Run *r = ctx;
    return fl_report_step(r->report, s, e);
}

static FlStatus train(Run *r, FlErr *e) {
    FlTrainOptions to = {r->o->epochs, r->o->batch, r->o->seed, r->o->checkpoint_every,
                         r->o->resume_from ? &r->resumed : NULL, r->plan ? r->plan->trainers : 0, NULL, 0};
    fl_report_watch(r->report, &to);
    FlTrainHooks h = {.ctx = r, .step = progress_bar, .row = log_row, .epoch = progress_line, .step_done = step_done,
                      .checkpoint = checkpoint};
    fl_report_train_begin(r->report);
    FlStatus st = fl_train_run(r->tr, &to, &h, e);
    fl_report_train_end(r->report);
    return st;
}

/* The end of a run, on every rank after the timeline: the profile's trace (profile_path) and
 * the report (the profiler's tables, the picture, the event file). */
static FlStatus finish_report(Run *r, bool lead, FlErr *e) {
    const char *path = fl_report_profile_path(r->report);
    if (path && write_timeline(r, path, true, e) != FL_OK) return FL_ERROR;
    return fl_report_finish(r->report, r->mpi, lead, e);
}

/* Regression prints each row's values; classification (an int64 label) the most probable class. */
static FlStatus predict(Run *r, FlErr *e) {
    FlTrainPredictions p;
    if (fl_train_predict(r->tr, r->pin, &p, e) != FL_OK) return FL_ERROR;
    for (size_t i = 0; i < p.rows; i++) {
        if (p.classes) {
            printf("%lld", (long long)p.class_of[i]);
        } else {
            for (size_t k = 0; k < p.width; k++) printf(k ? " %.6g" : "%.6g", p.values[i * p.width + k]);
        }
        putchar('\n');
    }
    fl_train_predictions_fini(&p);
    return FL_OK;
}

/* Does the program hold an op with the flag (FL_OPF_DIST: send, recv, listen_and_serv, ...;
 * FL_OPF_CHAN: go, channels, parallel_for) in any block? */
static bool has_op_flag(const FlProgram *p, unsigned flag) {
    for (size_t k = 0; k < p->blocks.len; k++) {
        const FlBlock *b = p->blocks.data[k];
        for (size_t i = 0; i < b->ops.len; i++)
            if (fl_ops_flags(b->ops.data[i]) & flag) return true;
    }
    return false;
}

/* Whether b's driver is the script's own loop (exe.run), not fluid.train's (train_driver.h). */
static bool own_loop(const FlBundle *b) { return b->driver && !fl_ir_bundle_trains(b); }

/* Whether b's driver (if any) passes flc verify's checks; else its first issue on stderr, located
 * in the script (who: "driver", "trainer 0's driver"). */
static bool driver_clean(const Opts *o, const FlBundle *b, const char *who) {
    if (!b->driver) return true;
    FlVerifyIssues vi = {0};
    int n = fl_verify_driver(b, &vi);
    if (n) {
        FlLoc l = vi.items.data[0].loc;
        const char *src = l.file >= 0 && (size_t)l.file < b->source_paths.len ? b->source_paths.data[l.file] : NULL;
        if (src)
            fprintf(stderr, "flrun: error: '%s': %s (%s:%d:%d): %s%s\n", o->file, who, src, l.line, l.col,
                    vi.items.data[0].msg, n > 1 ? " (flc verify lists every issue)" : "");
        else fprintf(stderr, "flrun: error: '%s': %s: %s%s\n", o->file, who, vi.items.data[0].msg,
                     n > 1 ? " (flc verify lists every issue)" : "");
    }
    fl_verify_issues_fini(&vi);
    return n == 0;
}

/* Loads FILE (compiling a .fl): a bundle, or a plan. Returns the exit code on failure, else -1. */
static int load(Opts *o, FlBundle **bundle, FlPlan **plan) {
    FlErr e = {{0}};
    *bundle = NULL;
    *plan = NULL;
    if (ends_with(o->file, ".fl")) {
        char *stdlib_dir = fl_tool_stdlib_dir();
        FlCompileOptions copt = {.defines = o->defines.data, .ndefines = o->defines.len, .tool = "flrun",
                                 .stdlib_dir = stdlib_dir};
        FlBuf diag = {0};
        int nerr = fl_compile_file(o->file, &copt, bundle, &diag);
        free(stdlib_dir);
        fputs(fl_buf_str(&diag), stderr);
        fl_buf_free(&diag);
        return nerr ? 1 : -1;
    }
    if (o->defines.len) return usage_error("-D is for .fl files; '%s' is compiled already", o->file);
    if (fl_ir_read(o->file, bundle, plan, &e) != FL_OK) {
        fprintf(stderr, "flrun: error: %s\n", e.msg);
        return 1;
    }
    /* a file written before the driver was kept in it (format 2): fluid.train's driver, built now;
     * a driver the file holds is checked as flc verify checks it */
    FlStatus st = *bundle ? fl_ir_bundle_add_train_driver(*bundle, FL_LOC_NONE, &e) : FL_OK;
    for (size_t i = 0; st == FL_OK && *plan && i < (*plan)->roles.len; i++)
        st = fl_ir_bundle_add_train_driver((*plan)->roles.data[i], FL_LOC_NONE, &e);
    if (st != FL_OK) fprintf(stderr, "flrun: error: '%s': fluid.train's driver: %s\n", o->file, e.msg);
    if (st == FL_OK && *bundle && !driver_clean(o, *bundle, "driver")) st = FL_ERROR;
    for (size_t i = 0; st == FL_OK && *plan && i < (*plan)->roles.len; i++) {
        const FlBundle *r = (*plan)->roles.data[i];
        char who[64];
        snprintf(who, sizeof who, "%s %lld's driver", r->role, (long long)r->role_index);
        if (!driver_clean(o, r, who)) st = FL_ERROR;
    }
    if (st != FL_OK) {
        fl_ir_bundle_free(*bundle);
        fl_ir_plan_free(*plan);
        *bundle = NULL;
        *plan = NULL;
        return 1;
    }
    return -1;
}

/* --data-dir: every reader of the program (each role of a plan) reads from DIR. */
static int set_data_dir(const Opts *o, FlBundle *bundle, FlPlan *plan) {
    if (!o->data_dir) return -1;
    char *dir = realpath(o->data_dir, NULL);
    struct stat st;
    if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "flrun: error: --data-dir '%s': %s\n", o->data_dir, dir ? "not a directory" : strerror(errno));
        free(dir);
        return 1;
    }
    if (bundle) fl_ir_bundle_set_data_dir(bundle, dir);
    for (size_t i = 0; plan && i < plan->roles.len; i++) fl_ir_bundle_set_data_dir(plan->roles.data[i], dir);
    free(dir);
    return -1;
}

/* The issues of a plan whose roles do not fit together (fl_plan_verify), on stderr. */
static void print_plan_issues(const Opts *o, const FlPlanIssues *vi) {
    size_t n = vi->items.len;
    for (size_t i = 0; i < n && i < FL_PLAN_VERIFY_SHOWN; i++)
        fprintf(stderr, "flrun: error: %s: %s\n", o->file, vi->items.data[i].msg);
    if (n > FL_PLAN_VERIFY_SHOWN)
        fprintf(stderr, "flrun: error: %s: %zu more issues\n", o->file, n - FL_PLAN_VERIFY_SHOWN);
}

/* The options of a job that its ranks must have alike, told to the announce exchange
 * (fl_mpi_agree), each compared among the ranks that use it: the training's epochs and batch
 * size as they take effect (the option, or the run spec's) and the checkpoint, log, timeline and
 * prediction options among the trainers (trainer 0 writes and predicts, and a rank that trains
 * differently waits on the others); the seed and --load on every rank of a plan (its pservers
 * initialise or load their blocks with them), among the trainers of hand-written MPMD programs
 * (a server program has its own). In a plan the trainers' run spec counts on every rank.
 * --data-dir may differ: each host reads its own copy of the data (a plan's identity leaves the
 * readers' folders out, and the trainers compare the rows they read: train.h). Whether the rank
 * profiles (`profiling`: NULL, or what makes it) on every rank: each gives trainer 0 its table. */
static void agree_options(const Opts *o, const FlPlan *plan, const FlBundle *mine, const char *profiling, FlMpi *m) {
    const FlRunSpec *rs = plan ? &plan->roles.data[0]->run : &mine->run;
    bool all = plan != NULL; /* the seed and --load: every rank of a plan */
    struct {
        const char *name;
        int64_t given, spec;
        bool trainers;
    } nums[] = {{"--epochs", o->epochs, rs->epochs, true}, {"--batch-size", o->batch, rs->batch_size, true},
                {"--seed", o->seed, rs->seed, !all}, {"--trainers", o->trainers ? o->trainers : -1, plan ? plan->trainers : 0, false}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        char key[32], shown[64];
        int64_t v = nums[i].given >= 0 ? nums[i].given : nums[i].spec;
        snprintf(key, sizeof key, "%lld", (long long)v);
        snprintf(shown, sizeof shown, "%lld%s", (long long)v, nums[i].given >= 0 ? "" : " (the program's)");
        fl_mpi_agree(m, nums[i].name, key, shown, nums[i].trainers);
    }
    struct {
        const char *name, *value;
        bool trainers;
    } paths[] = {{"--load", o->load, !all},        {"--save", o->save, true},       {"--log", o->log, true},
                 {"--timeline", o->timeline, true}, {"--predict", o->predict, true}, {"--predict-var", o->predict_var, true}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        const char *v = paths[i].value;
        FlBuf shown = {0};
        fl_buf_printf(&shown, v ? "'%s'" : "none", v);
        fl_mpi_agree(m, paths[i].name, v ? v : "", fl_buf_str(&shown), paths[i].trainers);
        fl_buf_free(&shown);
    }
    FlBuf shown = {0};
    fl_buf_printf(&shown, profiling ? "on (%s)" : "off", profiling);
    fl_mpi_agree(m, "--profile", profiling ? "on" : "off", fl_buf_str(&shown), false);
    fl_buf_free(&shown);
}

/* MPI: starts MPI and gives this rank its role and its bundle (taken from the plan). A plan
 * with issues (every rank found the same) starts no work: rank 0 reports them, every rank
 * leaves with 1. Returns the exit code when the job cannot start, else -1. */
static int start_mpi(Opts *o, FlPlan *plan, const FlPlanIssues *bad, FlBundle **bundle, int64_t *seed,
                     FlTrace *trace, const char *profiling, FlMpi **out) {
    FlErr e = {{0}};
    FlMpiOptions mo = {.timeout = o->timeout, .stats = o->stats, .piece = o->piece, .trace = trace};
    FlMpi *m;
    if (fl_mpi_init(&mo, &m, &e) != FL_OK) {
        if (bad->items.len) print_plan_issues(o, bad);
        else fprintf(stderr, "flrun: error: %s\n", e.msg);
        return 1;
    }
    if (bad->items.len) {
        if (fl_mpi_rank(m) == 0) print_plan_issues(o, bad);
        fl_mpi_free(m);
        return 1;
    }
    *out = m;
    agree_options(o, plan, *bundle, profiling, m);
    /* collective: on an error every rank has the same message; rank 0 says it, all leave at once */
    if ((plan ? fl_mpi_assign_plan(m, plan, (int)o->trainers, o->file, &e) : fl_mpi_assign_announce(m, *bundle, o->file, &e)) !=
        FL_OK) {
        if (fl_mpi_rank(m) == 0) fprintf(stderr, "flrun: error: %s\n", e.msg);
        fl_mpi_free(m);
        *out = NULL;
        return 1;
    }
    if (plan) {
        int64_t k = fl_mpi_plan_role(plan, (int)o->trainers, fl_mpi_rank(m));
        *bundle = plan->roles.data[k];
        plan->roles.data[k] = NULL;
        /* seed-0 random ops take their seed from the run seed: the trainers' run spec's, so that
         * pservers initialise exactly what the local program would */
        if (*seed < 0) *seed = plan->roles.data[0] ? plan->roles.data[0]->run.seed : (*bundle)->run.seed;
    }
    return -1;
}

/* Groups a goroutine listing ("  goroutine N (file:line:col): op" per line): consecutive lines
 * that differ only in N become one line and "  ... and K more at the same place". */
static void group_goroutines(const char *list, FlBuf *out) {
    const char *prev_tail = NULL;
    size_t prev_len = 0, more = 0;
    for (const char *line = list; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *tail = memchr(line, '(', len);
        size_t tail_len = tail ? len - (size_t)(tail - line) : 0;
        if (tail && prev_tail && tail_len == prev_len && memcmp(tail, prev_tail, tail_len) == 0) {
            more++;
        } else {
            if (more) fl_buf_printf(out, "  ... and %zu more at the same place\n", more);
            more = 0;
            fl_buf_append(out, line, len);
            fl_buf_putc(out, '\n');
            prev_tail = tail;
            prev_len = tail_len;
        }
        line += len + (end ? 1 : 0);
    }
    if (more) fl_buf_printf(out, "  ... and %zu more at the same place\n", more);
}

/* ---- checkpoints of a plan's job: the local program's persistable vars, whole ---- */

static FlNamedTensor *ckpt_find(FlNamedTensors *v, const char *name) {
    for (size_t i = 0; i < v->len; i++)
        if (!strcmp(v->data[i].name, name)) return &v->data[i];
    return NULL;
}

/* Copies x, the rows [row0, row0 + rows) of `full` (rows < 0: all of it), into *dst. */
static FlStatus put_rows(FlTensor *dst, const FlTensor *x, int64_t row0, int64_t rows, const char *name, FlErr *e) {
    size_t nb = fl_tensor_nbytes(x);
    size_t row = dst->ndim ? fl_tensor_nbytes(dst) / (size_t)(dst->ne[0] ? dst->ne[0] : 1) : 0;
    bool fits = rows < 0 ? nb == fl_tensor_nbytes(dst) : dst->ndim && row0 + rows <= dst->ne[0] && nb == (size_t)rows * row;
    if (!fits || x->dtype != dst->dtype)
        return fl_err(e, "--save: a pserver's '%s' (%s %s) does not fit its var's rows", name, fl_dtype_name(x->dtype),
                      fl_tensor_shape(x).s);
    memcpy((char *)fl_tensor_data(dst) + (rows < 0 ? 0 : (size_t)row0 * row), fl_tensor_data(x), nb);
    return FL_OK;
}

/* A trainer role of the plan (this rank's own bundle when it is the only one). */
static const FlBundle *a_trainer(const Run *r) {
    for (size_t k = 0; k < r->plan->roles.len; k++)
        if (r->plan->roles.data[k] && !strcmp(r->plan->roles.data[k]->role, "trainer")) return r->plan->roles.data[k];
    return r->bundle;
}

/* Whether `name` is a distributed table: the trainers look it up (distributed_lookup_table). */
static bool is_dist_table(const FlBundle *trainer, const char *name) {
    const FlProgram *pm = trainer->main;
    for (size_t bi = 0; bi < pm->blocks.len; bi++) {
        const FlBlock *b = pm->blocks.data[bi];
        for (size_t j = 0; j < b->ops.len; j++)
            if (fl_ops_is(b->ops.data[j], FL_OPID_distributed_lookup_table) &&
                !strcmp(fl_ir_op_get_string(b->ops.data[j], "table", ""), name))
                return true;
    }
    return false;
}

static long plan_var_index(const FlPlanVar *pv, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(pv[i].var, name)) return (long)i;
    return -1;
}

/* Which of a pserver's vars (pv, n: fl_transpile_pserver_vars) a checkpoint holds as shards,
 * into shard[i]: the blocks of a distributed table, and the row-shaped state (rows of a var
 * with the table's rows) of the ops of its main program that read such a block (its
 * optimizer). The others are saved whole, as before (the trainer 0 gathers them). */
static bool shard_vars(const Run *r, const FlBundle *ps, const FlPlanVar *pv, size_t n, bool *shard) {
    const FlBundle *trainer = a_trainer(r);
    bool any = false;
    for (size_t i = 0; i < n; i++) any |= shard[i] = pv[i].rows >= 0 && is_dist_table(trainer, pv[i].full->name);
    const FlProgram *pm = ps->main;
    for (size_t bi = 0; any && bi < pm->blocks.len; bi++) {
        const FlBlock *b = pm->blocks.data[bi];
        for (size_t j = 0; j < b->ops.len; j++) {
            const FlOpDesc *op = b->ops.data[j];
            long t = -1;
            for (size_t s = 0; t < 0 && s < op->ins.len; s++)
                for (size_t a = 0; t < 0 && a < op->ins.data[s].nargs; a++) {
                    long i = plan_var_index(pv, n, op->ins.data[s].args[a]);
                    if (i >= 0 && shard[i] && is_dist_table(trainer, pv[i].full->name)) t = i;
                }
            if (t < 0) continue;
            for (int side = 0; side < 2; side++)
                for (size_t s = 0; s < (side ? op->outs.len : op->ins.len); s++) {
                    const FlSlot *sl = side ? &op->outs.data[s] : &op->ins.data[s];
                    for (size_t a = 0; a < sl->nargs; a++) {
                        long i = plan_var_index(pv, n, sl->args[a]);
                        if (i >= 0 && pv[i].rows >= 0 && pv[i].full->ndim >= 1 &&
                            pv[i].full->shape[0] == pv[t].full->shape[0])
                            shard[i] = true;
                    }
                }
        }
    }
    return any;
}

/* Trainer 0 of a plan's job: the trainer's persistable vars (the parameters) and every pserver's
 * state, asked for by name (a recv from each pserver) and put together into the local program's
 * vars, written into the new checkpoint's directory (*out, switched in by finish_save) that a
 * local run loads as well as a job of any P and T. Distributed tables and their row-shaped state
 * are not asked for: each pserver writes its rows as shards (save_shards) when a SAVE message
 * sent here asks it to (*asked: whether any was sent). */
static FlStatus collect_plan(Run *r, FlNamedTensors *out, bool *asked, FlErr *e) {
    FlNamedTensors v = {0};
    FlDist *d = fl_mpi_dist(r->mpi);
    *asked = false;
    FlStatus st = fl_params_collect(r->prog, r->scope, &v, e);
    size_t own = v.len; /* the trainer's own: not asked for */
    for (size_t k = 0; k < r->plan->roles.len && st == FL_OK; k++) {
        const FlBundle *ps = r->plan->roles.data[k];
        if (!ps || strcmp(ps->role, "pserver") != 0) continue;
        FlPlanVar *pv;
        size_t n = fl_transpile_pserver_vars(ps, &pv);
        bool *shard = fl_xcalloc(n + 1, sizeof *shard);
        *asked |= shard_vars(r, ps, pv, n, shard);
        FL_VEC(size_t) ask = {0};
        for (size_t i = 0; i < n && st == FL_OK; i++) {
            /* a var the trainer has, or a whole copy already in (the transpiler copies a var
             * whole to every block that needs it, or cuts it into rows, never both) */
            FlNamedTensor *c = ckpt_find(&v, pv[i].full->name);
            if (shard[i] || (c && (c < v.data + own || pv[i].rows < 0))) continue;
            if (!c) {
                FlNamedTensor nc = {.name = pv[i].full->name, .t = FL_TENSOR_INIT};
                st = fl_tensor_alloc(e, &nc.t, pv[i].full->dtype, pv[i].full->ndim, pv[i].full->shape);
                FL_VEC_PUSH(&v, nc);
            }
            FL_VEC_PUSH(&ask, i);
        }
        /* every request posted before the first answer is awaited: one round trip, not one per var */
        for (size_t a = 0; a < ask.len && st == FL_OK && d->prefetch; a++)
            st = d->prefetch(d, (int)ps->role_index, pv[ask.data[a]].var, e);
        for (size_t a = 0; a < ask.len && st == FL_OK; a++) {
            size_t i = ask.data[a];
            FlTensor x = FL_TENSOR_INIT;
            st = d->recv(d, (int)ps->role_index, pv[i].var, &x, e);
            if (st == FL_OK) st = put_rows(&ckpt_find(&v, pv[i].full->name)->t, &x, pv[i].row0, pv[i].rows, pv[i].var, e);
            fl_tensor_fini(&x);
        }
        FL_VEC_FREE(&ask);
        free(shard);
        free(pv);
    }
    *out = v;
    return st;
}

static FlStatus save_plan(Run *r, FlParamsSaving **out, bool *asked, FlErr *e) {
    FlNamedTensors v = {0};
    *out = NULL;
    FlStatus st = collect_plan(r, &v, asked, e);
    if (st == FL_OK) st = fl_params_write_begin(r->o->save, &v, out, e);
    fl_params_free(&v);
    if (st == FL_OK && *asked) st = fl_mpi_save_ask(r->mpi, fl_params_saving_dir(*out), e);
    return st;
}

/* The --log rows so far (*text, malloc'ed): a checkpoint keeps them (log.csv), so that a run
 * resumed from it starts its log with them. */
static FlStatus log_so_far(Run *r, char **text, size_t *len, FlErr *e) {
    if (fflush(r->log) != 0) return fl_err(e, "cannot write '%s': %s", r->o->log, strerror(errno));
    *text = fl_read_file(fl_buf_str(&r->log_tmp), len, e);
    return *text ? FL_OK : FL_ERROR;
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This process's CPU seconds so far (user + system, all threads). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The checkpoint hook (train.h) of trainer 0 or the local run: the vars (gathered from the
 * pservers in a plan's job), the training state and the log so far, handed to the writer, which
 * writes DIR/step-N in the background (ckpt.h). Training stops only for the gathering (and for
 * the last write, when it has not finished yet): --stats says how long, and how long the writes
 * took. */
static FlStatus checkpoint(void *ctx, const FlTrainState *st, bool *stop, FlErr *e) {
    Run *r = ctx;
    double t0 = wall_now();
    FlNamedTensors v = {0};
    bool asked = false;
    char *log = NULL;
    size_t len = 0;
    FlStatus s = r->plan ? collect_plan(r, &v, &asked, e) : fl_params_collect(r->prog, r->scope, &v, e);
    if (s == FL_OK && r->log) s = log_so_far(r, &log, &len, e);
    if (s == FL_OK) s = fl_ckpt_writer_start(r->writer, &v, st, log, len, e);
    fl_params_free(&v);
    free(log);
    double dt = wall_now() - t0;
    r->ckpt_n++;
    r->ckpt_secs += dt;
    if (dt > r->ckpt_max) r->ckpt_max = dt;
    /* DIR/STOP: the job ends well after this checkpoint (a launcher restarts it on more hosts) */
    if (s == FL_OK && (*stop = fl_ckpt_take_stop(r->o->checkpoint)) && !r->o->quiet) {
        printf("stopping after the checkpoint of step %lld, as %s/STOP asks\n", (long long)st->step, r->o->checkpoint);
        fflush(stdout);
    }
    return s;
}

/* Trainer 0, after fl_mpi_finish: the pservers' answers (their shards written), then the new
 * checkpoint switched in. */
static FlStatus finish_save(Run *r, FlParamsSaving *s, bool asked, FlErr *e) {
    int64_t files = 0, bytes = 0;
    FlErr e2 = {{0}};
    if (asked && fl_mpi_save_wait(r->mpi, &files, &bytes, &e2) != FL_OK) {
        fl_params_write_abandon(s);
        return fl_err(e, "--save %s: %s", r->o->save, e2.msg);
    }
    return fl_params_write_end(s, e);
}

/* A pserver asked to save (fl_mpi_save_request gives the new checkpoint's directory): writes
 * its rows of the distributed tables and of their state as shards, and answers trainer 0. */
static FlStatus save_shards(Run *r, FlErr *e) {
    const char *dir = fl_mpi_save_request(r->mpi);
    if (!dir) return FL_OK;
    FlPlanVar *pv;
    size_t n = fl_transpile_pserver_vars(r->bundle, &pv);
    bool *shard = fl_xcalloc(n + 1, sizeof *shard);
    (void)shard_vars(r, r->bundle, pv, n, shard);
    FlStatus st = FL_OK;
    int64_t files = 0, bytes = 0;
    for (size_t i = 0; i < n && st == FL_OK; i++) {
        if (!shard[i]) continue;
        FlTensor t = FL_TENSOR_INIT;
        st = fl_scope_get_tensor(r->scope, pv[i].var, &t, e);
        if (st == FL_OK && (t.ndim != pv[i].full->ndim || t.ne[0] != pv[i].rows))
            st = fl_err(e, "'%s' is %s, not rows [%lld, %lld) of '%s'", pv[i].var, fl_tensor_shape(&t).s,
                        (long long)pv[i].row0, (long long)(pv[i].row0 + pv[i].rows), pv[i].full->name);
        if (st == FL_OK)
            st = fl_params_write_shard(dir, pv[i].full->name, pv[i].full->shape[0], pv[i].row0, &t, e);
        if (st == FL_OK) files++, bytes += (int64_t)fl_tensor_nbytes(&t);
        fl_tensor_fini(&t);
    }
    free(shard);
    free(pv);
    FlErr e2 = {{0}};
    if (fl_mpi_save_answer(r->mpi, st == FL_OK ? NULL : e->msg, files, bytes, &e2) != FL_OK) {
        *e = e2;
        return FL_ERROR;
    }
    return FL_OK; /* an error is trainer 0's to report (it removes the new checkpoint) */
}

/* A pserver of a plan's job with --load DIR (or the load_persistables_for_increment(DIR, ...)
 * of its script: Bundle.load): its vars cut from the saved local vars, as its startup program
 * cuts them from their initial values: the rows of its blocks read from the saved whole var or
 * from the shards that overlap them, whatever P wrote them. */
static FlStatus load_server(Run *r, const char *dir, FlErr *e) {
    FlPlanVar *pv;
    size_t n = fl_transpile_pserver_vars(r->bundle, &pv);
    FlTensor *got = fl_xcalloc(n + 1, sizeof *got);
    FlStatus st = FL_OK;
    for (size_t i = 0; i < n; i++) got[i] = (FlTensor)FL_TENSOR_INIT;
    for (size_t i = 0; i < n && st == FL_OK; i++)
        st = fl_params_read_rows(dir, pv[i].full, pv[i].row0, pv[i].rows, &got[i], e);
    for (size_t i = 0; i < n; i++) { /* every var read: set them all */
        if (st == FL_OK) fl_scope_set_tensor(r->scope, pv[i].var, &got[i]);
        fl_tensor_fini(&got[i]);
    }
    free(got);
    free(pv);
    return st;
}

/* Trainer 0 (the local run) before training with --checkpoint-every: DIR ready for the
 * checkpoints (ckpt.h), and a plan whose pservers alone hold rows of distributed tables refused
 * (checkpoints during training gather the vars whole on trainer 0). */
static FlStatus check_checkpoints(Run *r, FlErr *e) {
    for (size_t k = 0; r->plan && k < r->plan->roles.len; k++) {
        const FlBundle *ps = r->plan->roles.data[k];
        if (!ps || strcmp(ps->role, "pserver") != 0) continue;
        FlPlanVar *pv;
        size_t n = fl_transpile_pserver_vars(ps, &pv);
        bool *shard = fl_xcalloc(n + 1, sizeof *shard);
        bool any = shard_vars(r, ps, pv, n, shard);
        const char *table = NULL;
        for (size_t i = 0; any && i < n && !table; i++)
            if (shard[i]) table = pv[i].full->name;
        FlStatus st = any ? fl_err(e, "--checkpoint-every: the plan has distributed tables ('%s'), whose rows only "
                                      "the pservers hold; checkpoints during training take whole vars (--save at the "
                                      "end takes the tables' shards)", table)
                          : FL_OK;
        free(shard);
        free(pv);
        if (st != FL_OK) return st;
    }
    return fl_ckpt_prepare(r->o->checkpoint, r->o->resume, e);
}

/* Once per job (rank 0): a warning when the matrix products run on narrower vectors than the
 * CPU has (the user's OPENBLAS_CORETYPE, FL_GEMM or FL_DNNL chose so), and with --stats in a
 * local run the GEMM library, its kernel and why. */
static void gemm_notes(const Opts *o, bool mpi) {
    const FlGemmInfo *g = fl_gemm_info();
    FlBuf b = {0};
    if (fl_gemm_warning(g, &b)) fprintf(stderr, "flrun: warning: %s\n", fl_buf_str(&b));
    if (o->stats && !mpi) { /* an MPI rank names its GEMM in its own stats line, at the end */
        b.len = 0;
        fl_gemm_describe(g, &b);
        fprintf(stderr, "flrun: stats gemm: %s\n", fl_buf_str(&b));
    }
    fl_buf_free(&b);
}

/* The first flrun option that a program with a driver does not take yet (docs/driver.md,
 * "flrun's features"), NULL when none: its loop, figures and saving are the script's own. */
static const char *driver_refused(const Opts *o) {
    if (o->epochs >= 0) return "--epochs";
    if (o->batch >= 0) return "--batch-size";
    const char *const named[][2] = {{"--log", o->log}, {"--save", o->save}, {"--load", o->load},
                                    {"--predict", o->predict}, {"--predict-var", o->predict_var},
                                    {"--data-dir", o->data_dir}, {"--timeline", o->timeline},
                                    {"--checkpoint", o->checkpoint}, {"--plot", o->plot},
                                    {"--tensorboard", o->tensorboard}};
    for (size_t i = 0; i < FL_ARRAY_LEN(named); i++)
        if (named[i][1]) return named[i][0];
    if (o->resume) return "--resume";
    if (o->profile) return "--profile";
    if (o->trainers) return "--trainers";
    if (o->stats) return "--stats";
    return NULL;
}

/* Does a run_program of the driver (any block) run the program `name`? */
static bool driver_runs(const FlProgram *driver, const char *name) {
    for (size_t k = 0; k < driver->blocks.len; k++) {
        const FlBlock *b = driver->blocks.data[k];
        for (size_t i = 0; i < b->ops.len; i++)
            if (fl_ops_is(b->ops.data[i], FL_OPID_run_program) &&
                !strcmp(fl_ir_op_get_string(b->ops.data[i], "program", ""), name))
                return true;
    }
    return false;
}

/* Where a driver's loop runs a program, for a message: "exe.run at FILE:LINE" of its first
 * run_program that has a location (the file's base name), else "exe.run in the script". */
static void driver_loop_at(const FlBundle *b, FlBuf *out) {
    for (size_t k = 0; b->driver && k < b->driver->blocks.len; k++) {
        const FlBlock *bl = b->driver->blocks.data[k];
        for (size_t i = 0; i < bl->ops.len; i++) {
            const FlOpDesc *op = bl->ops.data[i];
            if (!fl_ops_is(op, FL_OPID_run_program) || op->loc.line <= 0 || op->loc.file < 0 ||
                (size_t)op->loc.file >= b->source_paths.len)
                continue;
            const char *src = b->source_paths.data[op->loc.file], *base = strrchr(src, '/');
            fl_buf_printf(out, "exe.run at %s:%d", base ? base + 1 : src, op->loc.line);
            return;
        }
    }
    fl_buf_puts(out, "exe.run in the script");
}

/* --load over a user's driver: the checkpoint replaces what each run of the startup program made. */
typedef struct DriverLoad {
    const FlLoadedProgram *prog;
    const char *dir;
    bool applied;
} DriverLoad;

static FlStatus load_after_startup(void *ctx, FlScope *scope, FlErr *e) {
    DriverLoad *l = ctx;
    l->applied = true;
    return fl_params_load(l->prog, scope, l->dir, e);
}

/* Why `flag` (driver_refused's) has no meaning over a script's own loop. */
static const char *driver_refused_why(const char *flag) {
    static const char *const why[][2] = {
        {"--epochs", "its epochs are the script's"},
        {"--batch-size", "its batches are the script's"},
        {"--log", "the log's rows are fluid.train's figures (its fetches per step, its test set's per epoch), "
                  "which the script does not call; the script prints what it fetches"},
        {"--plot", "the curves are fluid.train's figures, which the script does not call; the script prints what "
                   "it fetches"},
        {"--tensorboard", "the scalars are fluid.train's figures, which the script does not call; the script prints "
                          "what it fetches"},
        {"--predict", "it predicts with fluid.train's reader's columns; the script's own model predicts from the "
                      "directory its fluid.io.save_inference_model writes (flrun DIR --predict DATA)"},
        {"--predict-var", "it predicts with fluid.train's reader's columns; the script's own model predicts from the "
                          "directory its fluid.io.save_inference_model writes (flrun DIR --predict DATA)"},
        {"--checkpoint", "a checkpoint keeps fluid.train's place in its epochs and batches; the script saves its own "
                         "(fluid.io.save_persistables)"},
        {"--resume", "it resumes fluid.train's epochs and batches; the script loads its own "
                     "(fluid.io.load_persistables, or --load DIR)"},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(why); i++)
        if (!strcmp(flag, why[i][0])) return why[i][1];
    return "the option is fluid.train's, which the script does not call";
}

/* A bundle with a driver: the driver runs (its run_program ops run startup and main), on one
 * executor and one root scope, with a goroutine scheduler when it or main uses goroutines.
 * --load applies after each run of the startup program; --save writes the main program's
 * persistable vars of the root scope when the script ends with status 0, --timeline and
 * --profile every op run, the driver's own included, and --stats the GEMM library and the run's
 * time. */
static int run_driver(const Opts *o, FlBundle *bundle) {
    Opts own = *o; /* the options that do apply to a user's loop */
    own.load = own.save = own.timeline = NULL;
    own.profile = own.stats = false;
    const char *flag = driver_refused(&own);
    if (flag) {
        FlBuf at = {0};
        driver_loop_at(bundle, &at);
        const char *why = driver_refused_why(flag);
        fprintf(stderr, "flrun: %s: '%s' runs its own loop (%s; docs/driver.md): %s\nTry 'flrun --help'.\n", flag,
                o->file, fl_buf_str(&at), why);
        fl_buf_free(&at);
        fl_ir_bundle_free(bundle);
        return 2;
    }
    if (has_op_flag(bundle->main, FL_OPF_DIST) || has_op_flag(bundle->startup, FL_OPF_DIST)) {
        fprintf(stderr, "flrun: error: '%s': a program with a driver runs locally; its main program talks to other "
                "ranks\n", o->file);
        fl_ir_bundle_free(bundle);
        return 1;
    }
    if (o->load && !driver_runs(bundle->driver, "startup")) {
        fprintf(stderr, "flrun: --load: '%s' never runs its startup program (exe.run(fluid.default_startup_program()) "
                "in the script), after which the checkpoint would replace its parameters\nTry 'flrun --help'.\n",
                o->file);
        fl_ir_bundle_free(bundle);
        return 2;
    }
    FlErr e = {{0}};
    int rc = 1, code = 0; /* code: of the script's sys.exit(code), else 0 */
    double t0 = 0, c0 = 0;  /* --stats: the run's start */
    FlLoadedProgram *prog = fl_program_from_bundle_take(bundle);
    FlExecutor *ex = NULL;
    FlSched *sched = NULL;
    FlScope *scope = fl_scope_new(NULL);
    /* --timeline: every op run, the driver's included (a run_program's span holds its program's) */
    FlTrace *trace = o->timeline ? fl_trace_new((size_t)o->timeline_events) : NULL;
    /* --profile: the profiler's table of every op run, the driver's included */
    FlReportOptions ro = {.program = o->file, .profile = o->profile, .profile_sort = o->profile_sort};
    FlReport *report = NULL;
    if (fl_report_new(&ro, &report, &e) != FL_OK) {
        fprintf(stderr, "flrun: %s\nTry 'flrun --help'.\n", e.msg);
        fl_trace_free(trace);
        fl_scope_free(scope);
        fl_program_free(prog);
        return 2;
    }
    Run r = {.o = (Opts *)o, .trace = trace, .report = report};
    FlExecutorOptions xo = {.seed = (uint64_t)(o->seed >= 0 ? o->seed : 0),
                            .threads = o->threads > 0 ? (int)o->threads : fl_par_cpus(), .trace = trace,
                            .prof = fl_report_prof(report)};
    DriverLoad dl = {.prog = prog, .dir = o->load};
    FlDriverHooks hooks = {.ctx = &dl, .startup_done = load_after_startup};
    /* the outputs are checked before the run, not after it */
    if (check_outputs(&r, &e) != FL_OK) goto done;
    if (o->save && fl_params_check_target(o->save, &e) != FL_OK) goto done;
    if (o->load) fl_driver_hooks_attach(scope, &hooks);
    if (fl_executor_new(prog, &xo, &ex, &e) != FL_OK) goto done;
    if (has_op_flag(bundle->driver, FL_OPF_CHAN) || has_op_flag(bundle->main, FL_OPF_CHAN)) {
        FlSchedConfig sc = {.stack_size = FL_CONC_STACK_SIZE, .nprocs = o->procs};
        if (!(sched = fl_sched_new(&sc, &e))) goto done;
        fl_conc_attach(scope, sched);
    }
    if (o->stats) gemm_notes(o, false);
    t0 = wall_now(), c0 = cpu_now();
    if (fl_executor_run_driver_exit(ex, scope, &code, &e) != FL_OK) goto done;
    if (o->stats) /* the script's whole run: its loop is its own, so no epochs to count */
        fprintf(stderr, "flrun: stats run: %.6f s, %.6f CPU s; the main program ran %llu times\n", wall_now() - t0,
                cpu_now() - c0, (unsigned long long)fl_executor_runs(ex));
    if (!code && o->load && !dl.applied) {
        snprintf(e.msg, sizeof e.msg, "--load: the script never ran its startup program, so the checkpoint '%s' "
                 "was not loaded", o->load);
        goto done;
    }
    if (!code && o->save && fl_params_save(prog, scope, o->save, &e) != FL_OK) goto done;
    if (!code && o->timeline && write_timeline(&r, o->timeline, false, &e) != FL_OK) goto done;
    if (!code && fl_report_finish(report, NULL, true, &e) != FL_OK) goto done;
    rc = code; /* what the script printed before its exit, it printed */
    e.msg[0] = 0;
done:;
    const char *deadlock = sched ? fl_sched_deadlock_report(sched) : NULL;
    if (e.msg[0] && deadlock && strstr(e.msg, "deadlock: all goroutines are blocked")) fputs(deadlock, stderr);
    else if (e.msg[0]) fprintf(stderr, "flrun: error: %s\n", e.msg);
    fl_sched_free(sched); /* wakes goroutines still blocked and waits until they have unwound */
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    fl_trace_free(trace); /* after the scheduler: no goroutine records any more */
    fl_report_free(report);
    return rc;
}

/* An inference model (a directory of fluid.io.save_inference_model, or its model file): --predict
 * DATA prints its targets for each row (tools/flrun_model.c); the training options do not apply. */
static int run_model(const Opts *o) {
    Opts t = *o;
    t.predict = t.predict_var = NULL;
    const char *flag = driver_refused(&t);
    if (flag || o->defines.len) {
        fprintf(stderr, "flrun: %s: '%s' is an inference model, which only predicts (--predict DATA [--predict-var "
                "NAME])\nTry 'flrun --help'.\n", flag ? flag : "-D", o->file);
        return 2;
    }
    if (!o->predict) {
        fprintf(stderr, "flrun: '%s' is an inference model: give --predict DATA (a row of its feeds' values per line) "
                "to print its targets\nTry 'flrun --help'.\n", o->file);
        return 2;
    }
    FlModelRun m = {.model = o->file, .predict = o->predict, .predict_var = o->predict_var,
                    .seed = (uint64_t)(o->seed >= 0 ? o->seed : 0), .threads = o->threads > 0 ? (int)o->threads : 1};
    return fl_flrun_model(&m);
}

static int run_program(Opts *o) {
    FlErr e = {{0}};
    FlBundle *bundle;
    FlPlan *plan;
    struct stat dst;
    if (stat(o->file, &dst) == 0 && S_ISDIR(dst.st_mode)) return run_model(o);
    int code = load(o, &bundle, &plan);
    if (code < 0 && bundle && bundle->inference) {
        fl_ir_bundle_free(bundle);
        return run_model(o);
    }
    if (code < 0) code = set_data_dir(o, bundle, plan);
    if (code >= 0) {
        fl_ir_bundle_free(bundle);
        fl_ir_plan_free(plan);
        return code;
    }
    /* a driver of the script's own loop; fluid.train's (a run spec beside it) runs below, hosted by
     * the training (train.h) */
    if (bundle && own_loop(bundle)) return run_driver(o, bundle);
    Opts in_job = *o; /* the options that apply to a job's trainers running their own loop */
    in_job.stats = false;
    if (plan && plan->trainers > 0 && own_loop(plan->roles.data[0]) && driver_refused(&in_job)) {
        const char *flag = driver_refused(&in_job);
        fprintf(stderr, "flrun: %s: the trainers of '%s' run their own loop (exe.run in the script: docs/driver.md); "
                "%s does not apply to them\nTry 'flrun --help'.\n", flag, o->file, flag);
        fl_ir_plan_free(plan);
        return 2;
    }
    if (o->checkpoint && !plan && has_op_flag(bundle->main, FL_OPF_DIST)) {
        fprintf(stderr, "flrun: --checkpoint: '%s' is a hand-written distributed program; checkpoints during training "
                "need a plan (flc transpile) or a local run\nTry 'flrun --help'.\n", o->file);
        fl_ir_bundle_free(bundle);
        return 2;
    }
    if (o->trainers && (!plan || o->trainers > plan->trainers)) {
        if (plan)
            fprintf(stderr, "flrun: --trainers %lld: the plan has %lld trainers; a job runs at most its plan's (transpile it "
                    "for more)\nTry 'flrun --help'.\n", (long long)o->trainers, (long long)plan->trainers);
        else
            fprintf(stderr, "flrun: --trainers runs some of a plan's trainers: '%s' is not a plan\nTry 'flrun --help'.\n",
                    o->file);
        fl_ir_bundle_free(bundle);
        fl_ir_plan_free(plan);
        return 2;
    }
    if (o->resume) { /* every rank finds the same last checkpoint (the job's ranks agree on --load) */
        int64_t step;
        if (fl_ckpt_latest(o->checkpoint, &o->resume_from, &step, &e) != FL_OK) {
            fprintf(stderr, "flrun: error: %s\n", e.msg);
            fl_ir_bundle_free(bundle);
            fl_ir_plan_free(plan);
            return 1;
        }
        o->load = o->resume_from;
    }
    FlMpi *mpi = NULL;
    int64_t seed = o->seed;
    /* the report (curves, TensorBoard, the profiler): a plan's run spec is its trainers' */
    FlReport *report;
    FlReportOptions ro = {.program = o->file, .plot = o->plot, .tensorboard = o->tensorboard, .profile = o->profile,
                          .profile_sort = o->profile_sort,
                          .spec = plan ? (plan->roles.data[0] ? &plan->roles.data[0]->run.profile : NULL) : &bundle->run.profile};
    code = fl_report_new(&ro, &report, &e) != FL_OK ? usage_error("%s", e.msg) : -1;
    if (code < 0 && fl_report_profile_path(report)) code = check_paths(o, fl_report_profile_path(report));
    if (code >= 0) {
        fl_report_free(report);
        fl_ir_bundle_free(bundle);
        fl_ir_plan_free(plan);
        return code;
    }
    /* the timeline's origin: before MPI starts, so every event of the run comes after it */
    bool traced = o->timeline || fl_report_profile_path(report);
    FlTrace *trace = traced ? fl_trace_new((size_t)o->timeline_events) : NULL;
    if (plan || has_op_flag(bundle->main, FL_OPF_DIST)) {
        FlPlanIssues bad = {0};
        if (plan) fl_plan_verify(plan, &bad);
        const char *profiling = !fl_report_prof(report) ? NULL : o->profile ? "--profile" : "a fluid.profiler region";
        code = start_mpi(o, plan, &bad, &bundle, &seed, trace, profiling, &mpi);
        fl_plan_verify_issues_fini(&bad);
        if (code >= 0) {
            fl_ir_plan_free(plan);
            fl_ir_bundle_free(bundle);
            fl_trace_free(trace);
            fl_report_free(report);
            return code;
        }
    }
    Run r = {0};
    r.o = o;
    r.mpi = mpi;
    r.plan = plan;
    r.trace = trace;
    r.report = report;
    bool server = mpi && fl_mpi_role(mpi) == FL_MPI_PSERVER;
    bool lead = !server && (!mpi || fl_mpi_index(mpi) == 0);
    r.prog = fl_program_from_bundle_take(bundle);
    r.bundle = fl_program_bundle(r.prog);
    r.tty = isatty(STDOUT_FILENO) && !mpi; /* mpirun gives ranks a pty: no progress bars there */
    int rc = 1, threads = 1;
    FlSched *sched = NULL; /* goroutines (see below) */
    FlParamsSaving *saving = NULL; /* trainer 0 of a plan: the checkpoint being written */
    bool asked = false;           /* and whether the pservers write shards into it */
    /* kernel threads: --threads, else one per core locally and 1 per rank in an MPI job (the
     * ranks of a job usually share the machine's cores) */
    threads = o->threads > 0 ? (int)o->threads : mpi ? 1 : fl_par_cpus();
    FlExecutorOptions xo = {.seed = (uint64_t)(seed >= 0 ? seed : r.bundle->run.seed), .threads = threads, .trace = trace,
                            .prof = fl_report_prof(report)};
    if (fl_executor_new(r.prog, &xo, &r.ex, &e) != FL_OK) goto fail;
    if (!mpi || fl_mpi_rank(mpi) == 0) gemm_notes(o, mpi != NULL);
    r.scope = fl_scope_new(NULL);
    if (mpi) fl_dist_attach(r.scope, fl_mpi_dist(mpi));
    /* goroutines (go, channels, timers, parallel_for's iterations): one scheduler for the
     * process, with --procs processors; runs attach their thread to it (conc.h) */
    if (has_op_flag(r.bundle->main, FL_OPF_CHAN) || (r.bundle->driver && has_op_flag(r.bundle->driver, FL_OPF_CHAN))) {
        FlSchedConfig sc = {.stack_size = FL_CONC_STACK_SIZE, .nprocs = o->procs};
        if (!(sched = fl_sched_new(&sc, &e))) goto fail;
        fl_conc_attach(r.scope, sched);
    }
    if (own_loop(r.bundle)) { /* a trainer whose script runs its own loop: its driver runs startup and main */
        int status = 0;
        if (fl_executor_run_driver_exit(r.ex, r.scope, &status, &e) != FL_OK) goto fail;
        if (status) {
            snprintf(e.msg, sizeof e.msg, "%s: the script ended with exit status %d", fl_mpi_who(mpi), status);
            goto fail;
        }
        if (fl_mpi_finish(mpi, &e) != FL_OK) goto fail;
        rc = 0;
        goto fail;
    }
    if (fl_executor_run_startup(r.ex, r.scope, &e) != FL_OK) goto fail;
    const char *inc = server && plan ? r.bundle->load : NULL; /* its script's load_persistables_for_increment */
    if (inc && o->load && strcmp(inc, o->load) != 0) {
        snprintf(e.msg, sizeof e.msg, "%s: --load '%s', but the pserver's script loads '%s' "
                 "(load_persistables_for_increment): give one checkpoint", fl_mpi_who(mpi), o->load, inc);
        goto fail;
    }
    if (inc && !o->load && load_server(&r, inc, &e) != FL_OK) goto fail;
    struct stat lsb;
    if (o->load && plan && stat(o->load, &lsb) == 0 && S_ISREG(lsb.st_mode)) {
        snprintf(e.msg, sizeof e.msg, "--load %s: a file (Fluid's combined parameters) is loaded whole by a local run; "
                 "the ranks of a job read a directory of a file per var (load it locally and --save it)", o->load);
        goto fail;
    }
    if (o->load && (server && plan ? load_server(&r, o->load, &e) : fl_params_load(r.prog, r.scope, o->load, &e)) != FL_OK)
        goto fail;
    const FlRunSpec *rs = &r.bundle->run;
    if (server) { /* startup, then listen_and_serv until every trainer is done */
        fl_report_train_begin(report); /* a pserver's part of the training */
        FlStatus run = fl_executor_run(r.ex, r.scope, NULL, 0, NULL, 0, &e);
        fl_report_train_end(report);
        if (run != FL_OK) goto fail;
        if (plan && save_shards(&r, &e) != FL_OK) goto fail;
        if (o->timeline && write_timeline(&r, o->timeline, false, &e) != FL_OK) goto fail;
        if (finish_report(&r, false, &e) != FL_OK) goto fail;
        rc = 0;
        goto fail;
    }
    if (fl_train_new(r.prog, r.ex, r.scope, mpi, &r.tr, &e) != FL_OK) goto fail;
    /* every output is checked before the first step: nothing trains for an output that fails */
    if (lead && check_outputs(&r, &e) != FL_OK) goto fail;
    if (lead && o->checkpoint_every && check_checkpoints(&r, &e) != FL_OK) goto fail;
    if (lead && o->checkpoint_every) r.writer = fl_ckpt_writer_new(o->checkpoint);
    if (o->resume_from && fl_ckpt_read_state(o->resume_from, &r.resumed, &e) != FL_OK) goto fail;
    if (lead && o->resume && !o->quiet) {
        if (o->resume_from)
            printf("resuming from '%s': step %lld, epoch %lld, batch %lld\n", o->resume_from, (long long)r.resumed.step,
                   (long long)r.resumed.epoch, (long long)r.resumed.batch + 1);
        else
            printf("--resume: no checkpoint in '%s' yet: training from the start\n", o->checkpoint);
        fflush(stdout);
    }
    if (o->save && lead && fl_params_check_target(o->save, &e) != FL_OK) goto fail;
    if (o->predict && lead && fl_train_predict_open(r.tr, o->predict, o->predict_var, &r.pin, &e) != FL_OK) goto fail;
    if (o->log && lead && open_log(&r, &e) != FL_OK) goto fail;
    if (lead && fl_report_open(report, r.tr, r.bundle, mpi, plan, &e) != FL_OK) goto fail;
    bool do_train = rs->present && !(o->predict && o->load && o->epochs < 0);
    if (!rs->present) {
        if (fl_train_run_once(r.tr, &e) != FL_OK) goto fail;
    } else if (do_train) {
        if (train(&r, &e) != FL_OK) goto fail;
    }
    if (r.writer && fl_ckpt_writer_wait(r.writer, &e) != FL_OK) goto fail; /* the last checkpoint in place */
    /* stopped at a checkpoint (DIR/STOP): nothing of a finished run is written (the run resumed
     * from that checkpoint writes the log, --save and --predict) */
    bool stopped = r.tr && fl_train_stopped(r.tr);
    if (r.writer && o->stats) {
        int n;
        double secs, most;
        fl_ckpt_writer_stats(r.writer, &n, &secs, &most);
        fprintf(stderr, "flrun: stats checkpoints: %d written; training stopped %.3f s for each (%.3f s at most), "
                "the writes took %.3f s each (%.3f s at most) beside it\n", n, r.ckpt_n ? r.ckpt_secs / r.ckpt_n : 0,
                r.ckpt_max, n ? secs / n : 0, most);
    }
    if (o->save && lead && plan && !stopped && save_plan(&r, &saving, &asked, &e) != FL_OK)
        goto fail; /* asks the pservers: before finish */
    if (mpi && fl_mpi_finish(mpi, &e) != FL_OK) goto fail;
    if (saving) {
        FlParamsSaving *s = saving;
        saving = NULL;
        if (finish_save(&r, s, asked, &e) != FL_OK) goto fail;
    }
    if (mpi && o->timeline && write_timeline(&r, o->timeline, false, &e) != FL_OK) goto fail; /* with the pservers */
    /* stopped at a checkpoint: the picture is the finished run's (the event file keeps what it has) */
    if (mpi && finish_report(&r, lead && !stopped, &e) != FL_OK) goto fail;
    if (r.log && !stopped && close_log(&r, &e) != FL_OK) goto fail;
    if (o->save && lead && !plan && !stopped && fl_params_save(r.prog, r.scope, o->save, &e) != FL_OK) goto fail;
    if (o->predict && lead && !stopped && predict(&r, &e) != FL_OK) goto fail;
    if (!mpi && o->timeline && write_timeline(&r, o->timeline, false, &e) != FL_OK) goto fail;
    if (!mpi && finish_report(&r, !stopped, &e) != FL_OK) goto fail;
    rc = 0;
fail:
    fl_params_write_abandon(saving);
    if (rc && mpi) {
        char msg[sizeof e.msg + 16];
        snprintf(msg, sizeof msg, "error: %s", e.msg);
        fl_mpi_fail(mpi, msg);
    }
    /* Go's endings: a deadlock prints the scheduler's report (one line per goroutine); when the
     * main program ends, goroutines still alive are dropped with a warning naming their lines */
    const char *deadlock = sched ? fl_sched_deadlock_report(sched) : NULL;
    if (rc && deadlock && strstr(e.msg, "deadlock: all goroutines are blocked")) fputs(deadlock, stderr);
    else if (rc) fprintf(stderr, "flrun: error: %s\n", e.msg);
    FlBuf live = {0}, leaked = {0};
    size_t nleaked = 0;
    /* the blocked ones; goroutines still running get up to 100 ms to block or finish first. A
     * goroutine whose channel operation just completed may still be listed as blocked for an
     * instant, so a listing counts only when two of them 1 ms apart agree. */
    FlBuf prev = {0};
    for (int tries = 0; sched && !rc && tries < 100; tries++) {
        prev.len = 0;
        fl_buf_append(&prev, fl_buf_str(&leaked), leaked.len);
        live.len = leaked.len = nleaked = 0;
        bool busy = false;
        if (fl_sched_list(sched, &live))
            for (const char *l = fl_buf_str(&live), *nl; *l; l = nl + 1) {
                nl = strchr(l, '\n');
                const char *st = strstr(l, "): ");
                if (!nl || !st) break;
                if (!strncmp(st, "): running", 10) || !strncmp(st, "): runnable", 11) ||
                    !strncmp(st, "): in blocking", 14)) {
                    busy = true;
                    continue;
                }
                fl_buf_append(&leaked, l, (size_t)(nl - l + 1));
                nleaked++;
            }
        if (!busy && tries > 0 && leaked.len == prev.len && !strcmp(fl_buf_str(&leaked), fl_buf_str(&prev))) break;
        usleep(1000);
    }
    fl_buf_free(&prev);
    if (nleaked) {
        FlBuf grouped = {0};
        group_goroutines(fl_buf_str(&leaked), &grouped);
        fprintf(stderr, "flrun: warning: the main program ended with %zu goroutine%s still blocked (dropped, "
                "as Go does):\n%s", nleaked, nleaked == 1 ? "" : "s", fl_buf_str(&grouped));
        fl_buf_free(&grouped);
    }
    fl_buf_free(&live);
    fl_buf_free(&leaked);
    fl_sched_free(sched); /* wakes leaked goroutines and waits until they have unwound */
    if (r.log) { /* a failed run: its partial log goes, an earlier log stays */
        fclose(r.log);
        remove(fl_buf_str(&r.log_tmp));
    }
    fl_buf_free(&r.log_tmp);
    fl_train_predict_input_free(r.pin);
    fl_ckpt_state_fini(&r.resumed);
    fl_ckpt_writer_free(r.writer); /* a write in progress completes */
    fl_train_free(r.tr);
    fl_scope_free(r.scope);
    fl_executor_free(r.ex);
    fl_program_free(r.prog);
    fl_ir_plan_free(plan);
    if (mpi) {
        if (o->stats) {
            const FlGemmInfo *g = fl_gemm_info();
            fprintf(stderr, "flrun: stats %s: %d kernel thread%s, gemm %s %s (%s on a CPU with %s)\n",
                    fl_mpi_who(mpi), threads, threads == 1 ? "" : "s", fl_gemm_path_name(g->path), g->kernel,
                    fl_isa_name(g->kernel_isa), fl_isa_name(g->cpu_isa));
        }
        fl_mpi_print_stats(mpi, stderr);
        fl_mpi_free(mpi);
    }
    fl_trace_free(trace); /* after the scheduler: no goroutine records any more */
    fl_report_free(report);
    return rc;
}

/* A plan run outside mpirun: the launcher starts its job (launch.h), the plan read first so that
 * a bad plan is said once, here. Every argument but the plan and the launcher's own options
 * reaches every rank, in order. */
static int launch(const Opts *o, int argc, char **argv, const bool *launcher_arg) {
    FlErr e = {{0}};
    FlBundle *bundle = NULL;
    FlPlan *plan = NULL;
    if (fl_ir_read(o->file, &bundle, &plan, &e) != FL_OK || !plan) {
        if (plan || !bundle) fprintf(stderr, "flrun: error: %s\n", e.msg);
        else fprintf(stderr, "flrun: error: '%s' holds no plan\n", o->file);
        fl_ir_bundle_free(bundle);
        fl_ir_plan_free(plan);
        return 1;
    }
    FL_VEC(char *) args = {0};
    for (int i = 1; i < argc; i++)
        if (!launcher_arg[i]) FL_VEC_PUSH(&args, argv[i]);
    if (o->elastic_max > plan->trainers || (o->trainers && o->trainers > plan->trainers)) {
        fprintf(stderr, "flrun: %s %lld: the plan has %lld trainers; a job runs at most its plan's (transpile it for more)\n"
                "Try 'flrun --help'.\n", o->trainers ? "--trainers" : "--elastic ...:",
                (long long)(o->trainers ? o->trainers : o->elastic_max), (long long)plan->trainers);
        fl_ir_plan_free(plan);
        return 2;
    }
    FlLaunchOptions lo = {.plan = o->file, .trainers = (int)(o->trainers ? o->trainers : plan->trainers),
                          .pservers = (int)plan->pservers, .elastic_min = (int)o->elastic_min,
                          .elastic_max = (int)o->elastic_max,
                          .reprobe = o->reprobe > 0 ? o->reprobe : FL_LAUNCH_REWATCH,
                          .hosts = o->hosts, .hostfile = o->hostfile, .network = o->network,
                          .restarts = (int)o->restarts, .checkpoint = o->checkpoint,
                          .rank_args = args.data, .nrank_args = args.len};
    fl_ir_plan_free(plan);
    int rc = fl_launch(&lo);
    FL_VEC_FREE(&args);
    return rc;
}

/* oneDNN's OpenMP threads (libgomp) spin at barriers and between parallel regions unless
 * OMP_WAIT_POLICY says otherwise, and libgomp reads it once, when the process starts: on cores
 * that other jobs share, a spinning team of 2 trained ResNet-32 3-4x slower than one thread
 * (docs/kernels.md, "Threads"). So flrun starts itself again with OMP_WAIT_POLICY=passive unless
 * the variable is set (a failed exec just goes on with the default). */
static void passive_openmp(char **argv) {
    if (getenv("OMP_WAIT_POLICY")) return;
    /* the binary's own path, not /proc/self/exe: the process keeps its name (pgrep -x flrun) */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || n >= (ssize_t)sizeof self - 1) return;
    self[n] = 0;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv(self, argv);
    unsetenv("OMP_WAIT_POLICY"); /* not restarted: libgomp kept its default */
}

int main(int argc, char **argv) {
    passive_openmp(argv);
    Opts o = {0};
    o.epochs = o.batch = o.seed = o.threads = o.timeline_events = -1;
    int rc = 0;
    /* the arguments that do not reach the ranks of a job the launcher starts: the program (its
     * path is resolved) and the launcher's own options */
    bool *launcher_arg = fl_xcalloc((size_t)argc + 1, sizeof *launcher_arg);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VAL()                                                                                   \
    do {                                                                                             \
        if (!val) {                                                                                  \
            rc = usage_error("%s needs a value", s);                                                 \
            goto done;                                                                               \
        }                                                                                            \
        i++;                                                                                         \
    } while (0)
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            fputs(usage_text, stdout);
            goto done;
        } else if (!strcmp(s, "--version")) {
            fl_tool_print_version("flrun");
            goto done;
        } else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
            o.quiet = true;
        } else if (!strcmp(s, "--threads")) {
            NEED_VAL();
            int64_t v;
            if (!parse_int(val, 1, &v) || v > FL_PAR_MAX_THREADS) {
                fprintf(stderr, "flrun: --threads needs a number of threads from 1 to %d, found '%s'\n"
                        "Try 'flrun --help'.\n", FL_PAR_MAX_THREADS, val);
                rc = 2;
                goto done;
            }
            o.threads = v;
        } else if (!strcmp(s, "--epochs") || !strcmp(s, "--batch-size") || !strcmp(s, "--seed")) {
            NEED_VAL();
            int64_t v;
            bool epochs = !strcmp(s, "--epochs"), seed = !strcmp(s, "--seed");
            if (!parse_int(val, epochs || seed ? 0 : 1, &v)) {
                rc = usage_error(epochs || seed ? "%s needs a non-negative integer" : "%s needs a positive integer", s);
                goto done;
            }
            if (epochs) o.epochs = v;
            else if (seed) o.seed = v;
            else o.batch = v;
        } else if (!strcmp(s, "--procs")) {
            NEED_VAL();
            int64_t v;
            if (!parse_int(val, 1, &v) || v > 1024) {
                rc = usage_error("%s needs a number of processors from 1 to 1024", s);
                goto done;
            }
            o.procs = (int)v;
        } else if (!strcmp(s, "--piece")) {
            NEED_VAL();
            int64_t v;
            if (!parse_int(val, 8, &v) || v % 8 || v > FL_MPI_PIECE_MAX) {
                rc = usage_error("%s needs a multiple of 8 between 8 and 1073741824 (bytes)", s);
                goto done;
            }
            o.piece = (uint32_t)v;
        } else if (!strcmp(s, "--stats")) {
            o.stats = true;
        } else if (!strcmp(s, "--timeout")) {
            NEED_VAL();
            char *end;
            errno = 0;
            o.timeout = strtod(val, &end);
            if (errno || end == val || *end || !(o.timeout > 0) || o.timeout > 1e6) {
                rc = usage_error("%s needs a positive number of seconds", s);
                goto done;
            }
        } else if (!strcmp(s, "--log")) {
            NEED_VAL();
            o.log = val;
        } else if (!strcmp(s, "--timeline")) {
            NEED_VAL();
            o.timeline = val;
        } else if (!strcmp(s, "--plot")) {
            NEED_VAL();
            o.plot = val;
        } else if (!strcmp(s, "--tensorboard")) {
            NEED_VAL();
            o.tensorboard = val;
        } else if (!strcmp(s, "--profile")) {
            o.profile = true;
        } else if (!strcmp(s, "--profile-sort")) {
            NEED_VAL();
            o.profile_sort = val;
        } else if (!strcmp(s, "--timeline-events")) {
            NEED_VAL();
            if (!parse_int(val, 1, &o.timeline_events) || o.timeline_events > 1000000000) {
                rc = usage_error("%s needs a number of events from 1 to 1000000000", s);
                goto done;
            }
        } else if (!strcmp(s, "--save")) {
            NEED_VAL();
            o.save = val;
        } else if (!strcmp(s, "--load")) {
            NEED_VAL();
            o.load = val;
        } else if (!strcmp(s, "--predict")) {
            NEED_VAL();
            o.predict = val;
        } else if (!strcmp(s, "--predict-var")) {
            NEED_VAL();
            o.predict_var = val;
        } else if (!strcmp(s, "--data-dir")) {
            NEED_VAL();
            o.data_dir = val;
        } else if (!strcmp(s, "--checkpoint")) {
            NEED_VAL();
            o.checkpoint = val;
        } else if (!strcmp(s, "--checkpoint-every")) {
            NEED_VAL();
            if (!parse_int(val, 1, &o.checkpoint_every)) {
                rc = usage_error("%s needs a positive number of steps", s);
                goto done;
            }
        } else if (!strcmp(s, "--resume")) {
            o.resume = true;
        } else if (!strcmp(s, "--trainers")) {
            NEED_VAL();
            if (!parse_int(val, 1, &o.trainers) || o.trainers > 4096) {
                rc = usage_error("%s needs a number of trainers from 1 to 4096", s);
                goto done;
            }
        } else if (!strcmp(s, "--restarts")) {
            NEED_VAL();
            launcher_arg[i - 1] = launcher_arg[i] = true;
            if (!parse_int(val, 0, &o.restarts) || o.restarts > 1000) {
                rc = usage_error("%s needs a number of restarts from 0 to 1000", s);
                goto done;
            }
        } else if (!strcmp(s, "--elastic")) {
            NEED_VAL();
            launcher_arg[i - 1] = launcher_arg[i] = true;
            const char *colon = strchr(val, ':');
            char lo[32] = "";
            if (colon && (size_t)(colon - val) < sizeof lo) memcpy(lo, val, (size_t)(colon - val));
            if (!colon || !parse_int(lo, 1, &o.elastic_min) || !parse_int(colon + 1, 1, &o.elastic_max) ||
                o.elastic_min > o.elastic_max || o.elastic_max > 4096) {
                rc = usage_error("--elastic needs MIN:MAX, the fewest and the most trainers (1 <= MIN <= MAX), found '%s'",
                                 val);
                goto done;
            }
        } else if (!strcmp(s, "--reprobe")) {
            NEED_VAL();
            launcher_arg[i - 1] = launcher_arg[i] = true;
            char *end;
            errno = 0;
            o.reprobe = strtod(val, &end);
            if (errno || end == val || *end || !(o.reprobe >= 0.1) || o.reprobe > 3600) {
                rc = usage_error("--reprobe needs seconds from 0.1 to 3600, found '%s'", val);
                goto done;
            }
        } else if (!strcmp(s, "--hosts") || !strcmp(s, "--hostfile") || !strcmp(s, "--network")) {
            NEED_VAL();
            launcher_arg[i - 1] = launcher_arg[i] = true;
            if (!strcmp(s, "--hosts")) o.hosts = val;
            else if (!strcmp(s, "--hostfile")) o.hostfile = val;
            else o.network = val;
        } else if (!strncmp(s, "-D", 2)) {
            const char *dv = s[2] ? s + 2 : (++i < argc ? argv[i] : NULL);
            if (!dv || !strchr(dv, '=') || dv[0] == '=') {
                rc = usage_error("-D needs name=value, found '%s'", dv ? dv : "");
                goto done;
            }
            FL_VEC_PUSH(&o.defines, dv);
        } else if (s[0] == '-' && s[1]) {
            rc = usage_error("unknown option '%s'", s);
            goto done;
        } else if (!o.file) {
            o.file = s;
            launcher_arg[i] = true;
        } else {
            rc = usage_error("unexpected argument '%s'", s);
            goto done;
        }
#undef NEED_VAL
    }
    if (!o.file) {
        fputs(usage_text, stderr);
        rc = 2;
        goto done;
    }
    if (o.timeline_events > 0 && !o.timeline) {
        rc = usage_error("%s is the limit of --timeline's events; give --timeline FILE.json too", "--timeline-events");
        goto done;
    }
    if (o.timeline_events < 0) o.timeline_events = FL_TRACE_DEFAULT_CAP;
    if ((o.checkpoint_every || o.resume) && !o.checkpoint) {
        rc = usage_error("%s needs --checkpoint DIR (where the checkpoints are)", o.resume ? "--resume" : "--checkpoint-every");
        goto done;
    }
    if (o.checkpoint && !o.checkpoint_every && !o.resume) {
        rc = usage_error("--checkpoint %s needs --checkpoint-every STEPS (when to write one), or --resume (to go on from "
                         "the last)", o.checkpoint);
        goto done;
    }
    if (o.resume && o.load) {
        rc = usage_error("%s: --resume loads the last checkpoint of --checkpoint; give one of them", "--resume and --load");
        goto done;
    }
    if ((rc = check_paths(&o, NULL)) >= 0) goto done;
    bool launcher = ends_with(o.file, ".plan") && !fl_launch_under_mpi();
    const char *lopt = o.hosts      ? "--hosts"
                       : o.hostfile ? "--hostfile"
                       : o.network  ? "--network"
                       : o.restarts ? "--restarts"
                       : o.elastic_max ? "--elastic"
                                    : NULL;
    if (lopt && !launcher) {
        rc = usage_error(ends_with(o.file, ".plan")
                             ? "%s is the launcher's: run flrun PLAN without mpirun (under mpirun, give mpirun the hosts)"
                             : "%s runs a plan's job: give a .plan (flc transpile)", lopt);
        goto done;
    }
    if (o.elastic_max && (!o.checkpoint_every || !o.restarts || o.trainers)) {
        rc = usage_error(o.trainers ? "%s chooses the trainers itself: give it no --trainers"
                                    : "%s needs --checkpoint DIR --checkpoint-every STEPS (where the job goes on from) and "
                                      "--restarts N (how many losses it survives)", "--elastic");
        goto done;
    }
    if (o.reprobe > 0 && !o.elastic_max) {
        rc = usage_error("%s is how often an elastic job probes the hosts that did not answer: give --elastic MIN:MAX too",
                         "--reprobe");
        goto done;
    }
    if (o.hosts && o.hostfile) {
        rc = usage_error("%s: give the hosts once, by --hosts or by --hostfile", "--hosts and --hostfile");
        goto done;
    }
    if ((o.resume || o.restarts) && (o.plot || o.tensorboard)) {
        /* the curves come from the run's own steps: a resumed run has only those after its checkpoint */
        rc = usage_error(o.resume ? "%s: a run resumed from a checkpoint would draw only the steps after it; draw its "
                                    "--log (which holds them all) with flc plot"
                                  : "%s: a restarted job goes on from a checkpoint and would draw only the steps after "
                                    "it; draw its --log (which holds them all) with flc plot",
                         o.plot ? "--plot" : "--tensorboard");
        goto done;
    }
    if (launcher) {
        rc = launch(&o, argc, argv, launcher_arg);
        goto done;
    }
    /* OpenBLAS stays single-threaded: the kernels cut large products into blocks on their own
     * pool (--threads), which also serves the other kernels and oneDNN (docs/kernels.md) */
    openblas_set_num_threads(1);
    if (fl_gemm_info()->error[0]) { /* FL_GEMM names no library, or one that is off */
        rc = usage_error("%s", fl_gemm_info()->error);
        goto done;
    }
    rc = run_program(&o);
done:
    FL_VEC_FREE(&o.defines);
    free(o.resume_from);
    free(launcher_arg);
    return rc;
}
