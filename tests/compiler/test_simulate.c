/* test_simulate.c: the step model (compiler/simulate.c), `flc calibrate` and `flc simulate`.
 *
 *   - `flc calibrate -o FILE` writes a file the model's parser reads, every figure above 0;
 *   - a golden prediction: the MLP 784-512-512-10 (tests/bench/simulate/mlp784.fl) as a P=2 T=2
 *     plan, trainers and pservers on two hosts of 1 Gbit/s, with the fixed calibration
 *     tests/compiler/simulate/calib.txt: the same figures twice, bit for bit, and the golden step
 *     time; the critical path adds up to the step time;
 *   - bytes per link per step equal the plan's parameter bytes times T each way (summed here
 *     from the local program's parameters, independently of the model);
 *   - doubling the links' bandwidth cuts the transfer time and the step time; a pserver host's
 *     msgcost lengthens it;
 *   - Open MPI's rendezvous: pieces above the eager limit wait a round trip for it (each a second
 *     one, the answers' pieces too), a gradient's pieces beyond the pserver's ring of two wait for
 *     the earlier ones to be applied, pieces at the limit go eagerly (the same step as without);
 *   - bad specs and calibrations: errors with FILE:LINE; the command line's errors (argv[1]: flc);
 *   - bounds: times, rates, factors, calibration figures, batch and piece beyond what the model
 *     takes are refused, naming the bound; and the model ends on figures beyond them too (given
 *     past the parsers) instead of looping on a time that rounds away.
 * Runs from the repository root (ctest sets the working directory).
 */
#include "tests/cunit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/ops.h"
#include "compiler/simulate.h"
#include "compiler/transpile.h"
#include "lang/eval.h"

#define MLP "tests/bench/simulate/mlp784.fl"
#define CALIB "tests/compiler/simulate/calib.txt"
#define TWO_HOSTS "host a roles=trainers bandwidth=%s latency=0.5ms; host b roles=pservers bandwidth=%s latency=0.5ms"
/* The golden step time (s) of the MLP, P=2 T=2, batch 64, 1 Gbit/s, calib.txt (its 1 MiB pieces
 * above the default eager limit: with the rendezvous; the links shared) */
#define GOLDEN_STEP 0.0842303984

static const char *flc_path;

static FlBundle *compile(const char *path) {
    FlCompileOptions opt = {0};
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_file(path, &opt, &b, &diag);
    if (n) fprintf(stderr, "%s", fl_buf_str(&diag));
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL_FATAL(n, 0);
    return b;
}

static FlPlan *transpile(const FlBundle *b, int64_t P, int64_t T) {
    FlTranspileOptions o = {.pservers = P, .trainers = T, .mode = FL_TRANSPILE_SYNC};
    FlPlan *plan = NULL;
    FlErr e;
    FlStatus st = fl_transpile(b, &o, &plan, &e);
    if (st != FL_OK) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    return plan;
}

static void cluster(const char *bw, FlSimCluster *c) {
    char text[512];
    snprintf(text, sizeof text, TWO_HOSTS, bw, bw);
    FlErr e;
    FlStatus st = fl_sim_cluster_parse(text, "<test>", c, &e);
    if (st != FL_OK) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
}

static void simulate(const FlPlan *plan, const char *bw, FlSimResult *r) {
    FlSimCalib cal;
    FlSimCluster cl;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_sim_calib_load(CALIB, &cal, &e), FL_OK);
    cluster(bw, &cl);
    FlSimOptions o = {.batch = 64, .piece = 1048576};
    FlStatus st = fl_sim_run(plan, &cal, &cl, &o, r, &e);
    if (st != FL_OK) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    fl_sim_calib_fini(&cal);
    fl_sim_cluster_fini(&cl);
}

/* A program transpiled for P x T and the fixed calibration, as most tests start. */
typedef struct Fixture {
    FlBundle *b;
    FlPlan *plan;
    FlSimCalib cal;
} Fixture;

static void fixture(Fixture *f, const char *path, int64_t P, int64_t T) {
    FlErr e;
    f->b = compile(path);
    f->plan = transpile(f->b, P, T);
    CU_ASSERT_EQUAL_FATAL(fl_sim_calib_load(CALIB, &f->cal, &e), FL_OK);
}

static void fixture_fini(Fixture *f) {
    fl_sim_calib_fini(&f->cal);
    fl_ir_plan_free(f->plan);
    fl_ir_bundle_free(f->b);
}

/* Simulates plan with cal on the cluster spec text (batch 64, 1 MiB pieces); asserts it runs. */
static void run_spec(const FlPlan *plan, const FlSimCalib *cal, const char *spec, FlSimResult *r) {
    FlSimCluster cl;
    FlErr e;
    FlStatus st = fl_sim_cluster_parse(spec, "<test>", &cl, &e);
    if (st == FL_OK) {
        FlSimOptions o = {.batch = 64, .piece = 1048576};
        st = fl_sim_run(plan, cal, &cl, &o, r, &e);
        fl_sim_cluster_fini(&cl);
    }
    if (st != FL_OK) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
}

/* Runs argv (flc first), stdout+stderr into *out; returns the exit status. */
static int run(const char *const *argv, FlBuf *out) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd[0], buf, sizeof buf)) > 0) fl_buf_append(out, buf, (size_t)n);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_calibrate(void) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(flc_path);
    char path[] = "/tmp/fl_calib_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    FlBuf out = {0};
    const char *argv[] = {flc_path, "calibrate", "-o", path, NULL};
    CU_ASSERT_EQUAL(run(argv, &out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&out), "op_overhead")); /* the summary */
    FlSimCalib c;
    FlErr e;
    FlStatus st = fl_sim_calib_load(path, &c, &e);
    if (st != FL_OK) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    CU_ASSERT(c.gemm.len >= 3);
    for (size_t i = 0; i < c.gemm.len; i++) CU_ASSERT(c.gemm.data[i].gflops > 0);
    CU_ASSERT(c.elementwise_gbps > 0 && c.optimizer_gbps > 0 && c.memcpy_gbps > 0 && c.op_overhead_us > 0);
    /* every optimizer op timed through the executor, each with its own line */
    size_t nopt = 0;
    for (size_t i = 0; i < fl_ops_count(); i++)
        nopt += !fl_ops_at(i)->is_grad && (fl_ops_at(i)->flags & FL_OPF_OPTIMIZE);
    CU_ASSERT(nopt >= 10);
    CU_ASSERT_EQUAL(c.optimizers.len, nopt);
    for (size_t i = 0; i < c.optimizers.len; i++) CU_ASSERT(c.optimizers.data[i].gbps > 0);
    CU_ASSERT(c.wakeup_us > 0 && c.pollwait_us > 0); /* measured: a wake-up takes some time */
    fl_sim_calib_fini(&c);
    unlink(path);
    fl_buf_free(&out);
}

