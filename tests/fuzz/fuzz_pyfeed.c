/* fuzz_pyfeed.c: libFuzzer target for the Python package's feed path: the C shim under python/
 * (fluidc_shim.c, included here whole) that fluidc.Executor's run, predict, set and get call
 * through ctypes, with hostile feeds and names.
 *
 * A small training program (float32 features, int64 ids into an embedding, a label) is compiled
 * once and loaded through flpy_program_load. Each input resets the parameters
 * (flpy_executor_run_startup) and then makes up to 6 calls, each chosen by the input: run or
 * predict (flpy_executor_run_into) with up to 4 feeds and 3 fetches, set or get of a var. A
 * feed's name is one of the program's, a wrong one, an empty one or bytes of the input; its
 * dtype code and rank may be out of range; its dims come from a table with 0, -1, INT64_MAX and
 * 2**40 in it; its elements are input bytes (NaNs, ids out of range). As the package does, the
 * buffer always holds the bytes the shape says when the shape is valid and small; a shape that is
 * not valid (a negative dim, a product past int64 or past size_t's bytes, a bad dtype or rank)
 * goes with no buffer, and the shim must refuse it before reading any (a valid shape of more
 * than 64 KiB is left out: only an allocation could tell it from a good one). Any outcome is fine but a crash, a sanitizer
 * report, a hang or a broken promise: a call returns 0 (or 1: fetches left in handles) or -1
 * with a message, and its results are what its meta says.
 *
 * fuzz_pyfeed_corpus (an ordinary test, label runtime) replays tests/fuzz/corpus/pyfeed and the
 * kept crashers; with -DFL_FUZZ=ON the libFuzzer binary fuzz_pyfeed explores further:
 *   mkdir -p build-fuzz/corpus-pyfeed
 *   build-fuzz/tests/fuzz/fuzz_pyfeed build-fuzz/corpus-pyfeed tests/fuzz/corpus/pyfeed \
 *       -max_total_time=600 -timeout=10 -rss_limit_mb=4096 -artifact_prefix=tests/fuzz/crashes/pyfeed/
 * Run it from the repository root (the program imports the stdlib from there).
 */
#include "python/fluidc_shim.c"

#include <unistd.h>

#include "lang/eval.h"
#include "tests/fuzz/fuzz_gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char src[] =
    "from fluid import layers, optimizer\n"
    "x = layers.data(name='x', shape=[3], dtype='float32')\n"
    "ids = layers.data(name='ids', shape=[1], dtype='int64')\n"
    "y = layers.data(name='y', shape=[1], dtype='float32')\n"
    "emb = layers.embedding(ids, size=[10, 3])\n"
    "pred = layers.fc(layers.elementwise_add(x, emb), size=1)\n"
    "loss = layers.mean(layers.square_error_cost(pred, y))\n"
    "optimizer.SGD(learning_rate=0.01).minimize(loss)\n";

static void check(bool ok, const char *what, const char *msg) {
    if (ok) return;
    fprintf(stderr, "fuzz_pyfeed: broken promise: %s (%s)\n", what, msg);
    abort();
}

static FlpyExecutor *executor(void) {
    static FlpyExecutor *x;
    if (x) return x;
    FlBundle *b = NULL;
    FlBuf diag = {0};
    FlCompileOptions opt = {0};
    opt.stdlib_dir = "stdlib";
    if (fl_compile_source("pyfeed.fl", src, strlen(src), &opt, &b, &diag)) {
        fprintf(stderr, "fuzz_pyfeed: the program does not compile:\n%s", fl_buf_str(&diag));
        abort();
    }
    fl_buf_free(&diag);
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/fl_fuzz_pyfeed.%d.flp", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
             (int)getpid());
    FlErr e;
    if (fl_ir_bundle_write(b, path, &e) != FL_OK) abort();
    fl_ir_bundle_free(b);
    FlpyProgram *p = flpy_program_load(path, err, sizeof err);
    remove(path);
    check(p != NULL, "the program loads", err);
    x = flpy_executor_new(p, 7, err, sizeof err);
    check(x != NULL, "an executor is made", err);
    flpy_program_free(p); /* the executor holds its own reference */
    return x;
}

static const char *const names[] = {"x", "ids", "y", "fc_0.w_0", "fc_0.b_0", "embedding_0.w_0", "mean_0.tmp_0",
                                    "learning_rate_0", "nope", "", "elementwise_add_1.tmp_0", "fc_0.w_0@GRAD"};
enum { NNAMES = sizeof names / sizeof *names };
static const int64_t dims[] = {1, 2, 3, 4, 0, 5, 8, 16, 1, 3, -1, -7, INT64_MAX, INT64_MIN, (int64_t)1 << 40, 10};

/* A name: one of the table, or up to 12 bytes of the input (cut at a NUL, as C cuts it). */
static const char *name_of(Gen *g, char *buf) {
    unsigned k = pick(g, NNAMES + 1);
    if (k < NNAMES) return names[k];
    size_t n = pick(g, 13);
    for (size_t i = 0; i < n; i++) buf[i] = (char)pick(g, 256);
    buf[n] = 0;
    return buf;
}

/* Fills f (and its shape and data buffers) from the input. Returns false when the feed would
 * need a buffer larger than the package would ever pass here (a valid shape of more than 64 KiB:
 * skipped, since the shim copies what the shape says). */
