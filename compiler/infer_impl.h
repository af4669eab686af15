/* infer_impl.h: the internals of shape inference, shared by compiler/infer.c (the dispatch over
 * every op, the generic gradient rule, whole programs) and the rule files compiler/infer_<family>.c,
 * one per op family, named as the family's adapters in runtime/core/ops_<family>.c (docs/ops.md
 * says where each piece of an op lives). Not included outside compiler/.
 *
 * A rule reads its inputs through in1()/ins(), computes a Shape and sets the outputs with
 * set_out(). A dim < 0 is unknown (the batch dimension): dims_agree() lets it match anything and
 * merge() keeps the known side, so -1 propagates and no check fails on an unknown dim. Errors go
 * to c->e, prefixed with the op type (c->t).
 */
#ifndef FL_INFER_IMPL_H
#define FL_INFER_IMPL_H

#include <stdio.h>
#include <string.h>

#include "compiler/infer.h"
#include "compiler/ir/rules.h"
#include "compiler/ops.h"

typedef struct Shape {
    int nd;
    int64_t d[FL_IR_MAX_DIMS];
} Shape;

typedef struct Ctx {
    FlProgram *p;
    FlBlock *b;
    FlOpDesc *op;
    const FlOpInfo *info;
    FlErr *e;
    const char *t; /* op type, for messages */
    char sbuf[4][128];
    int nsbuf;
} Ctx;

/* ---- shapes ---- */

static inline Shape shape_of(const FlVarDesc *v) {
    Shape s = {.nd = v->ndim};
    for (int i = 0; i < v->ndim; i++) s.d[i] = v->shape[i];
    return s;
}

static inline Shape shape1(int64_t n) { return (Shape){.nd = 1, .d = {n}}; }

/* "[-1, 13]" in one of a few rotating buffers of the context (enough for one message). */
static inline const char *sstr(Ctx *c, const Shape *s) {
    char *buf = c->sbuf[c->nsbuf++ % 4];
    size_t n = 0, cap = sizeof c->sbuf[0];
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < s->nd && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)s->d[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

static inline bool dims_agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }
static inline int64_t merge(int64_t a, int64_t b) { return a >= 0 ? a : b; }

static inline bool shapes_agree(const Shape *a, const Shape *b) {
    if (a->nd != b->nd) return false;
    for (int i = 0; i < a->nd; i++)
        if (!dims_agree(a->d[i], b->d[i])) return false;
    return true;
}

/* Saturating arithmetic on dims and attribute values (user input: never C's signed overflow). */
static inline int64_t smul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r;
}
static inline int64_t sadd(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b < 0 ? INT64_MIN : INT64_MAX) : r;
}

/* Product of dims [from, to); -1 if any is unknown. */
static inline int64_t prod(const Shape *s, int from, int to) {
    int64_t n = 1;
    for (int i = from; i < to; i++) {
        if (s->d[i] < 0) return -1;
        n = smul(n, s->d[i]);
    }
    return n;
}

static inline bool is_float(FlDType t) { return t == FL_DT_FLOAT32 || t == FL_DT_FLOAT64; }
static inline const char *dt(FlDType t) { return fl_dtype_name(t); }

/* ---- inputs and outputs ---- */

static inline FlStatus lookup(Ctx *c, const char *dir, const char *slot, const char *name,
                       FlVarDesc **v) {
    *v = fl_ir_var_lookup(c->p, c->b, name);
    if (!*v) return fl_err(c->e, "%s: %s %s names undeclared var '%s'", c->t, dir, slot, name);
    return FL_OK;
}

static inline FlStatus in1(Ctx *c, const char *slot, FlVarDesc **v) {
    const char *name = fl_ir_op_input1(c->op, slot);
    if (!name) return fl_err(c->e, "%s: missing input %s", c->t, slot);
    return lookup(c, "input", slot, name, v);
}

/* An optional input: *v = NULL when absent. */
static inline FlStatus in_opt(Ctx *c, const char *slot, FlVarDesc **v) {
    *v = NULL;
    const char *name = fl_ir_op_input1(c->op, slot);
    return name ? lookup(c, "input", slot, name, v) : FL_OK;
}

static inline bool skip_arg(const char *name) { return fl_rule_is_empty(name); }

