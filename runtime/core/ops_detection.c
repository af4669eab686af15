/* ops_detection.c: adapters of the detection ops (compiler/ops/detection.def; kernels in
 * runtime/kernels/detection*.c). Each prepare reads the op's attributes once into op->a (lists
 * into one block in op->a.extra, freed with it); each run checks the offsets it is given against
 * the rows they cut (fl_exec_check_lod) before its kernel runs. */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_detection.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* The offsets in `lod` cutting the rows of x (its first dim); *off NULL when lod is absent. */
static FlStatus lod_of(OpCall *c, const FlTensor *lod, const FlTensor *x, const char *slot, const int64_t **off,
                       int64_t *nseq) {
    *off = NULL;
    *nseq = 0;
    if (!lod) return FL_OK;
    return fl_exec_check_lod(c->e, lod, x && x->ndim ? x->ne[0] : -1, slot, off, nseq);
}

/* ---- attribute lists, copied into one block ---- */

/* A bump allocator over op->a.extra: `size` bytes reserved at prepare, handed out in order. */
typedef struct Block {
    unsigned char *p;
    size_t used, size;
} Block;

static void *take(Block *b, size_t n) {
    n = (n + 15) & ~(size_t)15;
    FL_ASSERT(b->used + n <= b->size);
    void *r = b->p + b->used;
    b->used += n;
    return r;
}

/* A copy of FLOATS attribute `name` in the block, and its count. */
static const double *floats_in(const ExecOp *op, Block *b, const char *name, int *n) {
    size_t k;
    const double *v = fl_exec_attr_floats(op, name, &k);
    double *d = take(b, (k + 1) * sizeof *d);
    if (k) memcpy(d, v, k * sizeof *d);
    *n = (int)k;
    return d;
}
static const int64_t *ints_in(const ExecOp *op, Block *b, const char *name, int *n) {
    size_t k;
    const int64_t *v = fl_exec_attr_ints(op, name, &k);
    int64_t *d = take(b, (k + 1) * sizeof *d);
    if (k) memcpy(d, v, k * sizeof *d);
    *n = (int)k;
    return d;
}

/* The bytes the lists of attributes `names` (and a struct of `head` bytes) need. */
static size_t lists_size(const ExecOp *op, size_t head, const char *const *names, int n) {
    size_t total = (head + 15) & ~(size_t)15;
    for (int i = 0; i < n; i++) {
        size_t k = 0;
        const FlAttrInfo *ai = fl_ops_attr(op->info, names[i]);
        if (ai && ai->type == FL_ATTR_FLOATS) fl_exec_attr_floats(op, names[i], &k);
        else fl_exec_attr_ints(op, names[i], &k);
        total += ((k + 1) * 8 + 15) & ~(size_t)15;
    }
    return total;
}

static Block block_new(ExecOp *op, size_t size) {
    Block b = {fl_xcalloc(1, size), 0, size};
    op->a.extra = b.p;
    return b;
}

static FlStatus need_four(FlErr *e, const char *name, int n) {
    return n == 4 ? FL_OK : fl_err(e, "attribute '%s' must hold 4 values, found %d", name, n);
}

/* ---- prior_box, density_prior_box, anchor_generator ---- */

