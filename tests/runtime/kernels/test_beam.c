/* test_beam.c: the kernels of beam.c on cases worked out by hand (docs/sequences.md, "Tensor
 * arrays and beam search"): a step of beam_search over two sources (an ended prefix among running
 * ones, ids given and accumulated scores), a source pruned because all its beams ended beside one
 * scored from probabilities with implicit ids, Fluid's order on equal scores; beam_search_decode
 * over four steps where beams end at different steps (one at the first step after the start
 * token, a whole source pruned before the last step) and over the same search cut at the maximum
 * length; the errors. */
#include "runtime/kernels/kernels_beam.h"
#include "tests/runtime/kernels/kt.h"

#define F32(...) KT_T(FL_DT_FLOAT32, KT_SHAPE((int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), 1), __VA_ARGS__)
#define I64(...) KT_T(FL_DT_INT64, KT_SHAPE((int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), 1), __VA_ARGS__)

static void test_beam_search_step(void) {
    /* source 0: prefixes rows 0 (id 5, -1) and 1 (ended: id 0, -0.5); source 1: row 2 (id 7, -2) */
    const int64_t src[] = {0, 2, 3}, pfx[] = {0, 1, 2, 3};
    FlTensor pid = I64(5, 0, 7), psc = F32(-1, -0.5, -2);
    FlTensor ids = KT_T(FL_DT_INT64, KT_SHAPE(3, 3), 4, 2, 0, 9, 9, 9, 1, 3, 6);
    FlTensor sc = KT_T(FL_DT_FLOAT32, KT_SHAPE(3, 3), -1.2, -3.0, -0.9, -0.1, -0.1, -0.1, -2.5, -2.1, -4.0);
    FlTensor o[5] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    KT_OK(fl_kernel_beam_search(KE, &pid, &psc, &ids, &sc, src, 2, pfx, 3, 2, 0, true, &o[0], &o[1], &o[2], &o[3], &o[4]));
    /* source 0 keeps the ended row's end_id (-0.5, its only candidate: row 1's scores are ignored)
     * and row 0's end_id (-0.9); source 1 ids 3 (-2.1) and 1 (-2.5); grouped by row */
    KT_SHAPE_IS(&o[0], KT_SHAPE(4, 1));
    KT_VALUES(&o[0], 0, 0, 0, 3, 1);
    KT_VALUES(&o[1], 1e-6, -0.9, -0.5, -2.1, -2.5);
    KT_VALUES(&o[2], 0, 0, 1, 2, 2);
    KT_VALUES(&o[3], 0, 0, 2, 3);
    KT_VALUES(&o[4], 0, 0, 1, 2, 4);
    FlTensor all[] = {pid, psc, ids, sc, o[0], o[1], o[2], o[3], o[4]};
    kt_fini(9, all);
}

static void test_beam_search_pruned(void) {
    /* source 0: both prefixes ended (its best candidates are end_id after end_id: pruned);
     * source 1: one prefix, probabilities 0.5 and 0.25, ids = the columns */
    const int64_t src[] = {0, 2, 3}, pfx[] = {0, 1, 2, 3};
    FlTensor pid = I64(0, 0, 3), psc = F32(-1, -2, -1);
    FlTensor sc = KT_T(FL_DT_FLOAT32, KT_SHAPE(3, 2), 0.9, 0.1, 0.9, 0.1, 0.5, 0.25);
    FlTensor o[5] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    KT_OK(fl_kernel_beam_search(KE, &pid, &psc, NULL, &sc, src, 2, pfx, 3, 2, 0, false, &o[0], &o[1], &o[2], &o[3], &o[4]));
    KT_VALUES(&o[0], 0, 0, 1);
    KT_VALUES(&o[1], 1e-6, -1 + log(0.5), -1 + log(0.25));
    KT_VALUES(&o[2], 0, 2, 2);
    KT_VALUES(&o[3], 0, 0, 2, 3);
    KT_VALUES(&o[4], 0, 0, 0, 0, 2);
    kt_fini(5, o);
    /* a single beam: on equal scores the later row wins (Fluid's order) */
    FlTensor pid2 = I64(1, 2), psc2 = F32(0, 0), sc2 = F32(-1, -1);
    const int64_t src2[] = {0, 2}, pfx2[] = {0, 1, 2};
    KT_OK(fl_kernel_beam_search(KE, &pid2, &psc2, NULL, &sc2, src2, 1, pfx2, 2, 1, 0, true, &o[0], &o[1], NULL, &o[3], &o[4]));
    KT_VALUES(&o[0], 0, 0);
    KT_VALUES(&o[4], 0, 0, 0, 1);
    FlTensor all[] = {pid, psc, sc, pid2, psc2, sc2, o[0], o[1], o[3], o[4]};
    kt_fini(10, all);
}