static void test_golden(void) {
    FlBundle *b = compile(MLP);
    FlPlan *plan = transpile(b, 2, 2);
    FlSimResult r1, r2;
    simulate(plan, "1gbit", &r1);
    simulate(plan, "1gbit", &r2);
    CU_ASSERT_EQUAL(memcmp(&r1.step_s, &r2.step_s, sizeof r1.step_s), 0);
    CU_ASSERT_EQUAL(memcmp(&r1.transfer_s, &r2.transfer_s, sizeof r1.transfer_s), 0);
    CU_ASSERT_EQUAL(r1.messages, r2.messages);
    printf("\n  step %.12g s, compute %.9g, transfer %.9g, update %.9g, wait %.9g\n", r1.step_s, r1.compute_s,
           r1.transfer_s, r1.update_s, r1.wait_s);
    CU_ASSERT(fabs(r1.step_s - GOLDEN_STEP) <= 1e-8 * GOLDEN_STEP);
    double sum = r1.compute_s + r1.transfer_s + r1.update_s + r1.wait_s;
    CU_ASSERT(fabs(sum - r1.step_s) <= 1e-9 * r1.step_s);
    /* 2 x 2.68 MB each way over 1 Gbit/s is at least 42.9 ms of transfer on host a's link */
    CU_ASSERT(r1.step_s > 0.0428);
    fl_sim_result_fini(&r1);
    fl_sim_result_fini(&r2);
    fl_ir_plan_free(plan);
    fl_ir_bundle_free(b);
}

static void test_link_bytes(void) {
    FlBundle *b = compile(MLP);
    double params = 0; /* the local program's parameters, bytes */
    const FlBlock *s0 = fl_ir_block(b->startup, 0);
    for (size_t i = 0; i < s0->vars.len; i++) {
        const FlVarDesc *v = s0->vars.data[i];
        if (!v->trainable) continue;
        double n = 4;
        for (int d = 0; d < v->ndim; d++) n *= (double)v->shape[d];
        params += n;
    }
    CU_ASSERT_EQUAL(params, 4.0 * (784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10));
    for (int64_t P = 1; P <= 3; P++)
        for (int64_t T = 1; T <= 3; T++) {
            FlPlan *plan = transpile(b, P, T);
            FlSimResult r;
            simulate(plan, "1gbit", &r);
            CU_ASSERT_EQUAL(r.nhosts, 2);
            CU_ASSERT_EQUAL(r.links[0].out_bytes, (double)T * params); /* host a: the trainers */
            CU_ASSERT_EQUAL(r.links[0].in_bytes, (double)T * params);
            CU_ASSERT_EQUAL(r.links[1].out_bytes, (double)T * params); /* host b: the pservers */
            CU_ASSERT_EQUAL(r.links[1].in_bytes, (double)T * params);
            CU_ASSERT_EQUAL(r.links[0].local_bytes + r.links[1].local_bytes, 0);
            double in = 0;
            for (int64_t p = 0; p < P; p++) in += r.servers[p].in_bytes;
            CU_ASSERT_EQUAL(in, (double)T * params);
            fl_sim_result_fini(&r);
            fl_ir_plan_free(plan);
        }
    fl_ir_bundle_free(b);
}

static void test_bandwidth(void) {
    FlBundle *b = compile(MLP);
    FlPlan *plan = transpile(b, 2, 2);
    FlSimResult slow, fast;
    simulate(plan, "1gbit", &slow);
    simulate(plan, "2gbit", &fast);
    printf("\n  transfer %.6f -> %.6f s, step %.6f -> %.6f s\n", slow.transfer_s, fast.transfer_s, slow.step_s,
           fast.step_s);
    CU_ASSERT(fast.transfer_s < slow.transfer_s);
    CU_ASSERT(fast.step_s < slow.step_s);
    /* the transfers dominate: twice the bandwidth takes off at least a third of the step */
    CU_ASSERT(fast.step_s < slow.step_s * 2 / 3);
    /* a pserver's cost per message holds its thread: the messages come spread over the slow
     * link, so most costs hide behind the transfers, but the last gradient piece's 1 ms comes
     * before its update, so the step grows by about that much */
    FlSimCalib cal;
    FlSimCluster cl;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_sim_calib_load(CALIB, &cal, &e), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_sim_cluster_parse("host a roles=trainers bandwidth=1gbit latency=0.5ms\n"
                                               "host b roles=pservers bandwidth=1gbit latency=0.5ms msgcost=1ms",
                                               "<test>", &cl, &e), FL_OK);
    CU_ASSERT_EQUAL(cl.hosts.data[1].msgcost, 1e-3);
    FlSimOptions o = {.batch = 64, .piece = 1048576};
    FlSimResult busy;
    CU_ASSERT_EQUAL_FATAL(fl_sim_run(plan, &cal, &cl, &o, &busy, &e), FL_OK);
    printf("  msgcost 1ms: step %.6f s\n", busy.step_s);
    CU_ASSERT(busy.step_s > slow.step_s + 0.9e-3);
    fl_sim_result_fini(&busy);
    fl_sim_cluster_fini(&cl);
    fl_sim_calib_fini(&cal);
    fl_sim_result_fini(&slow);
    fl_sim_result_fini(&fast);
    fl_ir_plan_free(plan);
    fl_ir_bundle_free(b);
}

