/* Tests of base/: the hash map under stress against a reference, the arena, interning, growable
 * strings, whole-file I/O and its failure paths, and the failing-allocator and overflow paths
 * (each must end in one clean "internal error" message and abort, never a wild write). */
#define _GNU_SOURCE
#include "base/base.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cunit.h"

/* Under ASan an impossible malloc must return NULL (as libc's does) so that base's own
 * out-of-memory path is what runs. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static char tmpdir[] = "/tmp/fl_test_base.XXXXXX";

/* ---- hash map ---- */

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) { /* xorshift64 */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

enum { NKEYS = 3000, NOPS = 300000 };

static void test_map_stress(void) {
    /* keys that are prefixes of each other, share hashes' low bits, hold NUL bytes, or are empty */
    static char keys[NKEYS][24];
    static size_t klen[NKEYS];
    static void *ref[NKEYS];
    static int vals[NKEYS];
    for (int i = 0; i < NKEYS; i++) {
        int n = snprintf(keys[i], sizeof keys[i], "k%d", i / 3);
        if (i % 3 == 1) keys[i][n++] = 0; /* "kN\0" differs from "kN" by its length */
        if (i % 3 == 2) n = i % 7 == 0 ? 0 : n - 1; /* a prefix, or the empty key */
        klen[i] = (size_t)n;
    }
    /* drop duplicate (bytes, length) pairs so the reference stays a function of the key */
    for (int i = 0; i < NKEYS; i++)
        for (int j = 0; j < i; j++)
            if (klen[j] != (size_t)-1 && klen[i] == klen[j] && memcmp(keys[i], keys[j], klen[i]) == 0) {
                klen[i] = (size_t)-1;
                break;
            }
    FlMap m;
    fl_map_init(&m);
    size_t live = 0;
    for (int op = 0; op < NOPS; op++) {
        int i = (int)(rnd() % NKEYS);
        if (klen[i] == (size_t)-1) continue;
        switch (rnd() % 4) {
        case 0:
        case 1: /* insert or replace */
            if (!ref[i]) live++;
            ref[i] = &vals[(i + op) % NKEYS];
            fl_map_put(&m, keys[i], klen[i], ref[i]);
            break;
        case 2: /* remove (a tombstone) */
            CU_ASSERT_EQUAL(fl_map_remove(&m, keys[i], klen[i]), ref[i] != NULL);
            if (ref[i]) live--;
            ref[i] = NULL;
            break;
        case 3:
            CU_ASSERT_PTR_EQUAL(fl_map_find(&m, keys[i], klen[i]), ref[i]);
            break;
        }
        if (op % 50000 == 0 || op == NOPS - 1) {
            CU_ASSERT_EQUAL(m.len, live);
            CU_ASSERT(m.used >= m.len);
            CU_ASSERT(m.used * 4 < m.cap * 3); /* at most 3/4 full, tombstones included */
            CU_ASSERT((m.cap & (m.cap - 1)) == 0);
            size_t seen = 0;
            for (size_t s = 0; s < m.cap; s++) seen += fl_map_slot_live(&m, s);
            CU_ASSERT_EQUAL(seen, live);
            for (int k = 0; k < NKEYS; k++)
                if (klen[k] != (size_t)-1) CU_ASSERT_PTR_EQUAL(fl_map_find(&m, keys[k], klen[k]), ref[k]);
        }
    }
    /* churn: insert and remove the same key many times; the table must not fill with tombstones */
    size_t cap = m.cap;
    for (int r = 0; r < 100000; r++) {
        char k[16];
        int n = snprintf(k, sizeof k, "churn%d", r);
        char *kk = strndup(k, (size_t)n);
        fl_map_put(&m, kk, (size_t)n, kk);
        CU_ASSERT(fl_map_remove(&m, kk, (size_t)n));
        free(kk); /* removed: the map no longer reads the key */
    }
    CU_ASSERT(m.cap <= cap * 4);
    CU_ASSERT_EQUAL(m.len, live);
    fl_map_fini(&m);
    CU_ASSERT_PTR_NULL(m.buckets);
    /* stable across runs and versions: plans dispatch blocks by it (--dispatch hash) */
    CU_ASSERT_EQUAL(fl_hash_bytes("a", 1), 0x44bd8ad473cd9906ull);
}

/* ---- arena, interning, strings ---- */

static void test_arena_intern_buf(void) {
    FlArena a;
    fl_arena_init(&a);
    for (int i = 0; i < 20000; i++) {
        size_t n = (size_t)(rnd() % 300);
        unsigned char *p = fl_arena_alloc(&a, n);
        CU_ASSERT(((uintptr_t)p & 15) == 0);
        for (size_t k = 0; k < n; k++) CU_ASSERT_EQUAL(p[k], 0);
        memset(p, 0xab, n);
    }
    unsigned char *big = fl_arena_alloc(&a, 1 << 20); /* larger than a chunk */
    CU_ASSERT(big[0] == 0 && big[(1 << 20) - 1] == 0);
    CU_ASSERT_STRING_EQUAL(fl_arena_printf(&a, "%s-%d", "x", 42), "x-42");
    fl_arena_fini(&a);

    FlInterner in;
    fl_intern_init(&in);
    const char *x = fl_intern_str(&in, "name");
    char copy[] = "name";
    CU_ASSERT_PTR_EQUAL(fl_intern_str(&in, copy), x);
    CU_ASSERT_PTR_NOT_EQUAL(fl_intern(&in, "name\0", 5), x);
    CU_ASSERT_PTR_NOT_EQUAL(fl_intern_str(&in, "nam"), x);
    fl_intern_fini(&in);

    FlBuf b = {0};
    CU_ASSERT_STRING_EQUAL(fl_buf_str(&b), "");
    for (int i = 0; i < 100000; i++) fl_buf_printf(&b, "%05d", i % 100000);
    CU_ASSERT_EQUAL(b.len, 500000);
    CU_ASSERT(strncmp(b.data + 5 * 99999, "99999", 5) == 0);
    CU_ASSERT_EQUAL(strlen(fl_buf_str(&b)), b.len);
    fl_buf_free(&b);
    CU_ASSERT_PTR_NULL(b.data);
}

/* ---- files ---- */

static char *path_in(const char *name) {
    char *p = NULL;
    if (asprintf(&p, "%s/%s", tmpdir, name) < 0) abort();
    return p;
}

static void test_files(void) {
    FlErr e = {{0}};
    size_t n = 0;
    char *missing = path_in("no-such-file");
    CU_ASSERT_PTR_NULL(fl_read_file(missing, &n, &e));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no-such-file"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "No such file"));
    free(missing);

    /* a whole write, read back byte for byte */
    char *out = path_in("out.bin");
    char data[1000];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (char)(i * 7);
    CU_ASSERT_EQUAL(fl_write_file(out, data, sizeof data, &e), FL_OK);
    char *back = fl_read_file(out, &n, &e);
    CU_ASSERT(back && n == sizeof data && memcmp(back, data, n) == 0);
    free(back);

    /* the temporary name never clobbers a file of the user's beside the output */
    char *user = path_in("out.bin.tmp");
    FILE *f = fopen(user, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("the user's own file\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(fl_write_file(out, "new", 3, &e), FL_OK);
    back = fl_read_file(user, &n, &e);
    CU_ASSERT(back && strcmp(back, "the user's own file\n") == 0);
    free(back);
    back = fl_read_file(out, &n, &e);
    CU_ASSERT(back && n == 3 && memcmp(back, "new", 3) == 0);
    free(back);

    /* failures leave nothing behind: a missing folder, a folder in the way */
    char *nodir = path_in("nodir/x.bin");
    CU_ASSERT_EQUAL(fl_write_file(nodir, "x", 1, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "nodir/x.bin"));
    char *dir = path_in("adir");
    CU_ASSERT_EQUAL(mkdir(dir, 0755), 0);
    CU_ASSERT_EQUAL(fl_write_file(dir, "x", 1, &e), FL_ERROR);
    struct stat st;
    CU_ASSERT(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 3", tmpdir); /* out.bin out.bin.tmp adir */
    CU_ASSERT_EQUAL(system(cmd), 0);
    free(nodir);
    free(dir);
    free(user);
    free(out);
}

/* fl_open_regular / fl_read_regular_file: a regular file (or a link to one) reads; a FIFO that
 * nobody writes, a directory and a character device are refused at once, by kind. */
static void test_regular_files(void) {
    FlErr e = {{0}};
    size_t n = 0;
    alarm(30); /* a blocking open of the FIFO would hang: fail instead */
    char *reg = path_in("reg.txt"), *link = path_in("reg.link"), *fifo = path_in("fifo"), *dir = path_in("rdir");
    CU_ASSERT_EQUAL(fl_write_file(reg, "abc", 3, &e), FL_OK);
    CU_ASSERT_EQUAL(symlink(reg, link), 0);
    char *back = fl_read_regular_file(link, &n, &e);
    CU_ASSERT(back && n == 3 && memcmp(back, "abc", 3) == 0);
    free(back);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0644), 0);
    CU_ASSERT_PTR_NULL(fl_read_regular_file(fifo, &n, &e));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "/fifo' is not a regular file (a FIFO)"));
    CU_ASSERT_EQUAL(mkdir(dir, 0755), 0);
    FILE *f = fl_open_regular(dir, &e);
    CU_ASSERT_PTR_NULL(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "/rdir' is not a regular file (a directory)"));
    f = fl_open_regular("/dev/null", &e);
    CU_ASSERT_PTR_NULL(f);
    CU_ASSERT_STRING_EQUAL(e.msg, "'/dev/null' is not a regular file (a character device)");
    CU_ASSERT_PTR_NULL(fl_open_regular(fifo + strlen(fifo), &e)); /* "" */
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "cannot open ''"));
    alarm(0);
    remove(reg), remove(link), remove(fifo), rmdir(dir);
    free(reg), free(link), free(fifo), free(dir);
}

