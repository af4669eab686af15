/* test_seq_layers.c: the sequence layers in training, fed as the reader feeds them: a data var
 * of lod_level 1 and its offsets (NAME@LOD0) in one step's feeds. Text classifiers (embedding over
 * LoD ids, then sequence_pool or nets.sequence_conv_pool, then fc softmax and cross_entropy)
 * trained by SGD on a fixed batch of sequences of lengths 1, 2, 0 and 17 must bring their loss
 * down. */
#include "tests/runtime/core/ct.h"

#define HEAD                                                                                 \
    "import fluid\nfrom fluid import layers, nets, optimizer\n"                               \
    "words = layers.data(name=\"words\", shape=[1], dtype=\"int64\", lod_level=1)\n"          \
    "label = layers.data(name=\"label\", shape=[1], dtype=\"int64\")\n"                       \
    "emb = layers.embedding(input=words, size=[12, 8])\n"

#define TAIL                                                                                 \
    "pred = layers.fc(input=feat, size=2, act=\"softmax\")\n"                                \
    "loss = layers.mean(layers.cross_entropy(input=pred, label=label))\n"                    \
    "optimizer.SGD(learning_rate=0.5).minimize(loss)\n"

/* Trains `steps` steps on one batch; returns the first and the last loss. */
static void train(const char *name, const char *src, int steps, double *first, double *last) {
    Ct c = ct_open(name, src);
    /* four sequences: lengths 1, 2, 0 (empty: its average is pad_value 0) and 17 */
    double ids[20], off[5] = {0, 1, 3, 3, 20}, lab[4] = {0, 1, 1, 0};
    ids[0] = 1, ids[1] = 2, ids[2] = 3;
    for (int i = 3; i < 20; i++) ids[i] = 4 + i % 8;
    FlTensor w = ct_tensor(FL_DT_INT64, 2, (int64_t[]){20, 1}, ids);
    FlTensor o = ct_tensor(FL_DT_INT64, 1, (int64_t[]){5}, off);
    FlTensor l = ct_tensor(FL_DT_INT64, 2, (int64_t[]){4, 1}, lab);
    FlFeed feeds[3] = {{"words", &w}, {"words@LOD0", &o}, {"label", &l}};
    FlFetch f = {"mean_0.tmp_0", FL_TENSOR_INIT};
    FlErr e = {{0}};
    for (int s = 0; s < steps; s++) {
        CT_OK(fl_executor_run(c.ex, c.scope, feeds, 3, &f, 1, &e), &e);
        double v = fl_tensor_get(&f.tensor, 0);
        if (s == 0) *first = v;
        *last = v;
    }
    fl_tensor_fini(&f.tensor);
    fl_tensor_fini(&w);
    fl_tensor_fini(&o);
    fl_tensor_fini(&l);
    ct_close(&c);
}

static void test_embedding_pool_trains(void) {
    double first, last;
    train("bow.fl", HEAD "feat = layers.sequence_pool(emb, \"average\")\n" TAIL, 60, &first, &last);
    CU_ASSERT(first > 0.5); /* two classes from small random weights: about ln 2 */
    CU_ASSERT(last < 0.25 * first);
}

static void test_conv_pool_trains(void) {
    double first, last;
    train("cnn.fl", HEAD "feat = nets.sequence_conv_pool(emb, num_filters=6, filter_size=3, act=\"tanh\", pool_type=\"max\")\n" TAIL,
          60, &first, &last);
    CU_ASSERT(first > 0.5);
    CU_ASSERT(last < 0.25 * first);
}

/* Offsets fed that do not cut the ids are the sequence op's run-time error. */
static void test_bad_fed_offsets(void) {
    Ct c = ct_open("bad.fl", HEAD "feat = layers.sequence_pool(emb, \"sum\")\n");
    double ids[3] = {1, 2, 3}, off[3] = {0, 2, 4};
    FlTensor w = ct_tensor(FL_DT_INT64, 2, (int64_t[]){3, 1}, ids);
    FlTensor o = ct_tensor(FL_DT_INT64, 1, (int64_t[]){3}, off);
    FlFeed feeds[2] = {{"words", &w}, {"words@LOD0", &o}};
    FlFetch f = {"sequence_pool_0.tmp_0", FL_TENSOR_INIT};
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, feeds, 2, &f, 1, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "sequence_pool"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "bad.fl:6"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "XLod: the last offset is 4 but the tensor has 3 rows"));
    fl_tensor_fini(&f.tensor);
    fl_tensor_fini(&w);
    fl_tensor_fini(&o);
    ct_close(&c);
}