/* Sets every var of output slot `slot` (absent slot: nothing to do). */
static inline FlStatus set_out(Ctx *c, const char *slot, FlDType t, const Shape *s) {
    FlSlot *sl = fl_ir_op_output(c->op, slot);
    if (!sl) return FL_OK;
    for (size_t i = 0; i < sl->nargs; i++) {
        if (skip_arg(sl->args[i])) continue;
        FlVarDesc *v;
        if (lookup(c, "output", slot, sl->args[i], &v)) return FL_ERROR;
        v->dtype = t;
        fl_ir_var_set_shape(v, s->nd, s->d);
    }
    return FL_OK;
}

static inline FlStatus set_like(Ctx *c, const char *slot, const FlVarDesc *src) {
    Shape s = shape_of(src);
    return set_out(c, slot, src->dtype, &s);
}

static inline FlStatus pass_through(Ctx *c, const char *in, const char *out) {
    FlVarDesc *x;
    if (in1(c, in, &x)) return FL_ERROR;
    return set_like(c, out, x);
}

static inline int64_t iattr(Ctx *c, const char *name) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    if (a && a->type == FL_ATTR_INT) return a->i;
    if (a && a->type == FL_ATTR_BOOL) return a->i;
    return ai ? ai->dflt.i : 0;
}

static inline const char *sattr(Ctx *c, const char *name) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    if (a && a->type == FL_ATTR_STRING) return a->s;
    return ai && ai->dflt.s ? ai->dflt.s : "";
}

static inline double fattr(Ctx *c, const char *name) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    if (a && a->type == FL_ATTR_FLOAT) return a->f;
    if (a && (a->type == FL_ATTR_INT || a->type == FL_ATTR_BOOL)) return (double)a->i;
    return ai ? ai->dflt.f : 0;
}

/* An ints attribute: *n values (the default when absent). Returns NULL if required and absent
 * after setting the error. */
static inline const int64_t *intsattr(Ctx *c, const char *name, size_t *n, bool *ok) {
    const FlAttrInfo *ai = fl_ops_attr(c->info, name);
    FlAttr *a = fl_ir_op_attr(c->op, name);
    *ok = true;
    *n = 0;
    if (a && (a->type == FL_ATTR_INTS || a->type == FL_ATTR_BLOCKS)) {
        *n = a->n;
        return a->ints;
    }
    if (a) {
        *ok = false;
        fl_err(c->e, "%s: attribute '%s' must be a list of ints", c->t, name);
        return NULL;
    }
    if (!ai || ai->required) {
        *ok = false;
        fl_err(c->e, "%s: missing attribute '%s'", c->t, name);
        return NULL;
    }
    *n = ai->dflt.n;
    return ai->dflt.ints;
}

static inline FlStatus check_dtype(Ctx *c, FlDType t) {
    if ((unsigned)t >= FL_DT_COUNT) return fl_err(c->e, "%s: unknown dtype %d", c->t, (int)t);
    return FL_OK;
}

/* Normalises a possibly negative axis into [0, nd). */
static inline FlStatus norm_axis(Ctx *c, int64_t axis, int nd, const Shape *s, int *out) {
    int64_t a = axis < 0 ? sadd(axis, nd) : axis;
    if (a < 0 || a >= nd)
        return fl_err(c->e, "%s: axis %lld is out of range for %s", c->t, (long long)axis,
                      sstr(c, s));
    *out = (int)a;
    return FL_OK;
}

/* numpy broadcasting of a and b into out; false if they cannot be broadcast. */
static inline bool broadcast(const Shape *a, const Shape *b, Shape *out) {
    int nd = a->nd > b->nd ? a->nd : b->nd;
    out->nd = nd;
    for (int i = 0; i < nd; i++) {
        int ia = a->nd - nd + i, ib = b->nd - nd + i;
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (da == 1) out->d[i] = db;
        else if (db == 1) out->d[i] = da;
        else if (da < 0) out->d[i] = db; /* unknown vs n > 1: it can only be n (or 1) */
        else if (db < 0) out->d[i] = da;
        else if (da == db) out->d[i] = da;
        else return false;
    }
    return true;
}

