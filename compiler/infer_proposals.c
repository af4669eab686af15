/* infer_proposals.c: shape rules of the proposal ops (compiler/ops/proposals.def; adapters in
 * runtime/core/ops_proposals.c, kernels in runtime/kernels/proposals.c). Each rule checks what
 * Fluid's InferShape and attribute checkers check, so a mistake is a compile error at the layer's
 * line; sizes that depend on the data (proposals, sampled anchors) are -1. */
#include "compiler/infer_impl.h"

/* Int attribute `name` must be >= lo; float attribute `name` in [lo, hi]. */
static FlStatus int_min(Ctx *c, const char *name, int64_t lo) {
    if (iattr(c, name) >= lo) return FL_OK;
    return fl_err(c->e, "%s: %s must be >= %lld, found %lld", c->t, name, (long long)lo, (long long)iattr(c, name));
}
static FlStatus float_in(Ctx *c, const char *name, double lo, double hi) {
    double v = fattr(c, name);
    if (v >= lo && v <= hi) return FL_OK;
    return fl_err(c->e, "%s: %s must be in [%g, %g], found %g", c->t, name, lo, hi, v);
}

/* An input of rank nd and a dtype class (float, or int when want_int). */
static FlStatus ranked(Ctx *c, const char *slot, int nd, bool want_int, FlVarDesc **v) {
    if (in1(c, slot, v) || (want_int ? need_int_in(c, *v, slot) : need_float_in(c, *v, slot))) return FL_ERROR;
    if ((*v)->ndim == nd) return FL_OK;
    Shape s = shape_of(*v);
    return fl_err(c->e, "%s: %s must have rank %d, found %s", c->t, slot, nd, sstr(c, &s));
}

/* ---- yolov3_loss ---- */

FlStatus fl_infer_yolov3_loss(Ctx *c) {
    FlVarDesc *x, *box, *lab, *score;
    if (ranked(c, "X", 4, false, &x) || ranked(c, "GTBox", 3, false, &box) || ranked(c, "GTLabel", 2, true, &lab) ||
        in_opt(c, "GTScore", &score))
        return FL_ERROR;
    size_t na, nm;
    bool ok, ok2;
    const int64_t *an = intsattr(c, "anchors", &na, &ok), *mask = intsattr(c, "anchor_mask", &nm, &ok2);
    if (!ok || !ok2) return FL_ERROR;
    if (na == 0 || na % 2)
        return fl_err(c->e, "%s: anchors must hold (width, height) pairs, found %zu values", c->t, na);
    for (size_t i = 0; i < na; i++)
        if (an[i] <= 0) return fl_err(c->e, "%s: anchors must be > 0, found %lld", c->t, (long long)an[i]);
    if (nm == 0) return fl_err(c->e, "%s: anchor_mask must hold at least one anchor index", c->t);
    for (size_t i = 0; i < nm; i++)
        if (mask[i] < 0 || mask[i] >= (int64_t)(na / 2))
            return fl_err(c->e, "%s: anchor_mask must index the %zu anchors, found %lld", c->t, na / 2,
                          (long long)mask[i]);
    int64_t C = iattr(c, "class_num");
    if (int_min(c, "class_num", 1) || int_min(c, "downsample_ratio", 1) || float_in(c, "ignore_thresh", 0, 1))
        return FL_ERROR;
    Shape xs = shape_of(x), bs = shape_of(box), ls = shape_of(lab);
    if (!dims_agree(xs.d[2], xs.d[3]))
        return fl_err(c->e, "%s: X %s must be a square map [N, C, H, H]", c->t, sstr(c, &xs));
    if (!dims_agree(xs.d[1], (int64_t)nm * (5 + C)))
        return fl_err(c->e, "%s: X %s must have %lld channels: %zu masked anchors times (5 + class_num %lld)", c->t,
                      sstr(c, &xs), (long long)((int64_t)nm * (5 + C)), nm, (long long)C);
    if (!dims_agree(bs.d[2], 4) || !dims_agree(bs.d[0], xs.d[0]))
        return fl_err(c->e, "%s: GTBox must be [N, B, 4] (centre x, y, width, height) for X %s, found %s", c->t,
                      sstr(c, &xs), sstr(c, &bs));
    if (box->dtype != x->dtype) return fl_err(c->e, "%s: GTBox is %s but X is %s", c->t, dt(box->dtype), dt(x->dtype));
    if (!dims_agree(ls.d[0], bs.d[0]) || !dims_agree(ls.d[1], bs.d[1]))
        return fl_err(c->e, "%s: GTLabel %s must be [N, B] for GTBox %s", c->t, sstr(c, &ls), sstr(c, &bs));
    if (score) {
        Shape ss = shape_of(score);
        if (score->dtype != x->dtype || ss.nd != 2 || !dims_agree(ss.d[0], bs.d[0]) || !dims_agree(ss.d[1], bs.d[1]))
            return fl_err(c->e, "%s: GTScore %s %s must be %s [N, B] for GTBox %s", c->t, dt(score->dtype),
                          sstr(c, &ss), dt(x->dtype), sstr(c, &bs));
    }
    Shape l = shape1(xs.d[0]), o = {.nd = 4, .d = {xs.d[0], (int64_t)nm, xs.d[2], xs.d[3]}},
          m = {.nd = 2, .d = {bs.d[0], bs.d[1]}};
    return set_out(c, "Loss", x->dtype, &l) || set_out(c, "ObjectnessMask", x->dtype, &o) ||
                   set_out(c, "GTMatchMask", FL_DT_INT32, &m)
               ? FL_ERROR
               : FL_OK;
}

