/* wmt.c: paddle.dataset.wmt14 and wmt16 (dataset.h): sentence pairs of a tar archive as three
 * sequences of word ids (the source with '<s>' and '<e>', the target after '<s>', the target
 * before '<e>'), and their word dicts.
 *
 *   wmt14  wmt14.tgz: members ending in src.dict and trg.dict (a word a line, the first dict_size
 *          lines make the dict) and in train/train, test/test (lines "source\ttarget")
 *   wmt16  wmt16.tar.gz: wmt16/train, wmt16/test, wmt16/val (lines "english\tgerman"); a language's
 *          dict of dict_size words is the cache's wmt16/LANG_SIZE.dict when that has dict_size
 *          lines, else built as Paddle builds that file: '<s>', '<e>', '<unk>', then the words of
 *          the training text's side by falling count (ties in the order first seen) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset/dataset_impl.h"

#define WMT14_TGZ "wmt14.tgz"
#define WMT16_TGZ "wmt16.tar.gz"
#define WMT14_UNK 2        /* Paddle's UNK_IDX of wmt14 */
#define WMT14_MAX_LEN 80   /* wmt14 drops pairs with more ids on a side */
#define WMT16_EN_WORDS 11250 /* Paddle's TOTAL_EN_WORDS and TOTAL_DE_WORDS: the dicts' largest sizes */
#define WMT16_DE_WORDS 19220

void fl_ds_wmt_layout(const FlDsArgs *a, FlDsLayout *l) {
    (void)a;
    *l = (FlDsLayout){.nfields = 3,
                      .fields = {{"src_ids", FL_DT_INT64, 1, true},
                                 {"trg_ids", FL_DT_INT64, 1, true},
                                 {"trg_ids_next", FL_DT_INT64, 1, true}}};
}

static bool blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* The next line of [*p, end) stripped of blanks at both ends (Python's line.strip()), NULL at the
 * end. */
static const char *next_line(const char **p, const char *end, size_t *len) {
    if (*p >= end) return NULL;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p)), *le = nl ? nl : end, *s = *p;
    *p = nl ? nl + 1 : end;
    while (s < le && blank(*s)) s++;
    while (le > s && blank(le[-1])) le--;
    *len = (size_t)(le - s);
    return s;
}

/* A dict: its words (copies, word i with id i) and a map word -> 1 + id, a later line's id
 * replacing an earlier one's as a Python dict assignment does. */
typedef struct Dict {
    FlDsDict d;
    FlMap m;
} Dict;

static void dict_index(Dict *d) {
    fl_map_init(&d->m);
    for (size_t i = 0; i < d->d.n; i++) fl_map_put_str(&d->m, d->d.words[i], (void *)(uintptr_t)(i + 1));
}

static void dict_fini(Dict *d) {
    fl_map_fini(&d->m);
    fl_ds_dict_free(&d->d);
}

static int64_t id_or(const Dict *d, const char *w, size_t len, int64_t unk) {
    uintptr_t slot = (uintptr_t)fl_map_find(&d->m, w, len);
    return slot ? (int64_t)slot - 1 : unk;
}

static void dict_push(FlDsDict *d, const char *w, size_t len) {
    d->words = fl_xrealloc(d->words, fl_mul_size(d->n + 1, sizeof *d->words));
    char *c = fl_xmalloc(len + 1);
    memcpy(c, w, len);
    c[len] = '\0';
    d->words[d->n++] = c;
}

/* The first `size` lines of a text, stripped. */
static void dict_of_lines(const char *p, const char *end, int64_t size, FlDsDict *out) {
    *out = (FlDsDict){0};
    size_t len;
    for (const char *l; (int64_t)out->n < size && (l = next_line(&p, end, &len));) dict_push(out, l, len);
}

/* A sentence pair of a line: exactly one tab between the two sides once the line is stripped (Paddle
 * skips other lines). */
static bool pair_of(const char *l, size_t len, const char **src, size_t *slen, const char **trg, size_t *tlen) {
    const char *tab = memchr(l, '\t', len);
    if (!tab || memchr(tab + 1, '\t', len - (size_t)(tab + 1 - l))) return false;
    *src = l;
    *slen = (size_t)(tab - l);
    *trg = tab + 1;
    *tlen = len - *slen - 1;
    return true;
}

typedef struct Out {
    FL_VEC(int64_t) f[3];
    FL_VEC(int64_t) offs[3];
} Out;

static void out_init(Out *o) {
    *o = (Out){0};
    for (int k = 0; k < 3; k++) FL_VEC_PUSH(&o->offs[k], 0);
}