static FlStatus prep_prior_box(ExecOp *op, FlErr *e) {
    static const char *const names[] = {"min_sizes", "max_sizes", "aspect_ratios", "variances"};
    Block b = block_new(op, lists_size(op, sizeof(FlPriorBoxAttrs), names, 4));
    FlPriorBoxAttrs *a = take(&b, sizeof *a);
    a->min_sizes = floats_in(op, &b, "min_sizes", &a->n_min);
    a->max_sizes = floats_in(op, &b, "max_sizes", &a->n_max);
    a->aspect_ratios = floats_in(op, &b, "aspect_ratios", &a->n_ar);
    a->variances = floats_in(op, &b, "variances", &a->n_var);
    a->flip = fl_exec_attr_bool(op, "flip");
    a->clip = fl_exec_attr_bool(op, "clip");
    a->min_max_aspect_ratios_order = fl_exec_attr_bool(op, "min_max_aspect_ratios_order");
    a->step_w = fl_exec_attr_float(op, "step_w");
    a->step_h = fl_exec_attr_float(op, "step_h");
    a->offset = fl_exec_attr_float(op, "offset");
    if (a->n_min < 1) return fl_err(e, "attribute 'min_sizes' is empty");
    if (a->n_max && a->n_max != a->n_min)
        return fl_err(e, "attribute 'max_sizes' must hold as many values as min_sizes (%d), found %d", a->n_min,
                      a->n_max);
    if (a->n_ar > 64) return fl_err(e, "attribute 'aspect_ratios' holds more than 64 values");
    return need_four(e, "variances", a->n_var);
}
static FlStatus run_prior_box(OpCall *c) {
    return fl_kernel_prior_box(c->e, IN(FL_IN_prior_box_Input), IN(FL_IN_prior_box_Image), c->op->a.extra,
                               OUT(FL_OUT_prior_box_Boxes), OUT(FL_OUT_prior_box_Variances));
}
FL_ADAPTER(prior_box, prep_prior_box, run_prior_box);

static FlStatus prep_density_prior_box(ExecOp *op, FlErr *e) {
    static const char *const names[] = {"fixed_sizes", "fixed_ratios", "variances", "densities"};
    Block b = block_new(op, lists_size(op, sizeof(FlDensityPriorBoxAttrs), names, 4));
    FlDensityPriorBoxAttrs *a = take(&b, sizeof *a);
    int nd;
    a->fixed_sizes = floats_in(op, &b, "fixed_sizes", &a->n_sizes);
    a->fixed_ratios = floats_in(op, &b, "fixed_ratios", &a->n_ratios);
    a->variances = floats_in(op, &b, "variances", &a->n_var);
    a->densities = ints_in(op, &b, "densities", &nd);
    a->clip = fl_exec_attr_bool(op, "clip");
    a->flatten_to_2d = fl_exec_attr_bool(op, "flatten_to_2d");
    a->step_w = fl_exec_attr_float(op, "step_w");
    a->step_h = fl_exec_attr_float(op, "step_h");
    a->offset = fl_exec_attr_float(op, "offset");
    if (nd != a->n_sizes)
        return fl_err(e, "attributes 'densities' and 'fixed_sizes' hold %d and %d values", nd, a->n_sizes);
    for (int i = 0; i < nd; i++)
        if (a->densities[i] < 1 || a->densities[i] > 1024)
            return fl_err(e, "attribute 'densities' must be in [1, 1024], found %lld", (long long)a->densities[i]);
    return need_four(e, "variances", a->n_var);
}
static FlStatus run_density_prior_box(OpCall *c) {
    return fl_kernel_density_prior_box(c->e, IN(FL_IN_density_prior_box_Input), IN(FL_IN_density_prior_box_Image),
                                       c->op->a.extra, OUT(FL_OUT_density_prior_box_Boxes),
                                       OUT(FL_OUT_density_prior_box_Variances));
}
FL_ADAPTER(density_prior_box, prep_density_prior_box, run_density_prior_box);

