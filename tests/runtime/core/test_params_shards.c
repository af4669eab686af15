/* test_params_shards.c: checkpoints whose vars are saved in shards (runtime/params.h): shards
 * written into a saving's directory are listed in MANIFEST; a var is read whole or by rows from
 * the shards that overlap the rows asked (re-sharding), or by rows from a whole file; overlapping
 * shards, rows no shard holds and a shard of another shape are errors naming the var and the
 * file. */
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
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/MANIFEST", ck);
    size_t len;
    char *m = fl_read_file(fl_buf_str(&path), &len, &e);
    CU_ASSERT_STRING_EQUAL(m, "T%shard-0-4\nT%shard-4-10\n");
    free(m);

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
    FlNamedTensors whole = {0};
    FlNamedTensor nt = {"T", FL_TENSOR_INIT};
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

int main(void) {
    snprintf(root, sizeof root, "/tmp/fl_params_shards.XXXXXX");
    if (!mkdtemp(root)) return 1;
    static const CtCase cases[] = {CT_TEST(test_shards)};
    int rc = ct_run("params_shards", cases, 1);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) rc = 1;
    return rc;
}
