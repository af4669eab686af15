/* imikolov.c: paddle.dataset.imikolov (dataset.h): the Penn Treebank text of Mikolov's
 * simple-examples.tgz, as n-grams of word ids, and its word dict. */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_impl.h"

#define TGZ "simple-examples.tgz"
#define TGZ_ALT "imikolov%2Fsimple-examples.tgz" /* Paddle 2's file name */

static const char *const gram_names[FL_DS_MAX_GRAM] = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};

static const char *member_of(const char *part) {
    return strcmp(part, "train") == 0 ? "./simple-examples/data/ptb.train.txt" : "./simple-examples/data/ptb.valid.txt";
}

void fl_ds_imikolov_layout(const FlDsArgs *a, FlDsLayout *l) {
    if (a->data_type == 2) {
        *l = (FlDsLayout){.nfields = 2, .fields = {{"src", FL_DT_INT64, 1, true}, {"trg", FL_DT_INT64, 1, true}}};
        return;
    }
    l->nfields = (size_t)a->n;
    for (size_t f = 0; f < l->nfields; f++) l->fields[f] = (FlDsField){gram_names[f], FL_DT_INT64, 1, false};
}

/* The text of member `part` of the archive: *tgz (free it) and [*text, *end). */
static FlStatus text_of(const char *part, char **tgz, const char **text, const char **end, FlErr *e) {
    size_t len, size;
    if (fl_ds_read("imikolov", TGZ, TGZ_ALT, tgz, &len, e)) return FL_ERROR;
    if (fl_ds_tar_member(*tgz, len, member_of(part), "paddle.dataset.imikolov: " TGZ, text, &size, e)) {
        free(*tgz);
        *tgz = NULL;
        return FL_ERROR;
    }
    *end = *text + size;
    return FL_OK;
}

/* Counts the words of a text, '<s>' and '<e>' once a line (Paddle's word_count). */
static void count_text(FlDsCount *c, const char *p, const char *end) {
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        size_t len;
        for (const char *w; (w = fl_ds_token(&p, le, &len));) fl_ds_count_add(c, w, len);
        fl_ds_count_add(c, "<s>", 3);
        fl_ds_count_add(c, "<e>", 3);
        p = nl ? nl + 1 : end;
    }
}

FlStatus fl_ds_imikolov_dict(int64_t min_word_freq, FlDsDict *out, FlErr *e) {
    char *train = NULL, *valid = NULL;
    const char *t0, *t1, *v0, *v1;
    if (text_of("train", &train, &t0, &t1, e) || text_of("test", &valid, &v0, &v1, e)) {
        free(train);
        return FL_ERROR;
    }
    FlDsCount c = {0};
    count_text(&c, t0, t1);
    count_text(&c, v0, v1);
    uintptr_t unk = (uintptr_t)fl_map_find(&c.index, "<unk>", 5);
    if (unk) c.words.data[unk - 1].count = INT64_MIN; /* removed: '<unk>' comes last */
    fl_ds_count_dict(&c, min_word_freq, "<unk>", out);
    fl_ds_count_fini(&c);
    free(train);
    free(valid);
    return FL_OK;
}

/* The word dict of the arguments: word -> 1 + its id. */
static void dict_index(const FlDsArgs *a, FlMap *m) {
    fl_map_init(m);
    for (size_t i = 0; i < a->nwords; i++) fl_map_put_str(m, a->words[i], (void *)(uintptr_t)(i + 1));
}

static int64_t id_of(const FlDsArgs *a, const FlMap *m, const char *w, size_t len, int64_t unk) {
    uintptr_t slot = (uintptr_t)fl_map_find(m, w, len);
    return slot ? a->ids[slot - 1] : unk;
}

/* Paddle's reader_creator of DataType.SEQ: each line's ids with word_idx['<s>'] before them (src)
 * and with word_idx['<e>'] after them (trg), when that makes at most n ids or n <= 0. */
static FlStatus load_seq(const FlDsArgs *a, const FlMap *m, int64_t unk, const char *p, const char *end,
                         FlDsTable **out) {
    int64_t bos = id_of(a, m, "<s>", 3, unk), eos = id_of(a, m, "<e>", 3, unk); /* fl_ds_load checked both */
    FL_VEC(int64_t) src = {0}, trg = {0}, offs = {0};
    FL_VEC_PUSH(&offs, 0);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        size_t from = src.len, len;
        FL_VEC_PUSH(&src, bos);
        for (const char *w; (w = fl_ds_token(&p, le, &len));) {
            int64_t id = id_of(a, m, w, len, unk);
            FL_VEC_PUSH(&src, id);
            FL_VEC_PUSH(&trg, id);
        }
        FL_VEC_PUSH(&trg, eos);
        if (a->n > 0 && src.len - from > (size_t)a->n) src.len = trg.len = from; /* too long: skipped */
        else FL_VEC_PUSH(&offs, (int64_t)src.len);
        p = nl ? nl + 1 : end;
    }
    FlDsLayout l;
    fl_ds_imikolov_layout(a, &l);
    FlDsTable *t = fl_ds_table_new(&l, offs.len - 1);
    memcpy(t->offsets[0], offs.data, offs.len * sizeof *offs.data);
    memcpy(t->offsets[1], offs.data, offs.len * sizeof *offs.data);
    t->data[0] = src.data ? (void *)src.data : fl_xcalloc(1, sizeof(int64_t));
    t->data[1] = trg.data ? (void *)trg.data : fl_xcalloc(1, sizeof(int64_t));
    FL_VEC_FREE(&offs);
    *out = t;
    return FL_OK;
}

/* Paddle's reader_creator of DataType.NGRAM: each line's words between '<s>' and '<e>', mapped to
 * ids (unknown words to '<unk>''s), give every window of n of them when the line has n or more. */
FlStatus fl_ds_imikolov_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    FlMap m;
    dict_index(a, &m);
    uintptr_t unk_slot = (uintptr_t)fl_map_find_str(&m, "<unk>"); /* there is one: fl_ds_load checked */
    int64_t unk = a->ids[unk_slot - 1];
    char *tgz;
    const char *p, *end;
    if (text_of(part, &tgz, &p, &end, e)) {
        fl_map_fini(&m);
        return FL_ERROR;
    }
    if (a->data_type == 2) {
        FlStatus st = load_seq(a, &m, unk, p, end, out);
        free(tgz);
        fl_map_fini(&m);
        return st;
    }
    size_t n = (size_t)a->n;
    FL_VEC(int64_t) grams = {0}, line = {0};
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        line.len = 0;
        FL_VEC_PUSH(&line, id_of(a, &m, "<s>", 3, unk));
        size_t len;
        for (const char *w; (w = fl_ds_token(&p, le, &len));) FL_VEC_PUSH(&line, id_of(a, &m, w, len, unk));
        FL_VEC_PUSH(&line, id_of(a, &m, "<e>", 3, unk));
        for (size_t i = n; i <= line.len; i++)
            for (size_t k = i - n; k < i; k++) FL_VEC_PUSH(&grams, line.data[k]);
        p = nl ? nl + 1 : end;
    }
    free(tgz);
    fl_map_fini(&m);
    FlDsLayout l;
    fl_ds_imikolov_layout(a, &l);
    size_t rows = grams.len / n;
    FlDsTable *t = fl_ds_table_new(&l, rows);
    for (size_t r = 0; r < rows; r++)
        for (size_t f = 0; f < n; f++) ((int64_t *)t->data[f])[r] = grams.data[r * n + f];
    FL_VEC_FREE(&grams);
    FL_VEC_FREE(&line);
    *out = t;
    return FL_OK;
}