static FlStatus prep_anchor_generator(ExecOp *op, FlErr *e) {
    static const char *const names[] = {"anchor_sizes", "aspect_ratios", "variances", "stride"};
    Block b = block_new(op, lists_size(op, sizeof(FlAnchorAttrs), names, 4));
    FlAnchorAttrs *a = take(&b, sizeof *a);
    int ns;
    a->anchor_sizes = floats_in(op, &b, "anchor_sizes", &a->n_sizes);
    a->aspect_ratios = floats_in(op, &b, "aspect_ratios", &a->n_ratios);
    a->variances = floats_in(op, &b, "variances", &a->n_var);
    a->stride = floats_in(op, &b, "stride", &ns);
    a->offset = fl_exec_attr_float(op, "offset");
    if (ns != 2) return fl_err(e, "attribute 'stride' must hold 2 values (width, height), found %d", ns);
    return need_four(e, "variances", a->n_var);
}
static FlStatus run_anchor_generator(OpCall *c) {
    return fl_kernel_anchor_generator(c->e, IN(FL_IN_anchor_generator_Input), c->op->a.extra,
                                      OUT(FL_OUT_anchor_generator_Anchors), OUT(FL_OUT_anchor_generator_Variances));
}
FL_ADAPTER(anchor_generator, prep_anchor_generator, run_anchor_generator);

/* ---- iou_similarity, box_coder, box_clip, polygon_box_transform ---- */

static FlStatus run_iou_similarity(OpCall *c) {
    return fl_kernel_iou_similarity(c->e, IN(FL_IN_iou_similarity_X), IN(FL_IN_iou_similarity_Y),
                                    OUT(FL_OUT_iou_similarity_Out));
}
FL_ADAPTER(iou_similarity, NULL, run_iou_similarity);

/* a.i[0] the code, a.b[0] box_normalized, a.i[1] axis, a.b[1] whether variance is given, its
 * values in a.f */
static FlStatus prep_box_coder(ExecOp *op, FlErr *e) {
    const char *code = fl_exec_attr_string(op, "code_type");
    op->a.i[0] = fl_box_code_find(code);
    if (op->a.i[0] == FL_BOX_CODE_COUNT)
        return fl_err(e, "attribute 'code_type' must be encode_center_size or decode_center_size, found '%s'", code);
    op->a.b[0] = fl_exec_attr_bool(op, "box_normalized");
    op->a.i[1] = fl_exec_attr_int(op, "axis");
    size_t n;
    const double *v = fl_exec_attr_floats(op, "variance", &n);
    if (n && n != 4) return fl_err(e, "attribute 'variance' must hold 4 values, found %zu", n);
    op->a.b[1] = n == 4;
    for (size_t i = 0; i < n; i++) op->a.f[i] = v[i];
    return FL_OK;
}
static FlStatus run_box_coder(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_box_coder(c->e, IN(FL_IN_box_coder_PriorBox), IN(FL_IN_box_coder_PriorBoxVar),
                               IN(FL_IN_box_coder_TargetBox), (FlBoxCode)a->i[0], a->b[0], (int)a->i[1],
                               a->b[1] ? a->f : NULL, OUT(FL_OUT_box_coder_OutputBox));
}
FL_ADAPTER(box_coder, prep_box_coder, run_box_coder);
/* box_coder_grad: PriorBox PriorBoxVar? TargetBox OutputBox@GRAD -> PriorBox@GRAD? TargetBox@GRAD? */
static FlStatus run_box_coder_grad(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_box_coder_grad(c->e, IN(FL_IN_box_coder_grad_PriorBox), IN(FL_IN_box_coder_grad_PriorBoxVar),
                                    IN(FL_IN_box_coder_grad_TargetBox), IN(FL_IN_box_coder_grad_OutputBox_GRAD),
                                    (FlBoxCode)a->i[0], a->b[0], (int)a->i[1], a->b[1] ? a->f : NULL,
                                    OUT(FL_OUT_box_coder_grad_TargetBox_GRAD), OUT(FL_OUT_box_coder_grad_PriorBox_GRAD));
}
FL_ADAPTER(box_coder_grad, prep_box_coder, run_box_coder_grad);

static FlStatus run_box_clip(OpCall *c) {
    const FlTensor *x = IN(FL_IN_box_clip_Input);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, IN(FL_IN_box_clip_InputLod), x, "InputLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_box_clip(c->e, x, IN(FL_IN_box_clip_ImInfo), off, nseq, OUT(FL_OUT_box_clip_Output));
}
FL_ADAPTER(box_clip, NULL, run_box_clip);