/* A 2-int attribute (strides, paddings, dilations, ksize). */
static inline FlStatus pair_attr(Ctx *c, const char *name, int64_t v[2]) {
    size_t n;
    bool ok;
    const int64_t *a = intsattr(c, name, &n, &ok);
    if (!ok) return FL_ERROR;
    if (n != 2)
        return fl_err(c->e, "%s: %s must hold 2 values (height, width), found %zu", c->t, name, n);
    v[0] = a[0], v[1] = a[1];
    return FL_OK;
}

/* Output size of a sliding window; -1 if in is unknown; sets *empty if it would be < 1. */
static inline int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil, bool *empty) {
    if (in < 0 || k < 0) return -1;
    int64_t span = sadd(smul(d, k - 1), 1), padded = sadd(in, smul(2, p));
    int64_t o = padded < span ? 0 : (ceil ? sadd(padded - span, s - 1) : padded - span) / s + 1;
    if (padded < span || o < 1) *empty = true;
    return o;
}

/* An attribute of n ints (strides, paddings, dilations, ksize of an n-D window) into v. */
static inline FlStatus ints_attr(Ctx *c, const char *name, int n, int64_t *v) {
    size_t got;
    bool ok;
    const int64_t *a = intsattr(c, name, &got, &ok);
    if (!ok) return FL_ERROR;
    if (got != (size_t)n) return fl_err(c->e, "%s: %s must hold %d values, found %zu", c->t, name, n, got);
    for (int i = 0; i < n; i++) v[i] = a[i];
    return FL_OK;
}

static inline FlStatus need_float_in(Ctx *c, const FlVarDesc *v, const char *slot) {
    if (is_float(v->dtype)) return FL_OK;
    return fl_err(c->e, "%s: %s must be float32 or float64, found %s", c->t, slot, dt(v->dtype));
}

static inline FlStatus need_int_in(Ctx *c, const FlVarDesc *v, const char *slot) {
    if (v->dtype == FL_DT_INT32 || v->dtype == FL_DT_INT64) return FL_OK;
    return fl_err(c->e, "%s: %s must be int32 or int64, found %s", c->t, slot, dt(v->dtype));
}

static inline FlStatus need_float(Ctx *c, const char *what, const FlVarDesc *v) {
    if (is_float(v->dtype)) return FL_OK;
    return fl_err(c->e, "%s: %s must be float32 or float64, found %s", c->t, what, dt(v->dtype));
}

static inline FlStatus need_offsets(Ctx *c, const char *slot, bool optional) {
    FlVarDesc *v = NULL;
    if (optional ? in_opt(c, slot, &v) : in1(c, slot, &v)) return FL_ERROR;
    if (!v || (v->dtype == FL_DT_INT64 && v->ndim == 1)) return FL_OK;
    Shape s = shape_of(v);
    return fl_err(c->e, "%s: %s must be the int64 offsets [nseq + 1] of a LoD tensor, found %s %s", c->t, slot,
                  dt(v->dtype), sstr(c, &s));
}

/* ---- the rules, by family (compiler/infer_<family>.c); the dispatch is fl_infer_op ---- */

/* infer_math.c */
FlStatus fl_infer_fill(Ctx *c);
FlStatus fl_infer_assign_value(Ctx *c);
FlStatus fl_infer_cast(Ctx *c);
FlStatus fl_infer_binary(Ctx *c, bool logical_out);
FlStatus fl_infer_logical(Ctx *c, bool unary);
FlStatus fl_infer_increment(Ctx *c);

/* infer_nn.c */
FlStatus fl_infer_mul(Ctx *c);
FlStatus fl_infer_lookup_table(Ctx *c);
FlStatus fl_infer_matmul(Ctx *c);
FlStatus fl_infer_softmax(Ctx *c);
FlStatus fl_infer_cross_entropy(Ctx *c);
FlStatus fl_infer_reduce(Ctx *c);
FlStatus fl_infer_conv2d(Ctx *c);
FlStatus fl_infer_conv2d_shape(Ctx *c, const FlVarDesc *iv, const FlVarDesc *fv, Shape *out);
FlStatus fl_infer_pool2d(Ctx *c);
FlStatus fl_infer_batch_norm(Ctx *c);
FlStatus fl_infer_mean(Ctx *c);
FlStatus fl_infer_dropout(Ctx *c);

