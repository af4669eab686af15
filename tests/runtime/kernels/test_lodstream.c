/* test_lodstream.c: Fluid's LoDTensor stream format (runtime/lodstream.c): bytes built here from
 * the format's definition (not by the writer) are read back exactly; the writer's bytes are
 * exactly those; a packed dims field and unknown TensorDesc fields are read; every prefix of a
 * stream and a set of corrupted streams give an error naming what is wrong, never a tensor. */
#include "runtime/lodstream.h"

#include <stdlib.h>
#include <string.h>

#include "tests/cunit.h"

static void u32(FlBuf *b, uint32_t v) { fl_buf_append(b, (const char *)&v, 4); }
static void u64(FlBuf *b, uint64_t v) { fl_buf_append(b, (const char *)&v, 8); }
static void byte(FlBuf *b, unsigned v) { fl_buf_putc(b, (char)(unsigned char)v); }

/* A tensor of dtype and shape holding the bytes at p. */
static FlStatus from_bytes(FlErr *e, FlTensor *t, FlDType dt, int nd, const int64_t *ne, const void *p) {
    if (fl_tensor_alloc_uninit(e, t, dt, nd, ne)) return FL_ERROR;
    memcpy(fl_tensor_data(t), p, fl_tensor_nbytes(t));
    return FL_OK;
}

/* The stream of a float32 [3, 2] tensor with one LoD level {0, 1, 3}, written byte by byte: the
 * TensorDesc is {data_type: FP32 (5), dims: 3, dims: 2} = 08 05 10 03 10 02. */
static const float VALS[6] = {1.5f, -2.0f, 3.25f, 1e-30f, -0.0f, 7.0f};
static void hand_stream(FlBuf *b) {
    u32(b, 0);
    u64(b, 1);
    u64(b, 24);
    u64(b, 0);
    u64(b, 1);
    u64(b, 3);
    u32(b, 0);
    u32(b, 6);
    const unsigned desc[6] = {0x08, 0x05, 0x10, 0x03, 0x10, 0x02};
    for (int i = 0; i < 6; i++) byte(b, desc[i]);
    fl_buf_append(b, (const char *)VALS, sizeof VALS);
}

static void test_read_hand_written(void) {
    FlBuf b = {0};
    hand_stream(&b);
    u32(&b, 0xdeadbeef); /* what follows the tensor is not read */
    FlLodTensor lt;
    fl_lodtensor_init(&lt);
    FlErr e = {{0}};
    size_t used = 0;
    CU_ASSERT_EQUAL_FATAL(fl_lodstream_read(&e, b.data, b.len, 0, &used, &lt), FL_OK);
    CU_ASSERT_EQUAL(used, b.len - 4);
    CU_ASSERT_EQUAL(lt.t.dtype, FL_DT_FLOAT32);
    CU_ASSERT_EQUAL(lt.t.ndim, 2);
    CU_ASSERT(lt.t.ne[0] == 3 && lt.t.ne[1] == 2);
    CU_ASSERT(memcmp(fl_tensor_data(&lt.t), VALS, sizeof VALS) == 0);
    CU_ASSERT_EQUAL(lt.nlevels, 1);
    CU_ASSERT_EQUAL(lt.lod[0].dtype, FL_DT_INT64);
    CU_ASSERT_EQUAL(lt.lod[0].ne[0], 3);
    const int64_t *o = fl_tensor_data(&lt.lod[0]);
    CU_ASSERT(o[0] == 0 && o[1] == 1 && o[2] == 3);
    fl_lodtensor_fini(&lt);
    fl_buf_free(&b);
}

