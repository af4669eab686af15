/* fill.c: fill_constant, fill_zeros_like, uniform_random, gaussian_random,
 * truncated_gaussian_random, assign, cast. The random fills are counter-based (rng.h): element i
 * of the whole tensor depends only on the seed and i (never on threads, timing or the elements
 * before it), which lets a parameter server make its rows of a table without the rest. */
#include "runtime/kernels/kernels_impl.h"
#include "runtime/half.h"
#include "runtime/rng.h"

FlStatus fl_kernel_fill_constant(FlErr *e, int ndim, const int64_t *shape, double value, const int64_t *exact,
                                 FlDType dtype, FlTensor *out) {
    FlTensor r = FL_TENSOR_INIT;
    FlErr sub;
    if (fl_tensor_alloc(&sub, &r, dtype, ndim, shape))
        return fl_err(e, "fill_constant: %s", sub.msg);
    int64_t n = fl_tensor_numel(&r);
    void *p = fl_tensor_data(&r);
    switch (dtype) {
    case FL_DT_FLOAT32: for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)value; break;
    case FL_DT_FLOAT64: for (int64_t i = 0; i < n; i++) ((double *)p)[i] = value; break;
    case FL_DT_INT32: {
        int32_t v = exact ? fl_sat_i32_of(*exact) : fl_sat_i32(value);
        for (int64_t i = 0; i < n; i++) ((int32_t *)p)[i] = v;
        break;
    }
    case FL_DT_INT64: {
        int64_t v = exact ? *exact : fl_sat_i64(value);
        for (int64_t i = 0; i < n; i++) ((int64_t *)p)[i] = v;
        break;
    }
    case FL_DT_BOOL: memset(p, exact ? *exact != 0 : value != 0, (size_t)n); break;
    case FL_DT_FLOAT16: {
        uint16_t v = fl_half_from_double(value);
        for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = v;
        break;
    }
    case FL_DT_INT8: memset(p, (uint8_t)(exact ? fl_sat_i8((double)fl_sat_i32_of(*exact)) : fl_sat_i8(value)), (size_t)n); break;
    case FL_DT_UINT8: memset(p, exact ? fl_sat_u8((double)fl_sat_i32_of(*exact)) : fl_sat_u8(value), (size_t)n); break;
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_assign_value(FlErr *e, int ndim, const int64_t *shape, const double *values, const int64_t *ints,
                                size_t n, FlDType dtype, FlTensor *out) {
    FlTensor r = FL_TENSOR_INIT;
    FlErr sub;
    if (fl_tensor_alloc(&sub, &r, dtype, ndim, shape)) return fl_err(e, "assign_value: %s", sub.msg);
    if ((size_t)fl_tensor_numel(&r) != n) {
        fl_tensor_fini(&r);
        return fl_err(e, "assign_value: shape %s holds %lld values but %zu are given", fl_tensor_shape(&r).s,
                      (long long)fl_tensor_numel(&r), n);
    }
    void *p = fl_tensor_data(&r);
    for (size_t i = 0; i < n; i++) {
        switch (dtype) {
        case FL_DT_FLOAT32: ((float *)p)[i] = (float)values[i]; break;
        case FL_DT_FLOAT64: ((double *)p)[i] = values[i]; break;
        case FL_DT_INT32: ((int32_t *)p)[i] = ints ? fl_sat_i32_of(ints[i]) : fl_sat_i32(values[i]); break;
        case FL_DT_INT64: ((int64_t *)p)[i] = ints ? ints[i] : fl_sat_i64(values[i]); break;
        case FL_DT_BOOL: ((unsigned char *)p)[i] = ints ? ints[i] != 0 : values[i] != 0; break;
        case FL_DT_FLOAT16: ((uint16_t *)p)[i] = fl_half_from_double(values[i]); break;
        case FL_DT_INT8: ((int8_t *)p)[i] = fl_sat_i8(ints ? (double)fl_sat_i32_of(ints[i]) : values[i]); break;
        case FL_DT_UINT8: ((uint8_t *)p)[i] = fl_sat_u8(ints ? (double)fl_sat_i32_of(ints[i]) : values[i]); break;
        case FL_DT_COUNT: FL_UNREACHABLE();
        }
    }
    kout(out, &r);
    return FL_OK;
}

typedef enum RandDist { RD_UNIFORM, RD_GAUSSIAN, RD_TRUNCATED } RandDist;

static double draw(RandDist dist, uint64_t seed, uint64_t i) {
    switch (dist) {
    case RD_UNIFORM: return fl_rng_counter_uniform(seed, i);
    case RD_GAUSSIAN: return fl_rng_counter_gaussian(seed, i);
    case RD_TRUNCATED: return fl_rng_counter_truncated(seed, i);
    }
    FL_UNREACHABLE();
}

/* Element k of Out is element offset + k of the whole tensor: the value at counter offset + k
 * (rng.h), so any slice of rows is made on its own and equals those rows of the whole. */
static FlStatus random_fill(FlErr *e, const char *op, int ndim, const int64_t *shape, double a,
                            double b, RandDist dist, uint64_t seed, int64_t offset, FlDType dtype,
                            FlTensor *out) {
    if (!kis_float(dtype))
        return fl_err(e, "%s: dtype %s is not supported; float32 or float64 expected", op,
                      fl_dtype_name(dtype));
    if (offset < 0) return fl_err(e, "%s: shard_offset (%lld) is negative", op, (long long)offset);
    FlTensor r = FL_TENSOR_INIT;
    FlErr sub;
    if (fl_tensor_alloc(&sub, &r, dtype, ndim, shape)) return fl_err(e, "%s: %s", op, sub.msg);
    int64_t n = fl_tensor_numel(&r);
    if (n > INT64_MAX - offset) {
        fl_tensor_fini(&r);
        return fl_err(e, "%s: shard_offset %lld + %lld elements overflows", op, (long long)offset,
                      (long long)n);
    }
    void *p = fl_tensor_data(&r);
    for (int64_t k = 0; k < n; k++) {
        double u = draw(dist, seed, (uint64_t)(offset + k));
        double v = dist == RD_UNIFORM ? a + (b - a) * u : a + b * u;
        if (dtype == FL_DT_FLOAT32) ((float *)p)[k] = (float)v;
        else ((double *)p)[k] = v;
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_uniform_random(FlErr *e, int ndim, const int64_t *shape, double min, double max,
                                  uint64_t seed, int64_t offset, FlDType dtype, FlTensor *out) {
    if (!(min <= max)) return fl_err(e, "uniform_random: min (%g) is greater than max (%g)", min, max);
    return random_fill(e, "uniform_random", ndim, shape, min, max, RD_UNIFORM, seed, offset, dtype, out);
}

FlStatus fl_kernel_gaussian_random(FlErr *e, int ndim, const int64_t *shape, double mean,
                                   double std, uint64_t seed, int64_t offset, FlDType dtype,
                                   FlTensor *out) {
    if (!(std >= 0)) return fl_err(e, "gaussian_random: std (%g) is negative", std);
    return random_fill(e, "gaussian_random", ndim, shape, mean, std, RD_GAUSSIAN, seed, offset, dtype, out);
}

FlStatus fl_kernel_truncated_gaussian_random(FlErr *e, int ndim, const int64_t *shape, double mean,
                                             double std, uint64_t seed, int64_t offset,
                                             FlDType dtype, FlTensor *out) {
    if (!(std >= 0)) return fl_err(e, "truncated_gaussian_random: std (%g) is negative", std);
    return random_fill(e, "truncated_gaussian_random", ndim, shape, mean, std, RD_TRUNCATED, seed,
                       offset, dtype, out);
}

FlStatus fl_kernel_assign(FlErr *e, const FlTensor *x, FlTensor *out) {
    if (khas(e, "assign", "X", x)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    FlErr sub;
    if (fl_tensor_copy(&sub, &r, x)) return fl_err(e, "assign: %s", sub.msg);
    kout(out, &r);
    return FL_OK;
}

/* conv converts ints and bools, fconv floats (to an int: saturating, see fl_sat_i64). A float16
 * source is read as the double it holds and goes through fconv. */
#define CAST_LOOP(TO, conv, fconv)                                                          \
    do {                                                                                    \
        TO *o = fl_tensor_data(&r);                                                         \
        switch (x->dtype) {                                                                 \
        case FL_DT_FLOAT32: { const float *s = p; for (int64_t i = 0; i < n; i++) o[i] = fconv(s[i]); } break; \
        case FL_DT_FLOAT64: { const double *s = p; for (int64_t i = 0; i < n; i++) o[i] = fconv(s[i]); } break; \
        case FL_DT_FLOAT16: { const uint16_t *s = p; for (int64_t i = 0; i < n; i++) o[i] = fconv(fl_half_to_double(s[i])); } break; \
        case FL_DT_INT32: { const int32_t *s = p; for (int64_t i = 0; i < n; i++) o[i] = conv(s[i]); } break; \
        case FL_DT_INT64: { const int64_t *s = p; for (int64_t i = 0; i < n; i++) o[i] = conv(s[i]); } break; \
        case FL_DT_INT8: { const int8_t *s = p; for (int64_t i = 0; i < n; i++) o[i] = conv(s[i]); } break; \
        case FL_DT_UINT8:                                                                   \
        case FL_DT_BOOL: { const uint8_t *s = p; for (int64_t i = 0; i < n; i++) o[i] = conv(s[i]); } break; \
        case FL_DT_COUNT: FL_UNREACHABLE();                                                 \
        }                                                                                   \
    } while (0)
/* Between ints: C's conversion, as Fluid's static_cast (to a narrower int: the value modulo
 * 2^bits, two's complement, which gcc and clang define); from a float: fl_sat_*. */
#define CONV_F32(v) ((float)(v))
#define CONV_F64(v) ((double)(v))
#define CONV_F16(v) fl_half_from_double((double)(v))
#define CONV_I32(v) ((int32_t)(v))
#define CONV_I64(v) ((int64_t)(v))
#define CONV_I8(v) ((int8_t)(v))
#define CONV_U8(v) ((uint8_t)(v))
#define CONV_BOOL(v) ((uint8_t)((v) != 0))

FlStatus fl_kernel_cast(FlErr *e, const FlTensor *x, FlDType out_dtype, FlTensor *out) {
    if (khas(e, "cast", "X", x)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    FlErr sub;
    if (fl_tensor_alloc_like(&sub, &r, x, out_dtype)) return fl_err(e, "cast: %s", sub.msg);
    const void *p = fl_tensor_data(x);
    int64_t n = fl_tensor_numel(x);
    switch (out_dtype) {
    case FL_DT_FLOAT32: CAST_LOOP(float, CONV_F32, CONV_F32); break;
    case FL_DT_FLOAT64: CAST_LOOP(double, CONV_F64, CONV_F64); break;
    case FL_DT_INT32: CAST_LOOP(int32_t, CONV_I32, fl_sat_i32); break;
    case FL_DT_INT64: CAST_LOOP(int64_t, CONV_I64, fl_sat_i64); break;
    case FL_DT_BOOL: CAST_LOOP(uint8_t, CONV_BOOL, CONV_BOOL); break;
    case FL_DT_FLOAT16: CAST_LOOP(uint16_t, CONV_F16, CONV_F16); break;
    case FL_DT_INT8: CAST_LOOP(int8_t, CONV_I8, fl_sat_i8); break;
    case FL_DT_UINT8: CAST_LOOP(uint8_t, CONV_U8, fl_sat_u8); break;
    case FL_DT_COUNT: FL_UNREACHABLE();
    }
    kout(out, &r);
    return FL_OK;
}

FlStatus fl_kernel_cast_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, FlTensor *dx) {
    if (khas(e, "cast_grad", "X", x) || khas(e, "cast_grad", "Out@GRAD", dout)) return FL_ERROR;
    if (!fl_tensor_same_shape(x, dout))
        return fl_err(e, "cast_grad: X %s and Out@GRAD %s must have the same shape",
                      fl_tensor_shape(x).s, fl_tensor_shape(dout).s);
    if (!dx) return FL_OK;
    return fl_kernel_cast(e, dout, x->dtype, dx);
}

/* ---- fill_zeros_like ---- */

FlStatus fl_kernel_fill_zeros_like(FlErr *e, const FlTensor *x, FlTensor *out) {
    return fl_tensor_alloc_like(e, out, x, x->dtype);
}
