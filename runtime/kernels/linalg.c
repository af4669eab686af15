/* linalg.c: mul and matmul, forward and backward, each as one routine with a `fast` switch:
 * the public kernel passes fast = true (cblas_sgemm for float32), the _ref twin fast = false
 * (the plain loops of gemm.c). Gradients are GEMMs too, so the same switch covers them. */
#include "runtime/kernels/kernels_impl.h"

static void gemm(FlDType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                 const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C,
                 int64_t ldc, bool fast) {
    if (dt == FL_DT_FLOAT32)
        kgemm_f32(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc, fast);
    else
        kgemm_f64(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, fast);
}

/* ---- mul ---- */

typedef struct MulDims {
    int64_t M, K, N;
    int ondim;
    int64_t one[FL_MAX_DIMS];
} MulDims;

static FlStatus mul_dims(FlErr *e, const char *op, const FlTensor *x, const FlTensor *y, int xnc,
                         int ync, MulDims *d) {
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Y", y)) return FL_ERROR;
    if (xnc < 1 || xnc >= x->ndim)
        return fl_err(e, "%s: x_num_col_dims (%d) must be in [1, %d) for X %s", op, xnc, x->ndim,
                      fl_tensor_shape(x).s);
    if (ync < 1 || ync >= y->ndim)
        return fl_err(e, "%s: y_num_col_dims (%d) must be in [1, %d) for Y %s", op, ync, y->ndim,
                      fl_tensor_shape(y).s);
    d->M = kprod(x->ne, 0, xnc);
    d->K = kprod(x->ne, xnc, x->ndim);
    int64_t k2 = kprod(y->ne, 0, ync);
    d->N = kprod(y->ne, ync, y->ndim);
    if (d->K != k2)
        return fl_err(e, "%s: X %s and Y %s: X's columns (%lld) differ from Y's rows (%lld)", op,
                      fl_tensor_shape(x).s, fl_tensor_shape(y).s, (long long)d->K, (long long)k2);
    d->ondim = xnc + y->ndim - ync;
    if (d->ondim > FL_MAX_DIMS)
        return fl_err(e, "%s: X %s and Y %s: the result would have %d dims (at most %d)", op,
                      fl_tensor_shape(x).s, fl_tensor_shape(y).s, d->ondim, FL_MAX_DIMS);
    for (int i = 0; i < xnc; i++) d->one[i] = x->ne[i];
    for (int i = ync; i < y->ndim; i++) d->one[xnc + i - ync] = y->ne[i];
    return FL_OK;
}

static FlStatus mul(FlErr *e, const FlTensor *x, const FlTensor *y, int xnc, int ync,
                    FlTensor *out, bool fast) {
    MulDims d;
    if (mul_dims(e, "mul", x, y, xnc, ync, &d)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "mul", &r, x->dtype, d.ondim, d.one)) return FL_ERROR; /* GEMM fills it */
    gemm(x->dtype, false, false, d.M, d.N, d.K, 1, fl_tensor_data(x), d.K, fl_tensor_data(y), d.N,
         0, fl_tensor_data(&r), d.N, fast);
    kout(out, &r);
    return FL_OK;
}

