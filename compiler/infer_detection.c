/* infer_detection.c: shape rules of the detection ops (compiler/ops/detection.def; adapters in
 * runtime/core/ops_detection.c, kernels in runtime/kernels/detection*.c). Each rule checks what
 * Fluid's InferShape and attribute checkers check (ranks, the box width 4, attribute ranges), so
 * a mistake is a compile error at the layer's line; sizes that depend on the data (detections,
 * proposals, sampled RoIs) are -1. */
#include <math.h>

#include "compiler/infer_impl.h"

/* A FLOATS attribute: its values and count (the default when absent). */
static const double *floats_attr(Ctx *c, const char *name, size_t *n) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    if (a && a->type == FL_ATTR_FLOATS) {
        *n = a->n;
        return a->floats;
    }
    *n = ai ? ai->dflt.n : 0;
    return ai ? ai->dflt.floats : NULL;
}

static double float_attr(Ctx *c, const char *name) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    if (a && a->type == FL_ATTR_FLOAT) return a->f;
    if (a && (a->type == FL_ATTR_INT || a->type == FL_ATTR_BOOL)) return (double)a->i;
    return ai ? ai->dflt.f : 0;
}

/* Every value of a FLOATS attribute must be > lo (or >= lo with eq); n_want: the count it must
 * have (-1: any, 0 allowed only with empty_ok). */
static FlStatus floats_check(Ctx *c, const char *name, double lo, bool eq, long n_want, bool empty_ok) {
    size_t n;
    const double *v = floats_attr(c, name, &n);
    if (n == 0 && !empty_ok) return fl_err(c->e, "%s: %s must hold at least one value", c->t, name);
    if (n_want >= 0 && n && (long)n != n_want)
        return fl_err(c->e, "%s: %s must hold %ld values, found %zu", c->t, name, n_want, n);
    for (size_t i = 0; i < n; i++)
        if (!(eq ? v[i] >= lo : v[i] > lo))
            return fl_err(c->e, "%s: %s must be %s %g, found %g", c->t, name, eq ? ">=" : ">", lo, v[i]);
    return FL_OK;
}

/* A float input of rank nd (nd 0: any). */
static FlStatus float_rank(Ctx *c, const char *slot, int nd, FlVarDesc **v) {
    if (in1(c, slot, v) || need_float_in(c, *v, slot)) return FL_ERROR;
    if (nd && (*v)->ndim != nd) {
        Shape s = shape_of(*v);
        return fl_err(c->e, "%s: %s must have rank %d, found %s", c->t, slot, nd, sstr(c, &s));
    }
    return FL_OK;
}

/* Boxes: a float input whose last dim is 4 (unknown allowed) and rank nd (0: any >= 1). */
static FlStatus boxes_in(Ctx *c, const char *slot, int nd, FlVarDesc **v) {
    if (in1(c, slot, v) || need_float_in(c, *v, slot)) return FL_ERROR;
    Shape s = shape_of(*v);
    if ((nd && s.nd != nd) || s.nd < 1 || !dims_agree(s.d[s.nd - 1], 4))
        return fl_err(c->e, "%s: %s must hold boxes [%s4] (xmin, ymin, xmax, ymax), found %s", c->t, slot,
                      nd == 3 ? "N, M, " : nd == 2 ? "N, " : "..., ", sstr(c, &s));
    return FL_OK;
}

/* Two float inputs of one dtype. */
static FlStatus same_dtype(Ctx *c, const FlVarDesc *a, const char *as, const FlVarDesc *b, const char *bs) {
    if (a->dtype == b->dtype) return FL_OK;
    return fl_err(c->e, "%s: %s is %s but %s is %s", c->t, as, dt(a->dtype), bs, dt(b->dtype));
}

/* ---- priors and anchors ---- */

