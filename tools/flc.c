/* flc: the fluidc compiler's command line.
 *
 *   flc build FILE.fl [-o OUT.flp] [-D name=value]...   compile to a bundle
 *   flc check FILE.fl [-D name=value]...                diagnostics only
 *   flc show  FILE.{fl,flp,plan} [-D name=value]...     readable listing of every block, var, op
 *   flc dot   FILE.{fl,flp,plan} [-D name=value]...     Graphviz DOT on stdout
 *   flc transpile FILE.{fl,flp} --pservers P --trainers T [--mode sync|async]
 *   flc transpile FILE.{fl,flp} --mode allreduce --trainers T
 *                 [--min-block-size N] [--dispatch round_robin|hash] [-D name=value]... -o OUT.plan
 *   flc verify FILE.plan                                check a plan's roles against each other
 *   flc verify FILE.flp                                 check a bundle's driver (docs/driver.md)
 *   flc calibrate [-o FILE]                             measure this machine's kernels
 *   flc simulate FILE.{plan,fl,flp} --cluster SPEC [--calibration FILE] [--batch-size N]
 *                [--piece BYTES] [--pservers P --trainers T | --sweep P=1..4,T=1..4]
 *                                                       predict a sync plan's step time
 *   flc ops                                             the op reference (Markdown)
 *   flc plot LOG.csv... -o OUT.svg [--title TEXT]       training curves of flrun logs (SVG)
 *
 * Exit codes: 0 success, 1 a user error (bad program, unreadable file), 2 bad usage.
 * The tool sits on top of every layer (lang, compiler); nothing includes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/ir/ir.h"
#include "compiler/ir/rules.h"
#include "compiler/ir/train_driver.h"
#include "compiler/ops.h"
#include "compiler/plan_verify.h"
#include "compiler/verify.h"
#include "compiler/simulate.h"
#include "compiler/transpile.h"
#include "lang/eval.h"
#include "tools/calibrate.h"
#include "tools/curves.h"
#include "tools/tool.h"

static const char *usage_text =
    "usage: flc COMMAND [ARGS]\n"
    "\n"
    "Compile .fl programs to fluidc IR and inspect them.\n"
    "\n"
    "commands:\n"
    "  build FILE.fl [-o OUT.flp] [-D name=value]...   compile (default OUT: FILE.flp)\n"
    "  check FILE.fl [-D name=value]...                report diagnostics only\n"
    "  show  FILE.{fl,flp,plan} [-D name=value]...     readable listing of every block, var and op\n"
    "  dot   FILE.{fl,flp,plan} [-D name=value]...     Graphviz DOT on stdout (dot -Tsvg)\n"
    "  transpile FILE.{fl,flp} --pservers P --trainers T [--mode sync|async]\n"
    "            [--min-block-size N] [--dispatch round_robin|hash] [-D name=value]... -o OUT.plan\n"
    "                                                  split a training program into trainer and\n"
    "                                                  pserver programs (run: mpirun -np P+T flrun OUT.plan)\n"
    "  transpile FILE.{fl,flp} --mode allreduce --trainers T [-D name=value]... -o OUT.plan\n"
    "                                                  trainers that sum their gradients, no pservers\n"
    "                                                  (run: mpirun -np T flrun OUT.plan)\n"
    "  verify FILE.plan                                check that a plan's roles fit together: sends\n"
    "                                                  and recvs, barriers, blocks, optimizer state,\n"
    "                                                  ranks, allreduce lists, each program (flrun\n"
    "                                                  runs it before a plan's job starts)\n"
    "  verify FILE.flp                                 check a program's driver: its ops, and each\n"
    "                                                  exe.run's feeds and fetches against its program\n"
    "  calibrate [-o FILE]                             measure this machine's kernels (GEMM, element-wise,\n"
    "                                                  optimizer, memcpy, the cost per op) into a\n"
    "                                                  calibration file (default: stdout; docs/simulate.md)\n"
    "  simulate FILE.plan --cluster SPEC [--calibration FILE] [--batch-size N] [--piece BYTES]\n"
    "  simulate FILE.{fl,flp} --cluster SPEC (--pservers P --trainers T | --sweep P=1..4,T=1..4)\n"
    "           [--calibration FILE] [--batch-size N] [--piece BYTES] [--min-block-size N] [--dispatch D]\n"
    "                                                  predict a sync plan's step time on a cluster:\n"
    "                                                  critical path, bytes per link, pserver load; a\n"
    "                                                  sweep transpiles the program for each P and T\n"
    "  ops                                             the op reference, as Markdown\n"
    "  plot LOG.csv... -o OUT.svg [--title TEXT]       draw the training curves of flrun --log files\n"
    "                                                  in one SVG picture: a panel per figure (loss,\n"
    "                                                  ...) over the steps, train solid and test\n"
    "                                                  dashed, a colour per log, epochs marked, a log\n"
    "                                                  scale where values span decades\n"
    "\n"
    "options:\n"
    "  -o FILE          output file (build, transpile, calibrate, plot)\n"
    "  --title TEXT     plot: the picture's title (default: the logs' names)\n"
    "  --pservers P     transpile: number of parameter servers (>= 1; none for allreduce)\n"
    "  --trainers T     transpile: number of trainers (>= 1)\n"
    "  --mode M         transpile: sync (default), async or allreduce\n"
    "  --min-block-size N  transpile: a parameter is cut into blocks of at least N elements (8192)\n"
    "  --dispatch D     transpile: round_robin (default) or hash (deterministic) placement\n"
    "  --cluster SPEC   simulate: a cluster spec file, or the spec inline ('host a slots=2; ...')\n"
    "  --calibration F  simulate: a file of flc calibrate (default: measure now, about 4 s)\n"
    "  --batch-size N   simulate: rows per trainer per step (default: the program's run spec)\n"
    "  --piece BYTES    simulate: flrun --piece, the message size of larger tensors (1048576)\n"
    "  --sweep P=..,T=..  simulate: step times over P and T (A..B ranges or lists: P=1,2,4,T=2)\n"
    "  -D name=value    set the compile-time flag read by fluid.flag(name, default)\n"
    "  -h, --help       show this help\n"
    "  --version        show the version\n"
    "\n"
    "exit status: 0 success, 1 error in the program or its files, 2 bad usage\n"
    "environment: FLUIDC_STDLIB overrides the stdlib directory\n";

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "flc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'flc --help'.\n");
    return 2;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

typedef struct Args {
    const char *cmd, *file, *out;
    FL_VEC(const char *) defines;
    const char *pservers, *trainers, *mode, *min_block, *dispatch; /* transpile's options */
    const char *cluster, *calibration, *batch, *piece, *sweep;      /* simulate's */
} Args;