/* ---- generate_proposals ---- */

FlStatus fl_infer_generate_proposals(Ctx *c) {
    FlVarDesc *s, *d, *info, *an, *var;
    if (ranked(c, "Scores", 4, false, &s) || ranked(c, "BboxDeltas", 4, false, &d) ||
        ranked(c, "ImInfo", 2, false, &info) || in1(c, "Anchors", &an) || need_float_in(c, an, "Anchors") ||
        in1(c, "Variances", &var) || need_float_in(c, var, "Variances"))
        return FL_ERROR;
    const FlVarDesc *all[] = {d, info, an, var};
    const char *names[] = {"BboxDeltas", "ImInfo", "Anchors", "Variances"};
    for (int i = 0; i < 4; i++)
        if (all[i]->dtype != s->dtype)
            return fl_err(c->e, "%s: %s is %s but Scores is %s", c->t, names[i], dt(all[i]->dtype), dt(s->dtype));
    Shape ss = shape_of(s), ds = shape_of(d), is = shape_of(info), as = shape_of(an), vs = shape_of(var);
    if (!dims_agree(ds.d[0], ss.d[0]) || !dims_agree(ds.d[1], ss.d[1] < 0 ? -1 : 4 * ss.d[1]) ||
        !dims_agree(ds.d[2], ss.d[2]) || !dims_agree(ds.d[3], ss.d[3]))
        return fl_err(c->e, "%s: BboxDeltas %s must be [N, 4A, H, W] for Scores %s [N, A, H, W]", c->t, sstr(c, &ds),
                      sstr(c, &ss));
    if (!dims_agree(is.d[0], ss.d[0]) || !dims_agree(is.d[1], 3))
        return fl_err(c->e, "%s: ImInfo %s must be [N, 3] (height, width, scale)", c->t, sstr(c, &is));
    if (as.nd < 1 || !dims_agree(as.d[as.nd - 1], 4) || !shapes_agree(&as, &vs))
        return fl_err(c->e, "%s: Anchors %s and Variances %s must be boxes [H, W, A, 4] of one shape", c->t,
                      sstr(c, &as), sstr(c, &vs));
    int64_t na = prod(&as, 0, as.nd), nk = prod(&ss, 1, 4);
    if (na >= 0 && nk >= 0 && na != 4 * nk)
        return fl_err(c->e, "%s: Anchors %s must hold one box per score of Scores %s (A * H * W)", c->t, sstr(c, &as),
                      sstr(c, &ss));
    double th = fattr(c, "nms_thresh"), eta = fattr(c, "eta");
    if (!(th <= 1)) return fl_err(c->e, "%s: nms_thresh must be <= 1, found %g", c->t, th);
    if (!(eta > 0 && eta <= 1)) return fl_err(c->e, "%s: eta must be in (0, 1], found %g", c->t, eta);
    Shape r = {.nd = 2, .d = {-1, 4}}, p = {.nd = 2, .d = {-1, 1}}, l = shape1(ss.d[0] < 0 ? -1 : ss.d[0] + 1);
    return set_out(c, "RpnRois", s->dtype, &r) || set_out(c, "RpnRoiProbs", s->dtype, &p) ||
                   set_out(c, "RpnRoisLod", FL_DT_INT64, &l)
               ? FL_ERROR
               : FL_OK;
}

/* ---- rpn_target_assign ---- */