/* prior_box's count of priors per position, as the kernel expands the ratios. */
static int64_t prior_count(Ctx *c) {
    size_t nmin, nmax, nar;
    const double *ar = floats_attr(c, "aspect_ratios", &nar);
    floats_attr(c, "min_sizes", &nmin);
    floats_attr(c, "max_sizes", &nmax);
    double seen[1 + 2 * 64];
    int k = 0;
    seen[k++] = 1.0;
    for (size_t i = 0; i < nar && i < 64; i++) {
        bool dup = false;
        for (int j = 0; j < k && !dup; j++) dup = fabs(ar[i] - seen[j]) < 1e-6;
        if (dup) continue;
        seen[k++] = ar[i];
        if (iattr(c, "flip")) seen[k++] = 1.0 / ar[i];
    }
    return (int64_t)k * (int64_t)nmin + (int64_t)nmax;
}

/* The feature map of an NCHW input: its H and W (maybe unknown). */
static FlStatus feature_map(Ctx *c, const char *slot, int64_t *H, int64_t *W) {
    FlVarDesc *v;
    if (float_rank(c, slot, 4, &v)) return FL_ERROR;
    *H = v->shape[2], *W = v->shape[3];
    return FL_OK;
}

static FlStatus steps_check(Ctx *c) {
    if (float_attr(c, "step_w") < 0 || float_attr(c, "step_h") < 0)
        return fl_err(c->e, "%s: step_w and step_h must be >= 0 (0: the image over the feature map), found %g, %g",
                      c->t, float_attr(c, "step_w"), float_attr(c, "step_h"));
    return FL_OK;
}