/* The writer gives exactly the hand-written bytes. */
static void test_write_matches(void) {
    FlBuf want = {0}, got = {0};
    hand_stream(&want);
    FlErr e = {{0}};
    FlTensor t = FL_TENSOR_INIT, off = FL_TENSOR_INIT;
    int64_t ne[2] = {3, 2}, n3 = 3;
    CU_ASSERT_EQUAL_FATAL(from_bytes(&e, &t, FL_DT_FLOAT32, 2, ne, VALS), FL_OK);
    const int64_t offs[3] = {0, 1, 3};
    CU_ASSERT_EQUAL_FATAL(from_bytes(&e, &off, FL_DT_INT64, 1, &n3, offs), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_lodstream_write(&e, &got, &t, 1, &off), FL_OK);
    CU_ASSERT_EQUAL(got.len, want.len);
    CU_ASSERT(got.len == want.len && memcmp(got.data, want.data, want.len) == 0);
    fl_tensor_fini(&t);
    fl_tensor_fini(&off);
    fl_buf_free(&want);
    fl_buf_free(&got);
}

/* Every dtype round-trips through the writer and the reader, two levels too. */
static void test_round_trip_dtypes(void) {
    const FlDType dts[] = {FL_DT_FLOAT32, FL_DT_FLOAT64, FL_DT_INT32, FL_DT_INT64, FL_DT_BOOL,
                           FL_DT_FLOAT16, FL_DT_INT8, FL_DT_UINT8};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        FlErr e = {{0}};
        FlTensor t = FL_TENSOR_INIT, lod[2] = {FL_TENSOR_INIT, FL_TENSOR_INIT};
        int64_t ne[3] = {5, 2, 3}, n0 = 3, n1 = 4;
        CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &t, dts[k], 3, ne), FL_OK);
        for (int64_t i = 0; i < fl_tensor_numel(&t); i++) fl_tensor_set(&t, i, dts[k] == FL_DT_BOOL ? i % 2 : i * 3 - 7);
        const int64_t o0[3] = {0, 2, 3}, o1[4] = {0, 1, 4, 5};
        CU_ASSERT_EQUAL_FATAL(from_bytes(&e, &lod[0], FL_DT_INT64, 1, &n0, o0), FL_OK);
        CU_ASSERT_EQUAL_FATAL(from_bytes(&e, &lod[1], FL_DT_INT64, 1, &n1, o1), FL_OK);
        FlBuf b = {0};
        CU_ASSERT_EQUAL_FATAL(fl_lodstream_write(&e, &b, &t, 2, lod), FL_OK);
        FlLodTensor lt;
        fl_lodtensor_init(&lt);
        size_t used = 0;
        CU_ASSERT_EQUAL_FATAL(fl_lodstream_read(&e, b.data, b.len, 0, &used, &lt), FL_OK);
        CU_ASSERT_EQUAL(used, b.len);
        CU_ASSERT_EQUAL(lt.t.dtype, dts[k]);
        CU_ASSERT(fl_tensor_same_shape(&lt.t, &t));
        CU_ASSERT(memcmp(fl_tensor_data(&lt.t), fl_tensor_data(&t), fl_tensor_nbytes(&t)) == 0);
        CU_ASSERT_EQUAL(lt.nlevels, 2);
        CU_ASSERT(memcmp(fl_tensor_data(&lt.lod[1]), o1, sizeof o1) == 0);
        fl_lodtensor_fini(&lt);
        fl_tensor_fini(&t);
        fl_tensor_fini(&lod[0]);
        fl_tensor_fini(&lod[1]);
        fl_buf_free(&b);
    }
}

/* Fluid's codes FP16 (4), UINT8 (20) and INT8 (21), in streams written byte by byte: the values'
 * bytes as they are (a float16 is its binary16 bits: 0x3c00 = 1, 0xc000 = -2, 0x7bff = 65504). */