/* The value of a transpile option: the next argument. NULL when there is none. */
static const char **transpile_opt(Args *a, const char *s) {
    if (!strcmp(s, "--pservers")) return &a->pservers;
    if (!strcmp(s, "--trainers")) return &a->trainers;
    if (!strcmp(s, "--mode")) return &a->mode;
    if (!strcmp(s, "--min-block-size")) return &a->min_block;
    if (!strcmp(s, "--dispatch")) return &a->dispatch;
    if (!strcmp(s, "--cluster")) return &a->cluster;
    if (!strcmp(s, "--calibration")) return &a->calibration;
    if (!strcmp(s, "--batch-size")) return &a->batch;
    if (!strcmp(s, "--piece")) return &a->piece;
    if (!strcmp(s, "--sweep")) return &a->sweep;
    return NULL;
}

/* A whole decimal number in [lo, hi], or an exit code 2 after a usage message. */
static int parse_count(const char *opt, const char *v, long long lo, long long hi, int64_t *out) {
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < lo || n > hi) {
        if (hi == INT64_MAX)
            fprintf(stderr, "flc: %s needs a whole number of at least %lld, found '%s'\n", opt,
                    lo, v);
        else
            fprintf(stderr, "flc: %s needs a whole number from %lld to %lld, found '%s'\n", opt,
                    lo, hi, v);
        fprintf(stderr, "Try 'flc --help'.\n");
        return 2;
    }
    *out = n;
    return 0;
}

/* flc transpile: reads the options, transpiles the bundle and writes the plan. */
static int write_plan(const FlPlan *plan, const char *out);

static int transpile(const Args *a, const FlBundle *bundle) {
    FlTranspileOptions o = {0};
    FlErr e;
    int rc;
    if (a->mode && fl_transpile_parse_mode(a->mode, &o.mode, &e) != FL_OK)
        return usage_error("%s", e.msg);
    bool allreduce = o.mode == FL_TRANSPILE_ALLREDUCE;
    if (allreduce && (a->pservers || a->min_block || a->dispatch))
        return usage_error("--mode allreduce has no pservers: %s does not apply",
                           a->pservers ? "--pservers" : a->min_block ? "--min-block-size" : "--dispatch");
    if ((!allreduce && (rc = parse_count("--pservers", a->pservers, 1, 4096, &o.pservers))) ||
        (rc = parse_count("--trainers", a->trainers, 1, 4096, &o.trainers)) ||
        (a->min_block &&
         (rc = parse_count("--min-block-size", a->min_block, 1, INT64_MAX, &o.min_block_size))))
        return rc;
    if (a->dispatch && fl_transpile_parse_dispatch(a->dispatch, &o.dispatch, &e) != FL_OK)
        return usage_error("%s", e.msg);
    FlPlan *plan;
    if (fl_transpile(bundle, &o, &plan, &e) != FL_OK) {
        fprintf(stderr, "flc: error: %s\n", e.msg);
        return 1;
    }
    rc = write_plan(plan, a->out);
    fl_ir_plan_free(plan);
    return rc;
}