FlStatus fl_infer_prior_box(Ctx *c) {
    int64_t H, W, IH, IW;
    FlVarDesc *x;
    if (feature_map(c, "Input", &H, &W) || feature_map(c, "Image", &IH, &IW) || in1(c, "Input", &x)) return FL_ERROR;
    size_t nmin, nmax, nar;
    const double *mn = floats_attr(c, "min_sizes", &nmin), *mx = floats_attr(c, "max_sizes", &nmax);
    floats_attr(c, "aspect_ratios", &nar);
    if (floats_check(c, "min_sizes", 0, false, -1, false) || floats_check(c, "aspect_ratios", 0, false, -1, true) ||
        floats_check(c, "variances", 0, false, 4, false) || steps_check(c))
        return FL_ERROR;
    if (nar > 64) return fl_err(c->e, "%s: at most 64 aspect_ratios, found %zu", c->t, nar);
    if (nmax && nmax != nmin)
        return fl_err(c->e, "%s: max_sizes must hold as many values as min_sizes (%zu), found %zu", c->t, nmin, nmax);
    for (size_t i = 0; i < nmax; i++)
        if (!(mx[i] > mn[i]))
            return fl_err(c->e, "%s: max_sizes[%zu] (%g) must be above min_sizes[%zu] (%g)", c->t, i, mx[i], i, mn[i]);
    Shape s = {.nd = 4, .d = {H, W, prior_count(c), 4}};
    return set_out(c, "Boxes", x->dtype, &s) || set_out(c, "Variances", x->dtype, &s) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_density_prior_box(Ctx *c) {
    int64_t H, W, IH, IW;
    FlVarDesc *x;
    if (feature_map(c, "Input", &H, &W) || feature_map(c, "Image", &IH, &IW) || in1(c, "Input", &x)) return FL_ERROR;
    size_t nd, ns;
    bool ok;
    const int64_t *dens = intsattr(c, "densities", &nd, &ok);
    if (!ok) return FL_ERROR;
    floats_attr(c, "fixed_sizes", &ns);
    if (floats_check(c, "fixed_sizes", 0, false, -1, false) || floats_check(c, "fixed_ratios", 0, false, -1, false) ||
        floats_check(c, "variances", 0, false, 4, false) || steps_check(c))
        return FL_ERROR;
    if (nd != ns)
        return fl_err(c->e, "%s: densities and fixed_sizes must hold as many values, found %zu and %zu", c->t, nd, ns);
    size_t nr;
    floats_attr(c, "fixed_ratios", &nr);
    int64_t P = 0;
    for (size_t i = 0; i < nd; i++) {
        if (dens[i] < 1 || dens[i] > 1024)
            return fl_err(c->e, "%s: densities must be in [1, 1024], found %lld", c->t, (long long)dens[i]);
        P += (int64_t)nr * dens[i] * dens[i];
    }
    Shape s = {.nd = 4, .d = {H, W, P, 4}};
    if (iattr(c, "flatten_to_2d")) s = (Shape){.nd = 2, .d = {H < 0 || W < 0 ? -1 : H * W * P, 4}};
    return set_out(c, "Boxes", x->dtype, &s) || set_out(c, "Variances", x->dtype, &s) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_anchor_generator(Ctx *c) {
    int64_t H, W;
    FlVarDesc *x;
    if (feature_map(c, "Input", &H, &W) || in1(c, "Input", &x)) return FL_ERROR;
    if (floats_check(c, "anchor_sizes", 0, false, -1, false) || floats_check(c, "aspect_ratios", 0, false, -1, false) ||
        floats_check(c, "variances", 0, false, 4, false) || floats_check(c, "stride", 0, false, 2, false))
        return FL_ERROR;
    size_t ns, nr;
    floats_attr(c, "anchor_sizes", &ns);
    floats_attr(c, "aspect_ratios", &nr);
    Shape s = {.nd = 4, .d = {H, W, (int64_t)(ns * nr), 4}};
    return set_out(c, "Anchors", x->dtype, &s) || set_out(c, "Variances", x->dtype, &s) ? FL_ERROR : FL_OK;
}

/* ---- IoU, coding, clipping ---- */

FlStatus fl_infer_iou_similarity(Ctx *c) {
    FlVarDesc *x, *y;
    if (boxes_in(c, "X", 2, &x) || boxes_in(c, "Y", 2, &y) || same_dtype(c, x, "X", y, "Y")) return FL_ERROR;
    Shape s = {.nd = 2, .d = {x->shape[0], y->shape[0]}};
    return set_out(c, "Out", x->dtype, &s);
}

FlStatus fl_infer_box_coder(Ctx *c) {
    FlVarDesc *p, *pv, *t;
    if (boxes_in(c, "PriorBox", 2, &p) || boxes_in(c, "TargetBox", 0, &t) || in_opt(c, "PriorBoxVar", &pv) ||
        same_dtype(c, p, "PriorBox", t, "TargetBox"))
        return FL_ERROR;
    Shape ps = shape_of(p), ts = shape_of(t);
    if (pv) {
        Shape vs = shape_of(pv);
        if (same_dtype(c, p, "PriorBox", pv, "PriorBoxVar")) return FL_ERROR;
        if (!shapes_agree(&vs, &ps))
            return fl_err(c->e, "%s: PriorBoxVar %s must have PriorBox's shape %s", c->t, sstr(c, &vs), sstr(c, &ps));
    }
    size_t nv;
    floats_attr(c, "variance", &nv);
    if (pv && nv) return fl_err(c->e, "%s: PriorBoxVar and variance cannot both be given", c->t);
    if (nv && nv != 4) return fl_err(c->e, "%s: variance must hold 4 values, found %zu", c->t, nv);
    const char *code = sattr(c, "code_type");
    int64_t axis = iattr(c, "axis");
    if (strcmp(code, "encode_center_size") == 0) {
        if (ts.nd != 2)
            return fl_err(c->e, "%s: encode_center_size needs TargetBox [N, 4], found %s", c->t, sstr(c, &ts));
        Shape s = {.nd = 3, .d = {ts.d[0], ps.d[0], 4}};
        return set_out(c, "OutputBox", t->dtype, &s);
    }
    if (strcmp(code, "decode_center_size") != 0)
        return fl_err(c->e, "%s: code_type must be encode_center_size or decode_center_size, found '%s'", c->t, code);
    if (axis != 0 && axis != 1) return fl_err(c->e, "%s: axis must be 0 or 1, found %lld", c->t, (long long)axis);
    if (ts.nd != 3)
        return fl_err(c->e, "%s: decode_center_size needs TargetBox [N, M, 4], found %s", c->t, sstr(c, &ts));
    if (!dims_agree(ps.d[0], ts.d[axis == 0 ? 1 : 0]))
        return fl_err(c->e, "%s: PriorBox %s must have as many rows as TargetBox %s has along axis %lld", c->t,
                      sstr(c, &ps), sstr(c, &ts), (long long)(axis == 0 ? 1 : 0));
    return set_out(c, "OutputBox", t->dtype, &ts);
}

FlStatus fl_infer_box_clip(Ctx *c) {
    FlVarDesc *x, *info;
    if (boxes_in(c, "Input", 0, &x) || float_rank(c, "ImInfo", 2, &info) || same_dtype(c, x, "Input", info, "ImInfo") ||
        need_offsets(c, "InputLod", true))
        return FL_ERROR;
    if (!dims_agree(info->shape[1], 3)) {
        Shape s = shape_of(info);
        return fl_err(c->e, "%s: ImInfo must be [N, 3] (height, width, scale), found %s", c->t, sstr(c, &s));
    }
    return set_like(c, "Output", x);
}

FlStatus fl_infer_polygon_box_transform(Ctx *c) {
    FlVarDesc *x;
    if (float_rank(c, "Input", 4, &x)) return FL_ERROR;
    if (x->shape[1] >= 0 && x->shape[1] % 2) {
        Shape s = shape_of(x);
        return fl_err(c->e, "%s: Input must have an even number of geometry channels [N, 2K, H, W], found %s", c->t,
                      sstr(c, &s));
    }
    return set_like(c, "Output", x);
}

FlStatus fl_infer_box_decoder_and_assign(Ctx *c) {
    FlVarDesc *p, *pv, *t, *s;
    if (boxes_in(c, "PriorBox", 2, &p) || float_rank(c, "PriorBoxVar", 0, &pv) || float_rank(c, "TargetBox", 2, &t) ||
        float_rank(c, "BoxScore", 2, &s) || same_dtype(c, p, "PriorBox", t, "TargetBox") ||
        same_dtype(c, p, "PriorBox", s, "BoxScore") || same_dtype(c, p, "PriorBox", pv, "PriorBoxVar"))
        return FL_ERROR;
    Shape ts = shape_of(t), ss = shape_of(s);
    if (!dims_agree(ts.d[1], ss.d[1] < 0 ? -1 : 4 * ss.d[1]))
        return fl_err(c->e, "%s: TargetBox %s must hold 4 deltas per class of BoxScore %s", c->t, sstr(c, &ts),
                      sstr(c, &ss));
    Shape a = {.nd = 2, .d = {p->shape[0], 4}};
    return set_like(c, "DecodeBox", t) || set_out(c, "OutputAssignBox", p->dtype, &a) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_yolo_box(Ctx *c) {
    FlVarDesc *x, *sz;
    if (float_rank(c, "X", 4, &x) || in1(c, "ImgSize", &sz) || need_int_in(c, sz, "ImgSize")) return FL_ERROR;
    size_t na;
    bool ok;
    const int64_t *an = intsattr(c, "anchors", &na, &ok);
    if (!ok) return FL_ERROR;
    if (na == 0 || na % 2)
        return fl_err(c->e, "%s: anchors must hold (width, height) pairs, found %zu values", c->t, na);
    for (size_t i = 0; i < na; i++)
        if (an[i] <= 0) return fl_err(c->e, "%s: anchors must be > 0, found %lld", c->t, (long long)an[i]);
    int64_t C = iattr(c, "class_num"), A = (int64_t)na / 2;
    if (C < 1) return fl_err(c->e, "%s: class_num must be >= 1, found %lld", c->t, (long long)C);
    if (iattr(c, "downsample_ratio") < 1)
        return fl_err(c->e, "%s: downsample_ratio must be >= 1, found %lld", c->t, (long long)iattr(c, "downsample_ratio"));
    Shape xs = shape_of(x);
    if (!dims_agree(xs.d[1], A * (5 + C)))
        return fl_err(c->e, "%s: X %s must have %lld channels: %lld anchors times (5 + class_num %lld)", c->t,
                      sstr(c, &xs), (long long)(A * (5 + C)), (long long)A, (long long)C);
    int64_t n = xs.d[2] < 0 || xs.d[3] < 0 ? -1 : A * xs.d[2] * xs.d[3];
    Shape b = {.nd = 3, .d = {xs.d[0], n, 4}}, s = {.nd = 3, .d = {xs.d[0], n, C}};
    return set_out(c, "Boxes", x->dtype, &b) || set_out(c, "Scores", x->dtype, &s) ? FL_ERROR : FL_OK;
}

/* ---- losses ---- */

FlStatus fl_infer_smooth_l1_loss(Ctx *c) {
    FlVarDesc *x, *y;
    if (float_rank(c, "X", 0, &x) || float_rank(c, "Y", 0, &y) || same_dtype(c, x, "X", y, "Y")) return FL_ERROR;
    Shape xs = shape_of(x), ys = shape_of(y);
    if (xs.nd < 2 || !shapes_agree(&xs, &ys))
        return fl_err(c->e, "%s: X %s and Y %s must have one shape of rank >= 2", c->t, sstr(c, &xs), sstr(c, &ys));
    const char *ws[2] = {"InsideWeight", "OutsideWeight"};
    for (int k = 0; k < 2; k++) {
        FlVarDesc *w;
        if (in_opt(c, ws[k], &w)) return FL_ERROR;
        if (!w) continue;
        Shape s = shape_of(w);
        if (!shapes_agree(&s, &xs) || w->dtype != x->dtype)
            return fl_err(c->e, "%s: %s %s %s must be X's %s %s", c->t, ws[k], dt(w->dtype), sstr(c, &s), dt(x->dtype),
                          sstr(c, &xs));
    }
    Shape o = {.nd = 2, .d = {xs.d[0], 1}};
    return set_like(c, "Diff", x) || set_out(c, "Out", x->dtype, &o) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_sigmoid_xent(Ctx *c) {
    FlVarDesc *x, *l;
    if (float_rank(c, "X", 0, &x) || float_rank(c, "Label", 0, &l) || same_dtype(c, x, "X", l, "Label")) return FL_ERROR;
    Shape xs = shape_of(x), ls = shape_of(l);
    if (!shapes_agree(&xs, &ls))
        return fl_err(c->e, "%s: X %s and Label %s must have one shape", c->t, sstr(c, &xs), sstr(c, &ls));
    return set_like(c, "Out", x);
}

/* ---- non-maximum suppression ---- */

FlStatus fl_infer_multiclass_nms(Ctx *c) {
    FlVarDesc *b, *s, *lod = NULL;
    if (boxes_in(c, "BBoxes", 3, &b) || float_rank(c, "Scores", 0, &s) || same_dtype(c, b, "BBoxes", s, "Scores") ||
        need_offsets(c, "BBoxesLod", true) || in_opt(c, "BBoxesLod", &lod))
        return FL_ERROR;
    Shape bs = shape_of(b), ss = shape_of(s);
    if (ss.nd == 2) { /* the LoD form: a box per class, rows cut into images */
        if (!lod)
            return fl_err(c->e, "%s: Scores %s [M, C] needs BBoxes [M, C, 4] cut into images by its LoD", c->t,
                          sstr(c, &ss));
        if (!dims_agree(bs.d[0], ss.d[0]) || !dims_agree(bs.d[1], ss.d[1]))
            return fl_err(c->e, "%s: BBoxes %s and Scores %s must be [M, C, 4] and [M, C]", c->t, sstr(c, &bs),
                          sstr(c, &ss));
    } else if (ss.nd != 3 || lod) {
        return fl_err(c->e, "%s: Scores must be [N, C, M] (or [M, C] with BBoxes [M, C, 4] cut by LoD), found %s%s",
                      c->t, sstr(c, &ss), lod ? " with LoD" : "");
    } else if (!dims_agree(bs.d[0], ss.d[0]) || !dims_agree(bs.d[1], ss.d[2])) {
        return fl_err(c->e, "%s: BBoxes %s and Scores %s must be [N, M, 4] and [N, C, M]", c->t, sstr(c, &bs),
                      sstr(c, &ss));
    }
    if (iattr(c, "background_label") < -1)
        return fl_err(c->e, "%s: background_label must be >= -1, found %lld", c->t,
                      (long long)iattr(c, "background_label"));
    double eta = float_attr(c, "nms_eta"), th = float_attr(c, "nms_threshold");
    if (!(eta > 0 && eta <= 1)) return fl_err(c->e, "%s: nms_eta must be in (0, 1], found %g", c->t, eta);
    if (!(th >= 0 && th <= 1)) return fl_err(c->e, "%s: nms_threshold must be in [0, 1], found %g", c->t, th);
    Shape o = {.nd = 2, .d = {-1, 6}}, l = shape1(-1);
    return set_out(c, "Out", b->dtype, &o) || set_out(c, "OutLod", FL_DT_INT64, &l) ? FL_ERROR : FL_OK;
}

/* ---- matching and target assignment ---- */

FlStatus fl_infer_bipartite_match(Ctx *c) {
    FlVarDesc *d;
    if (float_rank(c, "DistMat", 2, &d) || need_offsets(c, "DistMatLod", true)) return FL_ERROR;
    const char *mt = sattr(c, "match_type");
    if (strcmp(mt, "bipartite") != 0 && strcmp(mt, "per_prediction") != 0)
        return fl_err(c->e, "%s: match_type must be 'bipartite' or 'per_prediction', found '%s'", c->t, mt);
    FlVarDesc *lod = NULL;
    if (in_opt(c, "DistMatLod", &lod)) return FL_ERROR;
    int64_t n = lod ? (lod->shape[0] < 0 ? -1 : lod->shape[0] - 1) : 1;
    Shape s = {.nd = 2, .d = {n, d->shape[1]}};
    return set_out(c, "ColToRowMatchIndices", FL_DT_INT32, &s) || set_out(c, "ColToRowMatchDist", d->dtype, &s)
               ? FL_ERROR
               : FL_OK;
}

FlStatus fl_infer_target_assign(Ctx *c) {
    FlVarDesc *x, *mi, *neg = NULL;
    if (in1(c, "X", &x) || need_offsets(c, "XLod", false) || in1(c, "MatchIndices", &mi) ||
        need_int_in(c, mi, "MatchIndices") || in_opt(c, "NegIndices", &neg) || need_offsets(c, "NegIndicesLod", true))
        return FL_ERROR;
    Shape xs = shape_of(x), ms = shape_of(mi);
    if (xs.nd != 3) return fl_err(c->e, "%s: X must be [rows, P, K], found %s", c->t, sstr(c, &xs));
    if (ms.nd != 2) return fl_err(c->e, "%s: MatchIndices must be [N, M], found %s", c->t, sstr(c, &ms));
    if (neg) {
        FlVarDesc *nl = NULL;
        if (need_int_in(c, neg, "NegIndices") || in_opt(c, "NegIndicesLod", &nl)) return FL_ERROR;
        if (!nl) return fl_err(c->e, "%s: NegIndices must come with its offsets NegIndicesLod", c->t);
    }
    Shape o = {.nd = 3, .d = {ms.d[0], ms.d[1], xs.d[2]}}, w = {.nd = 3, .d = {ms.d[0], ms.d[1], 1}};
    return set_out(c, "Out", x->dtype, &o) || set_out(c, "OutWeight", FL_DT_FLOAT32, &w) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_mine_hard_examples(Ctx *c) {
    FlVarDesc *cl, *loc = NULL, *mi, *md;
    if (float_rank(c, "ClsLoss", 2, &cl) || in_opt(c, "LocLoss", &loc) || in1(c, "MatchIndices", &mi) ||
        need_int_in(c, mi, "MatchIndices") || float_rank(c, "MatchDist", 2, &md))
        return FL_ERROR;
    if (strcmp(sattr(c, "mining_type"), "max_negative") != 0)
        return fl_err(c->e, "%s: mining_type must be 'max_negative' (the only one Fluid's ssd_loss supports), found '%s'",
                      c->t, sattr(c, "mining_type"));
    if (loc) return fl_err(c->e, "%s: LocLoss is used by mining_type 'hard_example' only", c->t);
    Shape cs = shape_of(cl), ms = shape_of(mi), ds = shape_of(md);
    if (ms.nd != 2 || !dims_agree(cs.d[0], ms.d[0]) || !dims_agree(cs.d[1], ms.d[1]) || !dims_agree(ds.d[0], ms.d[0]) ||
        !dims_agree(ds.d[1], ms.d[1]))
        return fl_err(c->e, "%s: ClsLoss %s, MatchIndices %s and MatchDist %s must all be [N, P]", c->t, sstr(c, &cs),
                      sstr(c, &ms), sstr(c, &ds));
    if (float_attr(c, "neg_pos_ratio") < 0)
        return fl_err(c->e, "%s: neg_pos_ratio must be >= 0, found %g", c->t, float_attr(c, "neg_pos_ratio"));
    Shape n = {.nd = 2, .d = {-1, 1}}, l = shape1(cs.d[0] < 0 ? -1 : cs.d[0] + 1);
    return set_out(c, "NegIndices", FL_DT_INT32, &n) || set_out(c, "NegIndicesLod", FL_DT_INT64, &l) ||
                   set_out(c, "UpdatedMatchIndices", mi->dtype, &ms)
               ? FL_ERROR
               : FL_OK;
}

/* ---- evaluation ---- */

FlStatus fl_infer_detection_map(Ctx *c) {
    FlVarDesc *d, *l;
    if (float_rank(c, "DetectRes", 2, &d) || need_offsets(c, "DetectResLod", false) || float_rank(c, "Label", 2, &l) ||
        need_offsets(c, "LabelLod", false) || same_dtype(c, d, "DetectRes", l, "Label"))
        return FL_ERROR;
    Shape ds = shape_of(d), ls = shape_of(l);
    if (ds.d[1] >= 0 && ds.d[1] != 6 && ds.d[1] != 1)
        return fl_err(c->e, "%s: DetectRes must be [M, 6] (label, score, xmin, ymin, xmax, ymax), found %s", c->t,
                      sstr(c, &ds));
    if (ls.d[1] >= 0 && ls.d[1] != 6 && ls.d[1] != 5)
        return fl_err(c->e, "%s: Label must be [G, 6] (label, difficult, box) or [G, 5] (label, box), found %s", c->t,
                      sstr(c, &ls));
    const char *ap = sattr(c, "ap_type");
    if (strcmp(ap, "integral") != 0 && strcmp(ap, "11point") != 0)
        return fl_err(c->e, "%s: ap_type must be 'integral' or '11point', found '%s'", c->t, ap);
    if (iattr(c, "class_num") < 1)
        return fl_err(c->e, "%s: class_num must be >= 1, found %lld", c->t, (long long)iattr(c, "class_num"));
    Shape o = shape1(1);
    if (set_out(c, "MAP", d->dtype, &o)) return FL_ERROR;
    /* the accumulated state: all of it or none */
    static const char *const in[] = {"HasState", "PosCount", "TruePos", "TruePosLod", "FalsePos", "FalsePosLod"};
    int given = 0;
    for (size_t k = 0; k < sizeof in / sizeof *in; k++) given += fl_ir_op_input1(c->op, in[k]) != NULL;
    if (given != 0 && given != (int)(sizeof in / sizeof *in))
        return fl_err(c->e, "%s: the accumulated state needs HasState, PosCount, TruePos and FalsePos (with their offsets) "
                            "together", c->t);
    int64_t C = iattr(c, "class_num");
    Shape pc = {.nd = 2, .d = {C, 1}}, rows = {.nd = 2, .d = {-1, 2}}, offs = shape1(C + 1);
    return set_out(c, "AccumPosCount", FL_DT_INT32, &pc) || set_out(c, "AccumTruePos", d->dtype, &rows) ||
                   set_out(c, "AccumTruePosLod", FL_DT_INT64, &offs) || set_out(c, "AccumFalsePos", d->dtype, &rows) ||
                   set_out(c, "AccumFalsePosLod", FL_DT_INT64, &offs)
               ? FL_ERROR
               : FL_OK;
}