static bool feed_of(Gen *g, FlpyFeed *f, int64_t *shape, char *name, uint8_t **buf) {
    static const int32_t codes[] = {0, 1, 2, 3, 4, 0, 3, -1, 5, 200};
    f->name = name_of(g, name);
    f->dtype = codes[pick(g, 10)];
    f->ndim = (int32_t)pick(g, 11) - 1; /* -1 .. 9 */
    f->shape = shape;
    for (int k = 0; k < FL_MAX_DIMS; k++) shape[k] = dims[pick(g, sizeof dims / sizeof *dims)];
    f->data = NULL;
    *buf = NULL;
    bool valid = f->dtype >= 0 && f->dtype < FL_DT_COUNT && f->ndim >= 0 && f->ndim <= FL_MAX_DIMS;
    int64_t n = 1;
    bool zero = false;
    for (int k = 0; valid && k < f->ndim; k++) valid = shape[k] >= 0, zero |= shape[k] == 0;
    for (int k = 0; valid && !zero && k < f->ndim; k++) valid = !__builtin_mul_overflow(n, shape[k], &n);
    if (!valid) return true; /* the shim refuses it before it reads data */
    size_t es = fl_dtype_size((FlDType)f->dtype);
    if (!zero && (uint64_t)n > SIZE_MAX / es) return true; /* more bytes than size_t: refused too */
    size_t bytes = zero ? 0 : (size_t)n * es;
    if (bytes > 65536) return false;
    *buf = malloc(bytes ? bytes : 1);
    for (size_t i = 0; i < bytes; i++) (*buf)[i] = (uint8_t)pick(g, 256);
    f->data = *buf;
    return true;
}

/* FL_FUZZ_VERBOSE=1: each call's kind, result and message on stderr (to see what seeds reach). */
static void say(const char *kind, int rc, const char *err) {
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("FL_FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "  %s: %d %s\n", kind, rc, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FlpyExecutor *x = executor();
    char err[1024];
    check(flpy_executor_run_startup(x, err, sizeof err) == 0, "the startup program runs", err);
    Gen g = {data, size, 0};
    for (int call = 0; call < 6 && g.i < g.n; call++) {
        unsigned kind = pick(&g, 4);
        FlpyFeed feeds[4];
        int64_t shapes[4][FL_MAX_DIMS];
        char fnames[4][16], outnames[3][16];
        uint8_t *bufs[4] = {0};
        size_t nfeeds = 0;
        unsigned want = kind < 3 ? (kind == 2 ? 1 : pick(&g, 5)) : 0;
        for (unsigned i = 0; i < want; i++)
            if (feed_of(&g, &feeds[nfeeds], shapes[nfeeds], fnames[nfeeds], &bufs[nfeeds])) nfeeds++;
            else free(bufs[nfeeds]);
        err[0] = 0;
        if (kind < 2) { /* run, predict */
            const char *fetch[3];
            size_t nfetch = pick(&g, 4);
            for (size_t i = 0; i < nfetch; i++) fetch[i] = name_of(&g, outnames[i]);
            FlTensor *out[3] = {0};
            int64_t meta[3 * FLPY_META + 1];
            static uint8_t scratch[4096] __attribute__((aligned(64)));
            size_t scratch_len = (size_t[]){0, 64, sizeof scratch}[pick(&g, 3)];
            int rc = flpy_executor_run_into(x, (int)kind, feeds, nfeeds, fetch, nfetch, out, meta, scratch, scratch_len,
                                            err, sizeof err);
            say(kind ? "predict" : "run", rc, err);
            check(rc == -1 || rc == 0 || rc == 1, "run returns -1, 0 or 1", err);
            check(rc != -1 || err[0], "a failed run says why", err);
            for (size_t i = 0; i < nfetch; i++) {
                check((rc == 1) == (out[i] != NULL), "fetches are in handles exactly when run returns 1", err);
                if (rc >= 0) check(meta[i * FLPY_META + 1] >= 0 && meta[i * FLPY_META + 1] <= FL_MAX_DIMS, "meta", err);
                if (rc == 0) check((size_t)(meta[i * FLPY_META + 2] + meta[i * FLPY_META + 3]) <= scratch_len,
                                   "copied fetches lie in the scratch buffer", err);
                flpy_tensor_free(out[i]);
            }
        } else if (kind == 2) { /* set */
            if (nfeeds) {
                int rc = flpy_executor_set(x, &feeds[0], err, sizeof err);
                say("set", rc, err);
                check(rc == 0 || (rc == -1 && err[0]), "set returns 0, or -1 and why", err);
            }
        } else { /* get */
            FlTensor *t = NULL;
            int rc = flpy_executor_get(x, name_of(&g, outnames[0]), &t, err, sizeof err);
            say("get", rc, err);
            check((rc == 0 && t) || (rc == -1 && err[0] && !t), "get returns a tensor, or -1 and why", err);
            if (t && flpy_tensor_has_data(t)) {
                size_t n = flpy_tensor_nbytes(t);
                void *dst = malloc(n ? n : 1);
                check(flpy_tensor_copy_out(t, dst, n, err, sizeof err) == 0, "a tensor copies out", err);
                free(dst);
            }
            flpy_tensor_free(t);
        }
        for (size_t i = 0; i < nfeeds; i++) free(bufs[i]);
    }
    return 0;
}
