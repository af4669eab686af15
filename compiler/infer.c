/* infer.c: shape and dtype inference: the dispatch of an op to its family's rule, the rule of
 * every gradient op, and whole programs.
 *
 * The rules live in compiler/infer_<family>.c, one file per op family, named as the family's
 * adapters in runtime/core/ops_<family>.c; their shared context and helpers are in infer_impl.h.
 * The dispatch in fl_infer_op switches over every FlOpId without a default, so a new op in
 * ops.def fails to compile (-Wswitch) until it has a rule.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/infer_impl.h"

/* The input slot of a table whose gradient an is_sparse op makes a SelectedRows (the rows it
 * read), or NULL for an op without one. */
static const char *sparse_table_slot(FlOpId id) {
    if (id == FL_OPID_lookup_table || id == FL_OPID_hierarchical_sigmoid) return "W";
    if (id == FL_OPID_nce) return "Weight";
    return NULL;
}

/* A gradient op: "<X>@GRAD" takes the forward var in input slot X (else the first gradient
 * input: dropout_grad's X@GRAD is shaped like Out@GRAD). */
static FlStatus infer_grad(Ctx *c) {
    for (size_t i = 0; i < c->op->outs.len; i++) {
        FlSlot *gs = &c->op->outs.data[i];
        size_t len = strlen(gs->name), sl = sizeof FL_RULE_GRAD_SUFFIX - 1;
        if (!fl_rule_is_grad(gs->name))
            return fl_err(c->e, "%s: output slot '%s' is not a gradient", c->t, gs->name);
        char fwd[64];
        size_t n = len - sl < sizeof fwd ? len - sl : sizeof fwd - 1;
        memcpy(fwd, gs->name, n);
        fwd[n] = 0;
        FlSlot *fs = fl_ir_op_input(c->op, fwd);
        if (!fs) {
            for (size_t k = 0; k < c->op->ins.len && !fs; k++) {
                if (fl_rule_is_grad(c->op->ins.data[k].name))
                    fs = &c->op->ins.data[k];
            }
        }
        if (!fs) return fl_err(c->e, "%s: no forward var for output %s", c->t, gs->name);
        for (size_t k = 0; k < gs->nargs; k++) {
            if (skip_arg(gs->args[k])) continue;
            size_t src = k;
            if (src >= fs->nargs)
                return fl_err(c->e, "%s: output %s has %zu vars but input %s has %zu", c->t,
                              gs->name, gs->nargs, fs->name, fs->nargs);
            FlVarDesc *fv, *gv;
            if (lookup(c, "input", fs->name, fs->args[src], &fv) ||
                lookup(c, "output", gs->name, gs->args[k], &gv))
                return FL_ERROR;
            gv->dtype = fv->dtype;
            fl_ir_var_set_shape(gv, fv->ndim, fv->shape);
            /* an is_sparse op's table gradient holds the rows it read only; in a step block
             * (DynamicRNN, StaticRNN) it stays dense: the recurrent gradient ops add the steps'
             * gradients up as tensors */
            const char *table = sparse_table_slot(c->info->id);
            if (table && strcmp(fs->name, table) == 0)
                gv->kind = iattr(c, "is_sparse") && c->b->idx == 0 ? FL_VAR_SELECTED_ROWS : FL_VAR_DENSE;
        }
    }
    return FL_OK;
}

/* The storage dtypes (float16, int8, uint8) reach only the ops that move tensors (FL_OPF_STORAGE):
 * any other op with such an input, or inferred to make such an output, is refused here, so no
 * kernel's dtype switch is ever reached with them. */
static FlStatus refuse_storage(Ctx *c, bool outputs) {
    if (c->info->flags & FL_OPF_STORAGE) return FL_OK;
    size_t n = outputs ? c->op->outs.len : c->op->ins.len;
    for (size_t i = 0; i < n; i++) {
        const FlSlot *sl = outputs ? &c->op->outs.data[i] : &c->op->ins.data[i];
        for (size_t k = 0; k < sl->nargs; k++) {
            if (skip_arg(sl->args[k])) continue;
            const FlVarDesc *v = fl_ir_var_lookup(c->p, c->b, sl->args[k]);
            if (!v || v->kind == FL_VAR_CHANNEL || !fl_dtype_is_storage(v->dtype)) continue;
            const char *dt = fl_dtype_name(v->dtype);
            return fl_err(c->e,
                          "%s: %s %s '%s' is %s, a dtype fluidc stores, moves and casts but computes nothing "
                          "on: %s has no %s kernel; cast it to float32 first (fluid.layers.cast(x, 'float32'))",
                          c->t, outputs ? "output" : "input", sl->name, sl->args[k], dt, c->t, dt);
        }
    }
    return FL_OK;
}

