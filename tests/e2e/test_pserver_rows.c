/* test_pserver_rows.c: parameter servers initialise only their rows.
 *
 *   - equality: for several P (uneven blocks, rows not divisible by P, odd row widths), every
 *     var a pserver's startup makes (fl_transpile_pserver_vars: a whole var or rows of one)
 *     equals those rows of what the local startup makes, for uniform (Xavier), normal and
 *     truncated-normal initialisers and Adam's state;
 *   - shapes: a P=2 plan of a [4000, 4000] parameter with Adam has no startup op on either
 *     server whose output is as big as the whole parameter;
 *   - memory: the peak RSS a server's startup adds (measured in a child process) stays below
 *     the whole parameter's bytes, while the local startup's reaches them (the figures print).
 */
#include "tests/cunit.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/transpile.h"
#include "lang/eval.h"
#include "runtime/core/exec.h"
#include "runtime/core/scope.h"

static FlBundle *compile_text(const char *text) {
    FlCompileOptions opt = {0};
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_source("rows.fl", text, strlen(text), &opt, &b, &diag);
    if (n) fprintf(stderr, "%s", fl_buf_str(&diag));
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL_FATAL(n, 0);
    return b;
}

static FlPlan *transpile(const FlBundle *b, int64_t P, int64_t minb) {
    FlTranspileOptions o = {.pservers = P, .trainers = 1, .mode = FL_TRANSPILE_SYNC,
                            .min_block_size = minb, .dispatch = FL_TRANSPILE_ROUND_ROBIN};
    FlPlan *plan = NULL;
    FlErr e;
    FlStatus s = fl_transpile(b, &o, &plan, &e);
    if (s != FL_OK) fprintf(stderr, "transpile: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(s, FL_OK);
    return plan;
}

/* Runs p (a startup program) into a new scope. */
static FlScope *run_startup(const FlProgram *p) {
    FlErr e;
    FlExec *ex = NULL;
    FlStatus st = fl_exec_new(p, NULL, 0, NULL, &ex, &e);
    if (st != FL_OK) fprintf(stderr, "exec: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    FlScope *s = fl_scope_new(NULL);
    st = fl_exec_run(ex, s, NULL, 0, NULL, NULL, 0, 0, &e);
    if (st != FL_OK) fprintf(stderr, "run: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, FL_OK);
    fl_exec_free(ex);
    return s;
}

static const FlBundle *pserver(const FlPlan *p, int64_t s) {
    for (size_t i = 0; i < p->roles.len; i++)
        if (strcmp(p->roles.data[i]->role, "pserver") == 0 && p->roles.data[i]->role_index == s)
            return p->roles.data[i];
    CU_FAIL_FATAL("no such pserver");
    return NULL;
}

/* Ops of the startup that make a block directly (a fill writing "X.blockK"). */
static size_t made_blocks(const FlProgram *st) {
    static const char *const fills[] = {"fill_constant", "uniform_random", "gaussian_random",
                                        "truncated_gaussian_random"};
    const FlBlock *b = fl_ir_block(st, 0);
    size_t n = 0;
    for (size_t i = 0; i < b->ops.len; i++)
        for (size_t f = 0; f < FL_ARRAY_LEN(fills); f++)
            if (strcmp(b->ops.data[i]->type, fills[f]) == 0 &&
                strstr(b->ops.data[i]->outs.data[0].args[0], ".block"))
                n++;
    return n;
}

static const char *EQ_PROGRAM =
    "from fluid import layers, optimizer, initializer\n"
    "x = layers.data(name='x', shape=[101], dtype='float32')\n"
    "h = layers.fc(x, size=13)\n"
    "h = layers.fc(h, size=37, param_attr=initializer.Normal(0.0, 0.5))\n"
    "h = layers.fc(h, size=9, param_attr=initializer.TruncatedNormal(0.1, 2.0))\n"
    "loss = layers.mean(h)\n"
    "optimizer.Adam(learning_rate=0.01).minimize(loss)\n";

static void test_rows_equal_local(void) {
    FlBundle *b = compile_text(EQ_PROGRAM);
    FlScope *local = run_startup(b->startup);
    static const int64_t Ps[] = {2, 3, 5, 7};
    for (size_t pi = 0; pi < FL_ARRAY_LEN(Ps); pi++) {
        FlPlan *plan = transpile(b, Ps[pi], 8);
        size_t checked = 0, sliced = 0, direct = 0;
        for (int64_t s = 0; s < Ps[pi]; s++) {
            const FlBundle *ps = pserver(plan, s);
            direct += made_blocks(ps->startup);
            FlScope *sc = run_startup(ps->startup);
            FlPlanVar *pv;
            size_t n = fl_transpile_pserver_vars(ps, &pv);
            for (size_t i = 0; i < n; i++) {
                FlErr e;
                FlTensor got = FL_TENSOR_INIT, whole = FL_TENSOR_INIT;
                CU_ASSERT_EQUAL_FATAL(fl_scope_get_tensor(sc, pv[i].var, &got, &e), FL_OK);
                CU_ASSERT_EQUAL_FATAL(fl_scope_get_tensor(local, pv[i].full->name, &whole, &e), FL_OK);
                size_t es = fl_tensor_nbytes(&whole) / (size_t)(fl_tensor_numel(&whole) ? fl_tensor_numel(&whole) : 1);
                size_t per = (size_t)(fl_tensor_numel(&whole) / (whole.ne[0] ? whole.ne[0] : 1)) * es;
                size_t off = pv[i].rows < 0 ? 0 : (size_t)pv[i].row0 * per;
                size_t len = pv[i].rows < 0 ? fl_tensor_nbytes(&whole) : (size_t)pv[i].rows * per;
                CU_ASSERT_EQUAL(fl_tensor_nbytes(&got), len);
                if (fl_tensor_nbytes(&got) == len) {
                    bool same = memcmp(fl_tensor_data(&got), (const char *)fl_tensor_data(&whole) + off, len) == 0;
                    if (!same)
                        fprintf(stderr, "\nP=%lld pserver %lld: %s differs from rows [%lld, +%lld) of %s\n",
                                (long long)Ps[pi], (long long)s, pv[i].var, (long long)pv[i].row0,
                                (long long)pv[i].rows, pv[i].full->name);
                    CU_ASSERT(same);
                }
                checked++;
                sliced += pv[i].rows >= 0;
                fl_tensor_fini(&got);
                fl_tensor_fini(&whole);
            }
            free(pv);
            fl_scope_release(sc);
        }
        /* the three weights and their two moments are cut on every P; all made directly */
        CU_ASSERT(sliced >= 9);
        CU_ASSERT_EQUAL(direct, sliced);
        CU_ASSERT(checked > sliced);
        fl_ir_plan_free(plan);
    }
    fl_scope_release(local);
    fl_ir_bundle_free(b);
}

static const char *BIG_ADAM =
    "from fluid import layers, optimizer\n"
    "x = layers.data(name='x', shape=[4000], dtype='float32')\n"
    "loss = layers.mean(layers.fc(x, size=4000))\n"
    "optimizer.Adam(learning_rate=0.01).minimize(loss)\n";

static void test_no_whole_op(void) {
    FlBundle *b = compile_text(BIG_ADAM);
    FlPlan *plan = transpile(b, 2, 0);
    for (int64_t s = 0; s < 2; s++) {
        const FlBlock *st = fl_ir_block(pserver(plan, s)->startup, 0);
        int64_t biggest = 0;
        for (size_t i = 0; i < st->ops.len; i++) {
            const FlOpDesc *op = st->ops.data[i];
            for (size_t sl = 0; sl < op->outs.len; sl++)
                for (size_t k = 0; k < op->outs.data[sl].nargs; k++) {
                    const FlVarDesc *v = fl_ir_var_find(st, op->outs.data[sl].args[k]);
                    if (!v) continue;
                    int64_t ne = 1;
                    for (int d = 0; d < v->ndim; d++) ne *= v->shape[d];
                    if (ne > biggest) biggest = ne;
                }
        }
        CU_ASSERT_EQUAL(biggest, 2000 * 4000);
    }
    fl_ir_plan_free(plan);
    fl_ir_bundle_free(b);
}

/* The peak RSS (KiB) that running a startup program adds, in a child process: role < 0 runs the
 * local startup, else pserver `role` of a P=2 plan. */
static long startup_peak_kib(const char *text, int role) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        FlBundle *b = compile_text(text);
        FlPlan *plan = role < 0 ? NULL : transpile(b, 2, 0);
        const FlProgram *p = role < 0 ? b->startup : pserver(plan, role)->startup;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        long before = ru.ru_maxrss;
        FlScope *s = run_startup(p);
        getrusage(RUSAGE_SELF, &ru);
        long delta = ru.ru_maxrss - before;
        fl_scope_release(s);
        fl_ir_plan_free(plan);
        fl_ir_bundle_free(b);
        ssize_t w = write(fd[1], &delta, sizeof delta);
        _exit(w == (ssize_t)sizeof delta ? 0 : 1);
    }
    close(fd[1]);
    long delta = -1;
    ssize_t r = read(fd[0], &delta, sizeof delta);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (r != (ssize_t)sizeof delta || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    return delta;
}

static const char *BIG_SGD =
    "from fluid import layers, optimizer\n"
    "x = layers.data(name='x', shape=[4000], dtype='float32')\n"
    "loss = layers.mean(layers.fc(x, size=4000, bias_attr=False))\n"
    "optimizer.SGD(learning_rate=0.01).minimize(loss)\n";

static void test_pserver_peak_rss(void) {
    const long whole = 4000L * 4000 * 4 / 1024; /* KiB */
    long local = startup_peak_kib(BIG_SGD, -1);
    long ps0 = startup_peak_kib(BIG_SGD, 0), ps1 = startup_peak_kib(BIG_SGD, 1);
    printf("(startup peak RSS added, [4000, 4000] float32 = %ld MiB: local %ld MiB, pserver 0 %ld MiB, "
           "pserver 1 %ld MiB) ", whole / 1024, local / 1024, ps0 / 1024, ps1 / 1024);
    CU_ASSERT(local >= whole * 9 / 10); /* the measure sees a whole parameter */
    CU_ASSERT(ps0 >= 0 && ps0 < whole * 3 / 4);
    CU_ASSERT(ps1 >= 0 && ps1 < whole * 3 / 4);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"a server's rows equal the local rows (P = 2, 3, 5, 7)", test_rows_equal_local},
        {"no startup op makes the whole [4000, 4000] parameter", test_no_whole_op},
        {"a server's startup peak memory is its rows", test_pserver_peak_rss},
    };
    return fl_test_run("pserver_rows", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
