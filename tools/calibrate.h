/* calibrate.h: `flc calibrate`: measures this machine's kernels for the step model
 * (compiler/simulate.h) and writes them as a calibration file (docs/simulate.md).
 *
 * What: GEMM GFLOP/s at a few shapes through fl_kernel_mul (runtime/kernels/gemm.c, OpenBLAS),
 * element-wise bandwidth (fl_kernel_elementwise_add), optimizer bandwidth (fl_kernel_sgd in
 * place, as a pserver runs it), memcpy bandwidth, and the executor's fixed cost per op (a program
 * of tiny ops run through fl_executor_run). Each figure is the best of a few timed rounds; the
 * whole takes about two seconds. OpenBLAS runs on $OPENBLAS_NUM_THREADS threads, else one (as
 * flrun). Nothing includes this but flc.
 */
#ifndef FL_CALIBRATE_H
#define FL_CALIBRATE_H

#include "base/base.h"

/* Appends the calibration file's text to out (comment lines, then `NAME VALUE UNIT` lines that
 * fl_sim_calib_parse reads). Errors: an allocation or kernel failure, in e. */
FlStatus fl_calibrate(FlBuf *out, FlErr *e) FL_WARN_UNUSED;

#endif