static FlStatus infer_op(Ctx *c);

FlStatus fl_infer_op(FlProgram *p, FlBlock *b, FlOpDesc *op, FlErr *e) {
    Ctx c = {.p = p, .b = b, .op = op, .e = e, .t = op->type};
    c.info = fl_ops_of(op);
    if (!c.info) return fl_err(e, "unknown op '%s'", op->type);
    if (refuse_storage(&c, false) || infer_op(&c)) return FL_ERROR;
    return refuse_storage(&c, true);
}

static FlStatus infer_op(Ctx *c0) {
    Ctx c = *c0;
    if (c.info->is_grad) return infer_grad(&c);
    switch (c.info->id) {
    /* infer_math.c (and the unary activations and scale: X's shape) */
    case FL_OPID_assign_value: return fl_infer_assign_value(&c);
    case FL_OPID_fill_constant:
    case FL_OPID_uniform_random:
    case FL_OPID_gaussian_random:
    case FL_OPID_truncated_gaussian_random: return fl_infer_fill(&c);
    case FL_OPID_fill_zeros_like:
    case FL_OPID_assign: return pass_through(&c, "X", "Out");
    case FL_OPID_cast: return fl_infer_cast(&c);
    case FL_OPID_elementwise_add:
    case FL_OPID_elementwise_sub:
    case FL_OPID_elementwise_mul:
    case FL_OPID_elementwise_div:
    case FL_OPID_elementwise_max:
    case FL_OPID_elementwise_min:
    case FL_OPID_elementwise_pow:
    case FL_OPID_elementwise_floordiv:
    case FL_OPID_elementwise_mod: return fl_infer_binary(&c, false);
    case FL_OPID_relu:
    case FL_OPID_sigmoid:
    case FL_OPID_tanh:
    case FL_OPID_exp:
    case FL_OPID_log:
    case FL_OPID_sqrt:
    case FL_OPID_square:
    case FL_OPID_abs:
    case FL_OPID_scale: return pass_through(&c, "X", "Out");
    case FL_OPID_less_than:
    case FL_OPID_less_equal:
    case FL_OPID_greater_than:
    case FL_OPID_greater_equal:
    case FL_OPID_equal:
    case FL_OPID_not_equal: return fl_infer_binary(&c, true);
    case FL_OPID_logical_and:
    case FL_OPID_logical_or: return fl_infer_logical(&c, false);
    case FL_OPID_logical_not: return fl_infer_logical(&c, true);
    case FL_OPID_increment: return fl_infer_increment(&c);
    /* infer_nn.c */
    case FL_OPID_lookup_table: return fl_infer_lookup_table(&c);
    case FL_OPID_mul: return fl_infer_mul(&c);
    case FL_OPID_matmul: return fl_infer_matmul(&c);
    case FL_OPID_softmax: return fl_infer_softmax(&c);
    case FL_OPID_cross_entropy: return fl_infer_cross_entropy(&c);
    case FL_OPID_mean: return fl_infer_mean(&c);
    case FL_OPID_reduce_sum:
    case FL_OPID_reduce_mean: return fl_infer_reduce(&c);
    case FL_OPID_reduce_max:
    case FL_OPID_reduce_min:
    case FL_OPID_reduce_prod: return fl_infer_reduce(&c);
    case FL_OPID_conv2d: return fl_infer_conv2d(&c);
    case FL_OPID_pool2d: return fl_infer_pool2d(&c);
    case FL_OPID_batch_norm: return fl_infer_batch_norm(&c);
    case FL_OPID_dropout: return fl_infer_dropout(&c);
    /* infer_nn2.c */
    case FL_OPID_layer_norm: return fl_infer_layer_norm(&c);
    case FL_OPID_lrn: return fl_infer_lrn(&c);
    case FL_OPID_conv2d_transpose: return fl_infer_conv2d_transpose(&c);
    case FL_OPID_bilinear_interp:
    case FL_OPID_nearest_interp: return fl_infer_interp(&c);
    case FL_OPID_softmax_with_cross_entropy: return fl_infer_softmax_xent(&c);
    case FL_OPID_cos_sim: return fl_infer_cos_sim(&c);
    case FL_OPID_auc: return fl_infer_auc(&c);
    /* infer_layers.c */
    case FL_OPID_leaky_relu:
    case FL_OPID_elu:
    case FL_OPID_relu6:
    case FL_OPID_swish:
    case FL_OPID_hard_sigmoid:
    case FL_OPID_brelu:
    case FL_OPID_soft_relu:
    case FL_OPID_softsign:
    case FL_OPID_pow:
    case FL_OPID_logsigmoid:
    case FL_OPID_atan:
    case FL_OPID_tanh_shrink:
    case FL_OPID_softshrink:
    case FL_OPID_rsqrt:
    case FL_OPID_ceil:
    case FL_OPID_floor:
    case FL_OPID_cos:
    case FL_OPID_acos:
    case FL_OPID_asin:
    case FL_OPID_sin:
    case FL_OPID_round:
    case FL_OPID_reciprocal:
    case FL_OPID_softplus:
    case FL_OPID_hard_shrink:
    case FL_OPID_thresholded_relu:
    case FL_OPID_selu:
    case FL_OPID_stanh:
    case FL_OPID_sign: return fl_infer_float_unary(&c);
    case FL_OPID_prelu: return fl_infer_prelu(&c);
    case FL_OPID_fill_constant_batch_size_like:
    case FL_OPID_uniform_random_batch_size_like: return fl_infer_batch_size_like(&c);
    case FL_OPID_gaussian_random_batch_size_like: return fl_infer_batch_size_like(&c);
    case FL_OPID_slice: return fl_infer_slice(&c);
    case FL_OPID_gather: return fl_infer_gather(&c);
    case FL_OPID_scatter: return fl_infer_scatter(&c);
    case FL_OPID_expand: return fl_infer_expand(&c);
    case FL_OPID_squeeze: return fl_infer_squeeze(&c);
    case FL_OPID_unsqueeze: return fl_infer_unsqueeze(&c);
    case FL_OPID_flatten: return fl_infer_flatten(&c);
    case FL_OPID_stack: return fl_infer_stack(&c);
    case FL_OPID_unstack: return fl_infer_unstack(&c);
    case FL_OPID_clip: return fl_infer_clip(&c);
    case FL_OPID_clip_by_norm: return fl_infer_clip_by_norm(&c);
    case FL_OPID_pad: return fl_infer_pad(&c);
    case FL_OPID_crop: return fl_infer_crop(&c);
    case FL_OPID_one_hot: return fl_infer_one_hot(&c);
    /* infer_shape.c */
    case FL_OPID_sum: return fl_infer_sum(&c);
    case FL_OPID_concat: return fl_infer_concat(&c);
    case FL_OPID_split: return fl_infer_split(&c);
    case FL_OPID_split_selected_rows: return fl_infer_split_selected_rows(&c);
    case FL_OPID_sparse_decay: return fl_infer_sparse_decay(&c);
    case FL_OPID_reshape: return fl_infer_reshape(&c);
    case FL_OPID_transpose: return fl_infer_transpose(&c);
    case FL_OPID_argmax: return fl_infer_argmax(&c);
    case FL_OPID_top_k: return fl_infer_top_k(&c);
    case FL_OPID_accuracy: return fl_infer_accuracy(&c);
    case FL_OPID_Print: return fl_infer_print(&c);
    /* infer_seq.c */
    case FL_OPID_sequence_pool: return fl_infer_sequence_pool(&c);
    case FL_OPID_sequence_softmax: return fl_infer_sequence_softmax(&c);
    case FL_OPID_sequence_conv: return fl_infer_sequence_conv(&c);
    case FL_OPID_sequence_expand:
    case FL_OPID_sequence_expand_as: return fl_infer_sequence_expand(&c);
    case FL_OPID_sequence_mask: return fl_infer_sequence_mask(&c);
    /* infer_seqshape.c */
    case FL_OPID_sequence_concat:
    case FL_OPID_sequence_reshape:
    case FL_OPID_sequence_slice:
    case FL_OPID_sequence_pad:
    case FL_OPID_sequence_unpad:
    case FL_OPID_sequence_enumerate:
    case FL_OPID_lod_reset: return fl_infer_seqshape(&c);
    /* infer_rnn.c */
    case FL_OPID_lstm: return fl_infer_rnn(&c, 4);
    case FL_OPID_lstmp: return fl_infer_rnn(&c, 4);
    case FL_OPID_gru: return fl_infer_rnn(&c, 3);
    case FL_OPID_lstm_unit: return fl_infer_rnn_unit(&c, false);
    case FL_OPID_gru_unit: return fl_infer_rnn_unit(&c, true);
    /* infer_crf.c */
    case FL_OPID_linear_chain_crf: return fl_infer_linear_chain_crf(&c);
    case FL_OPID_crf_decoding: return fl_infer_crf_decoding(&c);
    case FL_OPID_chunk_eval: return fl_infer_chunk_eval(&c);
    /* infer_detection.c */
    case FL_OPID_prior_box: return fl_infer_prior_box(&c);
    case FL_OPID_density_prior_box: return fl_infer_density_prior_box(&c);
    case FL_OPID_anchor_generator: return fl_infer_anchor_generator(&c);
    case FL_OPID_iou_similarity: return fl_infer_iou_similarity(&c);
    case FL_OPID_box_coder: return fl_infer_box_coder(&c);
    case FL_OPID_box_clip: return fl_infer_box_clip(&c);
    case FL_OPID_polygon_box_transform: return fl_infer_polygon_box_transform(&c);
    case FL_OPID_box_decoder_and_assign: return fl_infer_box_decoder_and_assign(&c);
    case FL_OPID_yolo_box: return fl_infer_yolo_box(&c);
    case FL_OPID_smooth_l1_loss: return fl_infer_smooth_l1_loss(&c);
    case FL_OPID_sigmoid_cross_entropy_with_logits: return fl_infer_sigmoid_xent(&c);
    case FL_OPID_multiclass_nms: return fl_infer_multiclass_nms(&c);
    case FL_OPID_bipartite_match: return fl_infer_bipartite_match(&c);
    case FL_OPID_target_assign: return fl_infer_target_assign(&c);
    case FL_OPID_mine_hard_examples: return fl_infer_mine_hard_examples(&c);
    case FL_OPID_detection_map: return fl_infer_detection_map(&c);
    /* infer_tensor.c */
    case FL_OPID_cumsum: return fl_infer_cumsum(&c);
    case FL_OPID_reverse: return fl_infer_reverse(&c);
    case FL_OPID_argmin: return fl_infer_argmin(&c);
    case FL_OPID_argsort: return fl_infer_argsort(&c);
    case FL_OPID_isinf:
    case FL_OPID_isnan:
    case FL_OPID_isfinite: return fl_infer_value_test(&c);
    case FL_OPID_diag: return fl_infer_diag(&c);
    case FL_OPID_where: return fl_infer_where(&c);
    case FL_OPID_range: return fl_infer_range(&c);
    case FL_OPID_mean_iou: return fl_infer_mean_iou(&c);
    case FL_OPID_teacher_student_sigmoid_loss: return fl_infer_teacher_student_sigmoid_loss(&c);
    case FL_OPID_linspace: return fl_infer_linspace(&c);
    case FL_OPID_shape: return fl_infer_shape_op(&c);
    case FL_OPID_log_loss: return fl_infer_log_loss(&c);
    case FL_OPID_huber_loss: return fl_infer_huber_loss(&c);
    case FL_OPID_kldiv_loss: return fl_infer_kldiv_loss(&c);
    case FL_OPID_multiplex: return fl_infer_multiplex(&c);
    /* infer_proposals.c */
    case FL_OPID_yolov3_loss: return fl_infer_yolov3_loss(&c);
    case FL_OPID_generate_proposals: return fl_infer_generate_proposals(&c);
    case FL_OPID_rpn_target_assign: return fl_infer_rpn_target_assign(&c);
    case FL_OPID_generate_proposal_labels: return fl_infer_generate_proposal_labels(&c);
    case FL_OPID_distribute_fpn_proposals: return fl_infer_distribute_fpn_proposals(&c);
    case FL_OPID_collect_fpn_proposals: return fl_infer_collect_fpn_proposals(&c);
    /* infer_vision.c */
    case FL_OPID_pixel_shuffle: return fl_infer_pixel_shuffle(&c);
    case FL_OPID_shuffle_channel: return fl_infer_shuffle_channel(&c);
    case FL_OPID_space_to_depth: return fl_infer_space_to_depth(&c);
    case FL_OPID_temporal_shift: return fl_infer_temporal_shift(&c);
    case FL_OPID_maxout: return fl_infer_maxout(&c);
    case FL_OPID_affine_channel: return fl_infer_affine_channel(&c);
    case FL_OPID_pad2d: return fl_infer_pad2d(&c);
    case FL_OPID_pad_constant_like: return fl_infer_pad_constant_like(&c);
    case FL_OPID_group_norm: return fl_infer_group_norm(&c);
    /* infer_conv3.c */
    case FL_OPID_conv3d: return fl_infer_conv3d(&c);
    case FL_OPID_conv3d_transpose: return fl_infer_conv3d_transpose(&c);
    case FL_OPID_pool3d: return fl_infer_pool3d(&c);
    case FL_OPID_max_pool2d_with_index: return fl_infer_max_pool_with_index(&c, 2);
    case FL_OPID_max_pool3d_with_index: return fl_infer_max_pool_with_index(&c, 3);
    /* infer_roi.c */
    case FL_OPID_roi_pool: return fl_infer_roi_pool(&c);
    case FL_OPID_roi_align: return fl_infer_roi_align(&c);
    case FL_OPID_psroi_pool: return fl_infer_psroi_pool(&c);
    /* infer_perspective.c */
    case FL_OPID_roi_perspective_transform: return fl_infer_roi_perspective_transform(&c);
    /* infer_quant.c */
    case FL_OPID_fake_quantize_abs_max: return fl_infer_fake_quantize_abs_max(&c);
    case FL_OPID_fake_quantize_range_abs_max: return fl_infer_fake_quantize_range_abs_max(&c);
    case FL_OPID_fake_quantize_moving_average_abs_max: return fl_infer_fake_quantize_moving_average_abs_max(&c);
    case FL_OPID_fake_dequantize_max_abs: return fl_infer_fake_dequantize_max_abs(&c);
    case FL_OPID_quantize: return fl_infer_quantize(&c);
    case FL_OPID_dequantize: return fl_infer_dequantize(&c);
    case FL_OPID_requantize: return fl_infer_requantize(&c);
    case FL_OPID_conv2d_int8: return fl_infer_conv2d_int8(&c);
    case FL_OPID_calib_sample: return fl_infer_calib_sample(&c);
    case FL_OPID_calib_scale: return fl_infer_calib_scale(&c);
    /* infer_masks.c */
    case FL_OPID_generate_mask_labels: return fl_infer_generate_mask_labels(&c);
    /* infer_ctc.c */
    case FL_OPID_warpctc: return fl_infer_warpctc(&c);
    case FL_OPID_ctc_align: return fl_infer_ctc_align(&c);
    case FL_OPID_edit_distance: return fl_infer_edit_distance(&c);
    case FL_OPID_sequence_erase: return fl_infer_sequence_erase(&c);
    /* infer_rankloss.c */
    case FL_OPID_rank_loss: return fl_infer_rank_loss(&c);
    case FL_OPID_margin_rank_loss: return fl_infer_margin_rank_loss(&c);
    case FL_OPID_bpr_loss: return fl_infer_bpr_loss(&c);
    /* infer_seqnlp.c */
    case FL_OPID_sequence_reverse: return fl_infer_sequence_reverse(&c);
    case FL_OPID_row_conv: return fl_infer_row_conv(&c);
    case FL_OPID_add_position_encoding: return fl_infer_add_position_encoding(&c);
    case FL_OPID_sampling_id: return fl_infer_sampling_id(&c);
    case FL_OPID_im2sequence: return fl_infer_im2sequence(&c);
    /* infer_vocab.c */
    case FL_OPID_hierarchical_sigmoid: return fl_infer_hierarchical_sigmoid(&c);
    case FL_OPID_nce: return fl_infer_nce(&c);
    case FL_OPID_sample_logits: return fl_infer_sample_logits(&c);
    /* infer_cudnnlstm.c */
    case FL_OPID_cudnn_lstm: return fl_infer_cudnn_lstm(&c);
    /* infer_statnorm.c */
    case FL_OPID_data_norm: return fl_infer_data_norm(&c);
    case FL_OPID_spectral_norm: return fl_infer_spectral_norm(&c);
    /* infer_gridsample.c */
    case FL_OPID_affine_grid: return fl_infer_affine_grid(&c);
    case FL_OPID_grid_sampler: return fl_infer_grid_sampler(&c);
    /* infer_ctr.c */
    case FL_OPID_hash: return fl_infer_hash(&c);
    case FL_OPID_cvm: return fl_infer_cvm(&c);
    case FL_OPID_merge_selected_rows: return fl_infer_merge_selected_rows(&c);
    case FL_OPID_get_tensor_from_selected_rows: return fl_infer_get_tensor_from_selected_rows(&c);
    /* infer_seqedit.c */
    case FL_OPID_sequence_scatter: return fl_infer_sequence_scatter(&c);
    case FL_OPID_lod_rank_table: return fl_infer_lod_rank_table(&c);
    case FL_OPID_reorder_lod_tensor_by_rank: return fl_infer_reorder_lod_tensor_by_rank(&c);
    /* infer_imgsel.c */
    case FL_OPID_random_crop: return fl_infer_random_crop(&c);
    case FL_OPID_similarity_focus: return fl_infer_similarity_focus(&c);
    /* infer_tree.c */
    case FL_OPID_tree_conv: return fl_infer_tree_conv(&c);
    /* infer_lodfile.c */
    case FL_OPID_load: return fl_infer_load(&c);
    /* infer_array.c */
    case FL_OPID_write_to_array: return fl_infer_write_to_array(&c);
    case FL_OPID_read_from_array: return fl_infer_read_from_array(&c);
    case FL_OPID_lod_array_length: return fl_infer_array_scalar(&c, FL_DT_INT64);
    case FL_OPID_is_empty: return fl_infer_array_scalar(&c, FL_DT_BOOL);
    case FL_OPID_tensor_array_to_tensor: return fl_infer_tensor_array_to_tensor(&c);
    case FL_OPID_beam_search: return fl_infer_beam_search(&c);
    case FL_OPID_beam_search_decode: return fl_infer_beam_search_decode(&c);
    /* infer_optim.c */
    case FL_OPID_sgd:
    case FL_OPID_momentum:
    case FL_OPID_adam:
    case FL_OPID_adagrad:
    case FL_OPID_decayed_adagrad:
    case FL_OPID_rmsprop:
    case FL_OPID_adamax:
    case FL_OPID_adadelta:
    case FL_OPID_ftrl:
    case FL_OPID_lars_momentum:
    case FL_OPID_lamb: return fl_infer_optimizer(&c);
    case FL_OPID_average_accumulates: return fl_infer_average_accumulates(&c);
    /* infer_control.c */
    case FL_OPID_list_index: return fl_infer_list_index(&c);
    case FL_OPID_dynamic_rnn: return fl_infer_dynamic_rnn(&c);
    case FL_OPID_while: return fl_infer_while(&c);
    case FL_OPID_conditional_block:
    case FL_OPID_py_func: /* Out: declared by the program (checked against the block's results by lang) */
    case FL_OPID_parallel_for: return FL_OK; /* their blocks are inferred on their own */
    /* infer_chan.c: what a channel carries and what may be sent on it */
    case FL_OPID_channel_recv: return fl_infer_channel_recv(&c);
    case FL_OPID_channel_send: return fl_infer_channel_send(&c);
    case FL_OPID_select: return fl_infer_select_sends(&c);
    case FL_OPID_time_tick:
    case FL_OPID_time_after: return fl_infer_time_after(&c);
    case FL_OPID_channel_nil: return fl_infer_channel_nil(&c);
    case FL_OPID_channel_len: return fl_infer_channel_len(&c);
    case FL_OPID_channel_assign: return fl_infer_channel_assign(&c);
    case FL_OPID_go:
    case FL_OPID_panic:
    case FL_OPID_time_sleep:
    case FL_OPID_channel_create:
    case FL_OPID_channel_close:
    case FL_OPID_split_to_chan:
    case FL_OPID_chan_concat: return FL_OK;
    /* infer_dist.c: send, recv, the barriers and the pserver loop have nothing to infer */
    case FL_OPID_distributed_lookup_table: return fl_infer_distributed_lookup_table(&c);
    case FL_OPID_distributed_lookup_grad_rows: return fl_infer_distributed_lookup_grad_rows(&c);
    case FL_OPID_send:
    case FL_OPID_recv:
    case FL_OPID_send_barrier:
    case FL_OPID_fetch_barrier:
    case FL_OPID_listen_and_serv: return FL_OK;
    case FL_OPID_allreduce: return fl_infer_allreduce(&c);
    /* infer_driver.c: a fetch keeps the declaration the compiler gave it (the fetched var's) */
    case FL_OPID_run_program: return fl_infer_run_program(&c);
    case FL_OPID_print_line: return fl_infer_print_line(&c);
    case FL_OPID_time_now: return fl_infer_time_now(&c);
    case FL_OPID_scope_new: return fl_infer_scope_new(&c);
    case FL_OPID_index: return fl_infer_index(&c);
    case FL_OPID_slice_rows: return fl_infer_slice_rows(&c);
    case FL_OPID_item: return fl_infer_item(&c);
    case FL_OPID_exit: return fl_infer_exit(&c);
    case FL_OPID_scope_var: return fl_infer_scope_var(&c);
    /* infer_tensorfile.c */
    case FL_OPID_scope_set: return fl_infer_scope_set(&c);
    case FL_OPID_read_file: return fl_infer_read_file(&c);
    /* infer_reader.c: reader_next's fields keep the declarations the compiler gave them */
    case FL_OPID_reader_open: return fl_infer_reader_open(&c);
    case FL_OPID_reader_epoch: return fl_infer_reader_epoch(&c);
    case FL_OPID_reader_next: return fl_infer_reader_next(&c);
    case FL_OPID_reader_end: return fl_infer_reader_end(&c);
    case FL_OPID_recordio_write: return fl_infer_recordio_write(&c);
    case FL_OPID_save_vars:
    case FL_OPID_load_vars: return fl_infer_save_load_vars(&c);
    case FL_OPID_save_program: return fl_infer_save_program(&c);
    /* infer_random.c */
    case FL_OPID_random_state: return fl_infer_random_state(&c);
    case FL_OPID_random_draw: return fl_infer_random_draw(&c);
    /* infer_report.c: report_next's feeds keep the declarations of the main program's data vars */
    case FL_OPID_option: return fl_infer_option(&c);
    case FL_OPID_report_open: return fl_infer_report_open(&c);
    case FL_OPID_report_next: return fl_infer_report_next(&c);
    case FL_OPID_report_step:
    case FL_OPID_report_epoch:
    case FL_OPID_report_train_end:
    case FL_OPID_report_test: return fl_infer_report_in(&c);
    case FL_OPID_COUNT: break;
    }
    FL_UNREACHABLE();
}

