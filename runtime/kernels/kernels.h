/* kernels.h: the compute kernels of fluidc, forward and backward, one function per op.
 *
 * Op names, slots and attributes follow Paddle Fluid; docs/kernels.md describes each op for
 * users. This header is the contract for the executor, which calls these functions by name.
 *
 * Conventions (they hold for every function below unless its comment says otherwise):
 *
 *  - Form: FlStatus fl_kernel_<op>(FlErr *e, <inputs>, <attributes>, <outputs>). Inputs are
 *    `const FlTensor *` and are only read. Outputs are `FlTensor *`: on success each output is
 *    REPLACED WHOLE by a newly allocated tensor of the right dtype and shape; whatever the output
 *    held before is released after the computation, so an output may be the very struct that
 *    was passed as an input. On error (FL_ERROR, message in *e) no output is touched.
 *  - Gradient kernels fl_kernel_<op>_grad take the forward inputs and/or outputs they need and
 *    the gradient of each forward output (dOut; "d" prefix), and produce the gradient of each
 *    forward input. A NULL gradient output pointer means that gradient is not needed and is not
 *    computed. Gradients have the shape and dtype of the forward input they belong to.
 *  - Dtypes: "F" means float32 or float64 (float32 is the main type; float64 exists for
 *    gradient checks). All float inputs of one op must share one dtype; the outputs take it.
 *    "N" means any numeric dtype (float32, float64, int32, int64).
 *  - Errors: a shape or dtype mismatch returns FL_ERROR with a message that starts with the op
 *    name and names the input shapes, e.g.
 *      "mul: X [128, 784] and Y [10, 512]: X's columns (784) differ from Y's rows (10)".
 *    Allocation failure of an output is an error too (never an abort). Passing an empty tensor
 *    (no buffer) as an input is a bug in the caller (asserted).
 *  - Thread-safety: kernels are pure functions of their arguments with no global state; any
 *    number of threads may call any kernels at once, on shared inputs (inputs are only read).
 *    The optimizer kernels' in-place mode is the one exception; see there. Large kernels split
 *    their work over the kernel pool the calling thread has bound (runtime/kernels/par.h: GEMMs
 *    in blocks, element-wise loops, optimizer updates, mean, conv2d's im2col images, oneDNN's
 *    OpenMP team); without a bound pool they run on the calling thread alone.
 *  - Fast paths: GEMM-shaped ops (mul, matmul, conv2d and their gradients) use OpenBLAS
 *    (cblas_sgemm) for float32. Each also has a _ref twin with the same signature: the plain C
 *    reference kernel (used for float64 and by the tests that check fast == reference).
 *    elementwise_add and its gradient (a layer's bias) have a fast path and a _ref twin too.
 *  - Negative axes count from the end (axis -1 = last dimension) wherever an axis is taken,
 *    except elementwise ops' `axis`, whose -1 means numpy broadcasting (see there).
 */
#ifndef FL_KERNELS_H
#define FL_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "runtime/rows.h"
#include "runtime/tensor.h"

/* ======================================================================================
 * Creation and conversion (fill.c)
 * ====================================================================================== */

/* assign_value: Out = values (n of them, row-major) as a tensor of shape and dtype (ints:
 * truncated, saturated); ints: NULL, or the same n values exactly as integers, which an int
 * dtype takes instead (int64 values beyond 2^53). */
FlStatus fl_kernel_assign_value(FlErr *e, int ndim, const int64_t *shape, const double *values, const int64_t *ints,
                                size_t n, FlDType dtype, FlTensor *out) FL_WARN_UNUSED;
/* fill_constant: Out = a tensor of `shape` (ndim dims, each >= 0) and `dtype`, every element
 * `value` (converted: truncated for ints, != 0 for bool); exact: NULL, or value as an integer,
 * exactly, which an int dtype takes instead (int32: saturated). */
FlStatus fl_kernel_fill_constant(FlErr *e, int ndim, const int64_t *shape, double value, const int64_t *exact,
                                 FlDType dtype, FlTensor *out) FL_WARN_UNUSED;