static FlStatus run_polygon_box_transform(OpCall *c) {
    return fl_kernel_polygon_box_transform(c->e, IN(FL_IN_polygon_box_transform_Input),
                                           OUT(FL_OUT_polygon_box_transform_Output));
}
FL_ADAPTER(polygon_box_transform, NULL, run_polygon_box_transform);

static FlStatus prep_box_decoder_and_assign(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.f[0] = fl_exec_attr_float(op, "box_clip");
    return FL_OK;
}
static FlStatus run_box_decoder_and_assign(OpCall *c) {
    return fl_kernel_box_decoder_and_assign(
        c->e, IN(FL_IN_box_decoder_and_assign_PriorBox), IN(FL_IN_box_decoder_and_assign_PriorBoxVar),
        IN(FL_IN_box_decoder_and_assign_TargetBox), IN(FL_IN_box_decoder_and_assign_BoxScore), c->op->a.f[0],
        OUT(FL_OUT_box_decoder_and_assign_DecodeBox), OUT(FL_OUT_box_decoder_and_assign_OutputAssignBox));
}
FL_ADAPTER(box_decoder_and_assign, prep_box_decoder_and_assign, run_box_decoder_and_assign);

/* a.list / a.nlist the anchors, a.i[0] class_num, a.f[0] conf_thresh, a.i[1] downsample_ratio */
static FlStatus prep_yolo_box(ExecOp *op, FlErr *e) {
    size_t n;
    const int64_t *an = fl_exec_attr_ints(op, "anchors", &n);
    if (n == 0 || n % 2) return fl_err(e, "attribute 'anchors' must hold (width, height) pairs, found %zu values", n);
    op->a.list = fl_xmalloc(n * sizeof *op->a.list);
    memcpy(op->a.list, an, n * sizeof *an);
    op->a.nlist = (int)n;
    op->a.i[0] = fl_exec_attr_int(op, "class_num");
    op->a.f[0] = fl_exec_attr_float(op, "conf_thresh");
    op->a.i[1] = fl_exec_attr_int(op, "downsample_ratio");
    if (op->a.i[0] < 1 || op->a.i[0] > (1 << 20))
        return fl_err(e, "attribute 'class_num' must be in [1, 2^20], found %lld", (long long)op->a.i[0]);
    if (op->a.i[1] < 1) return fl_err(e, "attribute 'downsample_ratio' must be >= 1");
    return FL_OK;
}
static FlStatus run_yolo_box(OpCall *c) {
    const PAttrs *a = &c->op->a;
    return fl_kernel_yolo_box(c->e, IN(FL_IN_yolo_box_X), IN(FL_IN_yolo_box_ImgSize), a->list, a->nlist / 2,
                              (int)a->i[0], a->f[0], (int)a->i[1], OUT(FL_OUT_yolo_box_Boxes),
                              OUT(FL_OUT_yolo_box_Scores));
}
FL_ADAPTER(yolo_box, prep_yolo_box, run_yolo_box);

/* ---- losses ---- */