/* Writes plan to out and says what it is and how to run it. */
static int write_plan(const FlPlan *plan, const char *out) {
    FlErr e;
    bool allreduce = !strcmp(plan->mode, "allreduce");
    int rc = 0;
    if (fl_ir_plan_write(plan, out, &e) != FL_OK) {
        fprintf(stderr, "flc: error: %s\n", e.msg);
        rc = 1;
    } else {
        FlBuf b = {0};
        if (allreduce)
            fl_buf_printf(&b, "%s: allreduce mode, %lld trainers (ranks 0-%lld), no pservers; run: mpirun -np %lld flrun %s\n",
                          out, (long long)plan->trainers, (long long)plan->trainers - 1,
                          (long long)plan->trainers, out);
        else
            fl_buf_printf(&b, "%s: %s mode, %lld trainers (ranks 0-%lld), %lld pservers (ranks "
                          "%lld-%lld); run: mpirun -np %lld flrun %s\n", out, plan->mode,
                          (long long)plan->trainers, (long long)plan->trainers - 1,
                          (long long)plan->pservers, (long long)plan->trainers,
                          (long long)(plan->trainers + plan->pservers - 1),
                          (long long)(plan->trainers + plan->pservers), out);
        if (!allreduce) fl_transpile_show_placement(plan, &b);
        fputs(fl_buf_str(&b), stdout);
        fl_buf_free(&b);
    }
    return rc;
}

/* flc calibrate: the measured calibration on stdout or into -o FILE, a summary on stderr. */
static int calibrate(const Args *a) {
    FlBuf b = {0};
    FlErr e;
    int rc = 0;
    if (fl_calibrate(&b, &e) != FL_OK) {
        fprintf(stderr, "flc: error: calibrate: %s\n", e.msg);
        rc = 1;
    } else if (a->out) {
        if (fl_write_file(a->out, fl_buf_str(&b), b.len, &e) != FL_OK) {
            fprintf(stderr, "flc: error: %s\n", e.msg);
            rc = 1;
        } else {
            fprintf(stderr, "%s: written\n", a->out);
            const char *p = fl_buf_str(&b);
            for (const char *q; *p; p = q) { /* the summary: the figures, no comments */
                q = strchr(p, '\n');
                q = q ? q + 1 : p + strlen(p);
                if (*p != '#') fprintf(stderr, "  %.*s", (int)(q - p), p);
            }
        }
    } else {
        fputs(fl_buf_str(&b), stdout);
    }
    fl_buf_free(&b);
    return rc;
}

/* "P=1..4,T=1,2" into the two lists. */
static int parse_sweep(const char *s, FlSimInts *ps, FlSimInts *ts) {
    const char *p = strstr(s, "P="), *t = strstr(s, "T=");
    if (!p || !t || (p != s && t != s))
        return usage_error("--sweep needs P=LIST,T=LIST (LIST: N, A..B or N,M,...), found '%s'", s);
    FlErr e;
    for (int k = 0; k < 2; k++) {
        const char *v = (k ? t : p) + 2, *other = k ? p : t;
        size_t n = other > v ? (size_t)(other - v) : strlen(v);
        char *item = fl_xstrndup(v, n);
        if (n && item[n - 1] == ',') item[n - 1] = 0;
        FlStatus st = fl_sim_parse_range(item, k ? ts : ps, &e);
        free(item);
        if (st != FL_OK) return usage_error("--sweep: %s", e.msg);
    }
    return 0;
}

/* Transpiles `bundle` for P and T (sync) and simulates it; 0, or 1 with the message in e. */
static int sim_one(const FlBundle *bundle, const FlTranspileOptions *base, int64_t P, int64_t T,
                   const FlSimCalib *cal, const FlSimCluster *cl, const FlSimOptions *so, FlPlan **plan_out,
                   FlSimResult *r, FlErr *e) {
    FlTranspileOptions o = *base;
    o.pservers = P, o.trainers = T, o.mode = FL_TRANSPILE_SYNC;
    FlPlan *plan;
    if (fl_transpile(bundle, &o, &plan, e) != FL_OK) return 1;
    FlStatus st = fl_sim_run(plan, cal, cl, so, r, e);
    if (plan_out && st == FL_OK) *plan_out = plan;
    else fl_ir_plan_free(plan);
    return st == FL_OK ? 0 : 1;
}

