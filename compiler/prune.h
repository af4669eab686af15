/* prune.h: the inference program of a program (Fluid's Program._prune and _inference_optimize,
 * behind fluid.io.save_inference_model; docs/driver.md, "Saving and serving").
 *
 * fl_prune_for_inference returns a new program (the caller's: fl_ir_program_free) holding, of
 * p's block 0, the ops that compute the targets from the feeds: walking back from the targets,
 * an op is kept when it writes a var still needed (a feed is given, so what writes only feeds
 * is dropped), and what a kept op reads (its sub-blocks included) is needed in turn. The vars of
 * block 0 that no kept op refers to go (the label, the gradients, the optimizer's state); the
 * sub-blocks are kept as they are. Every op with an is_test attribute gets is_test = True (test
 * mode, as Program.clone(for_test=True)).
 * Errors (NULL, e set): no targets, a feed or a target that is not a var of p's block 0, a
 * needed var that is neither fed (a fed LoD var brings its offsets), persistable nor computed by
 * a kept op ("add it to the feeds" when it is a data var).
 */
#ifndef FL_PRUNE_H
#define FL_PRUNE_H

#include "base/base.h"
#include "compiler/ir/ir.h"

FlProgram *fl_prune_for_inference(const FlProgram *p, const char *const *feeds, size_t nfeeds,
                                  const char *const *targets, size_t ntargets, FlErr *e) FL_WARN_UNUSED;

#endif
