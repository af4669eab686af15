/* dataset.c: paddle.dataset's readers over Paddle's cache folder (dataset.h).
 *
 * Each module is a row of `modules`: its parts, their layout and a loader. A file is read whole
 * through zlib (gzopen reads plain files too), then parsed from memory. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dataset/dataset_impl.h"

/* ---------------------------------------------------------------- files */

/* The cache's folder of module `name`: its name, but for conll05's (Paddle's download names it
 * conll05st). */
static const char *dir_of(const char *name) { return strcmp(name, "conll05") == 0 ? "conll05st" : name; }

char *fl_ds_dir(const char *name) {
    name = dir_of(name);
    FlBuf b = {0};
    const char *home = getenv("FLUIDC_DATA_HOME");
    if (home && *home) fl_buf_printf(&b, "%s/%s", home, name);
    else fl_buf_printf(&b, "%s/.cache/paddle/dataset/%s", getenv("HOME") ? getenv("HOME") : "", name);
    return b.data;
}

/* The path of file `file` of module `name` (malloc'd), and in *shown how a message names it: '~'
 * for the home folder when $FLUIDC_DATA_HOME is not set. */
static char *ds_path(const char *name, const char *file, FlBuf *shown) {
    char *dir = fl_ds_dir(name);
    FlBuf b = {0};
    fl_buf_printf(&b, "%s/%s", dir, file);
    free(dir);
    const char *home = getenv("FLUIDC_DATA_HOME");
    if (home && *home) fl_buf_puts(shown, b.data);
    else fl_buf_printf(shown, "~/.cache/paddle/dataset/%s/%s", dir_of(name), file);
    return b.data;
}

FlStatus fl_ds_read(const char *name, const char *file, const char *alt, char **out,
                    size_t *len, FlErr *e) {
    *out = NULL;
    FlBuf shown = {0};
    char *path = ds_path(name, file, &shown);
    FlStatus st = FL_OK;
    gzFile f = gzopen(path, "rb");
    if (!f && errno == ENOENT && alt) {
        FlBuf ignored = {0};
        char *apath = ds_path(name, alt, &ignored);
        fl_buf_free(&ignored);
        f = gzopen(apath, "rb");
        free(apath);
        if (!f) errno = ENOENT;
    }
    if (!f) {
        if (errno == ENOENT)
            st = fl_err(e, "paddle.dataset.%s: '%s' is missing: Paddle downloads it (python -c \"import "
                        "paddle.dataset.%s as m; m.fetch()\"), or %s",
                        name, shown.data, name,
                        strcmp(name, "uci_housing") == 0 || strcmp(name, "mnist") == 0
                            ? "make a cache with scripts/make_dataset_cache.sh"
                            : "scripts/make_synthetic_datasets.sh makes made-up files for tests");
        else st = fl_err(e, "paddle.dataset.%s: cannot open '%s': %s", name, shown.data, strerror(errno));
        goto done;
    }
    FlErr why;
    if (fl_ds_gz_read_all(f, shown.data, out, len, &why)) st = fl_err(e, "paddle.dataset.%s: %s", name, why.msg);
done:
    fl_buf_free(&shown);
    free(path);
    return st;
}

FlStatus fl_ds_gz_read_all(gzFile f, const char *shown, char **out, size_t *len, FlErr *e) {
    FlBuf b = {0};
    char chunk[1 << 16];
    int n;
    while ((n = gzread(f, chunk, sizeof chunk)) > 0) fl_buf_append(&b, chunk, (size_t)n);
    int errnum = 0;
    const char *msg = n < 0 ? gzerror(f, &errnum) : NULL;
    FlStatus st = msg ? fl_err(e, "'%s': %s", shown, msg) : FL_OK;
    gzclose(f);
    if (st) {
        fl_buf_free(&b);
        return st;
    }
    *len = b.len;
    *out = b.data ? b.data : fl_xstrdup("");
    return FL_OK;
}