/* infer_nn2.c */
FlStatus fl_infer_layer_norm(Ctx *c);
FlStatus fl_infer_softmax_xent(Ctx *c);
FlStatus fl_infer_cos_sim(Ctx *c);
FlStatus fl_infer_lrn(Ctx *c);
FlStatus fl_infer_interp(Ctx *c);
FlStatus fl_infer_conv2d_transpose(Ctx *c);
FlStatus fl_infer_auc(Ctx *c);

/* infer_layers.c */
FlStatus fl_infer_float_unary(Ctx *c);
FlStatus fl_infer_prelu(Ctx *c);
FlStatus fl_infer_batch_size_like(Ctx *c);
FlStatus fl_infer_slice(Ctx *c);
FlStatus fl_infer_gather(Ctx *c);
FlStatus fl_infer_scatter(Ctx *c);
FlStatus fl_infer_expand(Ctx *c);
FlStatus fl_infer_squeeze(Ctx *c);
FlStatus fl_infer_unsqueeze(Ctx *c);
FlStatus fl_infer_flatten(Ctx *c);
FlStatus fl_infer_stack(Ctx *c);
FlStatus fl_infer_unstack(Ctx *c);
FlStatus fl_infer_clip(Ctx *c);
FlStatus fl_infer_clip_by_norm(Ctx *c);
FlStatus fl_infer_pad(Ctx *c);
FlStatus fl_infer_crop(Ctx *c);
FlStatus fl_infer_one_hot(Ctx *c);

/* infer_shape.c */
FlStatus fl_infer_sum(Ctx *c);
FlStatus fl_infer_concat(Ctx *c);
FlStatus fl_infer_sparse_decay(Ctx *c);
FlStatus fl_infer_split_selected_rows(Ctx *c);
FlStatus fl_infer_split(Ctx *c);
FlStatus fl_infer_reshape(Ctx *c);
FlStatus fl_infer_transpose(Ctx *c);
FlStatus fl_infer_argmax(Ctx *c);
FlStatus fl_infer_top_k(Ctx *c);
FlStatus fl_infer_accuracy(Ctx *c);
FlStatus fl_infer_print(Ctx *c);

/* infer_seq.c */
FlStatus fl_infer_sequence_pool(Ctx *c);
FlStatus fl_infer_sequence_softmax(Ctx *c);
FlStatus fl_infer_sequence_conv(Ctx *c);
FlStatus fl_infer_sequence_expand(Ctx *c);
FlStatus fl_infer_sequence_mask(Ctx *c);

/* infer_seqshape.c */
FlStatus fl_infer_seqshape(Ctx *c);

/* infer_rnn.c */
FlStatus fl_infer_rnn(Ctx *c, int gates);
FlStatus fl_infer_rnn_unit(Ctx *c, bool gru);

/* infer_crf.c */
FlStatus fl_infer_linear_chain_crf(Ctx *c);
FlStatus fl_infer_crf_decoding(Ctx *c);
FlStatus fl_infer_chunk_eval(Ctx *c);

/* infer_detection.c */
FlStatus fl_infer_prior_box(Ctx *c);
FlStatus fl_infer_density_prior_box(Ctx *c);
FlStatus fl_infer_anchor_generator(Ctx *c);
FlStatus fl_infer_iou_similarity(Ctx *c);
FlStatus fl_infer_box_coder(Ctx *c);
FlStatus fl_infer_box_clip(Ctx *c);
FlStatus fl_infer_polygon_box_transform(Ctx *c);
FlStatus fl_infer_box_decoder_and_assign(Ctx *c);
FlStatus fl_infer_yolo_box(Ctx *c);
FlStatus fl_infer_smooth_l1_loss(Ctx *c);
FlStatus fl_infer_sigmoid_xent(Ctx *c);
FlStatus fl_infer_multiclass_nms(Ctx *c);
FlStatus fl_infer_bipartite_match(Ctx *c);
FlStatus fl_infer_target_assign(Ctx *c);
FlStatus fl_infer_mine_hard_examples(Ctx *c);
FlStatus fl_infer_detection_map(Ctx *c);
/* infer_ctc.c */
FlStatus fl_infer_warpctc(Ctx *c);
FlStatus fl_infer_ctc_align(Ctx *c);
FlStatus fl_infer_edit_distance(Ctx *c);
FlStatus fl_infer_sequence_erase(Ctx *c);
/* infer_rankloss.c */
FlStatus fl_infer_rank_loss(Ctx *c);
FlStatus fl_infer_margin_rank_loss(Ctx *c);
FlStatus fl_infer_bpr_loss(Ctx *c);
/* infer_seqnlp.c */
FlStatus fl_infer_sequence_reverse(Ctx *c);
FlStatus fl_infer_row_conv(Ctx *c);
FlStatus fl_infer_add_position_encoding(Ctx *c);
FlStatus fl_infer_sampling_id(Ctx *c);
FlStatus fl_infer_im2sequence(Ctx *c);
FlStatus fl_infer_hierarchical_sigmoid(Ctx *c);
FlStatus fl_infer_nce(Ctx *c);
FlStatus fl_infer_sample_logits(Ctx *c);