static FlStatus mul_grad(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *dout,
                         int xnc, int ync, FlTensor *dx, FlTensor *dy, bool fast) {
    const char *op = "mul_grad";
    MulDims d;
    if (mul_dims(e, op, x, y, xnc, ync, &d) || ksame_dtype(e, op, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    if (dout->ndim != d.ondim || memcmp(dout->ne, d.one, sizeof(int64_t) * (size_t)d.ondim))
        return fl_err(e, "%s: Out@GRAD %s differs from the output shape %s of X %s and Y %s", op,
                      fl_tensor_shape(dout).s, fl_shape_str(d.ondim, d.one).s,
                      fl_tensor_shape(x).s, fl_tensor_shape(y).s);
    FlTensor rx = FL_TENSOR_INIT, ry = FL_TENSOR_INIT;
    if (dx && kalloc_raw_like(e, op, &rx, x)) return FL_ERROR;
    if (dy && kalloc_raw_like(e, op, &ry, y)) {
        fl_tensor_fini(&rx);
        return FL_ERROR;
    }
    if (dx) /* dX = dOut @ Y^T */
        gemm(x->dtype, false, true, d.M, d.K, d.N, 1, fl_tensor_data(dout), d.N, fl_tensor_data(y),
             d.N, 0, fl_tensor_data(&rx), d.K, fast);
    if (dy) /* dY = X^T @ dOut */
        gemm(x->dtype, true, false, d.K, d.N, d.M, 1, fl_tensor_data(x), d.K, fl_tensor_data(dout),
             d.N, 0, fl_tensor_data(&ry), d.N, fast);
    if (dx) kout(dx, &rx);
    if (dy) kout(dy, &ry);
    return FL_OK;
}

FlStatus fl_kernel_mul(FlErr *e, const FlTensor *x, const FlTensor *y, int x_num_col_dims,
                       int y_num_col_dims, FlTensor *out) {
    return mul(e, x, y, x_num_col_dims, y_num_col_dims, out, true);
}
FlStatus fl_kernel_mul_ref(FlErr *e, const FlTensor *x, const FlTensor *y, int x_num_col_dims,
                           int y_num_col_dims, FlTensor *out) {
    return mul(e, x, y, x_num_col_dims, y_num_col_dims, out, false);
}
FlStatus fl_kernel_mul_grad(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *dout,
                            int x_num_col_dims, int y_num_col_dims, FlTensor *dx, FlTensor *dy) {
    return mul_grad(e, x, y, dout, x_num_col_dims, y_num_col_dims, dx, dy, true);
}
FlStatus fl_kernel_mul_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *y,
                                const FlTensor *dout, int x_num_col_dims, int y_num_col_dims,
                                FlTensor *dx, FlTensor *dy) {
    return mul_grad(e, x, y, dout, x_num_col_dims, y_num_col_dims, dx, dy, false);
}

/* ---- matmul ---- */

typedef struct MatDims {
    int64_t M, K, N, batch;
    int64_t xr, xc, yr, yc; /* X's and Y's matrices as stored */
    int64_t xstride, ystride; /* elements between batches; 0 when broadcast */
    int ondim;
    int64_t one[FL_MAX_DIMS];
} MatDims;

static FlStatus mat_dims(FlErr *e, const char *op, const FlTensor *x, const FlTensor *y, bool tx,
                         bool ty, MatDims *d) {
    if (kneed_float(e, op, "X", x) || ksame_dtype(e, op, "X", x, "Y", y)) return FL_ERROR;
    int rx = x->ndim, ry = y->ndim;
    if (rx < 2 || ry < 2)
        return fl_err(e, "%s: X %s and Y %s must both have rank 2 or more", op,
                      fl_tensor_shape(x).s, fl_tensor_shape(y).s);
    d->xr = x->ne[rx - 2], d->xc = x->ne[rx - 1];
    d->yr = y->ne[ry - 2], d->yc = y->ne[ry - 1];
    d->M = tx ? d->xc : d->xr;
    d->K = tx ? d->xr : d->xc;
    int64_t k2 = ty ? d->yc : d->yr;
    d->N = ty ? d->yr : d->yc;
    if (d->K != k2)
        return fl_err(e, "%s: X %s and Y %s (transpose_X %s, transpose_Y %s): the inner sizes "
                         "differ (%lld and %lld)",
                      op, fl_tensor_shape(x).s, fl_tensor_shape(y).s, tx ? "true" : "false",
                      ty ? "true" : "false", (long long)d->K, (long long)k2);
    if (rx > 2 && ry > 2 &&
        (rx != ry || memcmp(x->ne, y->ne, sizeof(int64_t) * (size_t)(rx - 2))))
        return fl_err(e, "%s: X %s and Y %s: the batch dims differ", op, fl_tensor_shape(x).s,
                      fl_tensor_shape(y).s);
    const FlTensor *big = rx >= ry ? x : y;
    d->ondim = big->ndim;
    for (int i = 0; i < big->ndim - 2; i++) d->one[i] = big->ne[i];
    d->one[d->ondim - 2] = d->M;
    d->one[d->ondim - 1] = d->N;
    d->batch = kprod(big->ne, 0, big->ndim - 2);
    d->xstride = rx > 2 ? d->xr * d->xc : 0;
    d->ystride = ry > 2 ? d->yr * d->yc : 0;
    return FL_OK;
}

static FlStatus matmul(FlErr *e, const FlTensor *x, const FlTensor *y, bool tx, bool ty,
                       double alpha, FlTensor *out, bool fast) {
    MatDims d;
    if (mat_dims(e, "matmul", x, y, tx, ty, &d)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (kalloc_raw(e, "matmul", &r, x->dtype, d.ondim, d.one)) return FL_ERROR;
    size_t es = fl_dtype_size(x->dtype);
    const char *xp = fl_tensor_data(x), *yp = fl_tensor_data(y);
    char *op = fl_tensor_data(&r);
    for (int64_t b = 0; b < d.batch; b++)
        gemm(x->dtype, tx, ty, d.M, d.N, d.K, alpha, xp + (size_t)(b * d.xstride) * es, d.xc,
             yp + (size_t)(b * d.ystride) * es, d.yc, 0, op + (size_t)(b * d.M * d.N) * es, d.N,
             fast);
    kout(out, &r);
    return FL_OK;
}

static FlStatus matmul_grad(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *dout,
                            bool tx, bool ty, double alpha, FlTensor *dx, FlTensor *dy, bool fast) {
    const char *opn = "matmul_grad";
    MatDims d;
    if (mat_dims(e, opn, x, y, tx, ty, &d) || ksame_dtype(e, opn, "X", x, "Out@GRAD", dout))
        return FL_ERROR;
    if (dout->ndim != d.ondim || memcmp(dout->ne, d.one, sizeof(int64_t) * (size_t)d.ondim))
        return fl_err(e, "%s: Out@GRAD %s differs from the output shape %s of X %s and Y %s", opn,
                      fl_tensor_shape(dout).s, fl_shape_str(d.ondim, d.one).s,
                      fl_tensor_shape(x).s, fl_tensor_shape(y).s);
    FlTensor rx = FL_TENSOR_INIT, ry = FL_TENSOR_INIT;
    if (dx && kalloc_raw_like(e, opn, &rx, x)) return FL_ERROR;
    if (dy && kalloc_raw_like(e, opn, &ry, y)) {
        fl_tensor_fini(&rx);
        return FL_ERROR;
    }
    size_t es = fl_dtype_size(x->dtype);
    if (d.batch == 0) { /* no batch writes them: a broadcast operand's gradient is an empty sum */
        if (dx) memset(fl_tensor_data(&rx), 0, fl_tensor_nbytes(&rx));
        if (dy) memset(fl_tensor_data(&ry), 0, fl_tensor_nbytes(&ry));
    }
    const char *xb = fl_tensor_data(x), *yb = fl_tensor_data(y), *gb = fl_tensor_data(dout);
    char *dxb = dx ? fl_tensor_data(&rx) : NULL, *dyb = dy ? fl_tensor_data(&ry) : NULL;
    int64_t M = d.M, N = d.N, K = d.K;
    for (int64_t b = 0; b < d.batch; b++) {
        const char *X = xb + (size_t)(b * d.xstride) * es, *Y = yb + (size_t)(b * d.ystride) * es;
        const char *G = gb + (size_t)(b * M * N) * es;
        if (dxb) {
            char *DX = dxb + (size_t)(b * d.xstride) * es;
            double beta = d.xstride == 0 && b > 0 ? 1 : 0; /* a broadcast X sums over batches */
            if (!tx && !ty) gemm(x->dtype, false, true, M, K, N, alpha, G, N, Y, N, beta, DX, K, fast);
            else if (!tx && ty) gemm(x->dtype, false, false, M, K, N, alpha, G, N, Y, K, beta, DX, K, fast);
            else if (tx && !ty) gemm(x->dtype, false, true, K, M, N, alpha, Y, N, G, N, beta, DX, M, fast);
            else gemm(x->dtype, true, true, K, M, N, alpha, Y, K, G, N, beta, DX, M, fast);
        }
        if (dyb) {
            char *DY = dyb + (size_t)(b * d.ystride) * es;
            double beta = d.ystride == 0 && b > 0 ? 1 : 0;
            if (!tx && !ty) gemm(x->dtype, true, false, K, N, M, alpha, X, K, G, N, beta, DY, N, fast);
            else if (!tx && ty) gemm(x->dtype, true, false, N, K, M, alpha, G, N, X, K, beta, DY, K, fast);
            else if (tx && !ty) gemm(x->dtype, false, false, K, N, M, alpha, X, M, G, N, beta, DY, N, fast);
            else gemm(x->dtype, true, true, N, K, M, alpha, G, N, X, M, beta, DY, K, fast);
        }
    }
    if (dx) kout(dx, &rx);
    if (dy) kout(dy, &ry);
    return FL_OK;
}

FlStatus fl_kernel_matmul(FlErr *e, const FlTensor *x, const FlTensor *y, bool transpose_x,
                          bool transpose_y, double alpha, FlTensor *out) {
    return matmul(e, x, y, transpose_x, transpose_y, alpha, out, true);
}
FlStatus fl_kernel_matmul_ref(FlErr *e, const FlTensor *x, const FlTensor *y, bool transpose_x,
                              bool transpose_y, double alpha, FlTensor *out) {
    return matmul(e, x, y, transpose_x, transpose_y, alpha, out, false);
}
FlStatus fl_kernel_matmul_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                               const FlTensor *dout, bool transpose_x, bool transpose_y,
                               double alpha, FlTensor *dx, FlTensor *dy) {
    return matmul_grad(e, x, y, dout, transpose_x, transpose_y, alpha, dx, dy, true);
}
FlStatus fl_kernel_matmul_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *y,
                                   const FlTensor *dout, bool transpose_x, bool transpose_y,
                                   double alpha, FlTensor *dx, FlTensor *dy) {
    return matmul_grad(e, x, y, dout, transpose_x, transpose_y, alpha, dx, dy, false);
}