char *fl_ds_file(const char *name, const char *file, const char *alt, FlErr *e) {
    FlBuf shown = {0};
    char *path = ds_path(name, file, &shown);
    FILE *f = fopen(path, "rb");
    if (!f && errno == ENOENT && alt) {
        FlBuf ignored = {0};
        char *apath = ds_path(name, alt, &ignored);
        fl_buf_free(&ignored);
        if ((f = fopen(apath, "rb"))) {
            free(path);
            path = apath;
        } else {
            free(apath);
            errno = ENOENT;
        }
    }
    if (f) fclose(f);
    else {
        if (errno == ENOENT)
            fl_err(e, "paddle.dataset.%s: '%s' is missing: Paddle downloads it (python -c \"import paddle.dataset.%s as "
                   "m; m.fetch()\"), or scripts/make_synthetic_datasets.sh makes made-up files for tests",
                   name, shown.data, name);
        else fl_err(e, "paddle.dataset.%s: cannot open '%s': %s", name, shown.data, strerror(errno));
        free(path);
        path = NULL;
    }
    fl_buf_free(&shown);
    return path;
}

FlDsTable *fl_ds_table_new(const FlDsLayout *l, size_t rows) {
    FlDsTable *t = fl_xcalloc(1, sizeof *t);
    t->layout = *l;
    t->rows = rows;
    for (size_t f = 0; f < l->nfields; f++) {
        if (l->fields[f].seq) t->offsets[f] = fl_xcalloc(rows + 1, sizeof(int64_t));
        else t->data[f] = fl_xcalloc(rows ? rows : 1, fl_mul_size(l->fields[f].width, fl_dtype_size(l->fields[f].dtype)));
    }
    return t;
}

void fl_ds_free(FlDsTable *t) {
    if (!t) return;
    for (size_t f = 0; f < t->layout.nfields; f++) {
        free(t->data[f]);
        free(t->offsets[f]);
        free(t->seq_at[f]);
        free(t->seq_end[f]);
    }
    free(t);
}

typedef struct Files {
    size_t n, next; /* next: the next file to read (atomic) */
    void (*read)(void *arg, size_t k);
    void *arg;
} Files;

static void *files_worker(void *p) {
    Files *f = p;
    for (;;) {
        size_t k = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED);
        if (k >= f->n) return NULL;
        f->read(f->arg, k);
    }
}

void fl_ds_read_files(size_t nfiles, size_t threads, void (*read)(void *arg, size_t k), void *arg) {
    Files f = {nfiles, 0, read, arg};
    size_t nth = threads < nfiles ? threads : nfiles;
    pthread_t *th = fl_xcalloc(nth + 1, sizeof *th);
    size_t started = 0;
    for (size_t t = 1; t < nth; t++) /* this thread is the first reader */
        if (pthread_create(&th[started], NULL, files_worker, &f) == 0) started++;
    files_worker(&f);
    for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
    free(th);
}

/* ---------------------------------------------------------------- uci_housing */

#define UCI_COLS 14

/* uci_housing and mnist take no arguments (find() checks). */
static void uci_layout(const FlDsArgs *a, FlDsLayout *l) {
    (void)a;
    *l = (FlDsLayout){.nfields = 2,
                      .fields = {{"x", FL_DT_FLOAT32, UCI_COLS - 1, false}, {"y", FL_DT_FLOAT32, 1, false}}};
}

/* housing.data: numbers separated by blanks, 14 a row (np.fromfile(sep=' ') then a reshape);
 * features normalised over the whole file, the first int(0.8 * rows) rows train. */
static FlStatus uci_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    char *text;
    size_t len;
    if (fl_ds_read("uci_housing", "housing.data", NULL, &text, &len, e)) return FL_ERROR;
    FL_VEC(double) v = {0};
    FlStatus st = FL_OK;
    for (char *p = text; st == FL_OK;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (!*p) break;
        char *end;
        double d = strtod(p, &end);
        if (end == p || !isfinite(d))
            st = fl_err(e, "paddle.dataset.uci_housing: housing.data: '%.20s' is not a number (number %zu)", p,
                        v.len + 1);
        else FL_VEC_PUSH(&v, d);
        p = end;
    }
    if ((size_t)strlen(text) != len && st == FL_OK) st = fl_err(e, "paddle.dataset.uci_housing: housing.data holds a NUL byte");
    free(text);
    size_t rows = v.len / UCI_COLS;
    if (st == FL_OK && (v.len % UCI_COLS || rows < 2))
        st = fl_err(e, "paddle.dataset.uci_housing: housing.data holds %zu numbers, not rows of %d (at least 2)",
                    v.len, UCI_COLS);
    if (st) {
        FL_VEC_FREE(&v);
        return FL_ERROR;
    }
    for (size_t c = 0; c + 1 < UCI_COLS; c++) {
        double mx = -INFINITY, mn = INFINITY, sum = 0;
        for (size_t r = 0; r < rows; r++) {
            double x = v.data[r * UCI_COLS + c];
            mx = x > mx ? x : mx;
            mn = x < mn ? x : mn;
            sum += x;
        }
        if (mx == mn) {
            FL_VEC_FREE(&v);
            return fl_err(e, "paddle.dataset.uci_housing: housing.data: column %zu is constant (%g): it cannot be "
                          "normalised by its range", c, mx);
        }
        double avg = sum / (double)rows;
        for (size_t r = 0; r < rows; r++) v.data[r * UCI_COLS + c] = (v.data[r * UCI_COLS + c] - avg) / (mx - mn);
    }
    size_t offset = (size_t)((double)rows * 0.8), from = strcmp(part, "train") == 0 ? 0 : offset;
    size_t n = strcmp(part, "train") == 0 ? offset : rows - offset;
    FlDsLayout l;
    uci_layout(a, &l);
    FlDsTable *t = fl_ds_table_new(&l, n);
    float *x = t->data[0], *y = t->data[1];
    for (size_t r = 0; r < n; r++) {
        const double *row = v.data + (from + r) * UCI_COLS;
        for (size_t c = 0; c + 1 < UCI_COLS; c++) x[r * (UCI_COLS - 1) + c] = (float)row[c];
        y[r] = (float)row[UCI_COLS - 1];
    }
    FL_VEC_FREE(&v);
    *out = t;
    return FL_OK;
}