static FlStatus prep_sigma(ExecOp *op, FlErr *e) {
    op->a.f[0] = fl_exec_attr_float(op, "sigma");
    if (!(op->a.f[0] > 0)) return fl_err(e, "attribute 'sigma' must be > 0, found %g", op->a.f[0]);
    return FL_OK;
}
static FlStatus run_smooth_l1_loss(OpCall *c) {
    return fl_kernel_smooth_l1_loss(c->e, IN(FL_IN_smooth_l1_loss_X), IN(FL_IN_smooth_l1_loss_Y),
                                    IN(FL_IN_smooth_l1_loss_InsideWeight), IN(FL_IN_smooth_l1_loss_OutsideWeight),
                                    c->op->a.f[0], OUT(FL_OUT_smooth_l1_loss_Diff), OUT(FL_OUT_smooth_l1_loss_Out));
}
FL_ADAPTER(smooth_l1_loss, prep_sigma, run_smooth_l1_loss);
/* smooth_l1_loss_grad: InsideWeight? OutsideWeight? Diff Out@GRAD -> X@GRAD? Y@GRAD? */
static FlStatus run_smooth_l1_loss_grad(OpCall *c) {
    return fl_kernel_smooth_l1_loss_grad(c->e, IN(FL_IN_smooth_l1_loss_grad_InsideWeight),
                                         IN(FL_IN_smooth_l1_loss_grad_OutsideWeight),
                                         IN(FL_IN_smooth_l1_loss_grad_Diff), IN(FL_IN_smooth_l1_loss_grad_Out_GRAD),
                                         c->op->a.f[0], OUT(FL_OUT_smooth_l1_loss_grad_X_GRAD),
                                         OUT(FL_OUT_smooth_l1_loss_grad_Y_GRAD));
}
FL_ADAPTER(smooth_l1_loss_grad, prep_sigma, run_smooth_l1_loss_grad);

static FlStatus prep_xent(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "ignore_index");
    op->a.b[0] = fl_exec_attr_bool(op, "normalize");
    return FL_OK;
}
static FlStatus run_sigmoid_xent(OpCall *c) {
    return fl_kernel_sigmoid_xent(c->e, IN(FL_IN_sigmoid_cross_entropy_with_logits_X),
                                  IN(FL_IN_sigmoid_cross_entropy_with_logits_Label), (int)c->op->a.i[0],
                                  c->op->a.b[0], OUT(FL_OUT_sigmoid_cross_entropy_with_logits_Out));
}
FL_ADAPTER(sigmoid_cross_entropy_with_logits, prep_xent, run_sigmoid_xent);
/* sigmoid_cross_entropy_with_logits_grad: X Label Out@GRAD -> X@GRAD? */
static FlStatus run_sigmoid_xent_grad(OpCall *c) {
    return fl_kernel_sigmoid_xent_grad(c->e, IN(FL_IN_sigmoid_cross_entropy_with_logits_grad_X),
                                       IN(FL_IN_sigmoid_cross_entropy_with_logits_grad_Label),
                                       IN(FL_IN_sigmoid_cross_entropy_with_logits_grad_Out_GRAD), (int)c->op->a.i[0],
                                       c->op->a.b[0], OUT(FL_OUT_sigmoid_cross_entropy_with_logits_grad_X_GRAD));
}
FL_ADAPTER(sigmoid_cross_entropy_with_logits_grad, prep_xent, run_sigmoid_xent_grad);

/* ---- multiclass_nms ---- */

static FlStatus prep_multiclass_nms(ExecOp *op, FlErr *e) {
    FlNmsAttrs *a = fl_xcalloc(1, sizeof *a);
    op->a.extra = a;
    a->background_label = fl_exec_attr_int(op, "background_label");
    a->nms_top_k = fl_exec_attr_int(op, "nms_top_k");
    a->keep_top_k = fl_exec_attr_int(op, "keep_top_k");
    a->score_threshold = fl_exec_attr_float(op, "score_threshold");
    a->nms_threshold = fl_exec_attr_float(op, "nms_threshold");
    a->nms_eta = fl_exec_attr_float(op, "nms_eta");
    a->normalized = fl_exec_attr_bool(op, "normalized");
    if (!(a->nms_eta > 0 && a->nms_eta <= 1)) return fl_err(e, "attribute 'nms_eta' must be in (0, 1], found %g", a->nms_eta);
    return FL_OK;
}
static FlStatus run_multiclass_nms(OpCall *c) {
    const FlTensor *b = IN(FL_IN_multiclass_nms_BBoxes);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, IN(FL_IN_multiclass_nms_BBoxesLod), b, "BBoxesLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_multiclass_nms(c->e, b, IN(FL_IN_multiclass_nms_Scores), off, nseq, c->op->a.extra,
                                    OUT(FL_OUT_multiclass_nms_Out), OUT(FL_OUT_multiclass_nms_OutLod));
}
FL_ADAPTER(multiclass_nms, prep_multiclass_nms, run_multiclass_nms);

