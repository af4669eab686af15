/* ops_imgsel.c: the adapters of random_crop and similarity_focus (kernels in
 * runtime/kernels/imgsel.c). */
#include "runtime/core/exec_impl.h"
#include "runtime/kernels/kernels_imgsel.h"

#include "runtime/rng.h"

#define IN(s) fl_call_in(c, (s))
#define OUT(s) fl_call_out(c, (s))

/* random_crop: without Seed, a new draw each run, as Fluid's op whose seed var it updates
 * (SeedOut): the op's seed mixed with the run's step, also when the program gave the seed. With
 * Seed (a Variable the program gives), the draws are a function of its value and SeedOut (the
 * layer makes it Seed itself) the next seed drawn from that value, as Fluid's op does: a
 * persistable Seed moves on each run, a Seed computed or fed each run repeats its windows. */
static FlStatus run_random_crop(OpCall *c) {
    size_t k = 0;
    const int64_t *shape = fl_exec_attr_ints(c->op, "shape", &k);
    const FlTensor *seed = fl_call_in(c, FL_IN_random_crop_Seed);
    if (!seed) {
        uint64_t x = c->op->seed ^ (c->rc->step * 0x9e3779b97f4a7c15ULL);
        return fl_kernel_random_crop(c->e, IN(FL_IN_random_crop_X), shape, (int)k, fl_rng_splitmix64(&x),
                                     OUT(FL_OUT_random_crop_Out));
    }
    if (seed->dtype != FL_DT_INT64 || fl_tensor_numel(seed) != 1)
        return fl_err(c->e, "random_crop: Seed must hold one int64 value, found %s %s", fl_dtype_name(seed->dtype),
                      fl_tensor_shape(seed).s);
    uint64_t x = (uint64_t)fl_tensor_get_int(seed, 0);
    uint64_t draw = fl_rng_splitmix64(&x);
    int64_t next = (int64_t)(fl_rng_splitmix64(&x) >> 33); /* in [0, 2^31), as Fluid's engine gives */
    FlTensor *so = OUT(FL_OUT_random_crop_SeedOut);
    FlTensor nt = FL_TENSOR_INIT;
    if (so && fl_tensor_alloc_uninit(c->e, &nt, FL_DT_INT64, seed->ndim, seed->ne)) return FL_ERROR;
    FlStatus st = fl_kernel_random_crop(c->e, IN(FL_IN_random_crop_X), shape, (int)k, draw, OUT(FL_OUT_random_crop_Out));
    if (st != FL_OK || !so) {
        fl_tensor_fini(&nt);
        return st;
    }
    *(int64_t *)fl_tensor_data(&nt) = next;
    fl_tensor_fini(so);
    *so = nt; /* replaced whole after the crop: SeedOut may be Seed itself */
    return FL_OK;
}
FL_ADAPTER(random_crop, NULL, run_random_crop);

static FlStatus run_similarity_focus(OpCall *c) {
    size_t n = 0;
    const int64_t *ix = fl_exec_attr_ints(c->op, "indexes", &n);
    return fl_kernel_similarity_focus(c->e, IN(FL_IN_similarity_focus_X), (int)fl_exec_attr_int(c->op, "axis"), ix,
                                      (int)n, OUT(FL_OUT_similarity_focus_Out));
}
FL_ADAPTER(similarity_focus, NULL, run_similarity_focus);