/* ---------------------------------------------------------------- mnist */

static void mnist_layout(const FlDsArgs *a, FlDsLayout *l) {
    (void)a;
    *l = (FlDsLayout){.nfields = 2, .fields = {{"pixel", FL_DT_FLOAT32, 784, false}, {"label", FL_DT_INT64, 1, false}}};
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The idx files of `part`: images (magic 2051, n, 28, 28, then bytes) and labels (magic 2049, n,
 * then bytes 0..9). */
static FlStatus mnist_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    const char *pre = strcmp(part, "train") == 0 ? "train" : "t10k";
    char fimg[64], flab[64];
    snprintf(fimg, sizeof fimg, "%s-images-idx3-ubyte.gz", pre);
    snprintf(flab, sizeof flab, "%s-labels-idx1-ubyte.gz", pre);
    char *img = NULL, *lab = NULL;
    size_t ni, nl;
    FlStatus st = FL_ERROR;
    if (fl_ds_read("mnist", fimg, NULL, &img, &ni, e) || fl_ds_read("mnist", flab, NULL, &lab, &nl, e)) goto done;
    const unsigned char *pi = (const unsigned char *)img, *pl = (const unsigned char *)lab;
    if (ni < 16 || be32(pi) != 2051 || be32(pi + 8) != 28 || be32(pi + 12) != 28 ||
        (ni - 16) / 784 < be32(pi + 4)) {
        fl_err(e, "paddle.dataset.mnist: '%s' is not an idx3 file of 28x28 images (magic 2051)", fimg);
        goto done;
    }
    if (nl < 8 || be32(pl) != 2049 || nl - 8 < be32(pl + 4)) {
        fl_err(e, "paddle.dataset.mnist: '%s' is not an idx1 file of labels (magic 2049)", flab);
        goto done;
    }
    size_t n = be32(pi + 4);
    if (be32(pl + 4) != n) {
        fl_err(e, "paddle.dataset.mnist: '%s' holds %zu images but '%s' %zu labels", fimg, n, flab,
               (size_t)be32(pl + 4));
        goto done;
    }
    FlDsLayout l;
    mnist_layout(a, &l);
    FlDsTable *t = fl_ds_table_new(&l, n);
    float *x = t->data[0];
    int64_t *y = t->data[1];
    for (size_t i = 0; i < n * 784; i++) x[i] = (float)((double)pi[16 + i] / 255.0 * 2.0 - 1.0);
    for (size_t i = 0; i < n; i++) y[i] = pl[8 + i];
    *out = t;
    st = FL_OK;
done:
    free(img);
    free(lab);
    return st;
}

/* ---------------------------------------------------------------- modules */

typedef enum { TAKES_NONE, TAKES_DICT, TAKES_DICT_N, TAKES_SIZE, TAKES_SIZES_LANG } Takes;