/* ---- bipartite_match, target_assign ---- */

/* a.b[0] per_prediction, a.f[0] dist_threshold */
static FlStatus prep_bipartite_match(ExecOp *op, FlErr *e) {
    const char *mt = fl_exec_attr_string(op, "match_type");
    if (strcmp(mt, "bipartite") != 0 && strcmp(mt, "per_prediction") != 0)
        return fl_err(e, "attribute 'match_type' must be 'bipartite' or 'per_prediction', found '%s'", mt);
    op->a.b[0] = strcmp(mt, "per_prediction") == 0;
    op->a.f[0] = fl_exec_attr_float(op, "dist_threshold");
    return FL_OK;
}
static FlStatus run_bipartite_match(OpCall *c) {
    const FlTensor *d = IN(FL_IN_bipartite_match_DistMat);
    const int64_t *off;
    int64_t nseq;
    if (lod_of(c, IN(FL_IN_bipartite_match_DistMatLod), d, "DistMatLod", &off, &nseq)) return FL_ERROR;
    return fl_kernel_bipartite_match(c->e, d, off, nseq, c->op->a.b[0], c->op->a.f[0],
                                     OUT(FL_OUT_bipartite_match_ColToRowMatchIndices),
                                     OUT(FL_OUT_bipartite_match_ColToRowMatchDist));
}
FL_ADAPTER(bipartite_match, prep_bipartite_match, run_bipartite_match);

static FlStatus prep_target_assign(ExecOp *op, FlErr *e) {
    (void)e;
    op->a.i[0] = fl_exec_attr_int(op, "mismatch_value");
    return FL_OK;
}
static FlStatus run_target_assign(OpCall *c) {
    const FlTensor *x = IN(FL_IN_target_assign_X), *neg = IN(FL_IN_target_assign_NegIndices);
    const int64_t *off, *noff;
    int64_t nseq, nnseq;
    if (lod_of(c, IN(FL_IN_target_assign_XLod), x, "XLod", &off, &nseq) ||
        lod_of(c, IN(FL_IN_target_assign_NegIndicesLod), neg, "NegIndicesLod", &noff, &nnseq))
        return FL_ERROR;
    if (!off) return fl_err(c->e, "XLod is missing");
    if (neg && !noff) return fl_err(c->e, "NegIndicesLod is missing");
    return fl_kernel_target_assign(c->e, x, off, nseq, IN(FL_IN_target_assign_MatchIndices), neg, noff, nnseq,
                                   c->op->a.i[0], OUT(FL_OUT_target_assign_Out), OUT(FL_OUT_target_assign_OutWeight));
}
FL_ADAPTER(target_assign, prep_target_assign, run_target_assign);

/* a.f[0] neg_pos_ratio, a.f[1] neg_dist_threshold */
static FlStatus prep_mine_hard_examples(ExecOp *op, FlErr *e) {
    const char *mt = fl_exec_attr_string(op, "mining_type");
    if (strcmp(mt, "max_negative") != 0)
        return fl_err(e, "attribute 'mining_type' must be 'max_negative', found '%s'", mt);
    op->a.f[0] = fl_exec_attr_float(op, "neg_pos_ratio");
    op->a.f[1] = fl_exec_attr_float(op, "neg_dist_threshold");
    return FL_OK;
}
static FlStatus run_mine_hard_examples(OpCall *c) {
    return fl_kernel_mine_hard_examples(c->e, IN(FL_IN_mine_hard_examples_ClsLoss), IN(FL_IN_mine_hard_examples_MatchIndices),
                                        IN(FL_IN_mine_hard_examples_MatchDist), c->op->a.f[0], c->op->a.f[1],
                                        OUT(FL_OUT_mine_hard_examples_NegIndices),
                                        OUT(FL_OUT_mine_hard_examples_NegIndicesLod),
                                        OUT(FL_OUT_mine_hard_examples_UpdatedMatchIndices));
}
FL_ADAPTER(mine_hard_examples, prep_mine_hard_examples, run_mine_hard_examples);