/* The search of the decoding tests (end_id 0, beam 2, two sources):
 *   step 0  the start token 1 of each source
 *   step 1  source 0: 5 (-0.5), 0 (-0.7: ends at once); source 1: 3 (-0.2), 4 (-0.9)
 *   step 2  source 0: 5 -> 6 (-1.0), ended -> 0 (-0.7); source 1: 3 -> 0 (-0.6), 3 -> 7 (-0.8); 4 dropped
 *   step 3  source 0: 6 -> 0 (-1.1), ended -> 0 (-0.7); source 1: ended -> 0 (-0.6), 7 -> 8 (-1.5)
 *   step 4  source 0 pruned (all ended); source 1: ended -> 0 (-0.6), 8 -> 0 (-1.6) */
typedef struct Steps {
    FlTensor ids[5], sc[5];
    FlBeamStep st[5];
} Steps;

static void make_steps(Steps *s) {
    static const int64_t src0[] = {0, 1, 2}, pfx0[] = {0, 1, 2};
    static const int64_t src1[] = {0, 1, 2}, pfx1[] = {0, 2, 4};
    static const int64_t src2[] = {0, 2, 4}, pfx2[] = {0, 1, 2, 4, 4};
    static const int64_t src3[] = {0, 2, 4}, pfx3[] = {0, 1, 2, 3, 4};
    static const int64_t src4[] = {0, 2, 4}, pfx4[] = {0, 0, 0, 1, 2};
    s->ids[0] = I64(1, 1), s->sc[0] = F32(0, 0);
    s->ids[1] = I64(5, 0, 3, 4), s->sc[1] = F32(-0.5, -0.7, -0.2, -0.9);
    s->ids[2] = I64(6, 0, 0, 7), s->sc[2] = F32(-1.0, -0.7, -0.6, -0.8);
    s->ids[3] = I64(0, 0, 0, 8), s->sc[3] = F32(-1.1, -0.7, -0.6, -1.5);
    s->ids[4] = I64(0, 0), s->sc[4] = F32(-0.6, -1.6);
    const int64_t *src[] = {src0, src1, src2, src3, src4}, *pfx[] = {pfx0, pfx1, pfx2, pfx3, pfx4};
    for (int t = 0; t < 5; t++) s->st[t] = (FlBeamStep){&s->ids[t], &s->sc[t], src[t], pfx[t], 2};
}