static const struct {
    const char *name;
    Takes takes;
    void (*layout)(const FlDsArgs *a, FlDsLayout *l);
    FlStatus (*load)(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e);
} modules[] = {{"uci_housing", TAKES_NONE, uci_layout, uci_load},
               {"mnist", TAKES_NONE, mnist_layout, mnist_load},
               {"imikolov", TAKES_DICT_N, fl_ds_imikolov_layout, fl_ds_imikolov_load},
               {"imdb", TAKES_DICT, fl_ds_imdb_layout, fl_ds_imdb_load},
               {"cifar", TAKES_NONE, fl_ds_cifar_layout, fl_ds_cifar_load},
               {"movielens", TAKES_NONE, fl_ds_movielens_layout, fl_ds_movielens_load},
               {"conll05", TAKES_NONE, fl_ds_conll05_layout, fl_ds_conll05_load},
               {"wmt14", TAKES_SIZE, fl_ds_wmt_layout, fl_ds_wmt14_load},
               {"wmt16", TAKES_SIZES_LANG, fl_ds_wmt_layout, fl_ds_wmt16_load}};

/* The readers of the modules whose readers are not train and test, blank-separated (Paddle's
 * conll05 reads the public test set only). */
static const struct {
    const char *name, *parts;
} part_lists[] = {{"cifar", "train10 test10 train100 test100"}, {"conll05", "test"}, {"wmt16", "train test validation"}};

static const char *parts_of(const char *name) {
    for (size_t i = 0; i < FL_ARRAY_LEN(part_lists); i++)
        if (strcmp(part_lists[i].name, name) == 0) return part_lists[i].parts;
    return "train test";
}

static const char *const not_yet[] = {"flowers", "sentiment", "voc2012", "mq2007"};

static FlStatus not_read(const char *name, FlErr *e) {
    for (size_t i = 0; i < FL_ARRAY_LEN(not_yet); i++)
        if (strcmp(not_yet[i], name) == 0) {
            FlBuf read = {0}; /* the modules that are: "uci_housing, mnist, ... and imdb" */
            for (size_t k = 0; k < FL_ARRAY_LEN(modules); k++)
                fl_buf_printf(&read, "%s%s", k == 0 ? "" : k + 1 == FL_ARRAY_LEN(modules) ? " and " : ", ",
                              modules[k].name);
            fl_err(e, "paddle.dataset.%s is not read yet (paddle.dataset.%s are)", name, read.data);
            fl_buf_free(&read);
            return FL_ERROR;
        }
    return fl_err(e, "paddle.dataset has no module '%s'", name);
}

static bool has_word(const FlDsArgs *a, const char *w) {
    for (size_t i = 0; i < a->nwords; i++)
        if (strcmp(a->words[i], w) == 0) return true;
    return false;
}

/* Whether `part` is one of the blank-separated `parts`. */
static bool has_part(const char *parts, const char *part) {
    const char *p = parts, *end = p + strlen(p);
    size_t len, want = strlen(part);
    for (const char *w; (w = fl_ds_token(&p, end, &len));)
        if (len == want && memcmp(w, part, len) == 0) return true;
    return false;
}

