/* test_params_shards.c: checkpoints whose vars are saved in shards (runtime/params.h): shards
 * written into a saving's directory are listed in MANIFEST; a var is read whole or by rows from
 * the shards that overlap the rows asked (re-sharding), or by rows from a whole file; overlapping
 * shards, rows no shard holds and a shard of another shape are errors naming the var and the
 * file. And hostile checkpoints: a FIFO (or any file that is not regular) in place of any of a
 * checkpoint's files is refused without blocking, by a load and by a save's target check; shard
 * ranges near INT64_MAX, in a shard's header or its name, are errors, not overflows; a FORMAT
 * of a newer, unknown or garbled format is refused. Fluid's layout (formats 4 and 5) as written
 * and read. */
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/params.h"
#include "tests/runtime/core/ct.h"

#define H 10
#define W 3

static char root[64];

/* T[i][j] = 10 i + j, rows [row0, row0 + rows) */
static void rows_of(int64_t row0, int64_t rows, FlTensor *t) {
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, t, FL_DT_FLOAT32, 2, (int64_t[]){rows, W}), FL_OK);
    float *d = fl_tensor_data(t);
    for (int64_t i = 0; i < rows; i++)
        for (int j = 0; j < W; j++) d[i * W + j] = (float)(10 * (row0 + i) + j);
}

/* A checkpoint ck/NAME holding var "T" of `height` rows in the shards [first[k], end[k]). */
static const char *save(const char *name, int64_t height, const int64_t *first, const int64_t *end, int n) {
    static char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    FlErr e = {{0}};
    FlNamedTensors none = {0};
    FlParamsSaving *s;
    CU_ASSERT_EQUAL_FATAL(fl_params_write_begin(dir, &none, &s, &e), FL_OK);
    for (int k = 0; k < n; k++) {
        FlTensor t = FL_TENSOR_INIT;
        rows_of(first[k], end[k] - first[k], &t);
        CU_ASSERT_EQUAL(fl_params_write_shard(fl_params_saving_dir(s), "T", height, first[k], &t, &e), FL_OK);
        fl_tensor_fini(&t);
    }
    CU_ASSERT_EQUAL_FATAL(fl_params_write_end(s, &e), FL_OK);
    return dir;
}

static bool rows_are(const FlTensor *t, int64_t row0, int64_t rows) {
    if (t->ndim != 2 || t->ne[0] != rows || t->ne[1] != W) return false;
    const float *d = fl_tensor_data(t);
    for (int64_t i = 0; i < rows; i++)
        for (int j = 0; j < W; j++)
            if (d[i * W + j] != (float)(10 * (row0 + i) + j)) return false;
    return true;
}

static void manifest_is(const char *dir, const char *want) {
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/MANIFEST", dir);
    size_t len;
    FlErr e;
    char *m = fl_read_file(fl_buf_str(&path), &len, &e);
    CU_ASSERT_STRING_EQUAL(m ? m : e.msg, want);
    free(m);
    fl_buf_free(&path);
}

