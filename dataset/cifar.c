/* cifar.c: paddle.dataset.cifar (dataset.h): the images of cifar-10-python.tar.gz and
 * cifar-100-python.tar.gz, Python pickles of numpy arrays inside a tar.gz, read as Paddle's
 * cifar.py reads them: each member whose name holds the part's sub-name ("data_batch",
 * "test_batch", "train", "test"), in the archive's order, is a pickled dict whose b'data' is a
 * uint8 array of N rows of 3072 pixels (3 channels of 32x32) and whose b'labels' (CIFAR-10) or
 * b'fine_labels' (CIFAR-100) is a list of N ints; a sample is the row / 255 (float32) and the
 * label. */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_impl.h"

#define PIXELS 3072

void fl_ds_cifar_layout(const FlDsArgs *a, FlDsLayout *l) {
    (void)a; /* takes none: find() checked */
    *l = (FlDsLayout){.nfields = 2,
                      .fields = {{"image", FL_DT_FLOAT32, PIXELS, false}, {"label", FL_DT_INT64, 1, false}}};
}

typedef struct Batches {
    const char *sub;  /* the part's sub-name */
    const char *file; /* the archive, for messages */
    FlArena arena;    /* one member's pickle at a time */
    FL_VEC(unsigned char) pixels;
    FL_VEC(int64_t) labels;
    size_t members;
    FlErr *e;
} Batches;

static bool is_int_tuple(const FlPk *t, size_t n) {
    if (!t || t->kind != FL_PK_TUPLE || t->n != n) return false;
    for (size_t i = 0; i < n; i++)
        if (t->items[i]->kind != FL_PK_INT) return false;
    return true;
}

/* Whether a numpy dtype node is uint8: numpy.dtype('u1', ...) (its state only gives the byte
 * order, which one byte has not). */
static bool is_u8(const FlPk *d) {
    if (!d || d->kind != FL_PK_CALL || !fl_ds_pk_is_global(d->items[0], "numpy", "dtype")) return false;
    const FlPk *args = d->items[1];
    return args->n >= 1 && (fl_ds_pk_is_str(args->items[0], "u1") || fl_ds_pk_is_str(args->items[0], "uint8"));
}

static bool is_multiarray(const FlPk *g, const char *name) {
    return fl_ds_pk_is_global(g, "numpy.core.multiarray", name) || fl_ds_pk_is_global(g, "numpy._core.multiarray", name) ||
           fl_ds_pk_is_global(g, "numpy.core.numeric", name) || fl_ds_pk_is_global(g, "numpy._core.numeric", name);
}

/* A 2-D C-ordered uint8 numpy array as pickle writes it: numpy's _reconstruct(ndarray, (0,),
 * b'b') built with (version, shape, dtype, is_fortran, data) (or the older state without the
 * version), or protocol 5's _frombuffer(data, dtype, shape, order). */
static bool u8_matrix(const FlPk *o, const char **data, int64_t *rows, int64_t *cols) {
    if (!o || o->kind != FL_PK_CALL) return false;
    const FlPk *shape, *dtype, *raw;
    bool fortran;
    if (is_multiarray(o->items[0], "_reconstruct")) {
        const FlPk *st = o->state;
        if (!st || st->kind != FL_PK_TUPLE || (st->n != 5 && st->n != 4)) return false;
        size_t k = st->n - 4;
        shape = st->items[k];
        dtype = st->items[k + 1];
        fortran = st->items[k + 2]->kind == FL_PK_BOOL || st->items[k + 2]->kind == FL_PK_INT ? st->items[k + 2]->i : true;
        raw = st->items[k + 3];
    } else if (is_multiarray(o->items[0], "_frombuffer")) {
        const FlPk *args = o->items[1];
        if (args->n != 4) return false;
        raw = args->items[0];
        dtype = args->items[1];
        shape = args->items[2];
        fortran = !fl_ds_pk_is_str(args->items[3], "C");
    } else {
        return false;
    }
    if (!is_int_tuple(shape, 2) || !is_u8(dtype) || fortran || raw->kind != FL_PK_BYTES) return false;
    *data = raw->s;
    *rows = shape->items[0]->i;
    *cols = shape->items[1]->i;
    return *rows >= 0 && *cols >= 0 && (uint64_t)*rows * (uint64_t)*cols == raw->len;
}

