/* fuzz_ops.c: hostile programs through `_core.op`, on every op of the table. The input bytes
 * drive a generator: they pick an op (forward or gradient), then for each of its slots zero, one
 * or two vars from a pool of tensors of several dtypes and shapes (also a var named @EMPTY@, an
 * output aliasing an input, a channel, LoD offsets valid and not), and for each attribute a value
 * of its type or of another (small, negative, zero, huge). The program is compiled against the real stdlib and, when it
 * compiles, its startup and main programs are run by the executor. Any outcome is fine except a
 * crash, an abort, a sanitizer report or a hang: compile errors and runtime errors are what
 * hostile input should get.
 *
 * fuzz_ops_sweep (an ordinary test, label runtime) runs every op of the table with a fixed set of
 * generated programs each; with -DFL_FUZZ=ON the libFuzzer binary fuzz_ops explores further:
 *   build-fuzz/tests/fuzz/fuzz_ops build-fuzz/corpus-ops -max_total_time=600 -timeout=10 \
 *       -rss_limit_mb=4096 -artifact_prefix=tests/fuzz/crashes/ops/
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops.h"
#include "lang/eval.h"
#include "runtime/api.h"
#include "runtime/core/scope.h"
#include "tests/fuzz/fuzz_gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The pool: name, and how the program makes it. */
static const char *const pool[][2] = {
    {"f23", "f23 = layers.fill_constant(shape=[2, 3], dtype='float32', value=1.5)\n"},
    {"f3", "f3 = layers.fill_constant(shape=[3], dtype='float32', value=-2.0)\n"},
    {"f1", "f1 = layers.fill_constant(shape=[1], dtype='float32', value=0.0)\n"},
    {"f2222", "f2222 = layers.fill_constant(shape=[2, 2, 2, 2], dtype='float32', value=0.5)\n"},
    {"i21", "i21 = layers.fill_constant(shape=[2, 1], dtype='int64', value=1)\n"},
    {"imin", "imin = layers.fill_constant(shape=[1], dtype='int64', value=-9223372036854775808)\n"},
    {"ineg", "ineg = layers.fill_constant(shape=[1], dtype='int64', value=-1)\n"},
    {"i32", "i32 = layers.fill_constant(shape=[3], dtype='int32', value=7)\n"},
    {"b1", "b1 = layers.fill_constant(shape=[1], dtype='bool', value=True)\n"},
    {"d2", "d2 = layers.fill_constant(shape=[2], dtype='float64', value=3.0)\n"},
    {"x", "x = layers.data(name='x', shape=[3], dtype='float32')\n"},
    {"e", "e = _core.data('@EMPTY@', [2])\n"},
    {"ch", "ch = fluid.make_chan(dtype='float32', capacity=2)\n"},
    /* LoD offsets for the sequence ops' *Lod slots: two sequences over f23's 2 rows, an empty
     * sequence, and offsets that go past the rows and back */
    {"o3", "o3 = layers.assign([0, 1, 2])\n"},
    {"oe", "oe = layers.assign([0, 0, 2])\n"},
    {"obad", "obad = layers.assign([0, 5, 1])\n"},
};
enum { NPOOL = sizeof pool / sizeof *pool };

static const char *const ints[] = {"0", "1", "2", "-1", "3", "-7", "64", "1099511627776",
                                   "9223372036854775807", "-9223372036854775808"};
static const char *const floats[] = {"0.0", "1.0", "-1.0", "0.5", "1e30", "-1e30", "1e-30", "2.5"};
static const char *const strs[] = {"''",     "'max'", "'avg'",     "'x'",   "'NCHW'", "'@EMPTY@'",
                                   "'%d%s%n'", "'MAX'", "'AVERAGE'", "'SUM'", "'LAST'"};

static void put_int(Gen *g, FlBuf *b) { fl_buf_puts(b, ints[pick(g, FL_ARRAY_LEN(ints))]); }