/* The step time (s) of plan with `piece`-byte pieces over two hosts of 10 Gbit/s and 5 ms one
 * way (a round trip 20 ms), the trainers' with eager=EA, the pservers' with eager=EB ("": the
 * default, 65536). */
static double rendezvous_step(const FlPlan *plan, int64_t piece, const char *ea, const char *eb) {
    char text[512];
    snprintf(text, sizeof text,
             "host a roles=trainers bandwidth=10gbit latency=5ms%s%s; host b roles=pservers bandwidth=10gbit latency=5ms%s%s",
             *ea ? " eager=" : "", ea, *eb ? " eager=" : "", eb);
    FlSimCalib cal;
    FlSimCluster cl;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_sim_calib_load(CALIB, &cal, &e), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_sim_cluster_parse(text, "<test>", &cl, &e), FL_OK);
    FlSimOptions o = {.batch = 64, .piece = piece};
    FlSimResult r;
    FlStatus st = fl_sim_run(plan, &cal, &cl, &o, &r, &e);
    if (st != FL_OK) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    double step = r.step_s;
    fl_sim_result_fini(&r);
    fl_sim_cluster_fini(&cl);
    fl_sim_calib_fini(&cal);
    return step;
}

static void test_rendezvous(void) {
    FlBundle *b = compile(MLP);
    FlPlan *plan = transpile(b, 1, 1);
    const double rtt = 0.020;
    const char *off = "1000000000";
    double eager = rendezvous_step(plan, 1048576, off, off);
    double mib = rendezvous_step(plan, 1048576, "", "");    /* every piece above 64 KiB */
    double small = rendezvous_step(plan, 65536, "", "");    /* every piece at the limit: eager */
    double quarter = rendezvous_step(plan, 262144, "", ""); /* W0's 1.6 MB in 7 pieces */
    double grads = rendezvous_step(plan, 1048576, "", off); /* the pserver's answers eager */
    printf("\n  eager %.6f s, 1 MiB pieces %.6f s (answers eager %.6f s), 256 KiB %.6f s, 64 KiB %.6f s\n", eager, mib,
           grads, quarter, small);
    CU_ASSERT_EQUAL(small, rendezvous_step(plan, 65536, off, off));
    /* the gradients' pieces, then the answers' each wait one round trip before their data */
    CU_ASSERT(mib >= eager + 2 * rtt * 0.95);
    CU_ASSERT(mib <= eager + 2 * rtt * 1.1);
    /* the limit is the sender's: with the pserver's answers eager, one round trip less (the
     * first gradients' handshakes partly under the trainer's compute) */
    CU_ASSERT(grads >= eager + rtt * 0.9);
    CU_ASSERT(grads <= mib - rtt * 0.9);
    /* the pserver receives two pieces of a gradient at a time: W0's 7 pieces shake hands in 4
     * rounds, the third after the first is applied */
    CU_ASSERT(quarter >= mib + 2 * rtt);
    fl_ir_plan_free(plan);
    fl_ir_bundle_free(b);
}

static void spec_error(const char *text, const char *want) {
    FlSimCluster c;
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_sim_cluster_parse(text, "spec.txt", &c, &e), FL_ERROR);
    CHECK_STR(e.msg, want);
}

static void calib_error(const char *text, const char *want) {
    FlSimCalib c;
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_sim_calib_parse(text, "cal.txt", &c, &e), FL_ERROR);
    CHECK_STR(e.msg, want);
}