static void out_fini(Out *o) {
    for (int k = 0; k < 3; k++) {
        FL_VEC_FREE(&o->f[k]);
        FL_VEC_FREE(&o->offs[k]);
    }
}

/* Ends the current sample. */
static void out_row(Out *o) {
    for (int k = 0; k < 3; k++) FL_VEC_PUSH(&o->offs[k], (int64_t)o->f[k].len);
}

static FlDsTable *out_table(Out *o, const FlDsArgs *a) {
    FlDsLayout l;
    fl_ds_wmt_layout(a, &l);
    FlDsTable *t = fl_ds_table_new(&l, o->offs[0].len - 1);
    for (int k = 0; k < 3; k++) {
        memcpy(t->offsets[k], o->offs[k].data, o->offs[k].len * sizeof(int64_t));
        t->data[k] = o->f[k].data ? (void *)o->f[k].data : fl_xcalloc(1, sizeof(int64_t));
        o->f[k].data = NULL;
    }
    return t;
}

/* ---------------------------------------------------------------- wmt14 */

typedef struct Find {
    const char *suffix;
    size_t n;
    const char *data;
    size_t size;
    FL_VEC(const char *) datas; /* every match, for the readers */
    FL_VEC(size_t) sizes;
} Find;

static int ends_with(void *arg, const char *name, size_t nlen, const char *data, size_t size) {
    Find *f = arg;
    size_t sl = strlen(f->suffix);
    if (nlen < sl || memcmp(name + nlen - sl, f->suffix, sl) != 0) return 0;
    f->n++;
    f->data = data;
    f->size = size;
    FL_VEC_PUSH(&f->datas, data);
    FL_VEC_PUSH(&f->sizes, size);
    return 0;
}

static void find_fini(Find *f) {
    FL_VEC_FREE(&f->datas);
    FL_VEC_FREE(&f->sizes);
}

/* wmt14's dict `which` ("src" or "trg"): the first dict_size lines of the one member whose name ends
 * in src.dict / trg.dict. */
static FlStatus wmt14_dict(const char *tgz, size_t len, const char *which, int64_t size, FlDsDict *out, FlErr *e) {
    char suffix[16];
    snprintf(suffix, sizeof suffix, "%s.dict", which);
    Find f = {.suffix = suffix};
    FlStatus st = fl_ds_tar_each(tgz, len, "paddle.dataset.wmt14: " WMT14_TGZ, ends_with, &f, e);
    if (st == FL_OK && f.n != 1)
        st = fl_err(e, "paddle.dataset.wmt14: " WMT14_TGZ " holds %zu files named *%s; Paddle's reader wants one", f.n,
                    suffix);
    if (st == FL_OK) dict_of_lines(f.data, f.data + f.size, size, out);
    find_fini(&f);
    return st;
}

/* Paddle's wmt14 reader_creator over the members whose names end in train/train (test/test). */
FlStatus fl_ds_wmt14_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    *out = NULL;
    char *tgz;
    size_t len;
    if (fl_ds_read("wmt14", WMT14_TGZ, NULL, &tgz, &len, e)) return FL_ERROR;
    Dict src = {.d = {0}}, trg = {.d = {0}};
    Find f = {.suffix = strcmp(part, "train") == 0 ? "train/train" : "test/test"};
    FlStatus st = wmt14_dict(tgz, len, "src", a->n, &src.d, e);
    if (st == FL_OK) st = wmt14_dict(tgz, len, "trg", a->n, &trg.d, e);
    dict_index(&src);
    dict_index(&trg);
    int64_t bos = id_or(&trg, "<s>", 3, -1), eos = id_or(&trg, "<e>", 3, -1);
    if (st == FL_OK && (bos < 0 || eos < 0))
        st = fl_err(e, "paddle.dataset.wmt14: the first %lld words of trg.dict hold no '%s' (KeyError in Paddle's "
                    "reader)", (long long)a->n, bos < 0 ? "<s>" : "<e>");
    if (st == FL_OK) st = fl_ds_tar_each(tgz, len, "paddle.dataset.wmt14: " WMT14_TGZ, ends_with, &f, e);
    Out o;
    out_init(&o);
    FL_VEC(int64_t) s = {0}, t = {0};
    for (size_t m = 0; st == FL_OK && m < f.datas.len; m++) {
        const char *p = f.datas.data[m], *end = p + f.sizes.data[m], *l, *sw, *tw;
        size_t ll, sl, tl, wl;
        while ((l = next_line(&p, end, &ll))) {
            if (!pair_of(l, ll, &sw, &sl, &tw, &tl)) continue;
            s.len = t.len = 0;
            FL_VEC_PUSH(&s, id_or(&src, "<s>", 3, WMT14_UNK));
            for (const char *q = sw, *w; (w = fl_ds_token(&q, sw + sl, &wl));) FL_VEC_PUSH(&s, id_or(&src, w, wl, WMT14_UNK));
            FL_VEC_PUSH(&s, id_or(&src, "<e>", 3, WMT14_UNK));
            for (const char *q = tw, *w; (w = fl_ds_token(&q, tw + tl, &wl));) FL_VEC_PUSH(&t, id_or(&trg, w, wl, WMT14_UNK));
            if (s.len > WMT14_MAX_LEN || t.len > WMT14_MAX_LEN) continue;
            for (size_t i = 0; i < s.len; i++) FL_VEC_PUSH(&o.f[0], s.data[i]);
            FL_VEC_PUSH(&o.f[1], bos);
            for (size_t i = 0; i < t.len; i++) {
                FL_VEC_PUSH(&o.f[1], t.data[i]);
                FL_VEC_PUSH(&o.f[2], t.data[i]);
            }
            FL_VEC_PUSH(&o.f[2], eos);
            out_row(&o);
        }
    }
    if (st == FL_OK) *out = out_table(&o, a);
    FL_VEC_FREE(&s);
    FL_VEC_FREE(&t);
    out_fini(&o);
    find_fini(&f);
    dict_fini(&src);
    dict_fini(&trg);
    free(tgz);
    return st;
}

