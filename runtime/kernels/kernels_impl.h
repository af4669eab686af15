/* kernels_impl.h: helpers shared by the kernel sources of runtime/kernels/. Never included
 * from outside this folder.
 *
 * Typed code: a kernel family writes its per-dtype loops once in a template file (*_t.inc) in
 * terms of T (the element type) and S(name) (name suffixed _f32 / _f64), and instantiates it
 * for float and double with:
 *     #define FL_TMPL "family_t.inc"
 *     #include "tmpl.h"
 * Short elementwise loops use macros instead (elementwise.c, activation.c).
 */
#ifndef FL_KERNELS_IMPL_H
#define FL_KERNELS_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "runtime/half.h"
#include "runtime/kernels/kernels.h"
#include "runtime/tensor.h"

/* Puts a finished result into an output: the output's previous tensor is released, then the
 * result moves in (tmp becomes empty). out NULL: the result is dropped. */
static inline void kout(FlTensor *out, FlTensor *tmp) {
    if (out) {
        fl_tensor_fini(out);
        *out = *tmp;
        fl_tensor_init(tmp);
    } else {
        fl_tensor_fini(tmp);
    }
}

static inline bool kis_float(FlDType t) { return t == FL_DT_FLOAT32 || t == FL_DT_FLOAT64; }
static inline bool kis_int(FlDType t) { return t == FL_DT_INT32 || t == FL_DT_INT64; }
static inline bool kis_num(FlDType t) { return kis_float(t) || kis_int(t); }

/* Integer +, - and * of the kernels (int32 and int64 both through int64): two's complement wrap,
 * as Go's, computed in uint64 because C leaves signed overflow undefined. The low 32 bits of the
 * result are the int32 one, which the store truncates to (GCC: modulo 2^32). */