static void put_list(Gen *g, FlBuf *b, void (*elem)(Gen *, FlBuf *)) {
    unsigned n = pick(g, 5);
    fl_buf_putc(b, '[');
    for (unsigned k = 0; k < n; k++) {
        if (k) fl_buf_puts(b, ", ");
        elem(g, b);
    }
    fl_buf_putc(b, ']');
}
static void put_float(Gen *g, FlBuf *b) { fl_buf_puts(b, floats[pick(g, FL_ARRAY_LEN(floats))]); }
static void put_str(Gen *g, FlBuf *b) { fl_buf_puts(b, strs[pick(g, FL_ARRAY_LEN(strs))]); }

/* A value for an attribute of type t: mostly of its type, sometimes of another. */
static void put_attr(Gen *g, FlBuf *b, FlAttrType t) {
    if (pick(g, 8) == 0) t = (FlAttrType)pick(g, FL_ATTR_TYPE_COUNT);
    switch (t) {
    case FL_ATTR_INT: put_int(g, b); break;
    case FL_ATTR_FLOAT: put_float(g, b); break;
    case FL_ATTR_STRING: put_str(g, b); break;
    case FL_ATTR_BOOL: fl_buf_puts(b, pick(g, 2) ? "True" : "False"); break;
    case FL_ATTR_INTS: put_list(g, b, put_int); break;
    case FL_ATTR_FLOATS: put_list(g, b, put_float); break;
    case FL_ATTR_STRINGS: put_list(g, b, put_str); break;
    case FL_ATTR_BLOCK:
    case FL_ATTR_BLOCKS: put_int(g, b); break; /* a block index the program does not have */
    case FL_ATTR_TYPE_COUNT: break;
    }
}

static void put_var(Gen *g, FlBuf *b, bool *used) {
    unsigned k = pick(g, NPOOL);
    used[k] = true;
    fl_buf_puts(b, pool[k][0]);
}

/* The program text for the op the bytes pick; NULL when the table is empty. */
static char *generate(Gen *g) {
    size_t nops = fl_ops_count();
    const FlOpInfo *o = fl_ops_at((pick(g, 256) * 256 + pick(g, 256)) % nops);
    bool used[NPOOL] = {0};
    FlBuf call = {0};
    fl_buf_printf(&call, "_core.op('%s'", o->name);
    for (int s = 0; s < o->nins; s++) {
        unsigned how = pick(g, 8);
        if (how == 0) continue; /* absent */
        fl_buf_printf(&call, ", %s=", o->ins[s].name);
        if (how == 1 || (o->ins[s].list && how < 4)) {
            fl_buf_putc(&call, '[');
            put_var(g, &call, used);
            fl_buf_puts(&call, ", ");
            put_var(g, &call, used);
            fl_buf_putc(&call, ']');
        } else put_var(g, &call, used);
    }
    for (int s = 0; s < o->nouts; s++) {
        unsigned how = pick(g, 8);
        if (how > 1) continue; /* fresh vars */
        fl_buf_printf(&call, ", %s=", o->outs[s].name);
        put_var(g, &call, used); /* an output aliasing an input or another pool var */
    }
    for (int a = 0; a < o->nattrs; a++) {
        if (pick(g, 4) == 0 && !o->attrs[a].required) continue;
        fl_buf_printf(&call, ", %s=", o->attrs[a].name);
        /* time_sleep waits as long as it is told (64 s is no hang): a wait within the alarm */
        if (strcmp(o->name, "time_sleep") == 0 && strcmp(o->attrs[a].name, "seconds") == 0) {
            fl_buf_puts(&call, pick(g, 2) ? "0.01" : "-1.0");
            continue;
        }
        put_attr(g, &call, o->attrs[a].type);
    }
    fl_buf_puts(&call, ")\n");
    FlBuf prog = {0};
    fl_buf_puts(&prog, "import fluid\nimport _core\nfrom fluid import layers\n");
    for (int k = 0; k < NPOOL; k++)
        if (used[k]) fl_buf_puts(&prog, pool[k][1]);
    fl_buf_puts(&prog, fl_buf_str(&call));
    fl_buf_free(&call);
    return prog.data;
}