/* ---------------------------------------------------------------- wmt16 */

static int64_t wmt16_size(const char *lang, int64_t size) {
    int64_t most = strcmp(lang, "en") == 0 ? WMT16_EN_WORDS : WMT16_DE_WORDS;
    return size < most ? size : most;
}

typedef struct Counted {
    const FlDsWord *w;
    size_t order;
} Counted;

static int by_count_then_order(const void *pa, const void *pb) {
    const Counted *a = pa, *b = pb;
    if (a->w->count != b->w->count) return a->w->count > b->w->count ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Paddle's __build_dict: '<s>', '<e>', '<unk>', then the words of side `lang` of wmt16/train by
 * falling count (Python's stable sort: ties in the order first seen) up to dict_size lines. */
static FlStatus wmt16_build(const char *tgz, size_t len, const char *lang, int64_t size, FlDsDict *out, FlErr *e) {
    const char *data;
    size_t dsize;
    if (fl_ds_tar_member(tgz, len, "wmt16/train", "paddle.dataset.wmt16: " WMT16_TGZ, &data, &dsize, e))
        return FL_ERROR;
    FlDsCount c = {0};
    const char *p = data, *end = data + dsize, *l, *sw, *tw;
    size_t ll, sl, tl, wl;
    bool en = strcmp(lang, "en") == 0;
    while ((l = next_line(&p, end, &ll))) {
        if (!pair_of(l, ll, &sw, &sl, &tw, &tl)) continue;
        const char *q = en ? sw : tw, *qe = en ? sw + sl : tw + tl;
        for (const char *w; (w = fl_ds_token(&q, qe, &wl));) fl_ds_count_add(&c, w, wl);
    }
    Counted *sorted = fl_xmalloc(fl_mul_size(c.words.len + 1, sizeof *sorted));
    for (size_t i = 0; i < c.words.len; i++) sorted[i] = (Counted){&c.words.data[i], i};
    qsort(sorted, c.words.len, sizeof *sorted, by_count_then_order);
    *out = (FlDsDict){0};
    dict_push(out, "<s>", 3);
    dict_push(out, "<e>", 3);
    dict_push(out, "<unk>", 5);
    for (size_t i = 0; i < c.words.len && (int64_t)i + 3 != size; i++) dict_push(out, sorted[i].w->w, sorted[i].w->len);
    free(sorted);
    fl_ds_count_fini(&c);
    return FL_OK;
}

/* Paddle's __load_dict: the cache's LANG_SIZE.dict when it has `size` lines (Paddle writes it at
 * the first read; here it is read when it is there, never written), else the dict built from the
 * archive. */
static FlStatus wmt16_dict(const char *tgz, size_t len, const char *lang, int64_t size, FlDsDict *out, FlErr *e) {
    char file[64];
    snprintf(file, sizeof file, "%s_%lld.dict", lang, (long long)size);
    char *dir = fl_ds_dir("wmt16");
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/%s", dir, file);
    free(dir);
    bool there = access(path.data, F_OK) == 0;
    fl_buf_free(&path);
    if (there) {
        char *text;
        size_t tl;
        if (fl_ds_read("wmt16", file, NULL, &text, &tl, e)) return FL_ERROR;
        size_t lines = 0;
        for (size_t i = 0; i < tl; i++) lines += text[i] == '\n';
        if (tl && text[tl - 1] != '\n') lines++;
        if ((int64_t)lines == size) {
            dict_of_lines(text, text + tl, size, out);
            free(text);
            return FL_OK;
        }
        free(text);
    }
    return wmt16_build(tgz, len, lang, size, out, e);
}

/* Paddle's wmt16 reader_creator of wmt16/train, test or val; '<s>', '<e>' and '<unk>''s ids are
 * the source dict's. */
FlStatus fl_ds_wmt16_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    *out = NULL;
    char *tgz;
    size_t len;
    if (fl_ds_read("wmt16", WMT16_TGZ, NULL, &tgz, &len, e)) return FL_ERROR;
    const char *slang = a->lang, *tlang = strcmp(a->lang, "en") == 0 ? "de" : "en";
    Dict src = {.d = {0}}, trg = {.d = {0}};
    FlStatus st = wmt16_dict(tgz, len, slang, wmt16_size(slang, a->n), &src.d, e);
    if (st == FL_OK) st = wmt16_dict(tgz, len, tlang, wmt16_size(tlang, a->n2), &trg.d, e);
    dict_index(&src);
    dict_index(&trg);
    int64_t bos = id_or(&src, "<s>", 3, -1), eos = id_or(&src, "<e>", 3, -1), unk = id_or(&src, "<unk>", 5, -1);
    if (st == FL_OK && (bos < 0 || eos < 0 || unk < 0))
        st = fl_err(e, "paddle.dataset.wmt16: the %s dict holds no '%s' (KeyError in Paddle's reader)", slang,
                    bos < 0 ? "<s>" : eos < 0 ? "<e>" : "<unk>");
    char member[32];
    snprintf(member, sizeof member, "wmt16/%s", strcmp(part, "validation") == 0 ? "val" : part);
    const char *data = NULL;
    size_t dsize = 0;
    if (st == FL_OK) st = fl_ds_tar_member(tgz, len, member, "paddle.dataset.wmt16: " WMT16_TGZ, &data, &dsize, e);
    Out o;
    out_init(&o);
    bool en = strcmp(slang, "en") == 0;
    const char *p = data, *end = data ? data + dsize : NULL, *l, *sw, *tw;
    size_t ll, sl, tl, wl;
    while (st == FL_OK && (l = next_line(&p, end, &ll))) {
        if (!pair_of(l, ll, &sw, &sl, &tw, &tl)) continue;
        const char *s0 = en ? sw : tw, *s1 = en ? sw + sl : tw + tl, *t0 = en ? tw : sw, *t1 = en ? tw + tl : sw + sl;
        FL_VEC_PUSH(&o.f[0], bos);
        for (const char *w; (w = fl_ds_token(&s0, s1, &wl));) FL_VEC_PUSH(&o.f[0], id_or(&src, w, wl, unk));
        FL_VEC_PUSH(&o.f[0], eos);
        FL_VEC_PUSH(&o.f[1], bos);
        for (const char *w; (w = fl_ds_token(&t0, t1, &wl));) {
            int64_t id = id_or(&trg, w, wl, unk);
            FL_VEC_PUSH(&o.f[1], id);
            FL_VEC_PUSH(&o.f[2], id);
        }
        FL_VEC_PUSH(&o.f[2], eos);
        out_row(&o);
    }
    if (st == FL_OK) *out = out_table(&o, a);
    out_fini(&o);
    dict_fini(&src);
    dict_fini(&trg);
    free(tgz);
    return st;
}

/* ---------------------------------------------------------------- both */

FlStatus fl_ds_wmt_dict(const char *name, const char *which, int64_t size, FlDsDict *out, FlErr *e) {
    *out = (FlDsDict){0};
    bool w14 = strcmp(name, "wmt14") == 0;
    if (size < 1) return fl_err(e, "paddle.dataset.%s.get_dict: dict_size is %lld; it must be at least 1", name, (long long)size);
    if (w14 && strcmp(which, "src") != 0 && strcmp(which, "trg") != 0)
        return fl_err(e, "paddle.dataset.wmt14 has no dict '%s' (src and trg)", which);
    if (!w14 && strcmp(which, "en") != 0 && strcmp(which, "de") != 0)
        return fl_err(e, "paddle.dataset.wmt16: the language is '%s'; it is 'en' (English) or 'de' (German)", which);
    char *tgz;
    size_t len;
    if (fl_ds_read(name, w14 ? WMT14_TGZ : WMT16_TGZ, NULL, &tgz, &len, e)) return FL_ERROR;
    FlStatus st = w14 ? wmt14_dict(tgz, len, which, size, out, e) : wmt16_dict(tgz, len, which, wmt16_size(which, size), out, e);
    free(tgz);
    return st;
}
