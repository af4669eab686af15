/* infer_vocab.c: shape rules of the losses over large vocabularies, hierarchical_sigmoid, nce
 * and sample_logits (adapters in runtime/core/ops_vocab.c; kernels in runtime/kernels/vocab.c). */
#include "compiler/infer_impl.h"

/* The length of the default tree's longest path: the position of the highest bit of
 * num_classes - 1. */
static int64_t code_length(int64_t num_classes) {
    int64_t n = 0;
    for (uint64_t v = (uint64_t)(num_classes - 1); v; v >>= 1) n++;
    return n;
}

FlStatus fl_infer_hierarchical_sigmoid(Ctx *c) {
    FlVarDesc *x, *w, *l, *pt, *pc, *b;
    if (in1(c, "X", &x) || need_float_in(c, x, "X") || in1(c, "W", &w) || in1(c, "Label", &l) ||
        need_int_in(c, l, "Label") || in_opt(c, "PathTable", &pt) || in_opt(c, "PathCode", &pc) ||
        in_opt(c, "Bias", &b))
        return FL_ERROR;
    Shape xs = shape_of(x), ws = shape_of(w), ls = shape_of(l);
    int64_t nc = iattr(c, "num_classes");
    if (xs.nd != 2) return fl_err(c->e, "%s: X must be [N, D], found %s", c->t, sstr(c, &xs));
    if (ls.nd != 2 || !dims_agree(ls.d[1], 1) || !dims_agree(ls.d[0], xs.d[0]))
        return fl_err(c->e, "%s: Label must be [N, 1] (a class per row of X %s), found %s", c->t, sstr(c, &xs),
                      sstr(c, &ls));
    if ((pt == NULL) != (pc == NULL))
        return fl_err(c->e, "%s: a custom tree needs both PathTable and PathCode", c->t);
    if (!pt && nc < 2) return fl_err(c->e, "%s: num_classes must be >= 2, found %lld", c->t, (long long)nc);
    int64_t nodes = pt ? nc : nc - 1, len = code_length(nc);
    if (ws.nd != 2 || !dims_agree(ws.d[1], xs.d[1]) || (!pt && !dims_agree(ws.d[0], nodes)))
        return fl_err(c->e, "%s: W must be [%lld, D] (a row per inner node of the tree) for X %s, found %s", c->t,
                      (long long)nodes, sstr(c, &xs), sstr(c, &ws));
    if (w->dtype != x->dtype)
        return fl_err(c->e, "%s: X is %s but W is %s: they must have one dtype", c->t, dt(x->dtype), dt(w->dtype));
    if (b) {
        Shape bs = shape_of(b);
        if (bs.nd != 2 || !dims_agree(bs.d[1], 1) || !dims_agree(bs.d[0], ws.d[0]) || b->dtype != x->dtype)
            return fl_err(c->e, "%s: Bias must be %s [W's rows, 1], found %s %s", c->t, dt(x->dtype), dt(b->dtype),
                          sstr(c, &bs));
    }
    if (pt) {
        Shape ts = shape_of(pt), cs = shape_of(pc);
        if (need_int_in(c, pt, "PathTable") || need_int_in(c, pc, "PathCode")) return FL_ERROR;
        if (ts.nd != 2 || cs.nd != 2 || !dims_agree(ts.d[0], xs.d[0]) || !dims_agree(cs.d[0], xs.d[0]) ||
            !dims_agree(ts.d[1], cs.d[1]))
            return fl_err(c->e, "%s: PathTable and PathCode must be [N, L] of one shape (a path per row of X %s), "
                                "found %s and %s", c->t, sstr(c, &xs), sstr(c, &ts), sstr(c, &cs));
        len = ts.d[1];
    }
    Shape o = {.nd = 2, .d = {xs.d[0], 1}}, p = {.nd = 2, .d = {xs.d[0], len}};
    return set_out(c, "Out", x->dtype, &o) || set_out(c, "PreOut", x->dtype, &p) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_nce(Ctx *c) {
    FlVarDesc *x, *l, *w, *b, *sw;
    if (in1(c, "Input", &x) || need_float_in(c, x, "Input") || in1(c, "Label", &l) || need_int_in(c, l, "Label") ||
        in1(c, "Weight", &w) || in_opt(c, "Bias", &b) || in_opt(c, "SampleWeight", &sw))
        return FL_ERROR;
    Shape xs = shape_of(x), ls = shape_of(l), ws = shape_of(w);
    int64_t total = iattr(c, "num_total_classes"), neg = iattr(c, "num_neg_samples"), sampler = iattr(c, "sampler");
    if (xs.nd != 2) return fl_err(c->e, "%s: Input must be [N, D], found %s", c->t, sstr(c, &xs));
    if (ls.nd != 2 || !dims_agree(ls.d[0], xs.d[0]) || ls.d[1] == 0)
        return fl_err(c->e, "%s: Label must be [N, T] (T true classes per row of Input %s), found %s", c->t,
                      sstr(c, &xs), sstr(c, &ls));
    if (total < 1 || neg < 0 || sampler < 0 || sampler > 2)
        return fl_err(c->e, "%s: num_total_classes must be >= 1, num_neg_samples >= 0 and sampler 0, 1 or 2, found "
                            "%lld, %lld and %lld", c->t, (long long)total, (long long)neg, (long long)sampler);
    if (ws.nd != 2 || !dims_agree(ws.d[0], total) || !dims_agree(ws.d[1], xs.d[1]) || w->dtype != x->dtype)
        return fl_err(c->e, "%s: Weight must be %s [%lld, D] for Input %s, found %s %s", c->t, dt(x->dtype),
                      (long long)total, sstr(c, &xs), dt(w->dtype), sstr(c, &ws));
    if (b) {
        Shape bs = shape_of(b);
        if (bs.nd != 2 || !dims_agree(bs.d[0], total) || !dims_agree(bs.d[1], 1) || b->dtype != x->dtype)
            return fl_err(c->e, "%s: Bias must be %s [%lld, 1], found %s %s", c->t, dt(x->dtype), (long long)total,
                          dt(b->dtype), sstr(c, &bs));
    }
    if (sw) {
        Shape ss = shape_of(sw);
        int64_t n = ss.nd == 1 || (ss.nd == 2 && dims_agree(ss.d[1], 1)) ? ss.d[0] : -2;
        if (n == -2 || !dims_agree(n, xs.d[0]) || sw->dtype != x->dtype)
            return fl_err(c->e, "%s: SampleWeight must be %s [N] or [N, 1] (a weight per row of Input %s), found %s %s",
                          c->t, dt(x->dtype), sstr(c, &xs), dt(sw->dtype), sstr(c, &ss));
    }
    int64_t cols = ls.d[1] < 0 ? -1 : ls.d[1] + neg;
    Shape o = {.nd = 2, .d = {xs.d[0], 1}}, s = {.nd = 2, .d = {xs.d[0], cols}};
    return set_out(c, "Cost", x->dtype, &o) || set_out(c, "SampleLogits", x->dtype, &s) ||
                   set_out(c, "SampleLabels", FL_DT_INT64, &s)
               ? FL_ERROR
               : FL_OK;
}

FlStatus fl_infer_sample_logits(Ctx *c) {
    FlVarDesc *x, *l, *cs, *cp;
    if (in1(c, "Logits", &x) || need_float_in(c, x, "Logits") || in1(c, "Labels", &l) || need_int_in(c, l, "Labels") ||
        in_opt(c, "CustomizedSamples", &cs) || in_opt(c, "CustomizedProbabilities", &cp))
        return FL_ERROR;
    Shape xs = shape_of(x), ls = shape_of(l);
    int64_t S = iattr(c, "num_samples");
    bool custom = iattr(c, "use_customized_samples") != 0;
    if (xs.nd != 2) return fl_err(c->e, "%s: Logits must be [N, K], found %s", c->t, sstr(c, &xs));
    if (ls.nd != 2 || !dims_agree(ls.d[0], xs.d[0]) || ls.d[1] == 0)
        return fl_err(c->e, "%s: Labels must be [N, T] (T true classes per row of Logits %s), found %s", c->t,
                      sstr(c, &xs), sstr(c, &ls));
    if (S < 1 || (xs.d[1] >= 0 && S > xs.d[1]))
        return fl_err(c->e, "%s: num_samples must be in [1, K] for Logits %s (distinct classes are drawn), found %lld",
                      c->t, sstr(c, &xs), (long long)S);
    int64_t cols = ls.d[1] < 0 ? -1 : ls.d[1] + S;
    if (custom) {
        if (!cs || !cp)
            return fl_err(c->e, "%s: use_customized_samples needs CustomizedSamples and CustomizedProbabilities", c->t);
        Shape ss = shape_of(cs), ps = shape_of(cp);
        if (need_int_in(c, cs, "CustomizedSamples") || need_float_in(c, cp, "CustomizedProbabilities")) return FL_ERROR;
        if (ss.nd != 2 || ps.nd != 2 || !dims_agree(ss.d[0], xs.d[0]) || !dims_agree(ss.d[1], cols) ||
            !dims_agree(ps.d[0], xs.d[0]) || !dims_agree(ps.d[1], cols))
            return fl_err(c->e, "%s: CustomizedSamples and CustomizedProbabilities must be [N, T + S] = [%lld, %lld], "
                                "found %s and %s", c->t, (long long)xs.d[0], (long long)cols, sstr(c, &ss),
                          sstr(c, &ps));
    } else if (cs || cp) {
        return fl_err(c->e, "%s: CustomizedSamples and CustomizedProbabilities are read only with "
                            "use_customized_samples", c->t);
    }
    Shape o = {.nd = 2, .d = {xs.d[0], cols}};
    return set_out(c, "Samples", FL_DT_INT64, &o) || set_out(c, "Probabilities", x->dtype, &o) ||
                   set_out(c, "SampledLogits", x->dtype, &o) || set_out(c, "SampledLabels", FL_DT_INT64, &ls)
               ? FL_ERROR
               : FL_OK;
}