/* Compiles and runs one generated program; 1 when it compiled. */
static int run_program(const char *src) {
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int n = fl_compile_source("examples/fuzz_ops.fl", src, strlen(src), NULL, &b, &diag);
    fl_buf_free(&diag);
    if (n || !b) return 0;
    FlErr err = {{0}};
    FlLoadedProgram *prog = fl_program_from_bundle_take(b);
    FlExecutor *ex = NULL;
    FlScope *scope = fl_scope_new(NULL);
    if (fl_executor_new(prog, NULL, &ex, &err) == FL_OK && fl_executor_run_startup(ex, scope, &err) == FL_OK)
        if (fl_executor_run(ex, scope, NULL, 0, NULL, 0, &err) != FL_OK && getenv("FL_FUZZ_OPS_SHOW"))
            fprintf(stderr, "runtime error: %s\n", fl_error_message(&err));
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 256) return 0;
    Gen g = {data, size, 0};
    char *src = generate(&g);
    if (getenv("FL_FUZZ_OPS_SHOW")) fprintf(stderr, "---\n%s", src);
    run_program(src);
    free(src);
    return 0;
}

#ifdef FL_FUZZ_OPS_SWEEP
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Under ASan an allocation beyond 4 GiB returns NULL, as it would on a machine without the
 * memory: the runtime must then fail cleanly, like for any user-sized tensor. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1:max_allocation_size_mb=4096"; }

/* Runs one program in a child with a time and (outside ASan) a memory limit; 0 when it ended
 * normally, else prints the program and how it ended. */
static int run_isolated(const char *src, int *compiled) {
    int fd[2];
    if (pipe(fd) != 0) return 1;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        close(fd[0]);
        alarm(20);
#ifndef __SANITIZE_ADDRESS__
        struct rlimit rl = {.rlim_cur = 4ull << 30, .rlim_max = 4ull << 30};
        setrlimit(RLIMIT_AS, &rl);
#endif
        int ran = run_program(src);
        if (write(fd[1], &ran, sizeof ran) != sizeof ran) _exit(3);
        _exit(0);
    }
    close(fd[1]);
    int ran = 0;
    if (read(fd[0], &ran, sizeof ran) == sizeof ran) *compiled += ran;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, "fuzz_ops_sweep: killed by signal %d (%s)%s:\n%s\n", WTERMSIG(status),
                strsignal(WTERMSIG(status)), WTERMSIG(status) == SIGALRM ? ", a hang" : "", src);
    else fprintf(stderr, "fuzz_ops_sweep: exit status %d:\n%s\n", WEXITSTATUS(status), src);
    return 1;
}

/* Every op of the table, with `per_op` programs each from a fixed byte stream, each program in
 * its own process so that one failure does not hide the others. Op names after `per_op` run only
 * the programs of those ops (and of their gradient ops), the same programs as the full sweep. */
static bool selected(const char *op, int argc, char **argv) {
    if (argc <= 2) return true;
    for (int k = 2; k < argc; k++) {
        size_t n = strlen(argv[k]);
        if (strncmp(op, argv[k], n) == 0 && (op[n] == 0 || strcmp(op + n, "_grad") == 0)) return true;
    }
    return false;
}

int main(int argc, char **argv) {
    int per_op = argc > 1 ? atoi(argv[1]) : 40;
    size_t nops = fl_ops_count();
    int compiled = 0, total = 0, failed = 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < nops; i++)
        for (int r = 0; r < per_op; r++) {
            uint8_t buf[64];
            buf[0] = (uint8_t)(i / 256), buf[1] = (uint8_t)(i % 256); /* pick(256)*256+pick(256) */
            for (size_t k = 2; k < sizeof buf; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                buf[k] = (uint8_t)x;
            }
            if (!selected(fl_ops_at(i)->name, argc, argv)) continue;
            Gen g = {buf, sizeof buf, 0};
            char *src = generate(&g);
            failed += run_isolated(src, &compiled);
            total++;
            free(src);
        }
    printf("fuzz_ops_sweep: %zu ops, %d programs, %d compiled and ran, %d crashed or hung\n", nops, total,
           compiled, failed);
    return failed == 0 && compiled > 0 ? 0 : 1; /* programs that never compile would test nothing */
}
#endif