/* flc simulate: the report of one plan, or the table of a sweep. */
static int simulate(const Args *a, const FlBundle *bundle, const FlPlan *plan) {
    int rc;
    FlErr e;
    if (!a->cluster) return usage_error("%s", "simulate needs --cluster SPEC (a file, or the spec inline)");
    if (plan && (a->sweep || a->pservers || a->trainers || a->min_block || a->dispatch))
        return usage_error("'%s' is a plan, simulated as it is: --sweep, --pservers, --trainers, --min-block-size "
                           "and --dispatch transpile, so give the .fl or .flp", a->file);
    if (!plan && !a->sweep && !(a->pservers && a->trainers))
        return usage_error("simulate '%s' needs --pservers P and --trainers T, or --sweep P=..,T=..", a->file);
    if (a->sweep && (a->pservers || a->trainers))
        return usage_error("%s", "--sweep sets P and T: drop --pservers and --trainers");
    FlTranspileOptions to = {0};
    int64_t P = 0, T = 0, batch = 0, piece = 1048576;
    if ((a->pservers && (rc = parse_count("--pservers", a->pservers, 1, 4096, &P))) ||
        (a->trainers && (rc = parse_count("--trainers", a->trainers, 1, 4096, &T))) ||
        (a->min_block && (rc = parse_count("--min-block-size", a->min_block, 1, INT64_MAX, &to.min_block_size))) ||
        (a->batch && (rc = parse_count("--batch-size", a->batch, 1, FL_SIM_BATCH_MAX, &batch))) ||
        (a->piece && (rc = parse_count("--piece", a->piece, 8, FL_RULE_PIECE_MAX, &piece))))
        return rc;
    if (piece % 8) return usage_error("--piece must be a multiple of 8 (as flrun's), found '%s'", a->piece);
    if (a->dispatch && fl_transpile_parse_dispatch(a->dispatch, &to.dispatch, &e) != FL_OK)
        return usage_error("%s", e.msg);
    FlSimInts ps = {0}, ts = {0};
    if (a->sweep && (rc = parse_sweep(a->sweep, &ps, &ts))) goto out0;
    if (!batch) {
        const FlRunSpec *run = plan ? &plan->roles.data[0]->run : &bundle->run;
        if (!run->present || run->batch_size < 1) {
            fprintf(stderr, "flc: error: '%s' has no run spec (fluid.train) giving a batch size; give --batch-size N\n",
                    a->file);
            rc = 1;
            goto out0;
        }
        batch = run->batch_size;
    }
    FlSimCluster cl;
    if (fl_sim_cluster_load(a->cluster, &cl, &e) != FL_OK) {
        fprintf(stderr, "flc: error: %s\n", e.msg);
        rc = 1;
        goto out0;
    }
    FlSimCalib cal;
    FlStatus cst;
    if (a->calibration) {
        cst = fl_sim_calib_load(a->calibration, &cal, &e);
    } else {
        FlBuf b = {0};
        cst = fl_calibrate(&b, &e);
        if (cst == FL_OK) cst = fl_sim_calib_parse(fl_buf_str(&b), "<calibration>", &cal, &e);
        fl_buf_free(&b);
        if (cst == FL_OK) fprintf(stderr, "flc: no --calibration: measured this machine (flc calibrate)\n");
    }
    if (cst != FL_OK) {
        fprintf(stderr, "flc: error: %s\n", e.msg);
        rc = 1;
        goto out1;
    }
    FlSimOptions so = {.batch = batch, .piece = piece};
    FlSimResult r;
    FlBuf b = {0};
    rc = 0;
    if (!a->sweep) {
        FlPlan *own = NULL;
        if (plan) rc = fl_sim_run(plan, &cal, &cl, &so, &r, &e) == FL_OK ? 0 : 1;
        else rc = sim_one(bundle, &to, P, T, &cal, &cl, &so, &own, &r, &e);
        if (!rc) {
            fl_sim_report(plan ? plan : own, &cl, &so, &r, &b);
            fl_sim_result_fini(&r);
        }
        fl_ir_plan_free(own);
    } else {
        fl_buf_printf(&b, "sweep of '%s' (sync), batch %lld per trainer: step time, samples/s of all trainers\n",
                      a->file, (long long)batch);
        fl_buf_printf(&b, "%-6s", "");
        for (size_t j = 0; j < ts.len; j++) {
            char label[32];
            snprintf(label, sizeof label, "T=%lld", (long long)ts.data[j]);
            fl_buf_printf(&b, "  %25s", label);
        }
        fl_buf_puts(&b, "\n");
        double best = -1;
        int64_t bp = 0, bt = 0;
        FlBuf errs = {0};
        for (size_t i = 0; i < ps.len; i++) {
            fl_buf_printf(&b, "P=%-4lld", (long long)ps.data[i]);
            for (size_t j = 0; j < ts.len; j++) {
                if (sim_one(bundle, &to, ps.data[i], ts.data[j], &cal, &cl, &so, NULL, &r, &e)) {
                    fl_buf_printf(&b, "  %25s", "-");
                    fl_buf_printf(&errs, "P=%lld T=%lld: %s\n", (long long)ps.data[i], (long long)ts.data[j], e.msg);
                    continue;
                }
                double sps = (double)(batch * ts.data[j]) / r.step_s;
                fl_buf_printf(&b, "  %10.3f ms %9.0f/s", r.step_s * 1e3, sps);
                if (sps > best) best = sps, bp = ps.data[i], bt = ts.data[j];
                fl_sim_result_fini(&r);
            }
            fl_buf_puts(&b, "\n");
        }
        if (best > 0)
            fl_buf_printf(&b, "most samples/s: P=%lld T=%lld (%.0f/s)\n", (long long)bp, (long long)bt, best);
        if (errs.len) {
            fputs(fl_buf_str(&errs), stderr);
            rc = 1;
        }
        fl_buf_free(&errs);
    }
    if (rc && !a->sweep) fprintf(stderr, "flc: error: %s\n", e.msg);
    fputs(fl_buf_str(&b), stdout);
    fl_buf_free(&b);
    fl_sim_calib_fini(&cal);
out1:
    fl_sim_cluster_fini(&cl);
out0:
    FL_VEC_FREE(&ps);
    FL_VEC_FREE(&ts);
    return rc;
}

