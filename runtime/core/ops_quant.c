/* ops_quant.c: adapters of the simulated quantization ops (compiler/ops/quant.def; kernels in
 * runtime/kernels/kernels_quant.h). The attributes are read once per prepared op. */
#include <stdlib.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_quant.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

static FlStatus prep_quant(ExecOp *op, FlErr *e) {
    (void)e;
    FlQuantAttrs *a = fl_xcalloc(1, sizeof *a);
    op->a.extra = a;
    const FlOpInfo *info = op->info;
    a->bit_length = (int)fl_exec_attr_int(op, "bit_length");
    if (fl_ops_attr(info, "window_size")) a->window_size = fl_exec_attr_int(op, "window_size");
    if (fl_ops_attr(info, "moving_rate")) a->moving_rate = fl_exec_attr_float(op, "moving_rate");
    if (fl_ops_attr(info, "is_test")) a->is_test = fl_exec_attr_bool(op, "is_test");
    return FL_OK;
}
#define ATTRS(c) ((const FlQuantAttrs *)(c)->op->a.extra)

static FlStatus run_abs_max(OpCall *c) {
    return fl_kernel_fake_quantize_abs_max(c->e, IN(FL_IN_fake_quantize_abs_max_X), ATTRS(c),
                                           OUT(FL_OUT_fake_quantize_abs_max_Out),
                                           OUT(FL_OUT_fake_quantize_abs_max_OutScale));
}
FL_ADAPTER(fake_quantize_abs_max, prep_quant, run_abs_max);

static FlStatus run_range_abs_max(OpCall *c) {
    return fl_kernel_fake_quantize_range_abs_max(
        c->e, IN(FL_IN_fake_quantize_range_abs_max_X), IN(FL_IN_fake_quantize_range_abs_max_InScale),
        IN(FL_IN_fake_quantize_range_abs_max_Iter), IN(FL_IN_fake_quantize_range_abs_max_InScales), ATTRS(c),
        OUT(FL_OUT_fake_quantize_range_abs_max_Out), OUT(FL_OUT_fake_quantize_range_abs_max_OutScale),
        OUT(FL_OUT_fake_quantize_range_abs_max_OutScales));
}
FL_ADAPTER(fake_quantize_range_abs_max, prep_quant, run_range_abs_max);

static FlStatus run_moving_average(OpCall *c) {
    return fl_kernel_fake_quantize_moving_average_abs_max(
        c->e, IN(FL_IN_fake_quantize_moving_average_abs_max_X), IN(FL_IN_fake_quantize_moving_average_abs_max_InScale),
        IN(FL_IN_fake_quantize_moving_average_abs_max_InAccum), IN(FL_IN_fake_quantize_moving_average_abs_max_InState),
        ATTRS(c), OUT(FL_OUT_fake_quantize_moving_average_abs_max_Out),
        OUT(FL_OUT_fake_quantize_moving_average_abs_max_OutScale),
        OUT(FL_OUT_fake_quantize_moving_average_abs_max_OutState),
        OUT(FL_OUT_fake_quantize_moving_average_abs_max_OutAccum));
}
FL_ADAPTER(fake_quantize_moving_average_abs_max, prep_quant, run_moving_average);

static FlStatus run_dequantize(OpCall *c) {
    return fl_kernel_fake_dequantize_max_abs(c->e, IN(FL_IN_fake_dequantize_max_abs_X),
                                             IN(FL_IN_fake_dequantize_max_abs_Scale),
                                             fl_exec_attr_float(c->op, "max_range"),
                                             OUT(FL_OUT_fake_dequantize_max_abs_Out));
}
FL_ADAPTER(fake_dequantize_max_abs, NULL, run_dequantize);
