/* infer_crf.c: shape rules of the sequence-labelling ops linear_chain_crf, crf_decoding and
 * chunk_eval (adapters in runtime/core/ops_crf.c; kernels in runtime/kernels/crf.c). */
#include "compiler/infer_impl.h"

/* An int tags var of `rows` rows: [rows, 1] or [rows]. */
static FlStatus crf_tags(Ctx *c, const char *slot, const FlVarDesc *v, int64_t rows) {
    Shape s = shape_of(v);
    if (need_int_in(c, v, slot)) return FL_ERROR;
    if (!((s.nd == 2 && dims_agree(s.d[1], 1)) || s.nd == 1) || !dims_agree(s.d[0], rows))
        return fl_err(c->e, "%s: %s must be [%lld, 1] (a tag per row), found %s", c->t, slot, (long long)rows,
                      sstr(c, &s));
    return FL_OK;
}

/* Emission [T, K] (float), Transition [K + 2, K] of its dtype, int64 offsets; *x the emission. */
static FlStatus crf_inputs(Ctx *c, FlVarDesc **x, Shape *xs) {
    FlVarDesc *wv, *lodv;
    if (in1(c, "Emission", x) || in1(c, "Transition", &wv) || in1(c, "EmissionLod", &lodv)) return FL_ERROR;
    if (need_float_in(c, *x, "Emission")) return FL_ERROR;
    *xs = shape_of(*x);
    Shape w = shape_of(wv);
    if (xs->nd != 2 || xs->d[1] == 0)
        return fl_err(c->e, "%s: Emission must be [T, K] (a score per row and tag), found %s", c->t, sstr(c, xs));
    int64_t K = xs->d[1];
    if (wv->dtype != (*x)->dtype || w.nd != 2 || !dims_agree(w.d[1], K) || !dims_agree(w.d[0], K < 0 ? -1 : K + 2))
        return fl_err(c->e, "%s: Transition must be %s [K + 2, K] for Emission %s, found %s %s", c->t,
                      dt((*x)->dtype), sstr(c, xs), dt(wv->dtype), sstr(c, &w));
    Shape l = shape_of(lodv);
    if (lodv->dtype != FL_DT_INT64 || l.nd != 1)
        return fl_err(c->e, "%s: EmissionLod must be int64 offsets [nseq + 1], found %s %s", c->t, dt(lodv->dtype),
                      sstr(c, &l));
    return FL_OK;
}

FlStatus fl_infer_linear_chain_crf(Ctx *c) {
    FlVarDesc *x, *lv, *wv;
    Shape xs;
    if (crf_inputs(c, &x, &xs) || in1(c, "Label", &lv) || in1(c, "Transition", &wv) ||
        crf_tags(c, "Label", lv, xs.d[0]))
        return FL_ERROR;
    Shape ll = {.nd = 2, .d = {-1, 1}};
    return set_like(c, "Alpha", x) || set_like(c, "EmissionExps", x) || set_like(c, "TransitionExps", wv) ||
                   set_out(c, "LogLikelihood", x->dtype, &ll)
               ? FL_ERROR
               : FL_OK;
}

FlStatus fl_infer_crf_decoding(Ctx *c) {
    FlVarDesc *x, *lv;
    Shape xs;
    if (crf_inputs(c, &x, &xs) || in_opt(c, "Label", &lv) || (lv && crf_tags(c, "Label", lv, xs.d[0])))
        return FL_ERROR;
    Shape p = {.nd = 2, .d = {xs.d[0], 1}};
    return set_out(c, "ViterbiPath", FL_DT_INT64, &p);
}

FlStatus fl_infer_chunk_eval(Ctx *c) {
    FlVarDesc *iv, *lv, *io, *lo;
    if (in1(c, "Inference", &iv) || in1(c, "Label", &lv) || in1(c, "InferenceLod", &io) || in1(c, "LabelLod", &lo))
        return FL_ERROR;
    Shape is = shape_of(iv);
    if (is.nd < 1 || crf_tags(c, "Inference", iv, is.d[0]) || crf_tags(c, "Label", lv, is.d[0])) return FL_ERROR;
    const char *scheme = sattr(c, "chunk_scheme");
    if (strcmp(scheme, "IOB") != 0 && strcmp(scheme, "IOE") != 0 && strcmp(scheme, "IOBES") != 0 &&
        strcmp(scheme, "plain") != 0)
        return fl_err(c->e, "%s: chunk_scheme must be IOB, IOE, IOBES or plain, found '%s'", c->t, scheme);
    if (iattr(c, "num_chunk_types") < 1)
        return fl_err(c->e, "%s: num_chunk_types must be >= 1, found %lld", c->t, (long long)iattr(c, "num_chunk_types"));
    Shape one = shape1(1);
    return set_out(c, "Precision", FL_DT_FLOAT32, &one) || set_out(c, "Recall", FL_DT_FLOAT32, &one) ||
                   set_out(c, "F1Score", FL_DT_FLOAT32, &one) || set_out(c, "NumInferChunks", FL_DT_INT64, &one) ||
                   set_out(c, "NumLabelChunks", FL_DT_INT64, &one) ||
                   set_out(c, "NumCorrectChunks", FL_DT_INT64, &one)
               ? FL_ERROR
               : FL_OK;
}
