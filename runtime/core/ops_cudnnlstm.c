/* ops_cudnnlstm.c: the adapters of cudnn_lstm and its gradient (kernels in
 * runtime/kernels/cudnnlstm.c). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_cudnnlstm.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* a.i[0..3] num_layers, hidden_size, input_size, max_len; a.f[0] dropout_prob; a.b[0] is_bidirec,
 * a.b[1] is_test */
static FlStatus prep_cudnn_lstm(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "num_layers");
    op->a.i[1] = fl_exec_attr_int(op, "hidden_size");
    op->a.i[2] = fl_exec_attr_int(op, "input_size");
    op->a.i[3] = fl_exec_attr_int(op, "max_len");
    op->a.f[0] = fl_exec_attr_float(op, "dropout_prob");
    op->a.b[0] = fl_exec_attr_bool(op, "is_bidirec");
    op->a.b[1] = fl_exec_attr_bool(op, "is_test");
    return FL_OK;
}

static FlCudnnLstmAttrs attrs(const OpCall *c, bool is_test) {
    const PAttrs *a = &c->op->a;
    return (FlCudnnLstmAttrs){.num_layers = a->i[0], .hidden_size = a->i[1], .input_size = a->i[2],
                              .max_len = a->i[3], .bidirec = a->b[0], .is_test = is_test, .dropout_prob = a->f[0]};
}

/* a predicting run is inference: no dropout between the layers */
static FlStatus run_cudnn_lstm(OpCall *c) {
    FlCudnnLstmAttrs a = attrs(c, c->op->a.b[1] || c->rc->read_only);
    return fl_kernel_cudnn_lstm(c->e, IN(FL_IN_cudnn_lstm_Input), IN(FL_IN_cudnn_lstm_InitH),
                                IN(FL_IN_cudnn_lstm_InitC), IN(FL_IN_cudnn_lstm_W), &a, c->op->seed, c->rc->step,
                                OUT(FL_OUT_cudnn_lstm_Out), OUT(FL_OUT_cudnn_lstm_last_h),
                                OUT(FL_OUT_cudnn_lstm_last_c), OUT(FL_OUT_cudnn_lstm_Reserve));
}
FL_ADAPTER(cudnn_lstm, prep_cudnn_lstm, run_cudnn_lstm);
/* cudnn_lstm_grad: Input InitH InitC W Reserve Out@GRAD last_h@GRAD last_c@GRAD ->
 * Input@GRAD? InitH@GRAD? InitC@GRAD? W@GRAD? */
static FlStatus run_cudnn_lstm_grad(OpCall *c) {
    FlCudnnLstmAttrs a = attrs(c, c->op->a.b[1]);
    return fl_kernel_cudnn_lstm_grad(
        c->e, IN(FL_IN_cudnn_lstm_grad_Input), IN(FL_IN_cudnn_lstm_grad_InitH), IN(FL_IN_cudnn_lstm_grad_InitC),
        IN(FL_IN_cudnn_lstm_grad_W), IN(FL_IN_cudnn_lstm_grad_Reserve), &a, IN(FL_IN_cudnn_lstm_grad_Out_GRAD),
        IN(FL_IN_cudnn_lstm_grad_last_h_GRAD), IN(FL_IN_cudnn_lstm_grad_last_c_GRAD),
        OUT(FL_OUT_cudnn_lstm_grad_Input_GRAD), OUT(FL_OUT_cudnn_lstm_grad_InitH_GRAD),
        OUT(FL_OUT_cudnn_lstm_grad_InitC_GRAD), OUT(FL_OUT_cudnn_lstm_grad_W_GRAD));
}
FL_ADAPTER(cudnn_lstm_grad, prep_cudnn_lstm, run_cudnn_lstm_grad);
