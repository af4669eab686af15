/* infer_seqnlp.c: shape rules of the further sequence ops of the NLP layers, sequence_reverse
 * (adapters in runtime/core/ops_seqnlp.c; kernels in runtime/kernels/seqnlp.c). */
#include "compiler/infer_impl.h"

FlStatus fl_infer_sequence_reverse(Ctx *c) {
    FlVarDesc *x;
    if (in1(c, "X", &x) || need_offsets(c, "XLod", false)) return FL_ERROR;
    Shape s = shape_of(x);
    if (s.nd < 2)
        return fl_err(c->e, "%s: X must be [T, ...] with at least two dims (a row per step), found %s", c->t,
                      sstr(c, &s));
    return set_like(c, "Y", x);
}