/* ---- whole programs ---- */

static FlStatus infer_block(FlProgram *p, int idx, bool *done, FlErr *e, FlLoc *where,
                            int depth) {
    if (idx < 0 || (size_t)idx >= p->blocks.len || done[idx]) return FL_OK;
    done[idx] = true;
    FlBlock *b = p->blocks.data[idx];
    for (size_t i = 0; i < b->ops.len; i++) {
        FlOpDesc *op = b->ops.data[i];
        for (size_t k = 0; k < op->attrs.len && depth < 64; k++) {
            const FlAttr *a = &op->attrs.data[k];
            if (a->type == FL_ATTR_BLOCK && infer_block(p, (int)a->i, done, e, where, depth + 1))
                return FL_ERROR;
            if (a->type == FL_ATTR_BLOCKS)
                for (size_t j = 0; j < a->n; j++)
                    if (infer_block(p, (int)a->ints[j], done, e, where, depth + 1)) return FL_ERROR;
        }
        if (fl_infer_op(p, b, op, e)) {
            if (where) *where = op->loc;
            return FL_ERROR;
        }
    }
    return FL_OK;
}

FlStatus fl_infer_check_storage(const FlProgram *p, FlErr *e, FlLoc *where) {
    for (size_t bi = 0; bi < p->blocks.len; bi++) {
        FlBlock *b = p->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) {
            /* read only: the Ctx of the rules is not const */
            Ctx c = {.p = (FlProgram *)p, .b = b, .op = b->ops.data[i], .e = e, .t = b->ops.data[i]->type};
            c.info = fl_ops_of(c.op);
            if (!c.info) continue;
            if (refuse_storage(&c, false) || refuse_storage(&c, true)) {
                if (where) *where = c.op->loc;
                return FL_ERROR;
            }
        }
    }
    return FL_OK;
}

FlStatus fl_infer_program(FlProgram *p, FlErr *e, FlLoc *where) {
    bool *done = fl_xcalloc(p->blocks.len + 1, sizeof(bool));
    FlStatus st = FL_OK;
    for (size_t i = 0; i < p->blocks.len && st == FL_OK; i++)
        st = infer_block(p, (int)i, done, e, where, 0);
    free(done);
    return st;
}