static inline int64_t kadd_i(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t ksub_i(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t kmul_i(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* The input must hold data: a program may leave an input without a value (an absent optional
 * slot, a gradient op built by hand), so this is an error naming the op, never an abort. */
/* Frees every tensor of a result set (an error after some were allocated). */
static inline void kfini_all(FlTensor *r, int n) {
    for (int i = 0; i < n; i++) fl_tensor_fini(&r[i]);
}

static inline FlStatus khas(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    return t && t->buf ? FL_OK : fl_err(e, "%s: input %s has no value", op, slot);
}
/* An output the kernel cannot do without (NULL: the program did not ask for it). */
static inline FlStatus kwant(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    return t ? FL_OK : fl_err(e, "%s: output %s is required", op, slot);
}
/* The input must hold data (khas) and be float. */
static inline FlStatus kneed_float(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (!kis_float(t->dtype))
        return fl_err(e, "%s: %s %s has dtype %s; float32 or float64 expected", op, slot,
                      fl_tensor_shape(t).s, fl_dtype_name(t->dtype));
    return FL_OK;
}
static inline FlStatus kneed_num(FlErr *e, const char *op, const char *slot, const FlTensor *t) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (!kis_num(t->dtype))
        return fl_err(e, "%s: %s %s has dtype %s; a numeric dtype expected", op, slot,
                      fl_tensor_shape(t).s, fl_dtype_name(t->dtype));
    return FL_OK;
}
/* b must have a's dtype. */
static inline FlStatus ksame_dtype(FlErr *e, const char *op, const char *an, const FlTensor *a,
                                   const char *bn, const FlTensor *b) {
    if (khas(e, op, bn, b)) return FL_ERROR;
    if (a->dtype != b->dtype)
        return fl_err(e, "%s: %s %s is %s but %s %s is %s", op, an, fl_tensor_shape(a).s,
                      fl_dtype_name(a->dtype), bn, fl_tensor_shape(b).s, fl_dtype_name(b->dtype));
    return FL_OK;
}
/* b must have a's shape (and dtype). */
static inline FlStatus ksame(FlErr *e, const char *op, const char *an, const FlTensor *a,
                             const char *bn, const FlTensor *b) {
    if (ksame_dtype(e, op, an, a, bn, b)) return FL_ERROR;
    if (!fl_tensor_same_shape(a, b))
        return fl_err(e, "%s: %s %s and %s %s must have the same shape", op, an,
                      fl_tensor_shape(a).s, bn, fl_tensor_shape(b).s);
    return FL_OK;
}
/* fl_tensor_alloc with the op's name in front of a failure's message. */
static inline FlStatus kalloc(FlErr *e, const char *op, FlTensor *t, FlDType dtype, int ndim,
                              const int64_t *ne) {
    FlErr sub;
    if (fl_tensor_alloc(&sub, t, dtype, ndim, ne)) return fl_err(e, "%s: %s", op, sub.msg);
    return FL_OK;
}
static inline FlStatus kalloc_like(FlErr *e, const char *op, FlTensor *t, const FlTensor *like) {
    return kalloc(e, op, t, like->dtype, like->ndim, like->ne);
}
/* kalloc without the zero fill (fl_tensor_alloc_uninit), for an output the kernel then writes
 * in full (GEMM results, elementwise and unary outputs, optimizer updates): a [128, 512]
 * activation or a [784, 512] weight gradient per op and step, whose memset was measurable
 * (tests/bench/bench_train.sh). */
static inline FlStatus kalloc_raw(FlErr *e, const char *op, FlTensor *t, FlDType dtype, int ndim,
                                  const int64_t *ne) {
    FlErr sub;
    if (fl_tensor_alloc_uninit(&sub, t, dtype, ndim, ne)) return fl_err(e, "%s: %s", op, sub.msg);
    return FL_OK;
}
static inline FlStatus kalloc_raw_like(FlErr *e, const char *op, FlTensor *t,
                                       const FlTensor *like) {
    return kalloc_raw(e, op, t, like->dtype, like->ndim, like->ne);
}
/* Normalises an axis in [-ndim, ndim) to [0, ndim); -1 (as an int) when out of range. */
static inline int kaxis(int axis, int ndim) {
    if (axis < -ndim || axis >= ndim) return -1;
    return axis < 0 ? axis + ndim : axis;
}
static inline int64_t kprod(const int64_t *ne, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= ne[i];
    return p;
}
/* The dims of x without axis ax into ne (argmax, argmin): their count, [1] when none is left. */
static inline int kdims_without(const FlTensor *x, int ax, int64_t *ne) {
    int nd = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != ax) ne[nd++] = x->ne[i];
    if (nd == 0) ne[nd++] = 1;
    return nd;
}
/* A scalar input (exactly one element) read as double. */
static inline FlStatus kscalar(FlErr *e, const char *op, const char *slot, const FlTensor *t,
                               double *v) {
    if (khas(e, op, slot, t)) return FL_ERROR;
    if (fl_tensor_numel(t) != 1)
        return fl_err(e, "%s: %s %s must hold exactly one element", op, slot, fl_tensor_shape(t).s);
    *v = fl_tensor_get(t, 0);
    return FL_OK;
}

/* ---- conv2d and pool2d shapes (conv.c), shared with the oneDNN paths (dnnl.c) ----
 * ConvDims: Input [N, C, H, W], Filter [M, Cg, kh, kw] in `groups` groups (Cg = C / groups,
 * Mg = M / groups), Output [N, M, Ho, Wo]; strides, paddings, dilations (1 = none).
 * PoolDims: X viewed as NC images of H x W; the window, strides and (left) paddings after
 * global_pooling is applied; Ho, Wo already rounded as ceil_mode says. */
typedef struct ConvDims {
    int64_t N, C, H, W, M, kh, kw, Ho, Wo, groups, Cg, Mg;
    int64_t sh, sw, ph, pw, dh, dw;
} ConvDims;

typedef struct PoolDims {
    int64_t NC, H, W, Ho, Wo, kh, kw, sh, sw, ph, pw;
    FlPoolType type;
    bool exclusive;
} PoolDims;

/* The window of output cell (oh, ow), clipped to the image: rows [h0, h1), cols [w0, w1). */
static inline void pool_window(const PoolDims *p, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1,
                               int64_t *w0, int64_t *w1) {
    int64_t hs = oh * p->sh - p->ph, ws = ow * p->sw - p->pw;
    int64_t he = hs + p->kh, we = ws + p->kw;
    *h0 = hs < 0 ? 0 : hs;
    *w0 = ws < 0 ? 0 : ws;
    *h1 = he > p->H ? p->H : he;
    *w1 = we > p->W ? p->W : we;
}

/* The divisor of an average window: its non-padding cells (exclusive) or kh * kw. */
static inline double pool_count(const PoolDims *p, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    if (!p->exclusive) return (double)(p->kh * p->kw);
    int64_t n = (h1 - h0) * (w1 - w0);
    return n > 0 ? (double)n : 1;
}

/* pool2d's loops on int8 (t FL_DT_INT8) or uint8 data (quant_int8.c): max, or the average
 * rounded to nearest with ties to even; x and o hold p's NC images. */
void kpool_int8(const PoolDims *p, FlDType t, const void *x, void *o);

/* ---- 2-D and 3-D convolution and pooling shapes (conv3.c), shared with dnnl.c ----
 * ConvNd: Input [N, C, in...], Filter [M, Cg, k...] in `groups` groups, Output [N, M, out...]
 * over nsp spatial dims (2 or 3, the outermost first), with strides s, paddings p (both sides)
 * and dilations d (1 = none). PoolNd: X [N, C, in...] pooled to [N, C, out...] with windows k,
 * strides s and left paddings p (global pooling and ceil_mode already applied to k, p and out);
 * adaptive: window i of a dim spans [floor(i*in/out), ceil((i+1)*in/out)) and k, s, p are
 * unused. */
typedef struct ConvNd {
    int nsp;
    int64_t N, C, M, groups, Cg, Mg;
    int64_t in[3], k[3], out[3], s[3], p[3], d[3];
} ConvNd;

typedef struct PoolNd {
    int nsp;
    int64_t N, C;
    int64_t in[3], out[3], k[3], s[3], p[3];
    FlPoolType type;
    bool exclusive, adaptive;
} PoolNd;

/* ---- oneDNN fast paths (dnnl.c) ----
 * float32, NCHW tensors as the kernels store them. Each returns true when it computed the
 * result, false when oneDNN is switched off (environment FL_DNNL=0), does not take the shape or
 * failed; the caller then runs its own kernel (on outputs that may hold anything by then: a
 * kernel that accumulates zeroes them first). Outputs are written whole. Primitives are cached per shape and attributes
 * (a steady training step creates none); any thread may call them at once. */
bool kdnnl_conv(const ConvDims *d, const float *in, const float *w, float *out);
/* din / dw NULL: not wanted. Both are written whole. */
bool kdnnl_conv_grad(const ConvDims *d, const float *in, const float *w, const float *dout,
                     float *din, float *dw);
/* x is [N, C, H, W] with N * C == p->NC. */
bool kdnnl_pool(const PoolDims *p, int64_t N, const float *x, float *out);
bool kdnnl_pool_grad(const PoolDims *p, int64_t N, const float *x, const float *dout, float *dx);
/* The same for any ConvNd / PoolNd (2 or 3 spatial dims; not adaptive pooling). */
bool kdnnl_conv_nd(const ConvNd *d, const float *in, const float *w, float *out);
bool kdnnl_conv_nd_grad(const ConvNd *d, const float *in, const float *w, const float *dout, float *din,
                        float *dw);
bool kdnnl_pool_nd(const PoolNd *p, const float *x, float *out);
bool kdnnl_pool_nd_grad(const PoolNd *p, const float *x, const float *dout, float *dx);

/* One product by oneDNN's sgemm on the calling thread (same contract as kgemm_f32's fast path);
 * false when oneDNN is off or refused the call. */
bool kdnnl_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                 int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* oneDNN's ISA on this CPU (the CPU's, capped by ONEDNN_MAX_CPU_ISA) as its name, and its
 * vectors in *isa; NULL when oneDNN is off (FL_DNNL=0 or no engine). */
