/* imdb.c: paddle.dataset.imdb (dataset.h): the movie reviews of aclImdb_v1.tar.gz as sequences of
 * word ids with a label (0 positive, 1 negative), and its word dict. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_impl.h"

#define TGZ "aclImdb_v1.tar.gz"
#define TGZ_ALT "imdb%2FaclImdb_v1.tar.gz" /* Paddle 2's file name */
#define WHAT "paddle.dataset.imdb: " TGZ

void fl_ds_imdb_layout(const FlDsArgs *a, FlDsLayout *l) {
    (void)a; /* the word dict: find() checked it */
    *l = (FlDsLayout){.nfields = 2, .fields = {{"word", FL_DT_INT64, 1, true}, {"label", FL_DT_INT64, 1, false}}};
}

/* The documents of the archive whose names a pattern matches (Python's re.match: from the name's
 * start), cleaned as Paddle's tokenize does: punctuation removed, ASCII lowered; one after the
 * other in `text`, document i being text[starts[i], starts[i + 1]). */
typedef struct Docs {
    regex_t re;
    bool re_ok; /* re is compiled */
    FlBuf text;
    FL_VEC(size_t) starts;
    FlBuf name; /* scratch: the member's name, NUL-terminated */
} Docs;

static int add_doc(void *arg, const char *name, size_t nlen, const char *data, size_t size) {
    Docs *d = arg;
    d->name.len = 0;
    fl_buf_append(&d->name, name, nlen);
    fl_buf_putc(&d->name, '\0');
    if (regexec(&d->re, d->name.data, 0, NULL, 0) != 0) return 0;
    FL_VEC_PUSH(&d->starts, d->text.len);
    for (size_t i = 0; i < size; i++) {
        char ch = data[i];
        if (ch && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", ch)) continue; /* string.punctuation */
        fl_buf_putc(&d->text, ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch);
    }
    return 0;
}

/* The documents of the archive `tgz` (its bytes) that `pattern` matches. */
static FlStatus docs_of(const char *tgz, size_t len, const char *pattern, Docs *d, FlErr *e) {
    *d = (Docs){0};
    FlBuf anchored = {0};
    fl_buf_printf(&anchored, "^(%s)", pattern);
    int rc = regcomp(&d->re, anchored.data, REG_EXTENDED | REG_NOSUB);
    fl_buf_free(&anchored);
    d->re_ok = rc == 0;
    if (rc != 0) {
        char msg[128];
        regerror(rc, &d->re, msg, sizeof msg);
        return fl_err(e, "paddle.dataset.imdb: the pattern '%s' is not a regular expression: %s", pattern, msg);
    }
    FlStatus st = fl_ds_tar_each(tgz, len, WHAT, add_doc, d, e);
    FL_VEC_PUSH(&d->starts, d->text.len);
    return st;
}

static void docs_fini(Docs *d) {
    if (d->re_ok) regfree(&d->re);
    fl_buf_free(&d->text);
    fl_buf_free(&d->name);
    FL_VEC_FREE(&d->starts);
}

static size_t ndocs(const Docs *d) { return d->starts.len - 1; }

FlStatus fl_ds_imdb_dict(const char *pattern, int64_t cutoff, FlDsDict *out, FlErr *e) {
    char *tgz;
    size_t len;
    if (fl_ds_read("imdb", TGZ, TGZ_ALT, &tgz, &len, e)) return FL_ERROR;
    Docs d = {.re_ok = false};
    FlStatus st = docs_of(tgz, len, pattern, &d, e);
    free(tgz);
    if (st == FL_OK) {
        FlDsCount c = {0};
        for (size_t i = 0; i < ndocs(&d); i++) {
            const char *p = d.text.data + d.starts.data[i], *end = d.text.data + d.starts.data[i + 1];
            size_t wl;
            for (const char *w; (w = fl_ds_token(&p, end, &wl));) fl_ds_count_add(&c, w, wl);
        }
        fl_ds_count_dict(&c, cutoff, "<unk>", out); /* Paddle's word_idx['<unk>'] = len(words) */
        fl_ds_count_fini(&c);
    }
    docs_fini(&d);
    return st;
}

/* Paddle's reader_creator: the documents of pos_pattern (label 0), then those of neg_pattern
 * (label 1), each the ids of its words (word_idx['<unk>'] for words it lacks). */
FlStatus fl_ds_imdb_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    char *tgz;
    size_t len;
    if (fl_ds_read("imdb", TGZ, TGZ_ALT, &tgz, &len, e)) return FL_ERROR;
    char pos[64], neg[64];
    snprintf(pos, sizeof pos, "aclImdb/%s/pos/.*\\.txt$", part);
    snprintf(neg, sizeof neg, "aclImdb/%s/neg/.*\\.txt$", part);
    Docs d[2] = {{.re_ok = false}, {.re_ok = false}};
    FlStatus st = docs_of(tgz, len, pos, &d[0], e);
    if (st == FL_OK) st = docs_of(tgz, len, neg, &d[1], e);
    free(tgz);
    FlMap m;
    fl_map_init(&m);
    for (size_t i = 0; i < a->nwords; i++) fl_map_put_str(&m, a->words[i], (void *)(uintptr_t)(i + 1));
    uintptr_t unk_slot = (uintptr_t)fl_map_find_str(&m, "<unk>"); /* there is one: fl_ds_load checked */
    int64_t unk = a->ids[unk_slot - 1];
    FlDsTable *t = NULL;
    if (st == FL_OK) {
        FlDsLayout l;
        fl_ds_imdb_layout(a, &l);
        t = fl_ds_table_new(&l, ndocs(&d[0]) + ndocs(&d[1]));
        FL_VEC(int64_t) ids = {0};
        size_t r = 0;
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < ndocs(&d[k]); i++, r++) {
                const char *p = d[k].text.data + d[k].starts.data[i], *end = d[k].text.data + d[k].starts.data[i + 1];
                size_t wl;
                for (const char *w; (w = fl_ds_token(&p, end, &wl));) {
                    uintptr_t slot = (uintptr_t)fl_map_find(&m, w, wl);
                    FL_VEC_PUSH(&ids, slot ? a->ids[slot - 1] : unk);
                }
                t->offsets[0][r + 1] = (int64_t)ids.len;
                ((int64_t *)t->data[1])[r] = k;
            }
        t->data[0] = ids.data ? (void *)ids.data : fl_xcalloc(1, sizeof(int64_t));
    }
    fl_map_fini(&m);
    docs_fini(&d[0]);
    docs_fini(&d[1]);
    *out = t;
    return st;
}