/* infer_tensor.c */
FlStatus fl_infer_cumsum(Ctx *c);
FlStatus fl_infer_argsort(Ctx *c);
FlStatus fl_infer_argmin(Ctx *c);
FlStatus fl_infer_reverse(Ctx *c);
FlStatus fl_infer_value_test(Ctx *c);
FlStatus fl_infer_diag(Ctx *c);
FlStatus fl_infer_where(Ctx *c);
FlStatus fl_infer_range(Ctx *c);
FlStatus fl_infer_mean_iou(Ctx *c);
FlStatus fl_infer_teacher_student_sigmoid_loss(Ctx *c);
FlStatus fl_infer_linspace(Ctx *c);
FlStatus fl_infer_shape_op(Ctx *c);
FlStatus fl_infer_log_loss(Ctx *c);
FlStatus fl_infer_huber_loss(Ctx *c);
FlStatus fl_infer_kldiv_loss(Ctx *c);
FlStatus fl_infer_multiplex(Ctx *c);
/* infer_proposals.c */
FlStatus fl_infer_yolov3_loss(Ctx *c);
FlStatus fl_infer_generate_proposals(Ctx *c);
FlStatus fl_infer_rpn_target_assign(Ctx *c);
FlStatus fl_infer_generate_proposal_labels(Ctx *c);
FlStatus fl_infer_distribute_fpn_proposals(Ctx *c);
FlStatus fl_infer_collect_fpn_proposals(Ctx *c);

/* infer_cudnnlstm.c */
FlStatus fl_infer_cudnn_lstm(Ctx *c);
/* infer_statnorm.c */
FlStatus fl_infer_data_norm(Ctx *c);
FlStatus fl_infer_spectral_norm(Ctx *c);
/* infer_gridsample.c */
FlStatus fl_infer_affine_grid(Ctx *c);
FlStatus fl_infer_grid_sampler(Ctx *c);
/* infer_ctr.c */
FlStatus fl_infer_hash(Ctx *c);
FlStatus fl_infer_cvm(Ctx *c);
FlStatus fl_infer_merge_selected_rows(Ctx *c);
FlStatus fl_infer_get_tensor_from_selected_rows(Ctx *c);
/* infer_seqedit.c */
FlStatus fl_infer_sequence_scatter(Ctx *c);
FlStatus fl_infer_lod_rank_table(Ctx *c);
FlStatus fl_infer_reorder_lod_tensor_by_rank(Ctx *c);
/* infer_imgsel.c */
FlStatus fl_infer_random_crop(Ctx *c);
FlStatus fl_infer_similarity_focus(Ctx *c);
/* infer_tree.c */
FlStatus fl_infer_tree_conv(Ctx *c);
/* infer_lodfile.c */
FlStatus fl_infer_load(Ctx *c);

/* infer_array.c */
FlStatus fl_infer_write_to_array(Ctx *c);
FlStatus fl_infer_read_from_array(Ctx *c);
FlStatus fl_infer_array_scalar(Ctx *c, FlDType t);
FlStatus fl_infer_tensor_array_to_tensor(Ctx *c);
FlStatus fl_infer_beam_search(Ctx *c);
FlStatus fl_infer_beam_search_decode(Ctx *c);

/* infer_optim.c */
FlStatus fl_infer_optimizer(Ctx *c);
FlStatus fl_infer_average_accumulates(Ctx *c);

/* infer_control.c */
FlStatus fl_infer_list_index(Ctx *c);
FlStatus fl_infer_dynamic_rnn(Ctx *c);
FlStatus fl_infer_while(Ctx *c);