static void test_beam_search_decode(void) {
    Steps s;
    make_steps(&s);
    FlTensor o[4] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    KT_OK(fl_kernel_beam_search_decode(KE, s.st, 5, 2, 0, &o[0], &o[1], &o[2], &o[3]));
    /* source 0 (ended at step 3): "1 0" (-0.7) before "1 5 6 0" (-1.1); source 1: "1 3 0" (-0.6,
     * its end_ids of steps 3 and 4 kept once) before "1 3 7 8 0" (-1.6) */
    KT_SHAPE_IS(&o[0], KT_SHAPE(14));
    KT_VALUES(&o[0], 0, 1, 0, 1, 5, 6, 0, 1, 3, 0, 1, 3, 7, 8, 0);
    KT_VALUES(&o[1], 1e-6, 0, -0.7, 0, -0.5, -1.0, -1.1, 0, -0.2, -0.6, 0, -0.2, -0.8, -1.5, -1.6);
    KT_VALUES(&o[2], 0, 0, 2, 4);
    KT_VALUES(&o[3], 0, 0, 2, 6, 9, 14);
    kt_fini(4, o);
    /* cut at the maximum length after step 3: "1 3 7 8" has not ended */
    KT_OK(fl_kernel_beam_search_decode(KE, s.st, 4, 2, 0, &o[0], &o[1], &o[2], &o[3]));
    KT_VALUES(&o[0], 0, 1, 0, 1, 5, 6, 0, 1, 3, 0, 1, 3, 7, 8);
    KT_VALUES(&o[1], 1e-6, 0, -0.7, 0, -0.5, -1.0, -1.1, 0, -0.2, -0.6, 0, -0.2, -0.8, -1.5);
    KT_VALUES(&o[3], 0, 0, 2, 6, 9, 13);
    kt_fini(4, o);
    /* the start tokens alone */
    KT_OK(fl_kernel_beam_search_decode(KE, s.st, 1, 2, 0, &o[0], &o[1], &o[2], &o[3]));
    KT_VALUES(&o[0], 0, 1, 1);
    KT_VALUES(&o[2], 0, 0, 1, 2);
    KT_VALUES(&o[3], 0, 0, 1, 2);
    kt_fini(4, o);
    for (int t = 0; t < 5; t++) fl_tensor_fini(&s.ids[t]), fl_tensor_fini(&s.sc[t]);
}

static void test_beam_errors(void) {
    Steps s;
    make_steps(&s);
    FlTensor o[5] = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
    KT_ERR(fl_kernel_beam_search_decode(KE, s.st, 5, 1, 0, &o[0], &o[1], &o[2], &o[3]),
           "beam_search_decode: step 4: source 1 has 2 candidates, more than beam_size 1");
    KT_ERR(fl_kernel_beam_search_decode(KE, s.st, 0, 2, 0, &o[0], &o[1], &o[2], &o[3]),
           "beam_search_decode: the arrays hold no step");
    FlBeamStep bad[2] = {s.st[0], s.st[2]};
    static const int64_t src1[] = {0, 4}; /* step 1 of one source: the steps disagree */
    bad[1].src_off = src1, bad[1].nsrc = 1;
    KT_ERR(fl_kernel_beam_search_decode(KE, bad, 2, 2, 0, &o[0], &o[1], &o[2], &o[3]),
           "beam_search_decode: step 1 has 1 sources, step 0 has 2");
    const int64_t src[] = {0, 1}, pfx[] = {0, 2};
    FlTensor pid = I64(1, 2), psc = F32(0, 0), sc = KT_T(FL_DT_FLOAT32, KT_SHAPE(2, 2), 1, 2, 3, 4);
    FlTensor ids = KT_T(FL_DT_INT64, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), psc1 = F32(0);
    KT_ERR(fl_kernel_beam_search(KE, &pid, &psc, &ids, &sc, src, 1, pfx, 1, 2, 0, true, &o[0], &o[1], &o[2], &o[3], &o[4]),
           "beam_search: ids [2, 3] must be [2, 2] (one row per prefix)");
    KT_ERR(fl_kernel_beam_search(KE, &pid, &psc1, NULL, &sc, src, 1, pfx, 1, 2, 0, true, &o[0], &o[1], &o[2], &o[3], &o[4]),
           "beam_search: pre_scores [1, 1] must be [2, 1] (one row per prefix)");
    KT_ERR(fl_kernel_beam_search(KE, &pid, &psc, NULL, &sc, src, 1, pfx, 1, 0, 0, true, &o[0], &o[1], &o[2], &o[3], &o[4]),
           "beam_search: beam_size must be at least 1, found 0");
    FlTensor all[] = {pid, psc, sc, ids, psc1};
    kt_fini(5, all);
    for (int t = 0; t < 5; t++) fl_tensor_fini(&s.ids[t]), fl_tensor_fini(&s.sc[t]);
}

int main(void) {
    static const KtCase tc[] = {
        KT_TEST(test_beam_search_step),
        KT_TEST(test_beam_search_pruned),
        KT_TEST(test_beam_search_decode),
        KT_TEST(test_beam_errors),
    };
    return kt_run("beam search kernels", tc, (int)FL_ARRAY_LEN(tc));
}
