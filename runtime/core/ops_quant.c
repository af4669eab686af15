/* ops_quant.c: adapters of the simulated quantization ops (compiler/ops/quant.def; kernels in
 * runtime/kernels/kernels_quant.h). The attributes are read once per prepared op. */
#include <stdlib.h>
#include <string.h>

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

/* ---- int8 inference (compiler/ops/quant_int8.def; kernels runtime/kernels/quant_int8.c) ---- */

static FlStatus prep_quantize(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.b[0] = fl_exec_attr_bool(op, "is_negative_input");
    return FL_OK;
}
static FlStatus run_quantize(OpCall *c) {
    return fl_kernel_quantize(c->e, IN(FL_IN_quantize_Input), IN(FL_IN_quantize_Scale), c->op->a.b[0],
                              OUT(FL_OUT_quantize_Output));
}
FL_ADAPTER(quantize, prep_quantize, run_quantize);

static FlStatus run_dequantize_int8(OpCall *c) {
    return fl_kernel_dequantize(c->e, IN(FL_IN_dequantize_Input), IN(FL_IN_dequantize_Scale),
                                OUT(FL_OUT_dequantize_Output));
}
FL_ADAPTER(dequantize, NULL, run_dequantize_int8);

static FlStatus run_requantize(OpCall *c) {
    return fl_kernel_requantize(c->e, IN(FL_IN_requantize_Input), IN(FL_IN_requantize_Scale_in),
                                IN(FL_IN_requantize_Scale_out), OUT(FL_OUT_requantize_Output));
}
FL_ADAPTER(requantize, NULL, run_requantize);

/* conv2d's attributes (fl_exec_prep_conv2d), force_fp32_output in op->a.b[0] */
static FlStatus prep_conv2d_int8(ExecOp *op, FlErr *e) {
    op->a.b[0] = fl_exec_attr_bool(op, "force_fp32_output");
    return fl_exec_prep_conv2d(op, e);
}
static FlStatus run_conv2d_int8(OpCall *c) {
    return fl_kernel_conv2d_int8(c->e, IN(FL_IN_conv2d_int8_Input), IN(FL_IN_conv2d_int8_Filter),
                                 IN(FL_IN_conv2d_int8_Bias), IN(FL_IN_conv2d_int8_Scale_in),
                                 IN(FL_IN_conv2d_int8_Scale_weights), IN(FL_IN_conv2d_int8_Scale_out),
                                 c->op->a.extra, c->op->a.b[0], OUT(FL_OUT_conv2d_int8_Output));
}
FL_ADAPTER(conv2d_int8, prep_conv2d_int8, run_conv2d_int8);

/* algo 'KL' in op->a.b[0], per_channel in op->a.b[1] */
static FlStatus prep_calib(ExecOp *op, FlErr *e) {
    const char *algo = fl_exec_attr_string(op, "algo");
    if (strcmp(algo, "direct") != 0 && strcmp(algo, "KL") != 0)
        return fl_err(e, "attribute 'algo' must be 'direct' or 'KL', found '%s'", algo);
    op->a.b[0] = strcmp(algo, "KL") == 0;
    if (fl_ops_attr(op->info, "per_channel")) op->a.b[1] = fl_exec_attr_bool(op, "per_channel");
    return FL_OK;
}
#define ALGO(c) ((c)->op->a.b[0] ? FL_CALIB_KL : FL_CALIB_DIRECT)

static FlStatus run_calib_sample(OpCall *c) {
    return fl_kernel_calib_sample(c->e, IN(FL_IN_calib_sample_X), IN(FL_IN_calib_sample_Stat),
                                  IN(FL_IN_calib_sample_Count), ALGO(c), OUT(FL_OUT_calib_sample_Out));
}
FL_ADAPTER(calib_sample, prep_calib, run_calib_sample);

static FlStatus run_calib_scale(OpCall *c) {
    return fl_kernel_calib_scale(c->e, IN(FL_IN_calib_scale_X), IN(FL_IN_calib_scale_Count), ALGO(c),
                                 fl_exec_attr_float(c->op, "max_range"), c->op->a.b[1],
                                 OUT(FL_OUT_calib_scale_Out));
}
FL_ADAPTER(calib_scale, prep_calib, run_calib_scale);