/* infer_chan.c */
FlStatus fl_infer_select_sends(Ctx *c);
FlStatus fl_infer_channel_send(Ctx *c);
FlStatus fl_infer_channel_recv(Ctx *c);
FlStatus fl_infer_time_after(Ctx *c);
FlStatus fl_infer_channel_nil(Ctx *c);
FlStatus fl_infer_channel_len(Ctx *c);
FlStatus fl_infer_channel_assign(Ctx *c);

/* infer_vision.c */
FlStatus fl_infer_pixel_shuffle(Ctx *c);
FlStatus fl_infer_shuffle_channel(Ctx *c);
FlStatus fl_infer_space_to_depth(Ctx *c);
FlStatus fl_infer_temporal_shift(Ctx *c);
FlStatus fl_infer_maxout(Ctx *c);
FlStatus fl_infer_affine_channel(Ctx *c);
FlStatus fl_infer_pad2d(Ctx *c);
FlStatus fl_infer_pad_constant_like(Ctx *c);
FlStatus fl_infer_group_norm(Ctx *c);

/* infer_conv3.c */
FlStatus fl_infer_conv3d(Ctx *c);
FlStatus fl_infer_conv3d_transpose(Ctx *c);
FlStatus fl_infer_pool3d(Ctx *c);
FlStatus fl_infer_max_pool_with_index(Ctx *c, int nsp);

/* infer_roi.c */
FlStatus fl_infer_roi_pool(Ctx *c);
FlStatus fl_infer_roi_align(Ctx *c);
FlStatus fl_infer_psroi_pool(Ctx *c);

/* infer_perspective.c */
FlStatus fl_infer_roi_perspective_transform(Ctx *c);
/* infer_quant.c */
FlStatus fl_infer_fake_quantize_abs_max(Ctx *c);
FlStatus fl_infer_fake_quantize_range_abs_max(Ctx *c);
FlStatus fl_infer_fake_quantize_moving_average_abs_max(Ctx *c);
FlStatus fl_infer_fake_dequantize_max_abs(Ctx *c);
FlStatus fl_infer_quantize(Ctx *c);
FlStatus fl_infer_dequantize(Ctx *c);
FlStatus fl_infer_requantize(Ctx *c);
FlStatus fl_infer_conv2d_int8(Ctx *c);
FlStatus fl_infer_calib_sample(Ctx *c);
FlStatus fl_infer_calib_scale(Ctx *c);

/* infer_masks.c */
FlStatus fl_infer_generate_mask_labels(Ctx *c);

/* infer_dist.c */
FlStatus fl_infer_distributed_lookup_table(Ctx *c);
FlStatus fl_infer_distributed_lookup_grad_rows(Ctx *c);
FlStatus fl_infer_allreduce(Ctx *c);

/* infer_driver.c */
FlStatus fl_infer_run_program(Ctx *c);
FlStatus fl_infer_print_line(Ctx *c);
FlStatus fl_infer_time_now(Ctx *c);
FlStatus fl_infer_scope_new(Ctx *c);
FlStatus fl_infer_save_load_vars(Ctx *c);
FlStatus fl_infer_save_program(Ctx *c);
FlStatus fl_infer_index(Ctx *c);
FlStatus fl_infer_slice_rows(Ctx *c);
FlStatus fl_infer_item(Ctx *c);
FlStatus fl_infer_exit(Ctx *c);
FlStatus fl_infer_scope_var(Ctx *c);
/* infer_tensorfile.c */
FlStatus fl_infer_scope_set(Ctx *c);
FlStatus fl_infer_read_file(Ctx *c);

/* infer_random.c */
FlStatus fl_infer_random_state(Ctx *c);
FlStatus fl_infer_random_draw(Ctx *c);

/* infer_reader.c */
FlStatus fl_infer_reader_open(Ctx *c);
FlStatus fl_infer_reader_epoch(Ctx *c);
FlStatus fl_infer_reader_next(Ctx *c);
FlStatus fl_infer_reader_end(Ctx *c);
FlStatus fl_infer_recordio_write(Ctx *c);

/* infer_report.c */
FlStatus fl_infer_option(Ctx *c);
FlStatus fl_infer_report_open(Ctx *c);
FlStatus fl_infer_report_next(Ctx *c);
FlStatus fl_infer_report_in(Ctx *c);

#endif