static void test_shards(void) {
    FlProgram *p = fl_ir_program_new();
    FlVarDesc *v = fl_ir_var_add(fl_ir_block(p, 0), "T");
    fl_ir_var_set_shape(v, 2, (int64_t[]){H, W});
    FlErr e = {{0}};
    FlTensor t = FL_TENSOR_INIT;

    /* two shards, read whole and across them, and the MANIFEST */
    const char *ck = save("two", H, (int64_t[]){0, 4}, (int64_t[]){4, 10}, 2);
    CU_ASSERT_EQUAL(fl_params_read(ck, v, &t, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&t, 0, H));
    CU_ASSERT_EQUAL(fl_params_read_rows(ck, v, 3, 5, &t, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&t, 3, 5));
    manifest_is(ck, "T%shard-0-4\nT%shard-4-10\n");

    /* rows no shard holds: an error for the rows asked, not for others */
    ck = save("gap", H, (int64_t[]){0, 6}, (int64_t[]){4, 10}, 2);
    CU_ASSERT_EQUAL(fl_params_read(ck, v, &t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no shard holds rows [4, 6) of 'T' (2 shards of its 10 rows saved)"));
    CU_ASSERT_EQUAL(fl_params_read_rows(ck, v, 6, 4, &t, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&t, 6, 4));

    /* overlapping shards */
    ck = save("overlap", H, (int64_t[]){0, 4}, (int64_t[]){5, 10}, 2);
    CU_ASSERT_EQUAL(fl_params_read_rows(ck, v, 6, 4, &t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "the shards of 'T' overlap: 'T%shard-0-5' and 'T%shard-4-10'"));

    /* a shard of a var of 12 rows */
    ck = save("shape", 12, (int64_t[]){0}, (int64_t[]){10}, 1);
    CU_ASSERT_EQUAL(fl_params_read(ck, v, &t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(e.msg, "the shard 'T%shard-0-10' is of a float32 [12, 3] var but 'T' is float32 [10, 3] in the program"));

    /* rows out of a whole var's file */
    FlBuf path = {0};
    FlNamedTensors whole = {0};
    FlNamedTensor nt = {.name = "T", .t = FL_TENSOR_INIT};
    rows_of(0, H, &nt.t);
    FL_VEC_PUSH(&whole, nt);
    path.len = 0;
    fl_buf_printf(&path, "%s/whole", root);
    CU_ASSERT_EQUAL(fl_params_write(fl_buf_str(&path), &whole, &e), FL_OK);
    CU_ASSERT_EQUAL(fl_params_read_rows(fl_buf_str(&path), v, 7, 3, &t, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&t, 7, 3));

    /* a shard of rows outside the var */
    FlParamsSaving *s;
    CU_ASSERT_EQUAL_FATAL(fl_params_write_begin(fl_buf_str(&path), &(FlNamedTensors){0}, &s, &e), FL_OK);
    CU_ASSERT_EQUAL(fl_params_write_shard(fl_params_saving_dir(s), "T", 5, 0, &nt.t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "rows [0, 10) are not rows of 'T' (5 rows)"));
    fl_params_write_abandon(s);

    fl_params_free(&whole);
    fl_buf_free(&path);
    fl_tensor_fini(&t);
    fl_ir_program_free(p);
}

/* A program holding the var T [H, W] (*p: free with fl_ir_program_free). */
static FlVarDesc *var_t(FlProgram **p) {
    *p = fl_ir_program_new();
    FlVarDesc *v = fl_ir_var_add(fl_ir_block(*p, 0), "T");
    fl_ir_var_set_shape(v, 2, (int64_t[]){H, W});
    return v;
}

/* A checkpoint root/NAME holding T whole (rows_of), its path into out. */
static void save_whole(const char *name, char *out, size_t n) {
    FlErr e = {{0}};
    FlNamedTensors whole = {0};
    FlNamedTensor nt = {.name = "T", .t = FL_TENSOR_INIT};
    rows_of(0, H, &nt.t);
    FL_VEC_PUSH(&whole, nt);
    snprintf(out, n, "%s/%s", root, name);
    CU_ASSERT_EQUAL_FATAL(fl_params_write(out, &whole, &e), FL_OK);
    fl_params_free(&whole);
}

/* Writes n bytes to dir/name (replacing what is there: a FIFO, a file). */
static void put_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    remove(path);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Puts a FIFO (nobody writes it) at dir/name instead of the file there. */
static void put_fifo(const char *dir, const char *name) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    remove(path);
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0644), 0);
}