/* The issues of b's driver on stderr, each with its location ("driver" or "trainer 0's driver":
 * who); their count. */
static int driver_issues(const Args *a, const char *who, const FlBundle *b) {
    FlVerifyIssues vi = {0};
    int n = fl_verify_driver(b, &vi);
    for (int i = 0; i < n && i < FL_PLAN_VERIFY_SHOWN; i++) {
        FlLoc l = vi.items.data[i].loc;
        const char *src = l.file >= 0 && (size_t)l.file < b->source_paths.len ? b->source_paths.data[l.file] : NULL;
        if (src)
            fprintf(stderr, "flc: error: %s: %s (%s:%d:%d): %s\n", a->file, who, src, l.line, l.col, vi.items.data[i].msg);
        else fprintf(stderr, "flc: error: %s: %s: %s\n", a->file, who, vi.items.data[i].msg);
    }
    if (n > FL_PLAN_VERIFY_SHOWN) fprintf(stderr, "flc: error: %s: %d more issues\n", a->file, n - FL_PLAN_VERIFY_SHOWN);
    fl_verify_issues_fini(&vi);
    return n;
}

static size_t driver_ops(const FlProgram *d) {
    size_t ops = 0;
    for (size_t i = 0; i < d->blocks.len; i++) ops += d->blocks.data[i]->ops.len;
    return ops;
}

/* flc verify FILE.flp: every issue of the bundle's driver on stderr, or one line saying what was
 * checked: fluid.train's loop (a run spec beside the driver) or the script's own. */
static int verify_driver(const Args *a, const FlBundle *b) {
    if (!b->driver && b->inference) { /* checked as a bundle when it was read (its feeds and targets too) */
        printf("%s: ok: an inference model (flrun FILE --predict DATA prints its targets)\n", a->file);
        return 0;
    }
    if (!b->driver && fl_ir_bundle_trains(b)) {
        printf("%s: ok: fluid.train's run spec without its driver (a file written before format 3): flrun builds "
               "the driver when it loads the file; flc build keeps it in the file\n", a->file);
        return 0;
    }
    if (!b->driver) {
        printf("%s: ok: no driver (flrun runs the startup program, then the main program)\n", a->file);
        return 0;
    }
    if (driver_issues(a, "driver", b)) return 1;
    printf("%s: ok: %sa driver of %zu ops in %zu blocks", a->file, fl_ir_bundle_trains(b) ? "fluid.train's loop, " : "",
           driver_ops(b->driver), b->driver->blocks.len);
    if (b->programs.len) printf(", running %zu named program%s", b->programs.len, b->programs.len == 1 ? "" : "s");
    putchar('\n');
    return 0;
}

