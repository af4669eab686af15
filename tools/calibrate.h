/* calibrate.h: `flc calibrate`: measures this machine's kernels for the step model
 * (compiler/simulate.h) and writes them as a calibration file (docs/simulate.md).
 *
 * What: GEMM GFLOP/s at a few shapes through fl_kernel_mul (runtime/kernels/gemm.c, OpenBLAS),
 * element-wise bandwidth (a program of relu, scale, elementwise_add and softmax ops on 1 MiB
 * tensors run through fl_executor_run, allocations included), optimizer bandwidth (fl_kernel_sgd
 * in place; and each optimizer op on its own through the executor, as a pserver runs it), memcpy
 * bandwidth, and the executor's fixed cost per op (the same program on one float). Each figure
 * is the median of a few timed rounds; the whole takes about four seconds. OpenBLAS runs on $OPENBLAS_NUM_THREADS threads, else one (as
 * flrun). Nothing includes this but flc.
 */
#ifndef FL_CALIBRATE_H
#define FL_CALIBRATE_H

#include "base/base.h"

/* Appends the calibration file's text to out (comment lines, then `NAME VALUE UNIT` lines that
 * fl_sim_calib_parse reads). Errors: an allocation or kernel failure, in e. */
FlStatus fl_calibrate(FlBuf *out, FlErr *e) FL_WARN_UNUSED;

#endif