static void check_rel(const char *from, const char *to, const char *want) {
    char *r = fl_path_relative(from, to);
    CU_ASSERT_STRING_EQUAL(r, want);
    char *back = fl_path_join(from, r); /* joining gives the same place back */
    if (from[0] == '/' && to[0] == '/') CU_ASSERT_STRING_EQUAL(back, to);
    free(back);
    free(r);
}

static void test_paths(void) {
    check_rel("/p/a", "/p/b/c", "../b/c");
    check_rel("/p/a", "/p/a", ".");
    check_rel("/p/a", "/p/a/data", "data");
    check_rel("/p/a/x/y", "/p/a", "../..");
    check_rel("/", "/home/u", "home/u");
    check_rel("/home/u", "/", "../..");
    check_rel("/ab", "/abc", "../abc"); /* components, not prefixes */
    check_rel("relative/dir", "/abs", "/abs");
    const char *joins[][3] = {{"/p/a", "data/x.csv", "/p/a/data/x.csv"}, {"/p/a/", "/abs/x", "/abs/x"},
                              {"/p/a/b", "./../../c/./d", "/p/c/d"}, {"/p", "../../x", "/x"},
                              {"/p/a", ".", "/p/a"}};
    for (size_t i = 0; i < FL_ARRAY_LEN(joins); i++) {
        char *j = fl_path_join(joins[i][0], joins[i][1]);
        CU_ASSERT_STRING_EQUAL(j, joins[i][2]);
        free(j);
    }
    const char *dirs[][2] = {{"a/b.flp", "a"}, {"b.flp", "."}, {"/b.flp", "/"}, {"/x/y/z", "/x/y"}};
    for (size_t i = 0; i < 4; i++) {
        char *d = fl_path_dir(dirs[i][0]);
        CU_ASSERT_STRING_EQUAL(d, dirs[i][1]);
        free(d);
    }
}