static void test_errors(void) {
    spec_error("host a slots=2\nhost b bandwith=1gbit\n",
               "spec.txt:2: unknown key 'bandwith' (expected slots, bandwidth, latency, msgcost, eager, compute, cores or roles)");
    spec_error("host a eager=64k\n",
               "spec.txt:1: eager: expected a whole number of bytes (Open MPI's btl_tcp_eager_limit, default 65536), "
               "found '64k'");
    spec_error("host a\nhost b eager=-1\n",
               "spec.txt:2: eager: expected a whole number of bytes (Open MPI's btl_tcp_eager_limit, default 65536), "
               "found '-1'");
    spec_error("# two hosts\nhost a\nhost a\n", "spec.txt:3: host 'a' is described twice (first on line 2)");
    spec_error("host a bandwidth=fast\n",
               "spec.txt:1: bandwidth: expected a bandwidth such as 1gbit, 200mbit, 10GB/s or 500MB/s, found 'fast'");
    spec_error("host a latency=3\n", "spec.txt:1: latency: expected a time such as 0.5ms, 20us or 1s, found '3'");
    spec_error("host a slots=0\n", "spec.txt:1: slots: expected a whole number >= 1, found '0'");
    spec_error("host a roles=t0,q1\n",
               "spec.txt:1: roles: expected a list of trainers, pservers, tN (trainer N) or pN (pserver N), found 'q1'");
    spec_error("host a; local bandwidth=1GB/s\n", "spec.txt:2: 'local' needs bandwidth=RATE and latency=TIME");
    spec_error("switch s\n",
               "spec.txt:1: expected 'host NAME key=value...', 'local bandwidth=RATE latency=TIME', 'machine "
               "cores=N hosts=LIST' or 'links fifo|shared', found 'switch'");
    spec_error("host a\nmachine cores=0 hosts=a\n", "spec.txt:2: cores: expected a whole number >= 1, found '0'");
    spec_error("host a\nmachine cores=2\n", "spec.txt:2: 'machine' needs cores=N and hosts=LIST");
    spec_error("host a\nmachine cores=2 hosts=a,,b\n", "spec.txt:2: hosts: expected a list of host names, found 'a,,b'");
    spec_error("machine cores=2 hosts=a,b\nhost a\n", "spec.txt:1: hosts: no host 'b' in the spec");
    spec_error("host a\nmachine cores=2 hosts=a\nmachine cores=2 hosts=a\n",
               "spec.txt:3: hosts: host 'a' is already on the machine of line 2");
    spec_error("host a cores=4\nmachine cores=2 hosts=a\n",
               "spec.txt:1: host 'a' has cores= and is on the machine of line 2, whose cores it shares");
    spec_error("host a\nmachine cores=2 hosts=a switch=maybe\n",
               "spec.txt:2: switch: expected yes (the hosts' links go through a switch thread on the machine) or no, "
               "found 'maybe'");
    spec_error("host a\nmachine cores=2 hosts=a switchrate=1gbit\n",
               "spec.txt:2: switchrate= is the switch thread's; it needs switch=yes");
    spec_error("host a\nmachine cores=2 hosts=a switch=yes switchrate=quick\n",
               "spec.txt:2: switchrate: expected a bandwidth such as 1gbit, 200mbit, 10GB/s or 500MB/s, found 'quick'");
    spec_error("host a\nmachine cores=2 hosts=a pollwait=soon\n",
               "spec.txt:2: pollwait: expected a time such as 0.5ms, 20us or 1s, found 'soon'");
    spec_error("host a\nmachine cores=2 hosts=a speed=2\n",
               "spec.txt:2: unknown key 'speed' (expected cores, hosts, bind, switch, switchrate, wakeup or pollwait)");
    calib_error("wakeup -3 us\n", "cal.txt:1: expected 'wakeup VALUE us' with VALUE from 0 to 10000000");
    spec_error("# nothing\n", "spec.txt: no 'host' line");
    calib_error("gemm 1x2 3 GFLOP/s\n", "cal.txt:1: expected 'gemm MxNxK VALUE GFLOP/s'");
    calib_error("elementwise 3 GB/s\nelementwise 4 GB/s\n", "cal.txt:2: 'elementwise' is given twice (first on line 1)");
    calib_error("memcpy 3 MB/s\n", "cal.txt:1: expected 'memcpy VALUE GB/s' with VALUE from 0.001 to 1000000");
    calib_error("gemm 1x2x3 3 GFLOP/s\nelementwise 1 GB/s\noptimizer 1 GB/s\nmemcpy 1 GB/s\n",
                "cal.txt: no 'op_overhead' line");

    /* the model's own refusals: ranks sharing a host without 'local', a link without bandwidth */
    FlBundle *b = compile(MLP);
    FlPlan *plan = transpile(b, 1, 2);
    FlSimCalib cal;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_sim_calib_load(CALIB, &cal, &e), FL_OK);
    FlSimOptions o = {.batch = 64, .piece = 1048576};
    const char *specs[][2] = {
        {"host a slots=3", "spec.txt: trainer 0 and pserver 0 share host 'a', and the spec has no 'local' line"},
        {"host a roles=trainers bandwidth=1gbit\nhost b roles=pservers",
         "spec.txt:2: host 'b' talks to host 'a' but has no bandwidth="},
        {"host a roles=t0 bandwidth=1gbit\nhost b roles=p0 bandwidth=1gbit",
         "spec.txt: trainer 1 has no host: every host has roles=, and none lists it"},
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        FlSimCluster cl;
        CU_ASSERT_EQUAL_FATAL(fl_sim_cluster_parse(specs[i][0], "spec.txt", &cl, &e), FL_OK);
        FlSimResult r;
        e.msg[0] = 0;
        CU_ASSERT_EQUAL(fl_sim_run(plan, &cal, &cl, &o, &r, &e), FL_ERROR);
        CHECK_STR(e.msg, specs[i][1]);
        fl_sim_cluster_fini(&cl);
    }
    fl_sim_calib_fini(&cal);
    fl_ir_plan_free(plan);
    fl_ir_bundle_free(b);
}

/* Every figure is bounded where it is read (what makes sense for a cluster and a machine), and
 * the event loop ends even on figures past the parsers: a latency of 1e6 s, a message cost of
 * 1e300 s and a batch of 2^63-1 rows once made `t + left / rate` round to t forever. */
