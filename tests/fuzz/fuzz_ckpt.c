/* fuzz_ckpt.c: libFuzzer target for the checkpoint reader (runtime/params.h): hostile checkpoint
 * directories, read as --load and checked as a --save target.
 *
 * The input describes a var and a directory. Its first 8 bytes: the var's dtype, rank (0-3),
 * dims (1-12 each), name (one of a few, some that the file names escape) and the rows a load
 * asks for (all of them, or a range, as a pserver's block). Then records, until the input ends:
 *     u8 name length (at most 63), the name (a file of the directory: no '/', no NUL),
 *     u8 kind (0 a file, 1 a FIFO, 2 a directory, 3 a symbolic link), u16 length (LE), bytes
 * (the file's content; a link's target: another entry, /dev/null or /dev/zero). The directory
 * is made afresh in /dev/shm (else /tmp) for every input; fl_params_read_rows reads the var from
 * it and fl_params_check_target judges it as a --save target. Any outcome is fine but a crash, a
 * sanitizer report, a hang (a FIFO that blocks) or a broken promise: a load either gives a
 * tensor of the var's dtype and of the rows asked, or an error that starts with "--load DIR:";
 * a target check's error starts with "--save:". tests/fuzz/ckpt_seeds.py writes the seed corpus
 * (real checkpoints in this form: whole vars, shards, version 1, Paddle's layouts). The var is
 * also read with its LoD (fl_params_read_lod), and, when the directory holds Fluid's combined
 * file "__params__", from it with a second var "b" (float32 [2]): fl_params_read_fluid_combined.
 *
 * fuzz_ckpt_corpus (an ordinary test, label runtime) replays tests/fuzz/corpus/ckpt and the
 * kept crashers; with -DFL_FUZZ=ON the libFuzzer binary fuzz_ckpt explores further:
 *   mkdir -p build-fuzz/corpus-ckpt
 *   build-fuzz/tests/fuzz/fuzz_ckpt build-fuzz/corpus-ckpt tests/fuzz/corpus/ckpt \
 *       -max_total_time=600 -timeout=10 -artifact_prefix=tests/fuzz/crashes/ckpt/
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/ir/ir.h"
#include "runtime/params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *msg) {
    if (ok) return;
    fprintf(stderr, "fuzz_ckpt: broken promise: %s (%s)\n", what, msg);
    abort();
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path) == 0 ? 0 : -1;
}

/* rm -rf path (a missing path is fine). */
static void rm_rf(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) == 0 && nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) abort();
}

static char work[128]; /* this process's directory (made once, removed at exit) */

static void rm_work(void) { rm_rf(work); }