/* fill_zeros_like: Out = zeros of X's shape and dtype. */
FlStatus fl_kernel_fill_zeros_like(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
/* uniform_random: Out[shape] (dtype F) uniform in [min, max). The values are a deterministic
 * function of (seed, offset, shape, dtype, min, max): element k of Out is element offset + k
 * (row-major) of the whole tensor, drawn by fl_rng_counter_uniform(seed, offset + k), so a slice
 * of rows made with its offset equals those rows of the whole tensor (the executor maps Paddle's
 * "seed 0 = random" to a program seed before calling).
 * Errors: min > max, a non-float dtype, offset < 0 or offset + numel overflowing. */
FlStatus fl_kernel_uniform_random(FlErr *e, int ndim, const int64_t *shape, double min, double max,
                                  uint64_t seed, int64_t offset, FlDType dtype,
                                  FlTensor *out) FL_WARN_UNUSED;
/* gaussian_random: Out[shape] (dtype F) ~ N(mean, std^2), element k from
 * fl_rng_counter_gaussian(seed, offset + k) (as above). Errors: std < 0, as above. */
FlStatus fl_kernel_gaussian_random(FlErr *e, int ndim, const int64_t *shape, double mean,
                                   double std, uint64_t seed, int64_t offset, FlDType dtype,
                                   FlTensor *out) FL_WARN_UNUSED;
/* truncated_gaussian_random: Out[shape] (dtype F) ~ N(mean, std^2) truncated to
 * [mean - 2 std, mean + 2 std], element k from fl_rng_counter_truncated(seed, offset + k) (a
 * bounded number of counter draws per element). Errors: as gaussian_random. */
FlStatus fl_kernel_truncated_gaussian_random(FlErr *e, int ndim, const int64_t *shape, double mean,
                                             double std, uint64_t seed, int64_t offset,
                                             FlDType dtype, FlTensor *out) FL_WARN_UNUSED;
/* assign: Out = a copy of X (any dtype), in a new buffer. Its gradient is assign(dOut). */
FlStatus fl_kernel_assign(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
/* cast: Out = X converted to out_dtype (any to any; to bool: != 0; float to int truncates).
 * cast_grad: dX = dOut cast back to X's dtype. */
FlStatus fl_kernel_cast(FlErr *e, const FlTensor *x, FlDType out_dtype,
                        FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_cast_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                             FlTensor *dx) FL_WARN_UNUSED;

/* ======================================================================================
 * Which library runs the float32 matrix products (gemm.c)
 * ====================================================================================== */

/* The widest vector instructions of a CPU or of a GEMM kernel, in order: SSE (128-bit), AVX
 * (256-bit, no FMA), AVX2 with FMA (256-bit), AVX-512. Each level does about twice the float
 * operations per cycle of the one before. */
typedef enum FlIsa { FL_ISA_NONE, FL_ISA_SSE, FL_ISA_AVX, FL_ISA_AVX2, FL_ISA_AVX512, FL_ISA_COUNT } FlIsa;

/* FL_GEMM_BY_SHAPE: oneDNN's sgemm for the products it runs faster, OpenBLAS's for the small
 * ones, where oneDNN's call costs more than the product (fl_gemm_library says which). */
typedef enum FlGemmPath { FL_GEMM_OPENBLAS, FL_GEMM_ONEDNN, FL_GEMM_BY_SHAPE, FL_GEMM_PATH_COUNT } FlGemmPath;

/* The by-shape rule: oneDNN for products of at least FL_GEMM_ONEDNN_MIN multiply-adds whose C
 * has more than FL_GEMM_ONEDNN_SIDE rows and columns; OpenBLAS for the rest (docs/kernels.md,
 * "Which GEMM": oneDNN ran the MLP's, the LSTM's and the im2col products 1.0-1.7x faster on an AMD
 * EPYC, OpenBLAS the products under 2^15 multiply-adds and those with 10 columns up to 7x). */
enum { FL_GEMM_ONEDNN_MIN = 1 << 19, FL_GEMM_ONEDNN_SIDE = 16 };

/* How this process runs float32 matrix products (mul, matmul, fc, the RNN cells, conv2d's
 * im2col path), decided once, on the first product, from the environment and the CPU:
 *   FL_GEMM=openblas or onednn     that library for every product;
 *   FL_DNNL=0                      OpenBLAS (oneDNN is off altogether);
 *   OPENBLAS_CORETYPE=NAME         OpenBLAS with the kernel the user named (honoured as set);
 *   otherwise (FL_GEMM=auto)       by shape (above) when OpenBLAS's kernel for this CPU is as wide
 *                                  as the CPU's vectors; oneDNN's sgemm for every product when
 *                                  OpenBLAS fell back to narrower ones (OpenBLAS 0.3.21 takes its
 *                                  SSE kernels on CPUs its table does not know: about a quarter of
 *                                  an AVX-512 CPU's speed), as oneDNN detects the CPU itself.
 * The choice depends on nothing but these and a product's shape, so a machine gives the same bits
 * run to run. docs/kernels.md ("Which GEMM") has the measurements behind the rule. */
typedef struct FlGemmInfo {
    FlGemmPath path;
    const char *kernel; /* OpenBLAS's core ("SkylakeX"), oneDNN's ISA ("avx512_core_amx"), or for
                           FL_GEMM_BY_SHAPE both ("avx512_core_bf16+Cooperlake") */
    FlIsa kernel_isa;   /* the vectors of the narrower of the kernels used */
    FlIsa cpu_isa;      /* the CPU's widest vectors */
    char why[192];      /* what decided the path, for --stats and the warning */
    bool named;         /* the user named the library: FL_GEMM=openblas|onednn, or FL_DNNL=0 */
    char error[192];    /* non-empty: the environment asks for something that cannot be (FL_GEMM
                           of an unknown value, FL_GEMM=onednn with FL_DNNL=0); the path is then
                           the auto one, and flrun refuses to run with this message */
    char kernels[64];   /* storage for `kernel` when it names two */
} FlGemmInfo;

/* The library that runs a product C[M, N] (K multiply-adds per element) under g: OpenBLAS or
 * oneDNN, never FL_GEMM_BY_SHAPE. */
FlGemmPath fl_gemm_library(const FlGemmInfo *g, int64_t M, int64_t N, int64_t K);
/* The process's choice (decided on the first call; any thread). */
const FlGemmInfo *fl_gemm_info(void);
/* The decision itself, from its inputs: FL_GEMM's and OPENBLAS_CORETYPE's values (NULL: unset),
 * OpenBLAS's core name, the CPU's vectors, and oneDNN's ISA name and vectors (dnnl_isa NULL:
 * oneDNN is off). fl_gemm_info calls it with this process's; tests with their own. */
void fl_gemm_choose(FlGemmInfo *out, const char *fl_gemm, const char *coretype, const char *openblas_core,
                    FlIsa cpu, const char *dnnl_isa, FlIsa dnnl_level);
/* The vectors of an OpenBLAS core name (FL_ISA_NONE for a name this table does not know). */
FlIsa fl_gemm_openblas_isa(const char *core);
/* "sse", "avx", "avx2", "avx512" ("none" for FL_ISA_NONE). */
const char *fl_isa_name(FlIsa isa);
/* "openblas", "onednn" or (by shape) "onednn+openblas". */
const char *fl_gemm_path_name(FlGemmPath path);
/* One line for --stats and flc calibrate, without a newline: "onednn+openblas
 * avx512_core_bf16+Cooperlake (avx512 on a CPU with avx512): by shape: ...". */
void fl_gemm_describe(const FlGemmInfo *g, FlBuf *out);
/* A warning when the products run on narrower vectors than the CPU has although the user did not
 * name the library (an OPENBLAS_CORETYPE or ONEDNN_MAX_CPU_ISA in the environment chose so), without
 * a newline; false when there is none. FL_GEMM=openblas|onednn or FL_DNNL=0 is the user's choice:
 * no warning (flrun --stats still names the kernel). */
bool fl_gemm_warning(const FlGemmInfo *g, FlBuf *out);

/* ======================================================================================
 * Matrix products (linalg.c)
 * ====================================================================================== */

/* mul: X (F, rank >= 2 or as flattened) is viewed as a matrix [prod(X.dims[:x_num_col_dims]),
 * prod(X.dims[x_num_col_dims:])], Y likewise at y_num_col_dims; Out = X_mat @ Y_mat with shape
 * X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:]. Errors: num_col_dims outside [1, rank),
 * X's columns != Y's rows, dtypes differ. */
FlStatus fl_kernel_mul(FlErr *e, const FlTensor *x, const FlTensor *y, int x_num_col_dims,
                       int y_num_col_dims, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_mul_ref(FlErr *e, const FlTensor *x, const FlTensor *y, int x_num_col_dims,
                           int y_num_col_dims, FlTensor *out) FL_WARN_UNUSED;
/* mul_grad: dX = dOut_mat @ Y_mat^T, dY = X_mat^T @ dOut_mat (reshaped to X's / Y's shapes). */
FlStatus fl_kernel_mul_grad(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *dout,
                            int x_num_col_dims, int y_num_col_dims, FlTensor *dx,
                            FlTensor *dy) FL_WARN_UNUSED;
FlStatus fl_kernel_mul_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *y,
                                const FlTensor *dout, int x_num_col_dims, int y_num_col_dims,
                                FlTensor *dx, FlTensor *dy) FL_WARN_UNUSED;

/* matmul: Out = alpha * op(X) @ op(Y), op = transpose of the last two dims when transpose_x /
 * transpose_y. X and Y (F) have rank >= 2; the dims before the last two are batch dims: equal
 * in X and Y, or one operand is 2-D and is used for every batch. Out: batch dims + [M, N].
 * Errors: rank < 2, inner sizes differ, batch dims differ. */
FlStatus fl_kernel_matmul(FlErr *e, const FlTensor *x, const FlTensor *y, bool transpose_x,
                          bool transpose_y, double alpha, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_matmul_ref(FlErr *e, const FlTensor *x, const FlTensor *y, bool transpose_x,
                              bool transpose_y, double alpha, FlTensor *out) FL_WARN_UNUSED;
/* matmul_grad: dX, dY (a 2-D operand broadcast over batches gets the sum over batches). */
FlStatus fl_kernel_matmul_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                               const FlTensor *dout, bool transpose_x, bool transpose_y,
                               double alpha, FlTensor *dx, FlTensor *dy) FL_WARN_UNUSED;
FlStatus fl_kernel_matmul_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *y,
                                   const FlTensor *dout, bool transpose_x, bool transpose_y,
                                   double alpha, FlTensor *dx, FlTensor *dy) FL_WARN_UNUSED;

/* ======================================================================================
 * Elementwise binary ops with broadcasting (elementwise.c)
 *
 * Broadcasting: with axis == -1, numpy's rule: shapes are aligned on the right and each pair
 * of dims must be equal or one of them 1; Out has the larger of each pair (either operand may
 * be broadcast). With axis >= 0, Paddle's rule: Y's dims (after dropping trailing 1s) match
 * X's dims starting at `axis` (each equal, or 1 in Y); Out has X's shape. Errors name both
 * shapes. X and Y share one dtype.
 * Gradient kernels take X, Y, dOut and the same axis and give dX, dY; a broadcast operand's
 * gradient is summed over the dims it was broadcast along.
 * ====================================================================================== */

/* add, sub, mul, div: dtype N (integer div truncates toward zero; division by integer zero is
 * an error). max, min: N. pow: F, Out = X^Y. Gradients (F only):
 *   add: dX = dOut, dY = dOut;            sub: dX = dOut, dY = -dOut
 *   mul: dX = dOut*Y, dY = dOut*X;        div: dX = dOut/Y, dY = -dOut*X/Y^2
 *   max: dX = dOut*(X > Y), dY = dOut*(X <= Y);   min: dX = dOut*(X < Y), dY = dOut*(X >= Y)
 *   pow: dX = dOut*Y*X^(Y-1), dY = dOut*X^Y*log(X) */
FlStatus fl_kernel_elementwise_add(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                   FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_sub(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                   FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_mul(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                   FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_div(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                   FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_max(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                   FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_min(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                   FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_pow(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                   FlTensor *out) FL_WARN_UNUSED;
/* floordiv: floor(X / Y); mod: X - floor(X / Y) * Y (the result has Y's sign, as in Python and
 * Paddle). Dtype N; integer division by zero is an error. No gradients. */
FlStatus fl_kernel_elementwise_floordiv(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                        FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_mod(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                   FlTensor *out) FL_WARN_UNUSED;

FlStatus fl_kernel_elementwise_add_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                                        const FlTensor *dout, int axis, FlTensor *dx,
                                        FlTensor *dy) FL_WARN_UNUSED;
/* elementwise_add and its gradient have a fast path too (any dtype; float for the gradient):
 * vectorised loops for contiguous and single-value runs, and dX / dY sharing dOut's buffer when
 * that operand is not broadcast. The _ref twins run the generic loops; tests check both agree. */
FlStatus fl_kernel_elementwise_add_ref(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                       FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_add_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *y,
                                            const FlTensor *dout, int axis, FlTensor *dx,
                                            FlTensor *dy) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_sub_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                                        const FlTensor *dout, int axis, FlTensor *dx,
                                        FlTensor *dy) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_mul_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                                        const FlTensor *dout, int axis, FlTensor *dx,
                                        FlTensor *dy) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_div_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                                        const FlTensor *dout, int axis, FlTensor *dx,
                                        FlTensor *dy) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_max_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                                        const FlTensor *dout, int axis, FlTensor *dx,
                                        FlTensor *dy) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_min_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                                        const FlTensor *dout, int axis, FlTensor *dx,
                                        FlTensor *dy) FL_WARN_UNUSED;
FlStatus fl_kernel_elementwise_pow_grad(FlErr *e, const FlTensor *x, const FlTensor *y,
                                        const FlTensor *dout, int axis, FlTensor *dx,
                                        FlTensor *dy) FL_WARN_UNUSED;

/* Comparisons: Out (bool) = X op Y elementwise, broadcasting as above; X, Y dtype N. */
FlStatus fl_kernel_less_than(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                             FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_less_equal(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                              FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_greater_than(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_greater_equal(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                                 FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_equal(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                         FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_not_equal(FlErr *e, const FlTensor *x, const FlTensor *y, int axis,
                             FlTensor *out) FL_WARN_UNUSED;
/* Logical ops: Out (bool); inputs of any dtype, nonzero = true; and/or broadcast (axis -1). */
FlStatus fl_kernel_logical_and(FlErr *e, const FlTensor *x, const FlTensor *y,
                               FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_logical_or(FlErr *e, const FlTensor *x, const FlTensor *y,
                              FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_logical_not(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;

/* ======================================================================================
 * Activations and unary math (activation.c). X: F. Out: X's shape and dtype.
 * Gradients take (X, Out, dOut); only the one named is read and the other may be NULL:
 *   relu (Out):    Out = max(X, 0);   dX = dOut * (Out > 0)
 *   sigmoid (Out): Out = 1/(1+e^-X);  dX = dOut * Out * (1 - Out)
 *   tanh (Out):    dX = dOut * (1 - Out^2)
 *   exp (Out):     dX = dOut * Out
 *   sqrt (Out):    dX = dOut / (2 Out)
 *   log (X):       dX = dOut / X
 *   square (X):    Out = X^2;  dX = dOut * 2X
 *   abs (X):       dX = dOut * sign(X)   (0 at 0)
 * ====================================================================================== */
FlStatus fl_kernel_relu(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_sigmoid(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_tanh(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_exp(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_log(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_sqrt(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_square(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_abs(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_relu_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                             const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_sigmoid_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                                const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_tanh_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                             const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_exp_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                            const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_log_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                            const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_sqrt_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                             const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_square_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                               const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_abs_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                            const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;

/* scale: Out = scale * X + bias (bias_after_scale) or scale * (X + bias); X: N.
 * scale_grad: dX = scale * dOut. */
FlStatus fl_kernel_scale(FlErr *e, const FlTensor *x, double scale, double bias,
                         bool bias_after_scale, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_scale_grad(FlErr *e, const FlTensor *dout, double scale,
                              FlTensor *dx) FL_WARN_UNUSED;

/* ======================================================================================
 * Softmax, losses and reductions (reduce.c)
 * ====================================================================================== */

/* softmax over the last axis, numerically stable (the row max is subtracted). X: F, rank >= 1.
 * softmax_grad: dX = Out * (dOut - sum(dOut * Out, last axis)). */
FlStatus fl_kernel_softmax(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_softmax_grad(FlErr *e, const FlTensor *out, const FlTensor *dout,
                                FlTensor *dx) FL_WARN_UNUSED;
/* softmax over any axis (negative counts from the end): the last-axis kernel between two
 * transposes when axis is not the last. */
FlStatus fl_kernel_softmax_axis(FlErr *e, const FlTensor *x, int axis, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_softmax_axis_grad(FlErr *e, const FlTensor *out, const FlTensor *dout, int axis,
                                     FlTensor *dx) FL_WARN_UNUSED;

/* cross_entropy: X (F) holds probabilities [.., D] (rows = all dims but the last).
 * Hard labels (soft_label false): Label int64 (or int32) [.., 1] with values in [0, D);
 *   Y[i] = -log(X[i, Label[i]]), or 0 where Label[i] == ignore_index (Paddle default -100).
 * Soft labels: Label (F) [.., D]; Y[i] = -sum_j Label[i,j] * log(X[i,j]).
 * Y: X's shape with the last dim 1. Errors: shapes, a label out of range (names row and value).
 * cross_entropy_grad: dX = -dY * Label / X (hard: only at the label's column). */
FlStatus fl_kernel_cross_entropy(FlErr *e, const FlTensor *x, const FlTensor *label,
                                 bool soft_label, int64_t ignore_index,
                                 FlTensor *y) FL_WARN_UNUSED;
FlStatus fl_kernel_cross_entropy_grad(FlErr *e, const FlTensor *x, const FlTensor *label,
                                      const FlTensor *dy, bool soft_label, int64_t ignore_index,
                                      FlTensor *dx) FL_WARN_UNUSED;

/* mean: Out [1] = the mean of all elements of X (F). mean_grad: dX = dOut[0] / numel(X). */
FlStatus fl_kernel_mean(FlErr *e, const FlTensor *x, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_mean_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                             FlTensor *dx) FL_WARN_UNUSED;

/* reduce_sum / reduce_mean over the dims listed in `dims` (ndims of them; negative counts from
 * the end; duplicates are errors), or over every dim when reduce_all (or ndims == 0). Out keeps
 * reduced dims as 1 when keep_dim, else drops them; a result with no dims left is [1].
 * X: F (reduce_sum also int32/int64). Gradients broadcast dOut back over the reduced dims
 * (divided by the reduced count for the mean). */
FlStatus fl_kernel_reduce_sum(FlErr *e, const FlTensor *x, const int *dims, int ndims,
                              bool keep_dim, bool reduce_all, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_reduce_mean(FlErr *e, const FlTensor *x, const int *dims, int ndims,
                               bool keep_dim, bool reduce_all, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_reduce_sum_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                                   const int *dims, int ndims, bool keep_dim, bool reduce_all,
                                   FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_reduce_mean_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                                    const int *dims, int ndims, bool keep_dim, bool reduce_all,
                                    FlTensor *dx) FL_WARN_UNUSED;

/* sum: Out = xs[0] + ... + xs[n-1], all of one shape and dtype N (n >= 1).
 * sum_grad: dxs[i] = a copy of dOut for each i < n whose dxs[i] is not NULL. */
FlStatus fl_kernel_sum(FlErr *e, const FlTensor *const *xs, int n, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_sum_grad(FlErr *e, const FlTensor *dout, int n,
                            FlTensor *const *dxs) FL_WARN_UNUSED;

/* ======================================================================================
 * Shape manipulation and indexing (shape.c). Any dtype unless said.
 * ====================================================================================== */

/* concat: Out = xs[0..n) joined along `axis`; all other dims and the dtype must agree.
 * concat_grad: dxs[i] = the slice of dOut that came from xs[i] (dxs[i] may be NULL). */
FlStatus fl_kernel_concat(FlErr *e, const FlTensor *const *xs, int n, int axis,
                          FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_concat_grad(FlErr *e, const FlTensor *const *xs, int n, const FlTensor *dout,
                               int axis, FlTensor *const *dxs) FL_WARN_UNUSED;

/* split: X cut along `axis` into nouts parts: with nsections == 0, `num` (== nouts) equal parts
 * (X.dims[axis] must divide evenly); otherwise sections[0..nsections) (== nouts) sizes, one of
 * which may be -1 (the rest). outs[i] may not be NULL.
 * split_grad: dX = concat(douts) where a NULL douts[i] counts as zeros; xs gives the shape. */
FlStatus fl_kernel_split(FlErr *e, const FlTensor *x, int axis, int num, const int64_t *sections,
                         int nsections, FlTensor *const *outs, int nouts) FL_WARN_UNUSED;
FlStatus fl_kernel_split_grad(FlErr *e, const FlTensor *x, const FlTensor *const *douts,
                              int nouts, int axis, const int64_t *sections, int nsections,
                              FlTensor *dx) FL_WARN_UNUSED;

/* reshape: Out shares X's buffer (a view; no copy) with `shape` (ndim entries): 0 copies X's
 * dim at that index, one -1 is inferred. Errors: element counts differ, two -1s, 0 past X's
 * rank. reshape_grad: dX = dOut viewed with X's shape. */
FlStatus fl_kernel_reshape(FlErr *e, const FlTensor *x, const int64_t *shape, int ndim,
                           FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_reshape_grad(FlErr *e, const FlTensor *x, const FlTensor *dout,
                                FlTensor *dx) FL_WARN_UNUSED;

/* transpose: Out.dims[i] = X.dims[perm[i]]; perm (ndim entries) a permutation of X's dims.
 * transpose_grad: dX = dOut transposed by the inverse permutation. */
FlStatus fl_kernel_transpose(FlErr *e, const FlTensor *x, const int *perm, int ndim,
                             FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_transpose_grad(FlErr *e, const FlTensor *dout, const int *perm, int ndim,
                                  FlTensor *dx) FL_WARN_UNUSED;

/* argmax: Out (int64) = the index of the largest element along `axis` (the first on ties);
 * Out has X's dims without `axis` ([1] when none is left). X: N. */
FlStatus fl_kernel_argmax(FlErr *e, const FlTensor *x, int axis, FlTensor *out) FL_WARN_UNUSED;

/* top_k over the last axis: Out (X's dtype, N) = the k largest values of each row in
 * descending order (ties: lower index first), Indices (int64) their positions. Both have X's
 * shape with the last dim k. Errors: k < 1 or k > last dim. indices may not be NULL.
 * top_k_grad: dX = zeros with dOut scattered to Indices. */
FlStatus fl_kernel_top_k(FlErr *e, const FlTensor *x, int k, FlTensor *out,
                         FlTensor *indices) FL_WARN_UNUSED;
FlStatus fl_kernel_top_k_grad(FlErr *e, const FlTensor *x, const FlTensor *indices,
                              const FlTensor *dout, FlTensor *dx) FL_WARN_UNUSED;

/* accuracy: Indices (int64/int32) [N, k] from top_k, Label (int64/int32) [N, 1]. A row is
 * correct when any of its k indices equals its label. Accuracy [1] float32 = correct / N (0
 * when N == 0), Correct [1] int64, Total [1] int64 = N. `out` (top_k's values) is only checked
 * for its shape and may be NULL. Any output may be NULL. */
FlStatus fl_kernel_accuracy(FlErr *e, const FlTensor *out, const FlTensor *indices,
                            const FlTensor *label, FlTensor *accuracy, FlTensor *correct,
                            FlTensor *total) FL_WARN_UNUSED;

/* increment: Out = X + step; X has exactly one element, dtype N. */
FlStatus fl_kernel_increment(FlErr *e, const FlTensor *x, double step,
                             FlTensor *out) FL_WARN_UNUSED;

/* lookup_table: W (F) [V, D], Ids (int64/int32) [N, 1] or [N] -> Out [N, D]; rows whose id equals
 * padding_idx (>= 0; -1 none) are zeros. Errors: ranks, an id outside [0, V) (names the row). */
FlStatus fl_kernel_lookup_table(FlErr *e, const FlTensor *w, const FlTensor *ids,
                                int64_t padding_idx, FlTensor *out) FL_WARN_UNUSED;
/* lookup_table_grad: dW [V, D] = zeros with each dOut row added to row Ids[i] (padding rows
 * skipped). */
FlStatus fl_kernel_lookup_table_grad(FlErr *e, const FlTensor *w, const FlTensor *ids,
                                     const FlTensor *dout, int64_t padding_idx,
                                     FlTensor *dw) FL_WARN_UNUSED;
/* The same as a SelectedRows (lookup_table's is_sparse): rows = the ids in order, duplicates
 * kept, padding_idx left out; value [rows, D] = their dOut rows; height V. Densified it equals
 * fl_kernel_lookup_table_grad's dW bit for bit. */
FlStatus fl_kernel_lookup_table_grad_rows(FlErr *e, const FlTensor *w, const FlTensor *ids,
                                          const FlTensor *dout, int64_t padding_idx,
                                          FlSelectedRows *dw) FL_WARN_UNUSED;

/* ======================================================================================
 * Convolution and pooling (conv.c). NCHW layout.
 * ====================================================================================== */

typedef struct FlConv2dAttrs {
    int strides[2]; /* (h, w), >= 1 */
    int paddings[2]; /* (h, w) zero padding on both sides, >= 0 */
    int dilations[2]; /* (h, w), >= 1 */
    int groups; /* >= 1; C and M divisible by it */
} FlConv2dAttrs;
#define FL_CONV2D_ATTRS_DEFAULT {{1, 1}, {0, 0}, {1, 1}, 1}

/* conv2d: Input [N, C, H, W], Filter [M, C/groups, kh, kw] (F). Output [N, M, Ho, Wo] with
 * Ho = (H + 2*ph - (dh*(kh-1) + 1)) / sh + 1 (likewise Wo). Fast path (float32): oneDNN's
 * convolution (im2col + sgemm per image and group when oneDNN is off, FL_DNNL=0, or refuses the
 * shape); reference: direct loops. Errors: ranks, channel/group mismatch, an
 * output size < 1, bad attributes. */
FlStatus fl_kernel_conv2d(FlErr *e, const FlTensor *input, const FlTensor *filter,
                          const FlConv2dAttrs *a, FlTensor *output) FL_WARN_UNUSED;
FlStatus fl_kernel_conv2d_ref(FlErr *e, const FlTensor *input, const FlTensor *filter,
                              const FlConv2dAttrs *a, FlTensor *output) FL_WARN_UNUSED;
/* conv2d_grad: dInput, dFilter from dOutput. */
FlStatus fl_kernel_conv2d_grad(FlErr *e, const FlTensor *input, const FlTensor *filter,
                               const FlTensor *doutput, const FlConv2dAttrs *a,
                               FlTensor *dinput, FlTensor *dfilter) FL_WARN_UNUSED;
FlStatus fl_kernel_conv2d_grad_ref(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                   const FlTensor *doutput, const FlConv2dAttrs *a,
                                   FlTensor *dinput, FlTensor *dfilter) FL_WARN_UNUSED;

typedef enum FlPoolType { FL_POOL_MAX, FL_POOL_AVG, FL_POOL_COUNT } FlPoolType;
typedef struct FlPool2dAttrs {
    FlPoolType type; /* Paddle's pooling_type "max" / "avg" */
    int ksize[2]; /* (h, w) */
    int strides[2];
    int paddings[2];
    bool global_pooling; /* ksize = (H, W), paddings 0 */
    bool exclusive; /* avg: divide by the count of non-padding cells (Paddle default true) */
    bool ceil_mode; /* output size rounds up (Paddle default false) */
} FlPool2dAttrs;

/* pool2d: X [N, C, H, W] (F); Out [N, C, Ho, Wo], Ho = (H + 2*ph - kh) / sh + 1 (rounded up
 * with ceil_mode). max: the largest non-padding cell (the first on ties); avg: the mean over
 * the window (exclusive: of its non-padding cells; else divided by kh*kw).
 * pool2d_grad: dX from X, Out, dOut (max: to the argmax cell; avg: spread evenly).
 * Fast path (float32): oneDNN's pooling; the _ref twins run the plain loops. */
FlStatus fl_kernel_pool2d(FlErr *e, const FlTensor *x, const FlPool2dAttrs *a,
                          FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_pool2d_ref(FlErr *e, const FlTensor *x, const FlPool2dAttrs *a,
                              FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_pool2d_grad(FlErr *e, const FlTensor *x, const FlTensor *out,
                               const FlTensor *dout, const FlPool2dAttrs *a,
                               FlTensor *dx) FL_WARN_UNUSED;
FlStatus fl_kernel_pool2d_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *out,
                                   const FlTensor *dout, const FlPool2dAttrs *a,
                                   FlTensor *dx) FL_WARN_UNUSED;

/* ======================================================================================
 * Normalisation and dropout (norm.c)
 * ====================================================================================== */

/* batch_norm: X [N, C] or [N, C, ...] (F) normalised per channel C; Scale, Bias, Mean, Variance
 * [C]. Training (is_test false): batch mean and (biased) variance over all dims but C;
 *   Y = (X - mean_b) / sqrt(var_b + epsilon) * Scale + Bias;
 *   MeanOut = Mean * momentum + mean_b * (1 - momentum); VarianceOut likewise with var_b;
 *   SavedMean = mean_b; SavedVariance = 1 / sqrt(var_b + epsilon) (the inverse std, as Paddle).
 * Test: Y uses Mean and Variance; MeanOut/VarianceOut are copies of them; SavedMean/Variance
 * are the running mean and inverse std. Any output other than y may be NULL.
 * Fast path (float32): oneDNN's batch normalization (its statistics in float); the _ref twins
 * run the plain loops (statistics in double). */
FlStatus fl_kernel_batch_norm(FlErr *e, const FlTensor *x, const FlTensor *scale,
                              const FlTensor *bias, const FlTensor *mean,
                              const FlTensor *variance, double momentum, double epsilon,
                              bool is_test, FlTensor *y, FlTensor *mean_out,
                              FlTensor *variance_out, FlTensor *saved_mean,
                              FlTensor *saved_variance) FL_WARN_UNUSED;
FlStatus fl_kernel_batch_norm_ref(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                  const FlTensor *bias, const FlTensor *mean,
                                  const FlTensor *variance, double momentum, double epsilon,
                                  bool is_test, FlTensor *y, FlTensor *mean_out,
                                  FlTensor *variance_out, FlTensor *saved_mean,
                                  FlTensor *saved_variance) FL_WARN_UNUSED;
/* batch_norm_grad (training mode: the batch statistics depend on X): from X, Scale, SavedMean,
 * SavedVariance (inverse std) and dY, gives dX, dScale, dBias. With is_test the statistics are
 * constants and dX = dY * Scale * inv_std. */
FlStatus fl_kernel_batch_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                   const FlTensor *saved_mean, const FlTensor *saved_variance,
                                   const FlTensor *dy, bool is_test, FlTensor *dx,
                                   FlTensor *dscale, FlTensor *dbias) FL_WARN_UNUSED;
FlStatus fl_kernel_batch_norm_grad_ref(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                       const FlTensor *saved_mean,
                                       const FlTensor *saved_variance, const FlTensor *dy,
                                       bool is_test, FlTensor *dx, FlTensor *dscale,
                                       FlTensor *dbias) FL_WARN_UNUSED;

/* dropout: training: Mask[i] = 1 with probability 1-p else 0, Out = X * Mask (Paddle's
 * "downgrade_in_infer") or X * Mask / (1 - p) (upscale: "upscale_in_train"; 0 when p = 1); test:
 * Out = X * (1 - p), or X when upscale; Mask not written (may be NULL). X: F; Mask has X's
 * shape and dtype. The mask is a deterministic function of (seed, step, shape): the executor
 * passes the op's seed and a step counter so that each step draws a new mask.
 * Errors: p outside [0, 1]. dropout_grad: dX = dOut * Mask (training; / (1 - p) when upscale)
 * or dOut * (1-p) (test, 1 when upscale; mask may then be NULL). */
FlStatus fl_kernel_dropout(FlErr *e, const FlTensor *x, double dropout_prob, bool is_test, bool upscale,
                           uint64_t seed, uint64_t step, FlTensor *out,
                           FlTensor *mask) FL_WARN_UNUSED;
FlStatus fl_kernel_dropout_grad(FlErr *e, const FlTensor *mask, const FlTensor *dout,
                                double dropout_prob, bool is_test, bool upscale, FlTensor *dx) FL_WARN_UNUSED;

/* ======================================================================================
 * More layers (nn2.c): layer norm, softmax with cross entropy, cosine similarity, local
 * response normalisation, interpolation, transposed convolution. X: F unless said.
 * ====================================================================================== */

/* layer_norm: X viewed as [M, D], M = the product of dims [0, begin_norm_axis), D the rest;
 * per row: Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias (biased variance; Scale and Bias
 * hold D elements, either may be NULL: 1 and 0). Mean, Variance [M] (may be NULL).
 * layer_norm_grad: dX, dScale, dBias (any may be NULL) from X, Scale, Mean, Variance, dY. */
FlStatus fl_kernel_layer_norm(FlErr *e, const FlTensor *x, const FlTensor *scale,
                              const FlTensor *bias, int begin_norm_axis, double epsilon,
                              FlTensor *y, FlTensor *mean, FlTensor *variance) FL_WARN_UNUSED;
FlStatus fl_kernel_layer_norm_grad(FlErr *e, const FlTensor *x, const FlTensor *scale,
                                   const FlTensor *mean, const FlTensor *variance,
                                   const FlTensor *dy, int begin_norm_axis, double epsilon,
                                   FlTensor *dx, FlTensor *dscale, FlTensor *dbias) FL_WARN_UNUSED;

/* softmax_with_cross_entropy over the last dim of Logits [.., D]: Softmax (Logits' shape) and
 * Loss [.., 1]. Hard labels: Label int64/int32 with one class per row, in [0, D) or
 * ignore_index (Loss 0, no gradient). Soft labels: Label like Logits, Loss = -sum Label * log p.
 * numeric_stable_mode: log p from log-sum-exp; otherwise the log of the softmax, kept finite
 * (log 0 = -1e20). Grad: dLogits = dLoss * (Softmax * sum(Label) - Label) (hard: one-hot). */
FlStatus fl_kernel_softmax_with_cross_entropy(FlErr *e, const FlTensor *logits, const FlTensor *label,
                                              bool soft_label, int64_t ignore_index,
                                              bool numeric_stable_mode, FlTensor *softmax,
                                              FlTensor *loss) FL_WARN_UNUSED;
FlStatus fl_kernel_softmax_with_cross_entropy_grad(FlErr *e, const FlTensor *softmax,
                                                   const FlTensor *label, const FlTensor *dloss,
                                                   bool soft_label, int64_t ignore_index,
                                                   FlTensor *dlogits) FL_WARN_UNUSED;

/* cos_sim: X [M, ...] and Y of X's shape or with one row (broadcast), flattened to [M, D]:
 * Out [M, 1] = X.Y / (|X| |Y|), XNorm [M, 1], YNorm [rows of Y, 1]. Grad: dX, dY (summed over
 * the rows when Y is broadcast); either may be NULL. */
FlStatus fl_kernel_cos_sim(FlErr *e, const FlTensor *x, const FlTensor *y, FlTensor *out,
                           FlTensor *xnorm, FlTensor *ynorm) FL_WARN_UNUSED;
FlStatus fl_kernel_cos_sim_grad(FlErr *e, const FlTensor *x, const FlTensor *y, const FlTensor *out,
                                const FlTensor *xnorm, const FlTensor *ynorm, const FlTensor *dout,
                                FlTensor *dx, FlTensor *dy) FL_WARN_UNUSED;

/* lrn (across channels): X [N, C, H, W]; MidOut = k + alpha * sum of X^2 over the channels
 * [c - (n-1)/2, c - (n-1)/2 + n) inside [0, C); Out = X * MidOut^-beta. Grad: dX. */
FlStatus fl_kernel_lrn(FlErr *e, const FlTensor *x, int n, double k, double alpha, double beta,
                       FlTensor *out, FlTensor *mid_out) FL_WARN_UNUSED;
FlStatus fl_kernel_lrn_grad(FlErr *e, const FlTensor *x, const FlTensor *mid_out, const FlTensor *dout,
                            int n, double alpha, double beta, FlTensor *dx) FL_WARN_UNUSED;

typedef enum FlInterpMethod { FL_INTERP_BILINEAR, FL_INTERP_NEAREST, FL_INTERP_COUNT } FlInterpMethod;
typedef struct FlInterpAttrs {
    FlInterpMethod method;
    int out_h, out_w;   /* >= 1 */
    bool align_corners; /* the corner pixels' centres align (ratio (in-1)/(out-1)) */
    int align_mode;     /* bilinear without align_corners: 0 half-pixel centres, 1 src = ratio*dst */
} FlInterpAttrs;
/* bilinear_interp / nearest_interp: X [N, C, H, W] -> Out [N, C, out_h, out_w] (Paddle's
 * coordinate rules). Grad: dX, each Out cell's gradient spread back with its weights. */
FlStatus fl_kernel_interp(FlErr *e, const FlTensor *x, const FlInterpAttrs *a, FlTensor *out) FL_WARN_UNUSED;
FlStatus fl_kernel_interp_grad(FlErr *e, const FlTensor *x, const FlTensor *dout, const FlInterpAttrs *a,
                               FlTensor *dx) FL_WARN_UNUSED;

/* conv2d_transpose: Input [N, C, H, W], Filter [C, M/groups, kh, kw] -> Output [N, M, Ho, Wo],
 * Ho = (H - 1) * sh - 2 * ph + dh * (kh - 1) + 1: the input gradient of conv2d with that filter.
 * Grad: dInput = conv2d(dOutput, Filter); dFilter = conv2d's filter gradient of (dOutput, Input). */
FlStatus fl_kernel_conv2d_transpose(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                    const FlConv2dAttrs *a, FlTensor *output) FL_WARN_UNUSED;
FlStatus fl_kernel_conv2d_transpose_grad(FlErr *e, const FlTensor *input, const FlTensor *filter,
                                         const FlTensor *doutput, const FlConv2dAttrs *a,
                                         FlTensor *dinput, FlTensor *dfilter) FL_WARN_UNUSED;

/* auc: each row of Predict [N, W] (F) puts its last column p into bin
 * floor(p * num_thresholds) (clipped to [0, num_thresholds]) of the positive or the negative
 * counts by Label [N, 1] (int; non-zero = positive). StatPos, StatNeg: int64 [R, num_thresholds + 1]
 * with R = slide_steps, a window of batches: the rows shift down one, the batch goes into row 0
 * and AUC comes from the rows' sum; with slide_steps 0 (R = 1) the batch is added to the
 * running counts and AUC comes from them. AUC [1] float64: the trapezoid area under the curve,
 * its points the bins from the highest down (a threshold each); !pr: the ROC curve, / (positives *
 * negatives) (0 without both); pr: the precision-recall curve from (recall 0, precision 1)
 * through each threshold that selects a row (0 without positives). */
FlStatus fl_kernel_auc(FlErr *e, const FlTensor *predict, const FlTensor *label, const FlTensor *stat_pos,
                       const FlTensor *stat_neg, bool pr, int num_thresholds, int slide_steps, FlTensor *auc,
                       FlTensor *stat_pos_out, FlTensor *stat_neg_out) FL_WARN_UNUSED;

/* ======================================================================================
 * Optimizers (optim.c). Param, Grad and the state tensors share one shape and dtype F;
 * LearningRate, Beta1Pow, Beta2Pow hold one element (any float dtype).
 *
 * In-place mode: an output may be the same FlTensor struct as its input (ParamOut == Param,
 * as Paddle's programs have it). If that input's buffer has no other holder (reference count
 * 1), it is updated in place without allocating; otherwise a new buffer replaces it as usual.
 * The caller must ensure no other thread reads that tensor struct during the call.
 * ====================================================================================== */

/* sgd: ParamOut = Param - lr * Grad. */
FlStatus fl_kernel_sgd(FlErr *e, const FlTensor *param, const FlTensor *grad,
                       const FlTensor *learning_rate, FlTensor *param_out) FL_WARN_UNUSED;
/* momentum: VelocityOut = mu * Velocity + Grad;
 *   ParamOut = Param - (Grad + mu * VelocityOut) * lr   (use_nesterov)
 *   ParamOut = Param - lr * VelocityOut                 (otherwise) */
FlStatus fl_kernel_momentum(FlErr *e, const FlTensor *param, const FlTensor *grad,
                            const FlTensor *velocity, const FlTensor *learning_rate, double mu,
                            bool use_nesterov, FlTensor *param_out,
                            FlTensor *velocity_out) FL_WARN_UNUSED;
/* adam (Paddle's formulas):
 *   Moment1Out = beta1 * Moment1 + (1 - beta1) * Grad
 *   Moment2Out = beta2 * Moment2 + (1 - beta2) * Grad^2
 *   lr_t = lr * sqrt(1 - Beta2Pow) / (1 - Beta1Pow)
 *   ParamOut = Param - lr_t * Moment1Out / (sqrt(Moment2Out) + epsilon * sqrt(1 - Beta2Pow))
 *   Beta1PowOut = Beta1Pow * beta1, Beta2PowOut = Beta2Pow * beta2
 * beta1_pow_out / beta2_pow_out may be NULL (when separate scale ops update them). */
FlStatus fl_kernel_adam(FlErr *e, const FlTensor *param, const FlTensor *grad,
                        const FlTensor *learning_rate, const FlTensor *moment1,
                        const FlTensor *moment2, const FlTensor *beta1_pow,
                        const FlTensor *beta2_pow, double beta1, double beta2, double epsilon,
                        FlTensor *param_out, FlTensor *moment1_out, FlTensor *moment2_out,
                        FlTensor *beta1_pow_out, FlTensor *beta2_pow_out) FL_WARN_UNUSED;

/* average_accumulates (ModelAverage; optim.c): param and sum[0..2] (sum_1, sum_2, sum_3) share
 * one shape and float dtype; count[0..2] are num_accumulates, old_num_accumulates, num_updates,
 * int64 of one element. Both counters go up by one and sum_1 += param; when num_updates is a
 * multiple of FL_AVERAGE_MAX_ACCUMULATES, sum_1 moves into sum_2 (so that no float sum grows over
 * too many terms); when num_accumulates >= min_window and >= min(max_window, (int64)(num_updates
 * * average_window)), the window restarts: sum_3 = sum_1 + sum_2, sum_1 = sum_2 = 0,
 * old_num_accumulates = num_accumulates, num_accumulates = 0. The step's param is counted in
 * the sums that move (the average (sum_1 + sum_2 + sum_3) / (num_accumulates +
 * old_num_accumulates) is the mean of exactly the params counted). Outputs may be their inputs
 * (in place, as for the optimizers above). Errors: min_window > max_window, a counter that is not
 * int64 [1] or is negative, sums unlike param. */
#define FL_AVERAGE_MAX_ACCUMULATES 16384
FlStatus fl_kernel_average_accumulates(FlErr *e, const FlTensor *param, const FlTensor *const sum[3],
                                       const FlTensor *const count[3], double average_window,
                                       int64_t min_window, int64_t max_window, FlTensor *const sum_out[3],
                                       FlTensor *const count_out[3]) FL_WARN_UNUSED;

/* The elementwise optimizers (optim_rules.c): one kernel, the rule an argument. Param, Grad and
 * the states (state[k], in the order below) share one shape and dtype; LearningRate (and
 * adamax's Beta1Pow) hold one element. hp: the rule's attributes in the order below. Each output
 * may be its input's own struct (in place, as the optimizers above).
 *   adagrad (epsilon; Moment):  m' = m + g^2;  p' = p - lr g / (sqrt(m') + eps)
 *   decayed_adagrad (epsilon, decay; Moment):  m' = decay m + (1 - decay) g^2;  p' as adagrad
 *   rmsprop (decay, epsilon, momentum, centered; Moment, MeanSquare, MeanGrad):
 *       ms' = decay ms + (1 - decay) g^2;  mg' = decay mg + (1 - decay) g  (centered only;
 *       MeanGrad is not read otherwise);  mom' = momentum mom + lr g / sqrt(ms' + eps), or
 *       / sqrt(ms' - mg'^2 + eps) when centered;  p' = p - mom'
 *   adamax (beta1, beta2, epsilon; Moment, InfNorm; Beta1Pow):  m' = b1 m + (1 - b1) g;
 *       u' = max(b2 u + eps, |g|);  p' = p - lr / (1 - Beta1Pow) * m' / u';
 *       Beta1PowOut = Beta1Pow * b1 (beta_pow_out may be NULL)
 *   adadelta (rho, epsilon; AvgSquaredGrad, AvgSquaredUpdate):  asg' = rho asg + (1 - rho) g^2;
 *       d = -sqrt((asu + eps) / (asg' + eps)) g;  asu' = rho asu + (1 - rho) d^2;  p' = p + lr d
 *   ftrl (l1, l2, lr_power; SquaredAccum, LinearAccum):  acc = sq + g^2;  with
 *       pw(x) = x^-lr_power (sqrt when lr_power = -0.5):  lin' = lin + g - (pw(acc) - pw(sq)) / lr p;
 *       p' = |lin'| > l1 ? (l1 sign(lin') - lin') / (pw(acc) / lr + 2 l2) : 0;  sq' = acc
 *   lars_momentum (mu, lars_coeff, lars_weight_decay; Velocity):  local = lr lars_coeff ||p|| /
 *       (||g|| + lars_weight_decay ||p||) when both norms are positive, else lr;
 *       v' = mu v + local (g + lars_weight_decay p);  p' = p - v'
 *   lamb (beta1, beta2, epsilon, weight_decay; Moment1, Moment2):  m' = b1 m + (1 - b1) g;
 *       v' = b2 v + (1 - b2) g^2;  r = m' / (sqrt(v') + eps) + weight_decay p;
 *       p' = p - lr ||p|| / ||r|| r (lr alone when a norm is 0; the norms in double) */
typedef enum FlOptimRule {
    FL_OPTIM_ADAGRAD,
    FL_OPTIM_DECAYED_ADAGRAD,
    FL_OPTIM_RMSPROP,
    FL_OPTIM_ADAMAX,
    FL_OPTIM_ADADELTA,
    FL_OPTIM_FTRL,
    FL_OPTIM_LARS_MOMENTUM,
    FL_OPTIM_LAMB,
    FL_OPTIM_COUNT
} FlOptimRule;
const char *fl_optim_rule_name(FlOptimRule rule);
FlStatus fl_kernel_optim(FlErr *e, FlOptimRule rule, const FlTensor *param, const FlTensor *grad,
                         const FlTensor *learning_rate, const FlTensor *const *state,
                         const FlTensor *beta_pow, const double *hp, FlTensor *param_out,
                         FlTensor *const *state_out, FlTensor *beta_pow_out) FL_WARN_UNUSED;

#endif