const char *kdnnl_isa(FlIsa *isa);

/* Notes once per process that a kernel whose rounding depends on the machine ran (OpenBLAS's or
 * oneDNN's sgemm, a oneDNN primitive): with FL_KERNEL_MARKS=DIR and FL_TEST_NAME=NAME in the
 * environment (ctest gives every test its name; scripts/test.sh the folder), it creates DIR/NAME,
 * so that scripts/test_kernels.sh runs under each kernel just the tests a kernel can change
 * (docs/kernels.md, "Same results on every CPU"). Otherwise it does nothing. */
void kmark_kernel_used(void);

/* ---- GEMM (gemm.c) ----
 * C[M,N] = alpha * op(A) @ op(B) + beta * C, row-major, op = transpose when ta / tb; lda etc.
 * are the row strides of the matrices as stored. beta == 0 ignores C's old contents. `fast`
 * selects the process's GEMM library (float32; fl_gemm_info) instead of the plain loops. */
void kgemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
               bool fast);
void kgemm_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double *A,
               int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc,
               bool fast);

/* ---- broadcasting (elementwise.c) ----
 * The output shape of an elementwise op and, per output dim, the element stride into X and Y
 * (0 where that operand is broadcast). Adjacent dims that are contiguous in all three are
 * merged, so the innermost run is as long as possible. */
typedef struct KBcast {
    int ondim; /* the output's rank and shape, as the op reports it */
    int64_t one[FL_MAX_DIMS];
    int nd; /* the merged iteration space */
    int64_t ne[FL_MAX_DIMS], sx[FL_MAX_DIMS], sy[FL_MAX_DIMS];
} KBcast;
FlStatus kbcast_plan(FlErr *e, const char *op, const FlTensor *x, const FlTensor *y, int axis,
                     KBcast *b) FL_WARN_UNUSED;
/* Calls fn once per innermost run: offsets (in elements) into X, Y and Out, the run length and
 * the X/Y strides within the run (Out's is 1). */
typedef void (*KRunFn)(void *ctx, int64_t xo, int64_t yo, int64_t oo, int64_t n, int64_t sx,
                       int64_t sy);
void kbcast_run(const KBcast *b, KRunFn fn, void *ctx);

#endif