/* Module `name`'s row, its reader `part` and the arguments it takes. */
static FlStatus find(const char *name, const char *part, const FlDsArgs *a, size_t *out, FlErr *e) {
    for (size_t i = 0; i < FL_ARRAY_LEN(modules); i++) {
        if (strcmp(modules[i].name, name) != 0) continue;
        if (!has_part(parts_of(name), part))
            return fl_err(e, "paddle.dataset.%s has no reader '%s' (it has %s)", name, part, parts_of(name));
        switch (modules[i].takes) {
        case TAKES_NONE:
            if (a->has_dict || a->n || a->data_type || a->n2 || a->lang)
                return fl_err(e, "paddle.dataset.%s.%s() takes no arguments", name, part);
            break;
        case TAKES_SIZE:
        case TAKES_SIZES_LANG:
            if (a->has_dict || a->data_type) return fl_err(e, "paddle.dataset.%s.%s takes no word dict", name, part);
            if (modules[i].takes == TAKES_SIZE && (a->n < 1 || a->n2 || a->lang))
                return fl_err(e, "paddle.dataset.%s.%s(dict_size): dict_size is %lld; it must be at least 1", name,
                              part, (long long)a->n);
            if (modules[i].takes == TAKES_SIZES_LANG && (a->n < 1 || a->n2 < 1))
                return fl_err(e, "paddle.dataset.%s.%s(src_dict_size, trg_dict_size, src_lang): the sizes are %lld and "
                              "%lld; each must be at least 1", name, part, (long long)a->n, (long long)a->n2);
            if (modules[i].takes == TAKES_SIZES_LANG && (!a->lang || (strcmp(a->lang, "en") && strcmp(a->lang, "de"))))
                return fl_err(e, "paddle.dataset.%s.%s: src_lang is '%s'; it is 'en' (English) or 'de' (German) "
                              "(ValueError in Paddle)", name, part, a->lang ? a->lang : "");
            break;
        case TAKES_DICT:
        case TAKES_DICT_N:
            if (!a->has_dict) return fl_err(e, "paddle.dataset.%s.%s(word_idx, ...) needs its word dict", name, part);
            if (modules[i].takes == TAKES_DICT && (a->n || a->data_type))
                return fl_err(e, "paddle.dataset.%s.%s(word_idx) takes no n nor data_type", name, part);
            if (a->data_type < 0 || a->data_type > 2)
                return fl_err(e, "paddle.dataset.%s.%s: Unknown data type %lld", name, part, (long long)a->data_type);
            for (int k = 0; k < 3; k++) { /* '<s>' and '<e>' for imikolov's DataType.SEQ */
                const char *want = k == 0 ? "<unk>" : k == 1 ? "<s>" : "<e>";
                if (k && a->data_type != 2) break;
                if (!has_word(a, want))
                    return fl_err(e, "paddle.dataset.%s.%s: word_idx has no '%s' (KeyError: '%s'; %s.build_dict() "
                                  "gives it)", name, part, want, want, name);
            }
            if (modules[i].takes == TAKES_DICT_N && a->data_type != 2 && (a->n < 1 || a->n > FL_DS_MAX_GRAM))
                return fl_err(e, "paddle.dataset.%s.%s(word_idx, n): n is %lld; n-grams of 1 to %d words are read",
                              name, part, (long long)a->n, FL_DS_MAX_GRAM);
            break;
        }
        *out = i;
        return FL_OK;
    }
    return not_read(name, e);
}

FlStatus fl_ds_layout(const char *name, const char *part, const FlDsArgs *args, FlDsLayout *out, FlErr *e) {
    size_t i;
    if (find(name, part, args, &i, e)) return FL_ERROR;
    modules[i].layout(args, out);
    return FL_OK;
}

FlStatus fl_ds_load(const char *name, const char *part, const FlDsArgs *args, FlDsTable **out, FlErr *e) {
    *out = NULL;
    size_t i;
    if (find(name, part, args, &i, e)) return FL_ERROR;
    return modules[i].load(part, args, out, e);
}

FlStatus fl_ds_fetch(const char *name, FlErr *e) {
    for (size_t i = 0; i < FL_ARRAY_LEN(modules); i++) {
        if (strcmp(modules[i].name, name) != 0) continue;
        const char *p = parts_of(name), *end = p + strlen(p);
        size_t len;
        for (const char *w; (w = fl_ds_token(&p, end, &len));) {
            char part[32];
            snprintf(part, sizeof part, "%.*s", (int)len, w);
            FlDsTable *t = NULL;
            FlDsArgs none = {0};
            FlStatus st = fl_ds_load(name, part, &none, &t, e);
            fl_ds_free(t);
            if (st) return FL_ERROR;
        }
        return FL_OK;
    }
    return not_read(name, e);
}

FlStatus fl_ds_dict(const char *name, const char *pattern, int64_t cutoff, FlDsDict *out, FlErr *e) {
    *out = (FlDsDict){0};
    if (strcmp(name, "imikolov") == 0) return fl_ds_imikolov_dict(cutoff, out, e);
    if (strcmp(name, "imdb") == 0) {
        if (!pattern) return fl_err(e, "paddle.dataset.imdb.build_dict(pattern, cutoff) needs its pattern");
        return fl_ds_imdb_dict(pattern, cutoff, out, e);
    }
    if (strcmp(name, "conll05") == 0 || strcmp(name, "wmt14") == 0 || strcmp(name, "wmt16") == 0) {
        if (!pattern) return fl_err(e, "paddle.dataset.%s's dicts are named (conll05: word, verb, label; wmt14: src, "
                                    "trg; wmt16: en, de)", name);
        if (strcmp(name, "conll05") == 0) return fl_ds_conll05_dict(pattern, out, e);
        return fl_ds_wmt_dict(name, pattern, cutoff, out, e);
    }
    for (size_t i = 0; i < FL_ARRAY_LEN(modules); i++)
        if (strcmp(modules[i].name, name) == 0) return fl_err(e, "paddle.dataset.%s has no word dict", name);
    return not_read(name, e);
}