/* flc verify: every issue of the plan on stderr, or one line saying it is consistent. */
static int verify(const Args *a, const FlPlan *plan) {
    int bad = 0; /* each role's driver, as flc verify FILE.flp checks a bundle's */
    for (size_t r = 0; r < plan->roles.len; r++) {
        const FlBundle *b = plan->roles.data[r];
        char who[64];
        snprintf(who, sizeof who, "%s %lld's driver", b->role, (long long)b->role_index);
        if (b->driver) bad += driver_issues(a, who, b);
    }
    if (bad) return 1;
    FlPlanIssues vi = {0};
    int n = fl_plan_verify(plan, &vi);
    for (int i = 0; i < n && i < FL_PLAN_VERIFY_SHOWN; i++)
        fprintf(stderr, "flc: error: %s: %s\n", a->file, vi.items.data[i].msg);
    if (n > FL_PLAN_VERIFY_SHOWN)
        fprintf(stderr, "flc: error: %s: %d more issues\n", a->file, n - FL_PLAN_VERIFY_SHOWN);
    fl_plan_verify_issues_fini(&vi);
    if (n) return 1;
    if (!strcmp(plan->mode, "allreduce"))
        printf("%s: ok: allreduce mode, %lld trainers\n", a->file, (long long)plan->trainers);
    else
        printf("%s: ok: %s mode, %lld trainers, %lld pservers\n", a->file, plan->mode, (long long)plan->trainers,
               (long long)plan->pservers);
    return 0;
}

/* Loads FILE as a bundle or plan: .fl files are compiled. Returns 0, or the exit code. */
static int load(const Args *a, FlBundle **bundle, FlPlan **plan) {
    *bundle = NULL;
    *plan = NULL;
    if (ends_with(a->file, ".fl")) {
        char *stdlib_dir = fl_tool_stdlib_dir();
        FlScriptDist sd = {0}; /* a script that transpiles itself is a plan (docs/distributed.md) */
        FlCompileOptions opt = {.defines = a->defines.data, .ndefines = a->defines.len,
                                .stdlib_dir = stdlib_dir, .dist = &sd};
        FlBuf diag = {0};
        int nerr = fl_compile_file(a->file, &opt, bundle, &diag);
        if (!nerr && sd.present) {
            fl_ir_bundle_free(*bundle);
            *bundle = NULL;
            diag.len = 0;
            opt.dist = NULL;
            nerr = fl_compile_plan(a->file, &opt, plan, &diag);
        }
        fl_script_dist_fini(&sd);
        free(stdlib_dir);
        fputs(fl_buf_str(&diag), stderr);
        fl_buf_free(&diag);
        if (nerr) return 1;
        return 0;
    }
    FlErr e;
    if (fl_ir_read(a->file, bundle, plan, &e) != FL_OK) {
        fprintf(stderr, "flc: error: %s\n", e.msg);
        return 1;
    }
    return 0;
}

static char *default_out(const char *file, const char *ext) {
    size_t n = strlen(file);
    char *o = malloc(n + strlen(ext) + 1);
    if (!o) return NULL;
    memcpy(o, file, n + 1);
    if (ends_with(o, ".fl")) strcpy(o + n - 3, ext);
    else strcat(o, ext);
    return o;
}

/* The name a log goes by in a picture: its file name without ".csv". */
static char *log_label(const char *path) {
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 4 && ends_with(base, ".csv")) n -= 4;
    return fl_xstrndup(base, n);
}

/* flc plot LOG.csv... -o OUT.svg [--title TEXT]: the curves of flrun logs (tools/curves.h).
 * Logs of the same file name go by their paths. */