/* ---- failing allocation and overflow: one clean message, then abort ---- */

typedef enum { DIE_MALLOC, DIE_CALLOC, DIE_REALLOC, DIE_MUL, DIE_GROW } Die;

static void die(Die how) {
    void *p = NULL;
    size_t cap = 4;
    switch (how) {
    case DIE_MALLOC: p = fl_xmalloc(SIZE_MAX / 2); break;
    case DIE_CALLOC: p = fl_xcalloc(SIZE_MAX / 16, 8); break;
    case DIE_REALLOC: p = fl_xrealloc(NULL, SIZE_MAX / 2); break;
    case DIE_MUL: (void)fl_mul_size(SIZE_MAX / 2, 3); break;
    case DIE_GROW: fl_grow(&p, &cap, SIZE_MAX / 2, 8); break;
    }
    free(p);
}

/* Runs die(how) in a child; checks it aborted with `want` in its stderr. */
static void check_dies(Die how, const char *want) {
    int fd[2];
    CU_ASSERT_FATAL(pipe(fd) == 0);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        die(how);
        _exit(0); /* survived: the test fails */
    }
    close(fd[1]);
    char buf[1024];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(fd[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)r;
    buf[len] = 0;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) || !strstr(buf, want))
        fprintf(stderr, "case %d: status %#x, stderr:\n%s\n", (int)how, status, buf);
    CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "fluidc: internal error"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, want));
}

static void test_failing_allocator(void) {
    check_dies(DIE_MALLOC, "out of memory");
    check_dies(DIE_CALLOC, "out of memory");
    check_dies(DIE_REALLOC, "out of memory");
    check_dies(DIE_MUL, "size overflow");
    check_dies(DIE_GROW, "size overflow"); /* capacity doubles to 2^63, then 2^63 * 8 bytes */
}

static int setup(void) { return mkdtemp(tmpdir) ? 0 : 1; }
static int teardown(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : 1;
}

int main(void) {
    static const FlTestCase cases[] = {
        {"map_stress", test_map_stress},
        {"arena_intern_buf", test_arena_intern_buf},
        {"files", test_files},
        {"regular_files", test_regular_files},
        {"paths", test_paths},
        {"failing_allocator", test_failing_allocator},
    };
    return fl_test_run("base", setup, teardown, cases, sizeof cases / sizeof *cases);
}