static void test_bounds(void) {
    spec_error("host a latency=1e6s\n",
               "spec.txt:1: latency: a time must be from 0 to 10s (a link's latency, a message's cost, a wait), "
               "found '1e6s'");
    spec_error("host a\nhost b msgcost=1e300s\n",
               "spec.txt:2: msgcost: a time must be from 0 to 10s (a link's latency, a message's cost, a wait), "
               "found '1e300s'");
    spec_error("host a latency=-1ms\n",
               "spec.txt:1: latency: a time must be from 0 to 10s (a link's latency, a message's cost, a wait), "
               "found '-1ms'");
    spec_error("host a\nlocal bandwidth=1GB/s latency=11s\n",
               "spec.txt:2: latency: a time must be from 0 to 10s (a link's latency, a message's cost, a wait), "
               "found '11s'");
    spec_error("host a\nmachine cores=2 hosts=a pollwait=20s\n",
               "spec.txt:2: pollwait: a time must be from 0 to 10s (a link's latency, a message's cost, a wait), "
               "found '20s'");
    spec_error("host a bandwidth=1e-300\n", "spec.txt:1: bandwidth: a bandwidth must be from 1kbit (125 bytes/s) to "
                                            "10TB/s, found '1e-300'");
    spec_error("host a bandwidth=100Gbit\nhost b bandwidth=20000GB/s\n",
               "spec.txt:2: bandwidth: a bandwidth must be from 1kbit (125 bytes/s) to 10TB/s, found '20000GB/s'");
    spec_error("host a bandwidth=0\n", "spec.txt:1: bandwidth: a bandwidth must be from 1kbit (125 bytes/s) to "
                                       "10TB/s, found '0'");
    spec_error("host a compute=1e300\n",
               "spec.txt:1: compute: expected a factor from 0.001 to 1000 (2: compute takes twice as long), found "
               "'1e300'");
    calib_error("gemm 64x64x64 1e300 GFLOP/s\n",
                "cal.txt:1: expected 'gemm MxNxK VALUE GFLOP/s' with VALUE from 0.001 to 1000000, found "
                "'1e300 GFLOP/s'");
    calib_error("memcpy 1e-300 GB/s\n", "cal.txt:1: expected 'memcpy VALUE GB/s' with VALUE from 0.001 to 1000000");
    calib_error("op_overhead 1e300 us\n", "cal.txt:1: expected 'op_overhead VALUE us' with VALUE from 0 to 10000000");

    /* past the parsers (a program filling the structs itself): the model still ends, or refuses */
    Fixture f;
    fixture(&f, MLP, 2, 2);
    FlErr e;
    FlSimCluster cl;
    CU_ASSERT_EQUAL_FATAL(fl_sim_cluster_parse("host a roles=trainers bandwidth=1gbit latency=0.5ms msgcost=10us\n"
                                               "host b roles=pservers bandwidth=1gbit latency=0.5ms msgcost=10us\n",
                                               "spec.txt", &cl, &e), FL_OK);
    alarm(60); /* a loop that never ends kills the test (SIGALRM) instead of holding ctest */
    double lat[3] = {1e6, 1e-3, 1e-3}, cost[3] = {1e-5, 1e300, 1e-5};
    for (int i = 0; i < 3; i++) {
        for (size_t h = 0; h < 2; h++) cl.hosts.data[h].latency = lat[i], cl.hosts.data[h].msgcost = cost[i];
        FlSimOptions o = {.batch = i == 2 ? FL_SIM_BATCH_MAX : 64, .piece = 1048576};
        FlSimResult r;
        FlStatus st = fl_sim_run(f.plan, &f.cal, &cl, &o, &r, &e);
        if (i == 0) { /* 2e6 s a hop: a GET and its answer at least */
            CU_ASSERT_EQUAL(st, FL_OK);
            if (st == FL_OK) CU_ASSERT(isfinite(r.step_s) && r.step_s >= 4e6);
        } else if (i == 1) { /* every message a pserver takes costs 1e300 s, one after the other */
            CU_ASSERT_EQUAL(st, FL_OK);
            if (st == FL_OK) CU_ASSERT(isfinite(r.step_s) && r.step_s >= 1e300);
        } else { /* the largest batch the model takes: finite, and longer than batch 64's */
            CU_ASSERT_EQUAL(st, FL_OK);
            if (st == FL_OK) CU_ASSERT(isfinite(r.step_s) && r.step_s > 1);
        }
        if (st == FL_OK) fl_sim_result_fini(&r);
    }
    alarm(0);
    FlSimResult r;
    FlSimOptions big = {.batch = (int64_t)FL_SIM_BATCH_MAX + 1, .piece = 1048576};
    CU_ASSERT_EQUAL(fl_sim_run(f.plan, &f.cal, &cl, &big, &r, &e), FL_ERROR);
    CHECK_STR(e.msg, "a batch of 16777217 rows per trainer: the model takes 1 to 16777216");
    FlSimOptions odd = {.batch = 64, .piece = 12};
    CU_ASSERT_EQUAL(fl_sim_run(f.plan, &f.cal, &cl, &odd, &r, &e), FL_ERROR);
    CHECK_STR(e.msg, "a piece of 12 bytes: the model takes flrun's pieces, a multiple of 8 from 8 to 1073741824");
    fl_sim_cluster_fini(&cl);
    fixture_fini(&f);

    /* the command line names the bound */
    FlBuf out = {0};
    const char *batch[] = {flc_path, "simulate", MLP, "--pservers", "1", "--trainers", "1", "--calibration", CALIB,
                           "--batch-size", "9223372036854775807", "--cluster", "host a slots=2; local bandwidth=1GB/s latency=2us",
                           NULL};
    CU_ASSERT_EQUAL(run(batch, &out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&out), "flc: --batch-size needs a whole number from 1 to 16777216, found "
                                                    "'9223372036854775807'"));
    out.len = 0;
    const char *lat1e6[] = {flc_path, "simulate", MLP, "--pservers", "1", "--trainers", "1", "--calibration", CALIB,
                            "--cluster", "host a roles=trainers bandwidth=1gbit latency=1e6s; host b roles=pservers "
                            "bandwidth=1gbit latency=0.25ms", NULL};
    CU_ASSERT_EQUAL(run(lat1e6, &out), 1);
    CHECK_STR(fl_buf_str(&out), "flc: error: <cluster>:1: latency: a time must be from 0 to 10s (a link's latency, a "
                                "message's cost, a wait), found '1e6s'\n");
    fl_buf_free(&out);
}

/* `machine cores=N hosts=...`: hosts sharing one machine's cores (the test cluster's network
 * namespaces) stretch a trainer's compute by trainers/cores, and each message waits for its receiver's look
 * (pollwait) and, through a switch thread, two wake-ups of it */