/* Two LoD inputs that an op combines row by row are compared before it runs: fed offsets that
 * cut the same rows otherwise (a tagging batch whose words and tags differ per sentence, the
 * same total) are an error naming the op, its line and both offset vectors, never a loss over
 * tags shifted between sentences; other totals are the same error, not only the kernel's shapes.
 * Equal offsets run. */
static void test_mixed_offsets(void) {
    Ct c = ct_open("tag.fl", "import fluid\nfrom fluid import layers\n"
                             "words = layers.data(name=\"words\", shape=[1], dtype=\"int64\", lod_level=1)\n"
                             "tags = layers.data(name=\"tags\", shape=[1], dtype=\"int64\", lod_level=1)\n"
                             "pred = layers.fc(input=layers.embedding(input=words, size=[8, 4]), size=3, act=\"softmax\")\n"
                             "loss = layers.mean(layers.cross_entropy(input=pred, label=tags))\n");
    double ids[3] = {1, 2, 3}, woff[3] = {0, 2, 3}, toff[3] = {0, 1, 3}, tg[4] = {0, 1, 2, 0}, toff4[3] = {0, 2, 4};
    FlTensor w = ct_tensor(FL_DT_INT64, 2, (int64_t[]){3, 1}, ids);
    FlTensor wo = ct_tensor(FL_DT_INT64, 1, (int64_t[]){3}, woff);
    FlTensor t = ct_tensor(FL_DT_INT64, 2, (int64_t[]){3, 1}, tg);
    FlTensor to = ct_tensor(FL_DT_INT64, 1, (int64_t[]){3}, toff);
    FlTensor t4 = ct_tensor(FL_DT_INT64, 2, (int64_t[]){4, 1}, tg);
    FlTensor to4 = ct_tensor(FL_DT_INT64, 1, (int64_t[]){3}, toff4);
    FlFeed feeds[4] = {{"words", &w}, {"words@LOD0", &wo}, {"tags", &t}, {"tags@LOD0", &to}};
    FlFetch f = {"mean_0.tmp_0", FL_TENSOR_INIT};
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, feeds, 4, &f, 1, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'cross_entropy' (tag.fl:6:20): X 'softmax_0.tmp_0' and Label 'tags' must be cut "
                  "into the same sequences, but X's offsets 'words@LOD0' are [0 2 3] and Label's 'tags@LOD0' [0 1 3]: "
                  "sequence 0 holds 2 and 1");
    feeds[2].tensor = &t4;
    feeds[3].tensor = &to4;
    CU_ASSERT_EQUAL(fl_executor_run(c.ex, c.scope, feeds, 4, &f, 1, &e), FL_ERROR);
    CT_MSG(e.msg, "runtime error in op 'cross_entropy' (tag.fl:6:20): X 'softmax_0.tmp_0' and Label 'tags' must be cut "
                  "into the same sequences, but X's offsets 'words@LOD0' are [0 2 3] and Label's 'tags@LOD0' [0 2 4]: "
                  "sequence 1 holds 1 and 2");
    feeds[2].tensor = &t;
    feeds[3].tensor = &wo; /* the same offsets: it runs */
    CT_OK(fl_executor_run(c.ex, c.scope, feeds, 4, &f, 1, &e), &e);
    fl_tensor_fini(&f.tensor);
    FlTensor *all[6] = {&w, &wo, &t, &to, &t4, &to4};
    for (int i = 0; i < 6; i++) fl_tensor_fini(all[i]);
    ct_close(&c);
}

int main(void) {
    static const CtCase tc[] = {
        CT_TEST(test_embedding_pool_trains),
        CT_TEST(test_conv_pool_trains),
        CT_TEST(test_bad_fed_offsets),
        CT_TEST(test_mixed_offsets),
    };
    return ct_run("sequence layers", tc, (int)FL_ARRAY_LEN(tc));
}