/* ---- detection_map ---- */

/* a.i[0] class_num, a.i[1] background_label, a.f[0] overlap_threshold, a.b[0] evaluate_difficult,
 * a.b[1] 11point */
static FlStatus prep_detection_map(ExecOp *op, FlErr *e) {
    const char *ap = fl_exec_attr_string(op, "ap_type");
    if (strcmp(ap, "integral") != 0 && strcmp(ap, "11point") != 0)
        return fl_err(e, "attribute 'ap_type' must be 'integral' or '11point', found '%s'", ap);
    op->a.b[1] = strcmp(ap, "11point") == 0;
    op->a.i[0] = fl_exec_attr_int(op, "class_num");
    op->a.i[1] = fl_exec_attr_int(op, "background_label");
    op->a.f[0] = fl_exec_attr_float(op, "overlap_threshold");
    op->a.b[0] = fl_exec_attr_bool(op, "evaluate_difficult");
    if (op->a.i[0] < 1) return fl_err(e, "attribute 'class_num' must be >= 1, found %lld", (long long)op->a.i[0]);
    return FL_OK;
}
static FlStatus run_detection_map(OpCall *c) {
    const FlTensor *det = IN(FL_IN_detection_map_DetectRes), *lab = IN(FL_IN_detection_map_Label);
    const int64_t *doff, *goff;
    int64_t dn, gn;
    if (lod_of(c, IN(FL_IN_detection_map_DetectResLod), det, "DetectResLod", &doff, &dn) ||
        lod_of(c, IN(FL_IN_detection_map_LabelLod), lab, "LabelLod", &goff, &gn))
        return FL_ERROR;
    const PAttrs *a = &c->op->a;
    /* the accumulated state, read when HasState holds a value other than 0 */
    const FlTensor *has = IN(FL_IN_detection_map_HasState);
    FlDetMapState in = {IN(FL_IN_detection_map_PosCount), IN(FL_IN_detection_map_TruePos),
                        IN(FL_IN_detection_map_FalsePos), NULL, NULL, 0, 0};
    bool state = false;
    if (has) {
        if (has->dtype != FL_DT_INT32 || fl_tensor_numel(has) != 1)
            return fl_err(c->e, "detection_map: HasState %s %s must be int32 [1]", fl_tensor_shape(has).s,
                          fl_dtype_name(has->dtype));
        state = *(const int32_t *)fl_tensor_data(has) != 0;
    }
    if (state && (lod_of(c, IN(FL_IN_detection_map_TruePosLod), in.true_pos, "TruePosLod", &in.true_off, &in.true_nseq) ||
                  lod_of(c, IN(FL_IN_detection_map_FalsePosLod), in.false_pos, "FalsePosLod", &in.false_off,
                         &in.false_nseq)))
        return FL_ERROR;
    FlDetMapAccum out = {OUT(FL_OUT_detection_map_AccumPosCount), OUT(FL_OUT_detection_map_AccumTruePos),
                         OUT(FL_OUT_detection_map_AccumTruePosLod), OUT(FL_OUT_detection_map_AccumFalsePos),
                         OUT(FL_OUT_detection_map_AccumFalsePosLod)};
    return fl_kernel_detection_map(c->e, det, doff, dn, lab, goff, gn, a->i[0], a->i[1], a->f[0], a->b[0], a->b[1],
                                   state ? &in : NULL, &out, OUT(FL_OUT_detection_map_MAP));
}
FL_ADAPTER(detection_map, prep_detection_map, run_detection_map);