/* One member: a batch's pickle. */
static int add_batch(void *arg, const char *name, size_t nlen, const char *data, size_t size) {
    Batches *b = arg;
    size_t sl = strlen(b->sub);
    bool match = false;
    for (size_t i = 0; i + sl <= nlen && !match; i++) match = memcmp(name + i, b->sub, sl) == 0;
    if (!match) return 0;
    b->members++;
    char what[320];
    snprintf(what, sizeof what, "paddle.dataset.cifar: %s: %.*s", b->file, (int)(nlen > 200 ? 200 : nlen), name);
    FlPk *batch;
    if (fl_ds_pickle_load(&b->arena, data, size, what, &batch, b->e)) return -1;
    FlPk *d = fl_ds_pk_find(batch, "data"), *labels = fl_ds_pk_find(batch, "labels");
    if (!labels) labels = fl_ds_pk_find(batch, "fine_labels");
    const char *px;
    int64_t rows, cols;
    if (!d || !u8_matrix(d, &px, &rows, &cols) || cols != PIXELS)
        return fl_err(b->e, "%s: its 'data' is not a uint8 numpy array of rows of %d pixels", what, PIXELS), -1;
    if (!labels || labels->kind != FL_PK_LIST)
        return fl_err(b->e, "%s: no list of 'labels' nor 'fine_labels'", what), -1;
    if ((int64_t)labels->n != rows)
        return fl_err(b->e, "%s: %lld images but %zu labels", what, (long long)rows, labels->n), -1;
    for (size_t i = 0; i < labels->n; i++) {
        if (labels->items[i]->kind != FL_PK_INT)
            return fl_err(b->e, "%s: label %zu is not an int", what, i), -1;
        FL_VEC_PUSH(&b->labels, labels->items[i]->i);
    }
    size_t n = (size_t)rows * PIXELS;
    FL_VEC_RESERVE(&b->pixels, b->pixels.len + n);
    memcpy(b->pixels.data + b->pixels.len, px, n);
    b->pixels.len += n;
    fl_arena_fini(&b->arena);
    fl_arena_init(&b->arena);
    return 0;
}

FlStatus fl_ds_cifar_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    *out = NULL;
    bool ten = strcmp(part, "train10") == 0 || strcmp(part, "test10") == 0;
    const char *file = ten ? "cifar-10-python.tar.gz" : "cifar-100-python.tar.gz";
    Batches b = {.file = file, .e = e};
    b.sub = strcmp(part, "train10") == 0 ? "data_batch"
            : strcmp(part, "test10") == 0 ? "test_batch"
            : strcmp(part, "train100") == 0 ? "train"
                                             : "test";
    char *tgz;
    size_t len;
    if (fl_ds_read("cifar", file, NULL, &tgz, &len, e)) return FL_ERROR;
    fl_arena_init(&b.arena);
    char what[96];
    snprintf(what, sizeof what, "paddle.dataset.cifar: %s", file);
    FlStatus st = fl_ds_tar_each(tgz, len, what, add_batch, &b, e);
    if (st == FL_OK && !b.members) st = fl_err(e, "%s holds no member whose name holds '%s'", what, b.sub);
    if (st == FL_OK) {
        FlDsLayout l;
        fl_ds_cifar_layout(a, &l);
        FlDsTable *t = fl_ds_table_new(&l, b.labels.len);
        float *x = t->data[0];
        for (size_t i = 0; i < b.pixels.len; i++) x[i] = (float)(b.pixels.data[i] / 255.0);
        if (b.labels.len) memcpy(t->data[1], b.labels.data, b.labels.len * sizeof(int64_t));
        *out = t;
    }
    fl_arena_fini(&b.arena);
    FL_VEC_FREE(&b.pixels);
    FL_VEC_FREE(&b.labels);
    free(tgz);
    return st;
}