static void test_machine(void) {
    Fixture f;
    fixture(&f, MLP, 2, 4);
    FlErr e;
    CU_ASSERT_EQUAL(f.cal.pollwait_us, -1); /* the fixed calibration has none: optional */
    FlSimOptions o = {.batch = 64, .piece = 1048576};
    /* links of 10 Gbit/s, so the waits fall on the critical path: on links that set the pace
     * (1 Gbit/s) a wait can as well reorder the transfers queued on them */
    const char *hosts = "host a roles=trainers bandwidth=10gbit latency=0.5ms\n"
                        "host b roles=pservers bandwidth=10gbit latency=0.5ms\n";
    char text[512];
    double step[5];
    const char *machine[5] = {"", "machine cores=2 hosts=a,b pollwait=0us wakeup=0us",
                              "machine cores=2 hosts=a,b pollwait=1ms", "machine cores=2 hosts=a,b switch=yes pollwait=1ms wakeup=2ms",
                              "machine cores=2 hosts=a,b switch=yes pollwait=1ms wakeup=2ms switchrate=1gbit"};
    FlSimResult r[5];
    for (int i = 0; i < 5; i++) {
        snprintf(text, sizeof text, "%s%s", hosts, machine[i]);
        FlSimCluster cl;
        FlStatus st = fl_sim_cluster_parse(text, "<test>", &cl, &e);
        if (st != FL_OK) fprintf(stderr, "%s\n", e.msg);
        CU_ASSERT_EQUAL_FATAL(st, FL_OK);
        st = fl_sim_run(f.plan, &f.cal, &cl, &o, &r[i], &e);
        if (st != FL_OK) fprintf(stderr, "%s\n", e.msg);
        CU_ASSERT_EQUAL_FATAL(st, FL_OK);
        step[i] = r[i].step_s;
        fl_sim_cluster_fini(&cl);
    }
    printf("\n  own cores %.6f s; shared (6 ranks, 2 cores) %.6f s; +pollwait 1ms %.6f s; +switch 2x2ms %.6f s; "
           "switchrate=1gbit %.6f s\n", step[0], step[1], step[2], step[3], step[4]);
    /* 4 trainers computing side by side on 2 cores: each one's compute twice as long (the 2
     * pservers wait meanwhile and take no core) */
    CU_ASSERT_DOUBLE_EQUAL(r[1].trainer_compute_s, 2 * r[0].trainer_compute_s, 1e-9);
    CU_ASSERT(step[1] > step[0]);
    /* the waits hold no link: a GET and its answer's last piece each wait once on the critical
     * path, at least 2 ms more, and the switch's 4 ms more per hop */
    CU_ASSERT(step[2] >= step[1] + 2e-3 - 1e-9);
    CU_ASSERT(step[3] >= step[2] + 8e-3 - 1e-9);
    /* a switch thread of 1 Gbit/s carries both ways' bytes one after the other: 4 trainers x
     * 2.68 MB of gradients and as much of parameters at 125 MB/s at least; the links alone (10
     * Gbit/s, the two ways side by side) take far less */
    double both = 2 * 4 * 4.0 * (784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10) / 125e6;
    CU_ASSERT(step[4] >= both);
    CU_ASSERT(step[3] < both);
    for (int i = 0; i < 5; i++) fl_sim_result_fini(&r[i]);
    /* no pollwait in the calibration nor on the line: refused where the line is */
    FlSimCluster cl;
    CU_ASSERT_EQUAL_FATAL(fl_sim_cluster_parse("host a roles=trainers bandwidth=1gbit latency=0.5ms\n"
                                               "host b roles=pservers bandwidth=1gbit latency=0.5ms\n"
                                               "machine cores=2 hosts=a,b", "spec.txt", &cl, &e), FL_OK);
    FlSimResult bad;
    CU_ASSERT_EQUAL(fl_sim_run(f.plan, &f.cal, &cl, &o, &bad, &e), FL_ERROR);
    CHECK_STR(e.msg, "spec.txt:3: the machine's ranks wait for wake-ups: the calibration has no 'pollwait' line (flc "
                     "calibrate measures it), nor the line pollwait=");
    fl_sim_cluster_fini(&cl);
    /* with the calibration's figures */
    FlSimCalib cal2;
    FlBuf txt = {0};
    size_t len;
    char *base = fl_read_file(CALIB, &len, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(base);
    fl_buf_printf(&txt, "%swakeup 500 us\npollwait 1000 us\n", base);
    free(base);
    CU_ASSERT_EQUAL_FATAL(fl_sim_calib_parse(fl_buf_str(&txt), "cal.txt", &cal2, &e), FL_OK);
    CU_ASSERT_EQUAL(cal2.wakeup_us, 500);
    CU_ASSERT_EQUAL(cal2.pollwait_us, 1000);
    CU_ASSERT_EQUAL_FATAL(fl_sim_cluster_parse("host a roles=trainers bandwidth=10gbit latency=0.5ms\n"
                                               "host b roles=pservers bandwidth=10gbit latency=0.5ms\n"
                                               "machine cores=2 hosts=a,b", "spec.txt", &cl, &e), FL_OK);
    FlSimResult good;
    CU_ASSERT_EQUAL_FATAL(fl_sim_run(f.plan, &cal2, &cl, &o, &good, &e), FL_OK);
    CU_ASSERT_DOUBLE_EQUAL(good.step_s, step[2], 1e-9);
    fl_sim_result_fini(&good);
    fl_sim_cluster_fini(&cl);
    fl_buf_free(&txt);
    fl_sim_calib_fini(&cal2);
    fixture_fini(&f);
}

/* Every rank on one host: a trainer's gradients to its own host's pservers cross shared memory,
 * copied by the processes, so its compute goes on only after them: halving the local bandwidth
 * lengthens each trainer's own time by exactly its gradient bytes / the bandwidth. And the
 * transpiler's split and concat of a block cost their bytes at memcpy speed: a faster memcpy
 * shortens the trainer's compute, a faster element-wise rate leaves those ops alone. */
static void test_local_copy(void) {
    Fixture f;
    fixture(&f, MLP, 2, 2);
    double own[2];
    const char *specs[2] = {"host a slots=4\nlocal bandwidth=2GB/s latency=2us\n",
                            "host a slots=4\nlocal bandwidth=1GB/s latency=2us\n"};
    FlSimResult r;
    for (int i = 0; i < 2; i++) {
        run_spec(f.plan, &f.cal, specs[i], &r);
        own[i] = r.trainer_compute_s;
        fl_sim_result_fini(&r);
    }
    double grad_bytes = 4.0 * (784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
    printf("\n  trainer's own time at 2 GB/s %.6f s, at 1 GB/s %.6f s\n", own[0], own[1]);
    CU_ASSERT_DOUBLE_EQUAL(own[1] - own[0], grad_bytes / 1e9 - grad_bytes / 2e9, 1e-9);
    /* split and concat at memcpy speed */
    double c0, c1, c2;
    run_spec(f.plan, &f.cal, specs[0], &r);
    c0 = r.trainer_compute_s;
    fl_sim_result_fini(&r);
    f.cal.memcpy_gbps *= 2;
    run_spec(f.plan, &f.cal, specs[0], &r);
    c1 = r.trainer_compute_s;
    fl_sim_result_fini(&r);
    f.cal.memcpy_gbps /= 2;
    f.cal.elementwise_gbps *= 1000;
    run_spec(f.plan, &f.cal, specs[0], &r);
    c2 = r.trainer_compute_s;
    fl_sim_result_fini(&r);
    /* the trainer's split of fc_0's and fc_1's gradients and concat of their parameters move
     * 2 x (784 + 512) x 512 floats, read and written, and its feeds (x, 64 x 784 floats; label,
     * 64 int64) are copied in: at twice memcpy's rate, half the time */
    double moved = 2 * 2 * 4.0 * (784 + 512) * 512, feeds = 64 * 784 * 4.0 + 64 * 8.0;
    CU_ASSERT_DOUBLE_EQUAL(c0 - c1, (moved / 2 + feeds) / (f.cal.memcpy_gbps * 1e9) / 2, 1e-9);
    CU_ASSERT(c2 < c0); /* the relus and adds do cost element-wise */
    fixture_fini(&f);
}

/* `optimizer OP VALUE GB/s`: an optimizer op's own rate (flc calibrate times each through the
 * executor; Adam's square root and division set its pace, not its bytes). The digits MLP's
 * pserver runs Adam on its 17226 parameters: each reads Param, Grad, Moment1, Moment2 and writes
 * them back but Grad (7 floats an element), the learning rate and two powers of beta in, the
 * powers out (5 floats a parameter); halving the rate adds exactly those bytes / the rate to the
 * pserver's update. A line for another optimizer leaves an Adam plan alone. */
static void test_optimizer_rate(void) {
    FlBundle *b = compile("tests/bench/simulate/digits.fl");
    FlPlan *plan = transpile(b, 1, 2);
    FlErr e;
    size_t len;
    char *base = fl_read_file(CALIB, &len, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(base);
    const char *extra[4] = {"", "optimizer adam 4 GB/s\n", "optimizer adam 2 GB/s\n", "optimizer sgd 1 GB/s\n"};
    double update[4];
    for (int i = 0; i < 4; i++) {
        FlBuf txt = {0};
        fl_buf_printf(&txt, "%s%s", base, extra[i]);
        FlSimCalib cal;
        CU_ASSERT_EQUAL_FATAL(fl_sim_calib_parse(fl_buf_str(&txt), "cal.txt", &cal, &e), FL_OK);
        FlSimResult r;
        run_spec(plan, &cal, "host a slots=3\nlocal bandwidth=2GB/s latency=2us\n", &r);
        update[i] = r.servers[0].update_s;
        fl_sim_result_fini(&r);
        fl_sim_calib_fini(&cal);
        fl_buf_free(&txt);
    }
    double bytes = 4.0 * (7 * 17226 + 5 * 6);
    CU_ASSERT_DOUBLE_EQUAL(update[2] - update[1], bytes * (1 / 2e9 - 1 / 4e9), 1e-12);
    CU_ASSERT(update[1] > update[0]); /* 4 GB/s against the default's 63 */
    CU_ASSERT_EQUAL(memcmp(&update[3], &update[0], sizeof update[0]), 0);
    calib_error("optimizer relu 3 GB/s\n", "cal.txt:1: 'relu' is not an optimizer op (expected 'optimizer [OP] VALUE "
                                            "GB/s', OP one of sgd, momentum, adam, ...: docs/ops.md)");
    calib_error("optimizer adam 3 GB/s\noptimizer adam 4 GB/s\n",
                "cal.txt:2: 'optimizer adam' is given twice (first on line 1)");
    calib_error("optimizer adam 3 MB/s\n",
                "cal.txt:1: expected 'optimizer adam VALUE GB/s' with VALUE from 0.001 to 1000000");
    free(base);
    fl_ir_plan_free(plan);
    fl_ir_bundle_free(b);
}

/* `links shared`: the messages on a link at once share it, as TCP connections do. One trainer
 * (host a) and two pservers (hosts b, c) of a layer 64 -> 8192 (probe_big.fl): its weights travel
 * as two blocks of 1 MiB, one to each pserver, posted at once. One after the other (fifo), block
 * 0 is in after 1 MiB / the bandwidth, its answer comes back while block 1 goes out, and block 1's
 * answer follows: three transfer times. Shared, both go out at half the rate and are in after two,
 * both answers come back at half the rate on the trainer's way in: four. The bias (32 KiB, to
 * pserver 0) and the latencies aside, shared takes one transfer time more. The bytes on each
 * link are the same either way. */
static void test_links_shared(void) {
    Fixture f;
    fixture(&f, "tests/bench/simulate/probe_big.fl", 2, 1);
    FlSimResult r[2];
    for (int i = 0; i < 2; i++) {
        char spec[512];
        snprintf(spec, sizeof spec,
                 "links %s\nhost a roles=t0 bandwidth=100MB/s latency=10us\n"
                 "host b roles=p0 bandwidth=100MB/s latency=10us\n"
                 "host c roles=p1 bandwidth=100MB/s latency=10us\n", i ? "shared" : "fifo");
        run_spec(f.plan, &f.cal, spec, &r[i]);
    }
    double once = 1048576 / 100e6; /* one block's transfer time */
    printf("\n  fifo %.6f s, shared %.6f s, one block %.6f s\n", r[0].step_s, r[1].step_s, once);
    CU_ASSERT(fabs(r[1].step_s - r[0].step_s - once) < 0.05 * once);
    CU_ASSERT(r[0].step_s > 3 * once && r[1].step_s > 4 * once);
    for (int h = 0; h < 3; h++) {
        CU_ASSERT_EQUAL(r[0].links[h].out_bytes, r[1].links[h].out_bytes);
        CU_ASSERT_EQUAL(r[0].links[h].in_bytes, r[1].links[h].in_bytes);
    }
    CU_ASSERT_EQUAL(r[0].messages, r[1].messages);
    fl_sim_result_fini(&r[0]);
    fl_sim_result_fini(&r[1]);
    spec_error("links sideways\nhost a\n", "spec.txt:1: expected 'links fifo' (messages take a link one after the other) "
                                          "or 'links shared' (the messages on a link at once share it)");
    spec_error("links shared\nlinks fifo\nhost a\n", "spec.txt:2: a second 'links' line (the first is line 1)");
    fixture_fini(&f);
}

/* `machine ... bind=core`: ranks bound to the cores in turn (rank order: trainers, then
 * pservers), so a core does its ranks' work one piece after another, and the busiest core's
 * work bounds the step. The MLP at 1x2 on a 2-core machine: core 0 takes trainer 0 and the
 * pserver (ranks 0 and 2), core 1 trainer 1. Over shared memory the receiver copies (Open MPI's
 * single copy): core 0 copies trainer 0's parameters and both trainers' gradients in, three
 * times the gradient bytes, so halving the local bandwidth (8 to 4 GB/s) adds exactly those bytes / the
 * bandwidth to its work and, where that bounds the step, to the step. Unbound, the same work
 * spreads over both cores and bounds the step less. */
static void test_shared_cores(void) {
    Fixture f;
    fixture(&f, MLP, 1, 2);
    const char *specs[3] = {"host a slots=3 msgcost=20us\nmachine cores=2 hosts=a bind=core pollwait=0us\nlocal bandwidth=8GB/s latency=2us\n",
                            "host a slots=3 msgcost=20us\nmachine cores=2 hosts=a bind=core pollwait=0us\nlocal bandwidth=4GB/s latency=2us\n",
                            "host a slots=3 msgcost=20us\nmachine cores=2 hosts=a pollwait=0us\nlocal bandwidth=8GB/s latency=2us\n"};
    FlSimResult r[3];
    for (int i = 0; i < 3; i++) run_spec(f.plan, &f.cal, specs[i], &r[i]);
    printf("\n  bound: step %.6f s (core %d:%s %.6f s of work, %.6f s beyond the path); at half the bandwidth %.6f s; "
           "unbound %.6f s\n", r[0].step_s, r[0].busiest_core, fl_buf_str(&r[0].busiest_ranks), r[0].busiest_work_s,
           r[0].cores_s, r[1].step_s, r[2].step_s);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT(r[i].cores_s > 0); /* the core bounds the step */
        CU_ASSERT_EQUAL(r[i].busiest_core, 0);
        CHECK_STR(fl_buf_str(&r[i].busiest_ranks), " t0 p0");
        CU_ASSERT_DOUBLE_EQUAL(r[i].step_s, r[i].busiest_work_s, 1e-12);
        /* the critical path's parts and the wait for the core add up to the step */
        CU_ASSERT_DOUBLE_EQUAL(r[i].compute_s + r[i].transfer_s + r[i].update_s + r[i].wait_s + r[i].cores_s, r[i].step_s, 1e-9);
    }
    /* the GETs' 64-byte headers are copied too: within 1 us */
    double grad_bytes = 4.0 * (784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
    CU_ASSERT_DOUBLE_EQUAL(r[1].busiest_work_s - r[0].busiest_work_s, 3 * grad_bytes * (1 / 4e9 - 1 / 8e9), 1e-6);
    /* unbound: the machine's work over its 2 cores, less than core 0's alone */
    CU_ASSERT(r[2].step_s < r[0].step_s);
    CU_ASSERT_EQUAL(r[2].busiest_core, -1);
    CHECK_STR(fl_buf_str(&r[2].busiest_ranks), " t0 t1 p0");
    CU_ASSERT(r[2].busiest_work_s < r[0].busiest_work_s && 2 * r[2].busiest_work_s > r[0].busiest_work_s);
    for (int i = 0; i < 3; i++) fl_sim_result_fini(&r[i]);
    spec_error("host a slots=3\nmachine cores=2 hosts=a bind=socket\n",
               "spec.txt:2: bind: expected core (its ranks bound to its cores in turn, in rank order) or none, found 'socket'");
    fixture_fini(&f);
}

static void test_cli(void) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(flc_path);
    FlBuf out = {0};
    const char *bad[] = {flc_path, "simulate", MLP, "--pservers", "1", "--trainers", "2", "--calibration", CALIB,
                         "--cluster", "host a slots=3; local bandwidth=1GB/s latency=fast", NULL};
    CU_ASSERT_EQUAL(run(bad, &out), 1);
    CHECK_STR(fl_buf_str(&out), "flc: error: <cluster>:2: latency: expected a time such as 0.5ms, 20us or 1s, found 'fast'\n");
    out.len = 0;
    const char *nocl[] = {flc_path, "simulate", MLP, "--pservers", "1", "--trainers", "2", NULL};
    CU_ASSERT_EQUAL(run(nocl, &out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&out), "simulate needs --cluster SPEC"));
    out.len = 0;
    const char *sweep[] = {flc_path, "simulate", MLP, "--sweep", "P=1..2,T=1,2", "--calibration", CALIB,
                           "--cluster", "host a roles=trainers bandwidth=1gbit latency=0.5ms; host b roles=pservers "
                           "bandwidth=1gbit latency=0.5ms", NULL};
    CU_ASSERT_EQUAL(run(sweep, &out), 0);
    const char *s = fl_buf_str(&out);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "P=1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "P=2 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "most samples/s: P="));
    out.len = 0;
    const char *badsweep[] = {flc_path, "simulate", MLP, "--sweep", "P=3..1,T=1", "--cluster", "host a", NULL};
    CU_ASSERT_EQUAL(run(badsweep, &out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&out), "--sweep: expected a range A..B"));
    out.len = 0;
    const char *help[] = {flc_path, "--help", NULL};
    CU_ASSERT_EQUAL(run(help, &out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&out), "  calibrate [-o FILE]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&out), "  simulate FILE.plan --cluster SPEC"));
    fl_buf_free(&out);
}

int main(int argc, char **argv) {
    flc_path = argc > 1 ? argv[1] : NULL;
    static const FlTestCase cases[] = {
        {"flc calibrate writes a parseable file", test_calibrate},
        {"golden prediction, deterministic", test_golden},
        {"bytes per link per step = T x parameter bytes", test_link_bytes},
        {"twice the bandwidth, less transfer time", test_bandwidth},
        {"Open MPI's rendezvous above the eager limit", test_rendezvous},
        {"errors with file:line", test_errors},
        {"bounds on every figure; the model ends on any", test_bounds},
        {"machine line: shared cores, wake-ups", test_machine},
        {"local link: the sender's copy, copies at memcpy speed", test_local_copy},
        {"an optimizer op's own calibrated rate", test_optimizer_rate},
        {"links shared: messages on a link at once share it", test_links_shared},
        {"bind=core: the busiest core's work bounds the step", test_shared_cores},
        {"flc simulate", test_cli},
    };
    return fl_test_run("simulate", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
