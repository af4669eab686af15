/* ctr.c: the CTR feature ops (kernels_ctr.h): hash, Fluid's feature hashing by XXH64, and
 * continuous_value_model with Fluid's gradient. */
#include "runtime/kernels/kernels_ctr.h"

#include <math.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

/* ---- XXH64 (Yann Collet's xxHash, 64-bit variant: the specification's primes and rounds) ---- */

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static uint64_t rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

static uint64_t read_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t round1(uint64_t acc, uint64_t lane) { return rotl(acc + lane * P2, 31) * P1; }
static uint64_t merge1(uint64_t h, uint64_t acc) { return (h ^ round1(0, acc)) * P1 + P4; }

uint64_t fl_kernel_xxh64(const void *data, size_t n, uint64_t seed) {
    const unsigned char *p = data, *end = p + n;
    uint64_t h;
    if (n >= 32) {
        uint64_t v[4] = {seed + P1 + P2, seed + P2, seed, seed - P1};
        for (; end - p >= 32; p += 32)
            for (int k = 0; k < 4; k++) v[k] = round1(v[k], read_le(p + 8 * k, 8));
        h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
        for (int k = 0; k < 4; k++) h = merge1(h, v[k]);
    } else {
        h = seed + P5;
    }
    h += (uint64_t)n;
    for (; end - p >= 8; p += 8) h = rotl(h ^ round1(0, read_le(p, 8)), 27) * P1 + P4;
    if (end - p >= 4) {
        h = rotl(h ^ read_le(p, 4) * P1, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++) h = rotl(h ^ *p * P5, 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ (h >> 32);
}

FlStatus fl_kernel_hash(FlErr *e, const FlTensor *x, int64_t num_hash, int64_t mod_by, FlTensor *out) {
    const char *op = "hash";
    if (kwant(e, op, "Out", out) || khas(e, op, "X", x)) return FL_ERROR;
    if (!kis_int(x->dtype) || x->ndim != 2)
        return fl_err(e, "%s: X %s %s must be int32 or int64 [N, K]", op, fl_dtype_name(x->dtype), fl_tensor_shape(x).s);
    if (num_hash < 1 || mod_by < 1)
        return fl_err(e, "%s: num_hash (%lld) and mod_by (%lld) must be >= 1", op, (long long)num_hash, (long long)mod_by);
    int64_t N = x->ne[0], K = x->ne[1];
    size_t w = fl_dtype_size(x->dtype);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &o, x->dtype, 3, (int64_t[]){N, num_hash, 1})) return FL_ERROR;
    const unsigned char *px = fl_tensor_data(x);
    void *po = fl_tensor_data(&o);
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < num_hash; i++) {
            uint64_t h = fl_kernel_xxh64(px + (size_t)(n * K) * w, (size_t)K * w, (uint64_t)i) % (uint64_t)mod_by;
            if (x->dtype == FL_DT_INT32) ((int32_t *)po)[n * num_hash + i] = (int32_t)h;
            else ((int64_t *)po)[n * num_hash + i] = (int64_t)h;
        }
    kout(out, &o);
    return FL_OK;
}

/* ---- continuous_value_model ---- */

static FlStatus check_cvm_x(FlErr *e, const char *op, const FlTensor *x) {
    if (kneed_float(e, op, "X", x)) return FL_ERROR;
    if (x->ndim != 2 || x->ne[1] < 2)
        return fl_err(e, "%s: X %s must be [N, D] with D >= 2 (show and click first)", op, fl_tensor_shape(x).s);
    return FL_OK;
}

FlStatus fl_kernel_cvm(FlErr *e, const FlTensor *x, bool use_cvm, FlTensor *y) {
    const char *op = "cvm";
    if (kwant(e, op, "Y", y) || check_cvm_x(e, op, x)) return FL_ERROR;
    int64_t N = x->ne[0], D = x->ne[1], skip = use_cvm ? 0 : 2, W = D - skip;
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw(e, op, &o, x->dtype, 2, (int64_t[]){N, W})) return FL_ERROR;
    for (int64_t n = 0; n < N; n++) {
        for (int64_t j = 0; j < W; j++) fl_tensor_set(&o, n * W + j, fl_tensor_get(x, n * D + j + skip));
        if (use_cvm) {
            double show = log(fl_tensor_get(x, n * D) + 1);
            fl_tensor_set(&o, n * W, show);
            fl_tensor_set(&o, n * W + 1, log(fl_tensor_get(x, n * D + 1) + 1) - show);
        }
    }
    kout(y, &o);
    return FL_OK;
}

FlStatus fl_kernel_cvm_grad(FlErr *e, const FlTensor *x, const FlTensor *cvm, const int64_t *off, int64_t nseq,
                            const FlTensor *dy, bool use_cvm, FlTensor *dx) {
    const char *op = "cvm_grad";
    if (!dx) return FL_OK;
    if (check_cvm_x(e, op, x) || kneed_float(e, op, "CVM", cvm) || ksame_dtype(e, op, "X", x, "CVM", cvm) ||
        kneed_float(e, op, "Y@GRAD", dy) || ksame_dtype(e, op, "X", x, "Y@GRAD", dy))
        return FL_ERROR;
    int64_t N = x->ne[0], D = x->ne[1], skip = use_cvm ? 0 : 2, W = D - skip, S = off ? nseq : N;
    if (dy->ndim != 2 || dy->ne[0] != N || dy->ne[1] != W)
        return fl_err(e, "%s: Y@GRAD %s must be [%lld, %lld] (X %s%s)", op, fl_tensor_shape(dy).s, (long long)N,
                      (long long)W, fl_tensor_shape(x).s, use_cvm ? "" : " without show and click");
    if (cvm->ndim != 2 || cvm->ne[0] != S || cvm->ne[1] != 2)
        return fl_err(e, "%s: CVM %s must be [%lld, 2]: a show and a click per %s of X %s", op, fl_tensor_shape(cvm).s,
                      (long long)S, off ? "sequence" : "row", fl_tensor_shape(x).s);
    FlTensor o = FL_TENSOR_INIT;
    if (kalloc_raw_like(e, op, &o, x)) return FL_ERROR;
    for (int64_t s = 0, n = 0; s < S; s++) {
        int64_t end = off ? off[s + 1] : n + 1;
        for (; n < end; n++) {
            for (int64_t j = 0; j < W; j++) fl_tensor_set(&o, n * D + j + skip, fl_tensor_get(dy, n * W + j));
            fl_tensor_set(&o, n * D, fl_tensor_get(cvm, s * 2));
            fl_tensor_set(&o, n * D + 1, fl_tensor_get(cvm, s * 2 + 1));
        }
    }
    kout(dx, &o);
    return FL_OK;
}