static void test_storage_dtypes_hand_written(void) {
    const struct {
        unsigned code;
        FlDType dt;
        unsigned char bytes[6];
        double want[3];
    } cases[] = {
        {4, FL_DT_FLOAT16, {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b}, {1, -2, 65504}},
        {20, FL_DT_UINT8, {0, 200, 255}, {0, 200, 255}},
        {21, FL_DT_INT8, {0x80, 0xff, 0x7f}, {-128, -1, 127}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        FlBuf b = {0};
        u32(&b, 0), u64(&b, 0), u32(&b, 0), u32(&b, 4);
        byte(&b, 0x08), byte(&b, cases[k].code), byte(&b, 0x10), byte(&b, 0x03);
        fl_buf_append(&b, (const char *)cases[k].bytes, 3 * fl_dtype_size(cases[k].dt));
        FlLodTensor lt;
        fl_lodtensor_init(&lt);
        FlErr e = {{0}};
        size_t used = 0;
        CU_ASSERT_EQUAL_FATAL(fl_lodstream_read(&e, b.data, b.len, 0, &used, &lt), FL_OK);
        CU_ASSERT_EQUAL(used, b.len);
        CU_ASSERT(lt.t.dtype == cases[k].dt && lt.t.ndim == 1 && lt.t.ne[0] == 3);
        for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(fl_tensor_get(&lt.t, i), cases[k].want[i]);
        CU_ASSERT_EQUAL(fl_lodstream_vartype(cases[k].dt), (int)cases[k].code);
        FlBuf w = {0}; /* the writer gives the same bytes back */
        CU_ASSERT_EQUAL_FATAL(fl_lodstream_write(&e, &w, &lt.t, 0, NULL), FL_OK);
        CU_ASSERT(w.len == b.len && memcmp(w.data, b.data, b.len) == 0);
        fl_buf_free(&w);
        fl_lodtensor_fini(&lt);
        fl_buf_free(&b);
    }
}

/* A packed dims field (what a proto3 writer gives) and an unknown field are read. */
static void test_packed_dims_and_unknown_fields(void) {
    FlBuf b = {0};
    u32(&b, 0);
    u64(&b, 0);
    u32(&b, 0);
    /* field 7 varint 300, data_type INT64, packed dims [2, 1], field 9 fixed32 */
    const unsigned desc[] = {0x38, 0xac, 0x02, 0x08, 0x03, 0x12, 0x02, 0x02, 0x01, 0x4d, 1, 2, 3, 4};
    u32(&b, (uint32_t)(sizeof desc / sizeof desc[0]));
    for (size_t i = 0; i < sizeof desc / sizeof desc[0]; i++) byte(&b, desc[i]);
    u64(&b, (uint64_t)-5);
    u64(&b, 1ull << 40);
    FlLodTensor lt;
    fl_lodtensor_init(&lt);
    FlErr e = {{0}};
    size_t used;
    CU_ASSERT_EQUAL_FATAL(fl_lodstream_read(&e, b.data, b.len, 0, &used, &lt), FL_OK);
    CU_ASSERT(lt.t.dtype == FL_DT_INT64 && lt.t.ndim == 2 && lt.t.ne[0] == 2 && lt.t.ne[1] == 1);
    const int64_t *v = fl_tensor_data(&lt.t);
    CU_ASSERT(v[0] == -5 && v[1] == (int64_t)1 << 40);
    CU_ASSERT_EQUAL(lt.nlevels, 0);
    fl_lodtensor_fini(&lt);
    fl_buf_free(&b);
}

static void expect_error(const FlBuf *b, size_t len, const char *want) {
    FlLodTensor lt;
    fl_lodtensor_init(&lt);
    FlErr e = {{0}};
    size_t used = 0;
    CU_ASSERT_EQUAL(fl_lodstream_read(&e, b->data, len, 100, &used, &lt), FL_ERROR);
    CU_ASSERT(!fl_tensor_has_data(&lt.t));
    if (!strstr(e.msg, want)) fprintf(stderr, "\nmessage '%s' lacks '%s'\n", e.msg, want);
    CU_ASSERT(strstr(e.msg, want) != NULL);
    fl_lodtensor_fini(&lt);
}

/* Every proper prefix of a stream is an error saying where it ends (offsets counted from 100). */
static void test_every_prefix_fails(void) {
    FlBuf b = {0};
    hand_stream(&b);
    for (size_t n = 0; n < b.len; n++) expect_error(&b, n, "the stream ends inside");
    expect_error(&b, 0, "the LoD version: it needs 4 bytes at byte 100");
    expect_error(&b, b.len - 1, "the values of the float32 [3, 2] tensor: it needs 24 bytes at byte 158");
    fl_buf_free(&b);
}

/* One corruption at a time of the hand-written stream. */
static void patch(FlBuf *b, size_t at, const void *v, size_t n) { memcpy(b->data + at, v, n); }

static void test_corrupt_streams(void) {
    struct {
        size_t at;
        unsigned char v[8];
        size_t n;
        const char *want;
    } cases[] = {
        {0, {1}, 1, "the LoD version at byte 100 is 1: Fluid writes 0"},
        {4, {9}, 1, "says 9 LoD levels (at most 8 are read)"},
        {12, {23}, 1, "LoD level 0 at byte 112 has 23 bytes, not a whole number of 8-byte offsets"},
        {12, {0, 0, 0, 0, 0, 0, 0, 0x80}, 8, "the stream ends inside a LoD level's offsets"},
        {20, {2}, 1, "LoD level 0 at byte 112 starts at 2, not 0"},
        {28, {5}, 1, "LoD level 0 at byte 112 decreases: offset 2 is 3 after 5"},
        {36, {2}, 1, "LoD level 0 at byte 112 ends at 2, but the tensor has 3 rows"},
        {44, {3}, 1, "the tensor version at byte 144 is 3"},
        {48, {0, 0, 0, 0x80}, 4, "the size of the TensorDesc at byte 148 is -2147483648, negative"},
        {53, {1}, 1, "holds INT16 values (Fluid's dtype 1), which fluidc has no tensors of"},
        {53, {19}, 1, "holds SIZE_T values"},
        {53, {40}, 1, "has data_type 40, which is no dtype of a tensor"},
        {52, {0x10}, 1, "has no data_type"},
        {52, {0x0b}, 1, "is not a valid protobuf message"},
        {55, {0x80}, 1, "is not a valid protobuf message"},
        {55, {0x7f}, 1, "the stream ends inside the values of the float32 [127, 2] tensor"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        FlBuf b = {0};
        hand_stream(&b);
        patch(&b, cases[k].at, cases[k].v, cases[k].n);
        expect_error(&b, b.len, cases[k].want);
        fl_buf_free(&b);
    }
    /* a bool holds 0 or 1; a negative dim; a ninth dim */
    FlBuf b = {0};
    u32(&b, 0), u64(&b, 0), u32(&b, 0), u32(&b, 4);
    byte(&b, 0x08), byte(&b, 0x00), byte(&b, 0x10), byte(&b, 0x02);
    byte(&b, 1), byte(&b, 2);
    expect_error(&b, b.len, "the bool tensor's value 1 (byte 125) is 2: a bool holds 0 or 1");
    fl_buf_free(&b);
    u32(&b, 0), u64(&b, 0), u32(&b, 0), u32(&b, 13);
    byte(&b, 0x08), byte(&b, 0x05), byte(&b, 0x10);
    for (int i = 0; i < 9; i++) byte(&b, 0xff);
    byte(&b, 0x01);
    expect_error(&b, b.len, "has dim -1: a stored tensor's dims are not negative");
    fl_buf_free(&b);
    u32(&b, 0), u64(&b, 0), u32(&b, 0), u32(&b, 20);
    byte(&b, 0x08), byte(&b, 0x05);
    for (int i = 0; i < 9; i++) byte(&b, 0x10), byte(&b, 0x01);
    expect_error(&b, b.len, "has more than 8 dims");
    fl_buf_free(&b);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"read_hand_written", test_read_hand_written},
        {"write_matches", test_write_matches},
        {"round_trip_dtypes", test_round_trip_dtypes},
        {"storage_dtypes_hand_written", test_storage_dtypes_hand_written},
        {"packed_dims_and_unknown_fields", test_packed_dims_and_unknown_fields},
        {"every_prefix_fails", test_every_prefix_fails},
        {"corrupt_streams", test_corrupt_streams},
    };
    return fl_test_run("lodstream", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
