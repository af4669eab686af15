/* ops_imgsel.c: the adapters of random_crop and similarity_focus (kernels in
 * runtime/kernels/imgsel.c). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_imgsel.h"

#include "runtime/rng.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* random_crop: a new draw each run, as Fluid's op whose seed var it updates (SeedOut): the op's
 * seed mixed with the run's step, also when the program gave the seed. */
static FlStatus run_random_crop(OpCall *c) {
    size_t k = 0;
    const int64_t *shape = fl_exec_attr_ints(c->op, "shape", &k);
    uint64_t x = c->op->seed ^ (c->rc->step * 0x9e3779b97f4a7c15ULL);
    return fl_kernel_random_crop(c->e, IN(FL_IN_random_crop_X), shape, (int)k, fl_rng_splitmix64(&x),
                                 OUT(FL_OUT_random_crop_Out));
}
FL_ADAPTER(random_crop, NULL, run_random_crop);

static FlStatus run_similarity_focus(OpCall *c) {
    size_t n = 0;
    const int64_t *ix = fl_exec_attr_ints(c->op, "indexes", &n);
    return fl_kernel_similarity_focus(c->e, IN(FL_IN_similarity_focus_X), (int)fl_exec_attr_int(c->op, "axis"), ix,
                                      (int)n, OUT(FL_OUT_similarity_focus_Out));
}
FL_ADAPTER(similarity_focus, NULL, run_similarity_focus);