static int plot(int argc, char **argv) {
    const char *out = NULL, *title = NULL;
    FL_VEC(const char *) files = {0};
    int rc = 0;
    for (int i = 2; i < argc && !rc; i++) {
        const char *s = argv[i];
        bool o = !strcmp(s, "-o"), t = !strcmp(s, "--title");
        if ((o || t) && i + 1 >= argc) rc = usage_error("%s needs a value", s);
        else if (o) out = argv[++i];
        else if (t) title = argv[++i];
        else if (s[0] == '-' && s[1]) rc = usage_error("plot takes LOG.csv files, -o OUT.svg and --title TEXT, not '%s'", s);
        else FL_VEC_PUSH(&files, s);
    }
    if (!rc && !files.len) rc = usage_error("%s needs one or more flrun logs (flrun --log FILE.csv)", "plot");
    if (!rc && !out) rc = usage_error("%s needs -o OUT.svg", "plot");
    struct stat os, is;
    for (size_t i = 0; !rc && i < files.len; i++) /* -o naming a log (any spelling or link) */
        if (stat(out, &os) == 0 && stat(files.data[i], &is) == 0 && os.st_dev == is.st_dev && os.st_ino == is.st_ino)
            rc = usage_error("-o '%s' is one of the logs; refusing to overwrite it", out);
    FlCurves *runs = fl_xcalloc(files.len + 1, sizeof *runs);
    size_t n = 0;
    FlErr e;
    for (size_t i = 0; !rc && i < files.len; i++, n++) {
        char *label = log_label(files.data[i]);
        for (size_t j = 0; j < files.len; j++) {
            char *other = log_label(files.data[j]);
            bool clash = j != i && !strcmp(other, label);
            free(other);
            if (clash) {
                free(label);
                label = fl_xstrdup(files.data[i]);
                break;
            }
        }
        if (fl_curves_read(files.data[i], label, &runs[i], &e) != FL_OK) {
            fprintf(stderr, "flc: error: %s\n", e.msg);
            rc = 1;
            n--;
        }
        free(label);
    }
    if (!rc) {
        FlBuf names = {0}, svg = {0};
        for (size_t i = 0; i < n && !title; i++) fl_buf_printf(&names, "%s%s", i ? " vs " : "", runs[i].label);
        fl_curves_svg(runs, n, title ? title : fl_buf_str(&names), &svg);
        if (fl_write_file(out, svg.data, svg.len, &e) != FL_OK) {
            fprintf(stderr, "flc: error: %s\n", e.msg);
            rc = 1;
        }
        fl_buf_free(&names);
        fl_buf_free(&svg);
    }
    for (size_t i = 0; i < n; i++) fl_curves_fini(&runs[i]);
    free(runs);
    FL_VEC_FREE(&files);
    return rc;
}