static const char *work_dir(void) {
    if (!work[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(work, sizeof work, "%s/fl_fuzz_ckpt.%d", base, (int)getpid());
        if (mkdir(work, 0755) != 0) abort();
        atexit(rm_work);
    }
    return work;
}

static const char *const var_names[] = {"T", "fc_0.w_0", "MANIFEST", "a/b@c.d", ".hidden", "x%shard-0-1", "format"};
static const FlDType dtypes[] = {FL_DT_FLOAT32, FL_DT_FLOAT64, FL_DT_INT32, FL_DT_INT64, FL_DT_BOOL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8) return 0;
    const uint8_t *h = data;
    FlProgram *prog = fl_ir_program_new();
    FlVarDesc *v = fl_ir_var_add(fl_ir_block(prog, 0), var_names[h[0] % (sizeof var_names / sizeof *var_names)]);
    v->dtype = dtypes[h[1] % 5];
    int ndim = h[2] % 4;
    int64_t dims[3] = {1 + h[3] % 12, 1 + h[4] % 12, 1 + h[5] % 12};
    fl_ir_var_set_shape(v, ndim, dims);
    int64_t height = ndim ? dims[0] : 1, row0 = 0, rows = -1;
    if (ndim && (h[6] & 0x80)) { /* a block of rows, as a pserver reads */
        row0 = (h[6] & 0x7f) % height;
        rows = h[7] % (height - row0 + 1);
    }

    char dir[256];
    snprintf(dir, sizeof dir, "%s/ck", work_dir());
    rm_rf(dir);
    if (mkdir(dir, 0755) != 0) abort();
    for (size_t i = 8; i < size;) {
        size_t n = data[i++] % 64;
        if (i + n + 3 > size) break;
        char name[64], path[384];
        memcpy(name, data + i, n);
        name[n] = 0;
        i += n;
        int kind = data[i++] % 4;
        size_t len = (size_t)data[i] | (size_t)data[i + 1] << 8;
        i += 2;
        if (len > size - i) len = size - i;
        const uint8_t *body = data + i;
        i += len;
        if (!n || strlen(name) != n || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (kind == 0) {
            FILE *f = fopen(path, "wb");
            if (!f) continue;
            if (len && fwrite(body, 1, len, f) != len) abort();
            fclose(f);
        } else if (kind == 1) {
            (void)mkfifo(path, 0644);
        } else if (kind == 2) {
            (void)mkdir(path, 0755);
        } else { /* a link: to another entry of the directory, or a device */
            char target[64];
            size_t k = len < sizeof target - 1 ? len : sizeof target - 1;
            memcpy(target, body, k);
            target[k] = 0;
            if (!strcmp(target, "/dev/null") || !strcmp(target, "/dev/zero") ||
                (target[0] && target[0] != '/' && !strstr(target, "..")))
                (void)symlink(target, path);
        }
    }

    FlErr e = {{0}};
    FlTensor t = FL_TENSOR_INIT;
    char want[320];
    snprintf(want, sizeof want, "--load %s:", dir);
    FlStatus st = fl_params_read_rows(dir, v, row0, rows, &t, &e);
    if (getenv("FL_FUZZ_VERBOSE")) fprintf(stderr, "  load: %s\n", st == FL_OK ? "ok" : e.msg);
    if (st == FL_OK) {
        check(t.dtype == v->dtype && t.ndim == v->ndim, "a load gives the var's dtype and rank", e.msg);
        for (int k = 0; k < ndim; k++)
            check(t.ne[k] == (k == 0 && rows >= 0 ? rows : dims[k]), "a load gives the rows asked", e.msg);
    } else {
        check(!strncmp(e.msg, want, strlen(want)), "a load's error names the checkpoint", e.msg);
    }
    fl_tensor_fini(&t);
    /* the same var with its LoD, and with a float32 [2] var "b" from a combined file of Fluid's */
    FlLodTensor lt, two[2];
    fl_lodtensor_init(&lt);
    st = fl_params_read_lod(dir, v, &lt, &e);
    if (st == FL_OK) check(lt.t.dtype == v->dtype && lt.t.ndim == v->ndim && lt.nlevels == 0, "a var's value as declared", e.msg);
    else check(!strncmp(e.msg, want, strlen(want)), "a load's error names the checkpoint", e.msg);
    fl_lodtensor_fini(&lt);
    FlVarDesc *b = fl_ir_var_add(fl_ir_block(prog, 0), "b");
    b->dtype = FL_DT_FLOAT32;
    fl_ir_var_set_shape(b, 1, (int64_t[]){2});
    bool fluid = false;
    st = fl_params_check_combined(dir, "__params__", &fluid, &e);
    if (getenv("FL_FUZZ_VERBOSE")) fprintf(stderr, "  combined: %s\n", st == FL_OK ? (fluid ? "Fluid's" : "ours") : e.msg);
    if (st == FL_OK && fluid) {
        const FlVarDesc *vs[2] = {v, b};
        st = fl_params_read_fluid_combined(dir, "__params__", vs, 2, two, &e);
        if (getenv("FL_FUZZ_VERBOSE")) fprintf(stderr, "  read: %s\n", st == FL_OK ? "ok" : e.msg);
        for (int k = 0; st == FL_OK && k < 2; k++)
            check(two[k].t.dtype == vs[k]->dtype && two[k].t.ndim == vs[k]->ndim, "a combined load gives each var",
                  e.msg);
        if (st != FL_OK) check(!strncmp(e.msg, want, strlen(want)), "a combined load's error names the checkpoint", e.msg);
        for (int k = 0; k < 2; k++) fl_lodtensor_fini(&two[k]);
    } else if (st != FL_OK) {
        check(!strncmp(e.msg, want, strlen(want)), "a combined check's error names the checkpoint", e.msg);
    }
    e.msg[0] = 0;
    st = fl_params_check_target(dir, &e);
    if (getenv("FL_FUZZ_VERBOSE")) fprintf(stderr, "  target: %s\n", st == FL_OK ? "ok" : e.msg);
    if (st != FL_OK) check(!strncmp(e.msg, "--save:", 7), "a target check's error says --save", e.msg);
    rm_rf(dir);
    fl_ir_program_free(prog);
    return 0;
}
