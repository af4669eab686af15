/* infer_array.c: shape rules of the tensor-array ops (write_to_array, read_from_array,
 * lod_array_length, is_empty) and of beam search (beam_search, beam_search_decode); adapters in
 * runtime/core/ops_array.c, kernels in runtime/kernels/beam.c. */
#include "compiler/infer_impl.h"

static FlStatus need_array(Ctx *c, const char *dir, const char *slot, FlVarDesc **v) {
    const char *name = *dir == 'i' ? fl_ir_op_input1(c->op, slot) : fl_ir_op_output1(c->op, slot);
    if (!name) return fl_err(c->e, "%s: missing %s %s", c->t, dir, slot);
    if (lookup(c, dir, slot, name, v)) return FL_ERROR;
    if ((*v)->kind == FL_VAR_TENSOR_ARRAY) return FL_OK;
    return fl_err(c->e, "%s: %s %s '%s' is not a tensor array", c->t, dir, slot, name);
}

static FlStatus need_index(Ctx *c) {
    FlVarDesc *i;
    if (in1(c, "I", &i)) return FL_ERROR;
    Shape s = shape_of(i);
    int64_t n = prod(&s, 0, s.nd);
    if (i->kind == FL_VAR_DENSE && i->dtype == FL_DT_INT64 && (n == 1 || n < 0)) return FL_OK;
    return fl_err(c->e, "%s: the index I must be an int64 [1], found %s %s", c->t, dt(i->dtype), sstr(c, &s));
}

/* write_to_array: the array's elements take X's dtype; its shape is the first element's, with -1
 * where later elements differ. */
FlStatus fl_infer_write_to_array(Ctx *c) {
    FlVarDesc *x, *a;
    if (in1(c, "X", &x) || need_index(c) || need_array(c, "output", "Out", &a)) return FL_ERROR;
    if (x->kind != FL_VAR_DENSE) return fl_err(c->e, "%s: X '%s' is not a tensor", c->t, x->name);
    if (a->dtype != x->dtype)
        return fl_err(c->e, "%s: X '%s' is %s, the array '%s' holds %s", c->t, x->name, dt(x->dtype), a->name,
                      dt(a->dtype));
    Shape xs = shape_of(x), as = shape_of(a);
    if (a->ndim == 0) return fl_ir_var_set_shape(a, xs.nd, xs.d), FL_OK;
    if (as.nd != xs.nd) return fl_ir_var_set_shape(a, 0, NULL), FL_OK; /* elements of any rank */
    for (int k = 0; k < as.nd; k++)
        if (as.d[k] != xs.d[k]) as.d[k] = -1;
    fl_ir_var_set_shape(a, as.nd, as.d);
    return FL_OK;
}

FlStatus fl_infer_read_from_array(Ctx *c) {
    FlVarDesc *a;
    if (need_array(c, "input", "X", &a) || need_index(c)) return FL_ERROR;
    Shape s = shape_of(a);
    return set_out(c, "Out", a->dtype, &s);
}

FlStatus fl_infer_array_scalar(Ctx *c, FlDType t) {
    FlVarDesc *x;
    if (in1(c, "X", &x)) return FL_ERROR;
    if (c->info->id == FL_OPID_lod_array_length && x->kind != FL_VAR_TENSOR_ARRAY)
        return fl_err(c->e, "%s: X '%s' is not a tensor array", c->t, x->name);
    Shape one = shape1(1);
    return set_out(c, "Out", t, &one);
}

/* tensor_array_to_tensor: Out is the elements' shape with an unknown size along axis (the
 * number of elements is known when it runs), a new dim there with use_stack. */