int main(int argc, char **argv) {
    Args a = {0};
    int rc = 0;
    if (argc > 1 && !strcmp(argv[1], "plot")) return plot(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help") || !strcmp(s, "help")) {
            fputs(usage_text, stdout);
            goto done;
        } else if (!strcmp(s, "--version")) {
            fl_tool_print_version("flc");
            goto done;
        } else if (!strcmp(s, "-o")) {
            if (++i >= argc) {
                rc = usage_error("%s needs a file name", "-o");
                goto done;
            }
            a.out = argv[i];
        } else if (!strncmp(s, "-D", 2)) {
            const char *d = s[2] ? s + 2 : (++i < argc ? argv[i] : NULL);
            if (!d || !strchr(d, '=') || d[0] == '=') {
                rc = usage_error("-D needs name=value, found '%s'", d ? d : "");
                goto done;
            }
            FL_VEC_PUSH(&a.defines, d);
        } else if (transpile_opt(&a, s)) {
            if (++i >= argc) {
                rc = usage_error("%s needs a value", s);
                goto done;
            }
            *transpile_opt(&a, s) = argv[i];
        } else if (s[0] == '-' && s[1]) {
            rc = usage_error("unknown option '%s'", s);
            goto done;
        } else if (!a.cmd) {
            a.cmd = s;
        } else if (!a.file) {
            a.file = s;
        } else {
            rc = usage_error("unexpected argument '%s'", s);
            goto done;
        }
    }
    if (!a.cmd) {
        fputs(usage_text, stderr);
        rc = 2;
        goto done;
    }
    bool is_sim = !strcmp(a.cmd, "simulate");
    if (!is_sim && (a.cluster || a.calibration || a.batch || a.piece || a.sweep)) {
        rc = usage_error("--cluster, --calibration, --batch-size, --piece and --sweep are only for simulate, not %s",
                         a.cmd);
        goto done;
    }
    if (!strcmp(a.cmd, "calibrate")) {
        rc = a.file || a.defines.len || a.pservers || a.trainers || a.mode || a.min_block || a.dispatch
                 ? usage_error("'%s' takes only -o FILE", "calibrate")
                 : calibrate(&a);
        goto done;
    }
    if (!strcmp(a.cmd, "ops")) {
        FlBuf b = {0};
        fl_ops_markdown(&b);
        fputs(fl_buf_str(&b), stdout);
        fl_buf_free(&b);
        goto done;
    }
    if (!strcmp(a.cmd, "plot")) {
        rc = usage_error("%s: give the command first: flc plot LOG.csv... -o OUT.svg", "plot");
        goto done;
    }
    bool known = !strcmp(a.cmd, "build") || !strcmp(a.cmd, "check") || !strcmp(a.cmd, "show") || !strcmp(a.cmd, "dot") ||
                 !strcmp(a.cmd, "transpile") || !strcmp(a.cmd, "verify") || is_sim;
    if (!known) {
        rc = usage_error("unknown command '%s'", a.cmd);
        goto done;
    }
    if (!a.file) {
        rc = usage_error("'%s' needs a file", a.cmd);
        goto done;
    }
    if ((!strcmp(a.cmd, "build") || !strcmp(a.cmd, "check")) && !ends_with(a.file, ".fl")) {
        rc = usage_error("'%s' compiles .fl files; use show or dot for a .flp or .plan", a.cmd);
        goto done;
    }
    if (!strcmp(a.cmd, "verify") && ends_with(a.file, ".fl")) {
        rc = usage_error("'verify' checks a plan (.plan, from flc transpile) or a compiled program (.flp), not '%s'", a.file);
        goto done;
    }
    if (a.out && strcmp(a.cmd, "build") != 0 && strcmp(a.cmd, "transpile") != 0) {
        rc = usage_error("-o is only for build, transpile and calibrate (%s writes to stdout)", a.cmd);
        goto done;
    }
    bool is_tp = !strcmp(a.cmd, "transpile");
    if (is_sim && a.mode) {
        rc = usage_error("simulate models sync plans: --mode '%s' does not apply", a.mode);
        goto done;
    }
    if (!is_tp && !is_sim && (a.pservers || a.trainers || a.mode || a.min_block || a.dispatch)) {
        rc = usage_error("--pservers, --trainers, --mode, --min-block-size and --dispatch are "
                         "only for transpile (and all but --mode for simulate), not %s", a.cmd);
        goto done;
    }
    bool tp_ar = a.mode && !strcmp(a.mode, "allreduce");
    if (is_tp && ((!a.pservers && !tp_ar) || !a.trainers || !a.out)) {
        rc = usage_error("transpile needs %s", !a.pservers && !tp_ar && !a.trainers
                                                   ? "--pservers P and --trainers T"
                                               : !a.pservers && !tp_ar ? "--pservers P"
                                               : !a.trainers ? "--trainers T"
                                                             : "-o OUT.plan");
        goto done;
    }
    if (is_tp && ends_with(a.file, ".plan")) {
        rc = usage_error("transpile takes a .fl or .flp file, not a plan ('%s')", a.file);
        goto done;
    }
    struct stat in_st, out_st; /* -o naming the input (any spelling or link) would overwrite it */
    if (a.out && stat(a.file, &in_st) == 0 && stat(a.out, &out_st) == 0 && in_st.st_dev == out_st.st_dev &&
        in_st.st_ino == out_st.st_ino) {
        rc = usage_error("-o '%s' is the input file; refusing to overwrite it", a.out);
        goto done;
    }
    FlBundle *bundle;
    FlPlan *plan;
    rc = load(&a, &bundle, &plan);
    if (rc) goto done;
    if (is_sim) {
        rc = simulate(&a, bundle, plan);
    } else if (!strcmp(a.cmd, "verify")) {
        rc = plan ? verify(&a, plan) : verify_driver(&a, bundle);
    } else if (is_tp && plan && ends_with(a.file, ".fl")) {
        rc = usage_error("'%s' transpiles itself (DistributeTranspiler.transpile): flc build makes its plan", a.file);
    } else if (is_tp && plan) {
        rc = usage_error("transpile takes a .fl or .flp file, not a plan ('%s')", a.file);
    } else if (is_tp) {
        rc = transpile(&a, bundle);
    } else if (!strcmp(a.cmd, "build") && plan) { /* a script that transpiles itself */
        char *out = a.out ? NULL : default_out(a.file, ".plan");
        rc = write_plan(plan, a.out ? a.out : out);
        free(out);
    } else if (!strcmp(a.cmd, "build")) {
        char *out = a.out ? NULL : default_out(a.file, ".flp");
        FlErr e;
        if (fl_ir_bundle_write(bundle, a.out ? a.out : out, &e) != FL_OK) {
            fprintf(stderr, "flc: error: %s\n", e.msg);
            rc = 1;
        }
        free(out);
    } else if (!strcmp(a.cmd, "show") || !strcmp(a.cmd, "dot")) {
        FlBuf b = {0};
        bool show = !strcmp(a.cmd, "show");
        if (plan && show) fl_transpile_show_placement(plan, &b);
        if (plan) show ? fl_ir_show_plan(plan, &b) : fl_ir_dot_plan(plan, &b);
        else show ? fl_ir_show_bundle(bundle, &b) : fl_ir_dot_bundle(bundle, &b);
        fputs(fl_buf_str(&b), stdout);
        fl_buf_free(&b);
    }
    fl_ir_bundle_free(bundle);
    fl_ir_plan_free(plan);
done:
    FL_VEC_FREE(&a.defines);
    return rc;
}