/* A copy of the checkpoint src as dst (cp -r). */
static const char *copy_ck(const char *src, const char *name) {
    static char dst[128];
    CU_ASSERT_FATAL(snprintf(dst, sizeof dst, "%s/%s", root, name) < (int)sizeof dst);
    char cmd[3 * sizeof dst + 64];
    CU_ASSERT_FATAL(snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", dst, src, dst) < (int)sizeof cmd);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    return dst;
}

/* Each file of a checkpoint replaced by a FIFO: FORMAT, MANIFEST, a var's file, a shard. A load
 * and the save target check refuse it at once, naming the file (before, the open blocked
 * forever; the alarm fails the test instead of hanging it). */
static void test_not_regular(void) {
    FlProgram *p;
    FlVarDesc *v = var_t(&p);
    FlErr e = {{0}};
    FlTensor t = FL_TENSOR_INIT;
    alarm(60);
    char path[256], good[256], good_sharded[256];
    save_whole("reg", good, sizeof good);
    snprintf(good_sharded, sizeof good_sharded, "%s", save("reg_sharded", H, (int64_t[]){0, 4}, (int64_t[]){4, 10}, 2));

    static const struct {
        int sharded;
        const char *file, *msg, *target; /* the load's message, the save target check's */
    } cases[] = {
        {0, "FORMAT", "FORMAT' is not a regular file (a FIFO)", "(its FORMAT is not a regular file)"},
        {0, "T", "/T' is not a regular file (a FIFO)", "(it holds 'T', which is not a regular file)"},
        {1, "MANIFEST", "/MANIFEST' is not a regular file (a FIFO)", "(its MANIFEST is not a regular file)"},
        {1, "T%shard-4-10", "cannot read the shard 'T%shard-4-10' of 'T' (rows [4, 10)): '",
         "(it holds 'T%shard-4-10', which is not a regular file)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "fifo%zu", i);
        const char *ck = copy_ck(cases[i].sharded ? good_sharded : good, name);
        put_fifo(ck, cases[i].file);
        e.msg[0] = 0;
        CU_ASSERT_EQUAL(fl_params_read(ck, v, &t, &e), FL_ERROR);
        if (!strstr(e.msg, cases[i].msg)) fprintf(stderr, "\n%s: %s\n", cases[i].file, e.msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, cases[i].msg));
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, ck));
        /* nor may a save replace it (it is no checkpoint of ours), found without blocking */
        e.msg[0] = 0;
        CU_ASSERT_EQUAL(fl_params_check_target(ck, &e), FL_ERROR);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "is a directory but not a checkpoint"));
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, cases[i].target));
    }
    /* a var's file that is a directory or a character device */
    const char *ck = copy_ck(good, "dir");
    snprintf(path, sizeof path, "%s/T", ck);
    remove(path);
    CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
    CU_ASSERT_EQUAL(fl_params_read(ck, v, &t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "/T' is not a regular file (a directory)"));
    ck = copy_ck(good, "dev");
    snprintf(path, sizeof path, "%s/T", ck);
    remove(path);
    CU_ASSERT_EQUAL_FATAL(symlink("/dev/zero", path), 0);
    CU_ASSERT_EQUAL(fl_params_read(ck, v, &t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "/T' is not a regular file (a character device)"));
    alarm(0);
    fl_tensor_fini(&t);
    fl_ir_program_free(p);
}

/* Shard ranges at the edge of int64: in the shard's header (first + rows overflowed) and in its
 * name in MANIFEST (sscanf's overflow). Each is an error (the header: a bad header), never an
 * overflow (UBSan aborted the load). */
static void test_shard_ranges(void) {
    FlProgram *p;
    FlVarDesc *v = var_t(&p);
    FlErr e = {{0}};
    FlTensor t = FL_TENSOR_INIT;
    const char *good = save("ranges", H, (int64_t[]){0, 4}, (int64_t[]){4, 10}, 2);
    char src[128];
    snprintf(src, sizeof src, "%s", good);
    static const int64_t ranges[][2] = {{INT64_MAX, INT64_MAX}, {4, INT64_MAX}, {INT64_MAX, 6}, {INT64_MIN, 10},
                                        {4, -1}, {4, INT64_MAX - 3}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        const char *ck = copy_ck(src, "hostile_range");
        FlBuf file = {0};
        fl_buf_append(&file, "FLTENSOR", 8);
        uint32_t hdr[4] = {2, FL_DT_FLOAT32, 2, 0};
        int64_t ne[2] = {H, W};
        fl_buf_append(&file, (const char *)hdr, sizeof hdr);
        fl_buf_append(&file, (const char *)ne, sizeof ne);
        fl_buf_append(&file, (const char *)ranges[i], sizeof ranges[i]);
        float zero[6 * W] = {0};
        fl_buf_append(&file, (const char *)zero, sizeof zero);
        put_file(ck, "T%shard-4-10", file.data, file.len);
        fl_buf_free(&file);
        CU_ASSERT_EQUAL(fl_params_read(ck, v, &t, &e), FL_ERROR);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "the shard 'T%shard-4-10' of 'T' is not a saved shard of rows [4, 10) (bad header)"));
    }
    /* names in MANIFEST whose rows overflow int64, or are not plain decimal: not shards of 'T' */
    static const char *names[] = {"T%shard-4-99999999999999999999", "T%shard-99999999999999999999-10",
                                  "T%shard-4-+10", "T%shard--4-10", "T%shard-4-10-", "T%shard-04-10",
                                  "T%shard-4-"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *ck = copy_ck(src, "hostile_name");
        char m[128];
        int n = snprintf(m, sizeof m, "T%%shard-0-4\n%s\n", names[i]);
        put_file(ck, "MANIFEST", m, (size_t)n);
        CU_ASSERT_EQUAL(fl_params_read(ck, v, &t, &e), FL_ERROR);
        if (!strstr(e.msg, "no shard holds rows [4, 10) of 'T' (1 shard of its 10 rows saved)"))
            fprintf(stderr, "\n%s: %s\n", names[i], e.msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no shard holds rows [4, 10) of 'T' (1 shard of its 10 rows saved)"));
    }
    fl_tensor_fini(&t);
    fl_ir_program_free(p);
}