FlStatus fl_infer_rpn_target_assign(Ctx *c) {
    FlVarDesc *an, *gt, *crowd, *info;
    if (ranked(c, "Anchor", 2, false, &an) || ranked(c, "GtBoxes", 2, false, &gt) ||
        need_offsets(c, "GtBoxesLod", false) || in1(c, "IsCrowd", &crowd) || need_int_in(c, crowd, "IsCrowd") ||
        need_offsets(c, "IsCrowdLod", false) || ranked(c, "ImInfo", 2, false, &info))
        return FL_ERROR;
    Shape as = shape_of(an), gs = shape_of(gt), is = shape_of(info);
    if (!dims_agree(as.d[1], 4) || !dims_agree(gs.d[1], 4))
        return fl_err(c->e, "%s: Anchor %s and GtBoxes %s must hold boxes [M, 4] and [G, 4]", c->t, sstr(c, &as),
                      sstr(c, &gs));
    if (!dims_agree(is.d[1], 3))
        return fl_err(c->e, "%s: ImInfo %s must be [N, 3] (height, width, scale)", c->t, sstr(c, &is));
    if (gt->dtype != an->dtype || info->dtype != an->dtype)
        return fl_err(c->e, "%s: GtBoxes (%s) and ImInfo (%s) must have Anchor's dtype %s", c->t, dt(gt->dtype),
                      dt(info->dtype), dt(an->dtype));
    double pos = fattr(c, "rpn_positive_overlap"), neg = fattr(c, "rpn_negative_overlap");
    if (int_min(c, "rpn_batch_size_per_im", 1) || float_in(c, "rpn_fg_fraction", 0, 1)) return FL_ERROR;
    if (!(neg <= pos))
        return fl_err(c->e, "%s: rpn_negative_overlap (%g) must be at most rpn_positive_overlap (%g)", c->t, neg, pos);
    Shape idx = shape1(-1), box = {.nd = 2, .d = {-1, 4}}, lab = {.nd = 2, .d = {-1, 1}},
          lod = shape1(is.d[0] < 0 ? -1 : is.d[0] + 1);
    return set_out(c, "LocationIndex", FL_DT_INT32, &idx) || set_out(c, "ScoreIndex", FL_DT_INT32, &idx) ||
                   set_out(c, "TargetBBox", an->dtype, &box) || set_out(c, "TargetLabel", FL_DT_INT32, &lab) ||
                   set_out(c, "BBoxInsideWeight", an->dtype, &box) || set_out(c, "LocationLod", FL_DT_INT64, &lod) ||
                   set_out(c, "ScoreLod", FL_DT_INT64, &lod)
               ? FL_ERROR
               : FL_OK;
}

/* ---- distribute_fpn_proposals, collect_fpn_proposals ---- */

static size_t nargs_of(Ctx *c, bool out, const char *slot) {
    FlSlot *s = out ? fl_ir_op_output(c->op, slot) : fl_ir_op_input(c->op, slot);
    return s ? s->nargs : 0;
}

FlStatus fl_infer_distribute_fpn_proposals(Ctx *c) {
    FlVarDesc *r;
    if (ranked(c, "FpnRois", 2, false, &r) || need_offsets(c, "FpnRoisLod", false)) return FL_ERROR;
    Shape rs = shape_of(r);
    if (!dims_agree(rs.d[1], 4)) return fl_err(c->e, "%s: FpnRois must be boxes [R, 4], found %s", c->t, sstr(c, &rs));
    int64_t lo = iattr(c, "min_level"), hi = iattr(c, "max_level");
    if (lo < 0 || hi < lo || hi - lo >= 64)
        return fl_err(c->e, "%s: min_level %lld and max_level %lld must make 1 to 64 levels from 0 up", c->t,
                      (long long)lo, (long long)hi);
    if (int_min(c, "refer_scale", 1)) return FL_ERROR;
    size_t n = nargs_of(c, true, "MultiFpnRois");
    if (n != (size_t)(hi - lo + 1) || nargs_of(c, true, "MultiFpnRoisLod") != n)
        return fl_err(c->e, "%s: MultiFpnRois and MultiFpnRoisLod must hold one var per level (%lld), found %zu and "
                      "%zu", c->t, (long long)(hi - lo + 1), n, nargs_of(c, true, "MultiFpnRoisLod"));
    FlVarDesc *lod;
    if (in1(c, "FpnRoisLod", &lod)) return FL_ERROR;
    Shape b = {.nd = 2, .d = {-1, 4}}, l = shape1(lod->shape[0]), ri = {.nd = 2, .d = {rs.d[0], 1}};
    return set_out(c, "MultiFpnRois", r->dtype, &b) || set_out(c, "MultiFpnRoisLod", FL_DT_INT64, &l) ||
                   set_out(c, "RestoreIndex", FL_DT_INT32, &ri)
               ? FL_ERROR
               : FL_OK;
}