FlStatus fl_infer_tensor_array_to_tensor(Ctx *c) {
    FlVarDesc *a;
    if (need_array(c, "input", "X", &a)) return FL_ERROR;
    Shape s = shape_of(a), idx = shape1(-1);
    if (iattr(c, "use_stack")) {
        int64_t axis = iattr(c, "axis");
        if (s.nd >= FL_IR_MAX_DIMS) return fl_err(c->e, "%s: elements of %d dims cannot be stacked", c->t, s.nd);
        if (axis < 0) axis += s.nd + 1;
        if (axis < 0 || axis > s.nd)
            return fl_err(c->e, "%s: axis %lld is out of range for stacking elements of %d dims", c->t,
                          (long long)iattr(c, "axis"), s.nd);
        for (int k = s.nd; k > axis; k--) s.d[k] = s.d[k - 1];
        s.d[axis] = -1;
        s.nd++;
    } else if (s.nd > 0) {
        int axis = 0;
        if (norm_axis(c, iattr(c, "axis"), s.nd, &s, &axis)) return FL_ERROR;
        s.d[axis] = -1;
    }
    return set_out(c, "Out", a->dtype, &s) || set_out(c, "OutIndex", FL_DT_INT32, &idx) ? FL_ERROR : FL_OK;
}

FlStatus fl_infer_beam_search(Ctx *c) {
    FlVarDesc *pid, *psc, *ids, *sc;
    if (in1(c, "pre_ids", &pid) || in1(c, "pre_scores", &psc) || in_opt(c, "ids", &ids) || in1(c, "scores", &sc) ||
        need_offsets(c, "ScoresSrcLod", false) || need_offsets(c, "ScoresLod", false))
        return FL_ERROR;
    if (pid->dtype != FL_DT_INT64) return fl_err(c->e, "%s: pre_ids must be int64, found %s", c->t, dt(pid->dtype));
    if (ids && ids->dtype != FL_DT_INT64) return fl_err(c->e, "%s: ids must be int64, found %s", c->t, dt(ids->dtype));
    if (psc->dtype != FL_DT_FLOAT32 || sc->dtype != FL_DT_FLOAT32)
        return fl_err(c->e, "%s: pre_scores and scores must be float32, found %s and %s", c->t, dt(psc->dtype),
                      dt(sc->dtype));
    if (iattr(c, "beam_size") < 1)
        return fl_err(c->e, "%s: beam_size must be at least 1, found %lld", c->t, (long long)iattr(c, "beam_size"));
    if (iattr(c, "level") != 0)
        return fl_err(c->e, "%s: level must be 0 (the source level), found %lld", c->t, (long long)iattr(c, "level"));
    Shape col = {.nd = 2, .d = {-1, 1}}, v = shape1(-1);
    return set_out(c, "selected_ids", FL_DT_INT64, &col) || set_out(c, "selected_scores", FL_DT_FLOAT32, &col) ||
           set_out(c, "parent_idx", FL_DT_INT32, &v) || set_out(c, "OutSrcLod", FL_DT_INT64, &v) ||
           set_out(c, "OutLod", FL_DT_INT64, &v);
}

FlStatus fl_infer_beam_search_decode(Ctx *c) {
    FlVarDesc *ids = NULL, *sc = NULL, *l0 = NULL, *l1 = NULL;
    if (need_array(c, "input", "Ids", &ids) || need_array(c, "input", "Scores", &sc) ||
        need_array(c, "input", "IdsSrcLod", &l0) || need_array(c, "input", "IdsLod", &l1))
        return FL_ERROR;
    if (ids->dtype != FL_DT_INT64) return fl_err(c->e, "%s: Ids must hold int64, found %s", c->t, dt(ids->dtype));
    if (sc->dtype != FL_DT_FLOAT32) return fl_err(c->e, "%s: Scores must hold float32, found %s", c->t, dt(sc->dtype));
    if (iattr(c, "beam_size") < 1)
        return fl_err(c->e, "%s: beam_size must be at least 1, found %lld", c->t, (long long)iattr(c, "beam_size"));
    Shape v = shape1(-1);
    return set_out(c, "SentenceIds", FL_DT_INT64, &v) || set_out(c, "SentenceScores", FL_DT_FLOAT32, &v) ||
           set_out(c, "OutSrcLod", FL_DT_INT64, &v) || set_out(c, "OutLod", FL_DT_INT64, &v);
}