/* FORMAT: version 2 (with or without its final newline) loads; a newer format is refused as a
 * newer .flp is, and an unknown one, an empty or a garbled line are errors quoting it (before,
 * all of them loaded as version 1). */
static void test_format(void) {
    FlProgram *p;
    FlVarDesc *v = var_t(&p);
    FlErr e = {{0}};
    FlTensor t = FL_TENSOR_INIT;
    char src[256];
    save_whole("format", src, sizeof src);
    static const struct {
        const char *format, *msg; /* msg NULL: loads */
    } cases[] = {
        {"fluidc checkpoint 2\n", NULL},
        {"fluidc checkpoint 2", NULL},
        {"fluidc checkpoint 6\n", "the checkpoint was written by a newer fluidc (checkpoint format 6; this one reads up to 5)"},
        {"fluidc checkpoint 3\n", "no saved value for 'T'"}, /* combined: MANIFEST's first line names the file */
        {"fluidc checkpoint 4\n", NULL}, /* format 2 in Fluid's stream: each file read as its bytes say */
        {"fluidc checkpoint 5\n", "no saved value for 'T'"}, /* combined, as format 3 */
        {"fluidc checkpoint 1\n", "its FORMAT names checkpoint format 1, which this fluidc does not know"},
        {"", "its FORMAT is empty (expected 'fluidc checkpoint 2')"},
        {"\n", "its FORMAT is empty (expected 'fluidc checkpoint 2')"},
        {"garbage\x01\n", "its FORMAT is not a checkpoint's: 'garbage?' (expected 'fluidc checkpoint 2')"},
        {"fluidc checkpoint 2\n\n", "its FORMAT is not a checkpoint's: 'fluidc checkpoint 2?'"},
        {"fluidc checkpoint 99999999999999999999\n", "its FORMAT is not a checkpoint's"},
        {"fluidc checkpoint -2\n", "its FORMAT is not a checkpoint's"},
        {"FLTENSOR\x01", NULL}, /* a tensor file: version 1, whose var FORMAT had the file FORMAT */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *ck = copy_ck(src, "format_case");
        put_file(ck, "FORMAT", cases[i].format, strlen(cases[i].format));
        e.msg[0] = 0;
        FlStatus st = fl_params_read(ck, v, &t, &e);
        if (!cases[i].msg) {
            CU_ASSERT_EQUAL(st, FL_OK);
            CU_ASSERT_TRUE(rows_are(&t, 0, H));
            continue;
        }
        CU_ASSERT_EQUAL(st, FL_ERROR);
        if (!strstr(e.msg, cases[i].msg)) fprintf(stderr, "\n'%s': %s\n", cases[i].format, e.msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, cases[i].msg));
    }
    fl_tensor_fini(&t);
    fl_ir_program_free(p);
}

/* A combined checkpoint (format 3): every var in one file that MANIFEST names first, read whole
 * and by rows, its vars in any order; a file cut short, a name that is the checkpoint's own, and
 * fl_params_check_combined's answers. */