FlStatus fl_infer_collect_fpn_proposals(Ctx *c) {
    FlSlot *rois = fl_ir_op_input(c->op, "MultiLevelRois"), *scores = fl_ir_op_input(c->op, "MultiLevelScores");
    size_t n = rois ? rois->nargs : 0;
    if (n == 0 || nargs_of(c, false, "MultiLevelScores") != n || nargs_of(c, false, "MultiLevelLod") != n)
        return fl_err(c->e, "%s: MultiLevelRois, MultiLevelScores and MultiLevelLod must hold one var per level, "
                      "found %zu, %zu and %zu", c->t, n, nargs_of(c, false, "MultiLevelScores"),
                      nargs_of(c, false, "MultiLevelLod"));
    FlDType t = FL_DT_FLOAT32;
    for (size_t i = 0; i < n; i++) {
        FlVarDesc *r, *s;
        if (lookup(c, "input", "MultiLevelRois", rois->args[i], &r) ||
            lookup(c, "input", "MultiLevelScores", scores->args[i], &s) || need_float_in(c, r, "MultiLevelRois") ||
            need_float_in(c, s, "MultiLevelScores"))
            return FL_ERROR;
        Shape rs = shape_of(r), ss = shape_of(s);
        if (rs.nd != 2 || !dims_agree(rs.d[1], 4) || ss.nd != 2 || !dims_agree(ss.d[1], 1) ||
            !dims_agree(rs.d[0], ss.d[0]) || r->dtype != s->dtype || (i && r->dtype != t))
            return fl_err(c->e, "%s: level %zu's RoIs %s %s and scores %s %s must be [R, 4] and [R, 1] of one float "
                          "dtype", c->t, i, dt(r->dtype), sstr(c, &rs), dt(s->dtype), sstr(c, &ss));
        t = r->dtype;
    }
    if (int_min(c, "post_nms_topN", 0)) return FL_ERROR;
    Shape b = {.nd = 2, .d = {-1, 4}}, l = shape1(-1);
    return set_out(c, "FpnRois", t, &b) || set_out(c, "FpnRoisLod", FL_DT_INT64, &l) ? FL_ERROR : FL_OK;
}

/* ---- generate_proposal_labels ---- */

FlStatus fl_infer_generate_proposal_labels(Ctx *c) {
    FlVarDesc *r, *cls, *crowd, *gt, *info;
    if (ranked(c, "RpnRois", 2, false, &r) || need_offsets(c, "RpnRoisLod", false) ||
        ranked(c, "GtClasses", 2, true, &cls) || ranked(c, "IsCrowd", 2, true, &crowd) ||
        ranked(c, "GtBoxes", 2, false, &gt) || need_offsets(c, "GtBoxesLod", false) ||
        ranked(c, "ImInfo", 2, false, &info))
        return FL_ERROR;
    if (gt->dtype != r->dtype || info->dtype != r->dtype)
        return fl_err(c->e, "%s: GtBoxes (%s) and ImInfo (%s) must have RpnRois' dtype %s", c->t, dt(gt->dtype),
                      dt(info->dtype), dt(r->dtype));
    int64_t C = iattr(c, "class_nums");
    if (int_min(c, "class_nums", iattr(c, "is_cls_agnostic") ? 2 : 1) || int_min(c, "batch_size_per_im", 1) ||
        float_in(c, "fg_fraction", 0, 1))
        return FL_ERROR;
    size_t nw;
    const FlAttrInfo *ai = fl_ops_attr(c->info, "bbox_reg_weights");
    FlAttr *a = fl_ir_op_attr(c->op, "bbox_reg_weights");
    nw = a ? a->n : ai->dflt.n;
    const double *w = a ? a->floats : ai->dflt.floats;
    if (nw != 4) return fl_err(c->e, "%s: bbox_reg_weights must hold 4 values, found %zu", c->t, nw);
    for (size_t i = 0; i < 4; i++)
        if (w[i] == 0)
            return fl_err(c->e, "%s: bbox_reg_weights must not be 0 (the targets are divided by them)", c->t);
    Shape b = {.nd = 2, .d = {-1, 4}}, l = {.nd = 2, .d = {-1, 1}}, t = {.nd = 2, .d = {-1, 4 * C}},
          lod = shape1(-1);
    return set_out(c, "Rois", r->dtype, &b) || set_out(c, "LabelsInt32", FL_DT_INT32, &l) ||
                   set_out(c, "BboxTargets", r->dtype, &t) || set_out(c, "BboxInsideWeights", r->dtype, &t) ||
                   set_out(c, "BboxOutsideWeights", r->dtype, &t) || set_out(c, "RoisLod", FL_DT_INT64, &lod)
               ? FL_ERROR
               : FL_OK;
}