static void test_combined(void) {
    FlProgram *p;
    FlVarDesc *v = var_t(&p);
    FlVarDesc *s = fl_ir_var_add(fl_ir_block(p, 0), "s%/x"); /* a scalar, with an escaped name */
    fl_ir_var_set_shape(s, 0, NULL);
    FlErr e = {{0}};
    FlNamedTensors vars = {0};
    FlNamedTensor a = {.name = "s%/x", .t = FL_TENSOR_INIT}, b = {.name = "T", .t = FL_TENSOR_INIT};
    double seven = 7;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_from(&e, &a.t, FL_DT_FLOAT32, 0, NULL, &seven), FL_OK);
    rows_of(0, H, &b.t);
    FL_VEC_PUSH(&vars, a);
    FL_VEC_PUSH(&vars, b);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/combined", root);
    CU_ASSERT_EQUAL(fl_params_write_combined(dir, "MANIFEST", &vars, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'MANIFEST' cannot name the file of a combined checkpoint"));
    CU_ASSERT_EQUAL(fl_params_write_combined(dir, "a/b", &vars, &e), FL_ERROR);
    CU_ASSERT_EQUAL_FATAL(fl_params_write_combined(dir, "all", &vars, &e), FL_OK);
    manifest_is(dir, "all\ns%25%2Fx\nT\n");
    FlTensor t = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL(fl_params_read(dir, v, &t, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&t, 0, H));
    CU_ASSERT_EQUAL(fl_params_read_rows(dir, v, 2, 5, &t, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&t, 2, 5));
    CU_ASSERT_EQUAL(fl_params_read(dir, s, &t, &e), FL_OK);
    CU_ASSERT_TRUE(t.ndim == 0 && fl_tensor_get(&t, 0) == 7);
    bool fluid = true;
    CU_ASSERT_EQUAL(fl_params_check_combined(dir, "all", &fluid, &e), FL_OK);
    CU_ASSERT_FALSE(fluid);
    CU_ASSERT_EQUAL(fl_params_check_combined(dir, "other", &fluid, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "its combined file is 'all', not 'other'"));
    /* replaced by a checkpoint of a file per var, which check_combined tells apart */
    CU_ASSERT_EQUAL_FATAL(fl_params_write(dir, &vars, &e), FL_OK);
    CU_ASSERT_EQUAL(fl_params_check_combined(dir, "all", &fluid, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "it holds a file per var, not one combined file 'all'"));
    /* and back; then the file cut inside T */
    CU_ASSERT_EQUAL_FATAL(fl_params_write_combined(dir, "all", &vars, &e), FL_OK);
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/all", dir);
    struct stat sb;
    CU_ASSERT_EQUAL_FATAL(stat(fl_buf_str(&path), &sb), 0);
    CU_ASSERT_EQUAL(truncate(fl_buf_str(&path), sb.st_size - 4), 0);
    CU_ASSERT_EQUAL(fl_params_read(dir, v, &t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'T' holds"));
    CU_ASSERT_EQUAL(fl_params_read(dir, s, &t, &e), FL_OK); /* the var before the cut still loads */
    /* cut inside the first header: the vars after it are not found in a bad file */
    CU_ASSERT_EQUAL(truncate(fl_buf_str(&path), 10), 0);
    CU_ASSERT_EQUAL(fl_params_read(dir, v, &t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'all' is not a combined checkpoint's file (a bad header at byte 0)"));
    fl_tensor_fini(&t);
    fl_buf_free(&path);
    fl_params_free(&vars);
    fl_ir_program_free(p);
}

/* Fluid's layout (formats 4 and 5, fl_params_write_begin_fluid): the combined file's vars sorted
 * by name and each once, read whole and by rows (past the tensor before it); a file per var with
 * a LoD var's offsets, read back with them; the combined file cut short. */
static void test_fluid_layout(void) {
    FlProgram *p;
    FlVarDesc *v = var_t(&p);
    FlVarDesc *s = fl_ir_var_add(fl_ir_block(p, 0), "s%/x"); /* a scalar, escaped in MANIFEST */
    fl_ir_var_set_shape(s, 0, NULL);
    FlVarDesc *q = fl_ir_var_add(fl_ir_block(p, 0), "Q"); /* a LoD var: 3 sequences of T's rows */
    fl_ir_var_set_shape(q, 2, (int64_t[]){H, W});
    const char *lod_name = "Q@lod";
    fl_ir_var_set_lod(q, 1, &lod_name);
    FlErr e = {{0}};
    FlNamedTensors vars = {0};
    FlNamedTensor a = {.name = "s%/x", .t = FL_TENSOR_INIT}, b = {.name = "T", .t = FL_TENSOR_INIT};
    double seven = 7;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_from(&e, &a.t, FL_DT_FLOAT32, 0, NULL, &seven), FL_OK);
    rows_of(0, H, &b.t);
    FL_VEC_PUSH(&vars, a);
    FL_VEC_PUSH(&vars, b);
    FlNamedTensor twice = {.name = "T", .t = FL_TENSOR_INIT};
    fl_tensor_ref(&twice.t, &b.t);
    FL_VEC_PUSH(&vars, twice);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fluid_combined", root);
    FlParamsSaving *sv;
    CU_ASSERT_EQUAL_FATAL(fl_params_write_begin_fluid(dir, "all", &vars, &sv, &e), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_params_write_end(sv, &e), FL_OK);
    manifest_is(dir, "all\nT\ns%25%2Fx\n"); /* "T" < "s%/x": sorted by name; T once */
    FlTensor t = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL(fl_params_read(dir, v, &t, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&t, 0, H));
    CU_ASSERT_EQUAL(fl_params_read_rows(dir, v, 2, 5, &t, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&t, 2, 5));
    CU_ASSERT_EQUAL(fl_params_read(dir, s, &t, &e), FL_OK); /* after T's tensor */
    CU_ASSERT_TRUE(t.ndim == 0 && fl_tensor_get(&t, 0) == 7);
    bool fluid = true;
    CU_ASSERT_EQUAL(fl_params_check_combined(dir, "all", &fluid, &e), FL_OK);
    CU_ASSERT_FALSE(fluid); /* fluidc's: read through MANIFEST */
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/all", dir);
    struct stat sb;
    CU_ASSERT_EQUAL_FATAL(stat(fl_buf_str(&path), &sb), 0);
    CU_ASSERT_EQUAL(truncate(fl_buf_str(&path), sb.st_size - 2), 0);
    CU_ASSERT_EQUAL(fl_params_read(dir, v, &t, &e), FL_OK); /* the var before the cut still loads */
    CU_ASSERT_EQUAL(fl_params_read(dir, s, &t, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "the combined file 'all' ends inside 's%/x'"));
    /* a file per var, Q with its offsets */
    fl_params_free(&vars);
    FlNamedTensor c = {.name = "Q", .t = FL_TENSOR_INIT, .nlevels = 1};
    rows_of(0, H, &c.t);
    CU_ASSERT_EQUAL_FATAL(fl_tensor_from(&e, &c.lod[0], FL_DT_INT64, 1, (int64_t[]){4}, (double[]){0, 2, 7, H}), FL_OK);
    FL_VEC_PUSH(&vars, c);
    snprintf(dir, sizeof dir, "%s/fluid_split", root);
    CU_ASSERT_EQUAL_FATAL(fl_params_write_begin_fluid(dir, NULL, &vars, &sv, &e), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_params_write_end(sv, &e), FL_OK);
    manifest_is(dir, "Q\n");
    FlLodTensor lt;
    fl_lodtensor_init(&lt);
    CU_ASSERT_EQUAL(fl_params_read_lod(dir, q, &lt, &e), FL_OK);
    CU_ASSERT_TRUE(rows_are(&lt.t, 0, H));
    CU_ASSERT_EQUAL_FATAL(lt.nlevels, 1);
    CU_ASSERT_TRUE(lt.lod[0].ne[0] == 4 && fl_tensor_get(&lt.lod[0], 2) == 7 && fl_tensor_get(&lt.lod[0], 3) == H);
    q->lod_level = 0; /* a var without LoD: the file's level is an error naming it */
    CU_ASSERT_EQUAL(fl_params_read_lod(dir, q, &lt, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'Q' has 1 LoD level in the file but lod_level 0 in the program"));
    q->lod_level = 1;
    fl_lodtensor_fini(&lt);
    fl_tensor_fini(&t);
    fl_buf_free(&path);
    fl_params_free(&vars);
    fl_ir_program_free(p);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/fl_params_shards.XXXXXX");
    if (!mkdtemp(root)) return 1;
    static const CtCase cases[] = {CT_TEST(test_shards), CT_TEST(test_not_regular), CT_TEST(test_shard_ranges),
                                   CT_TEST(test_format), CT_TEST(test_combined),
                                   CT_TEST(test_fluid_layout)};
    int rc = ct_run("params_shards", cases, (int)(sizeof cases / sizeof cases[0]));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) rc = 1;
    return rc;
}
