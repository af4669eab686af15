/* conll05.c: paddle.dataset.conll05 (dataset.h): the test set of CoNLL-2005's semantic role
 * labelling (conll05st-tests.tar.gz, whose words and props files are gzip files inside the tar),
 * one sample per predicate of a sentence, and the word, verb and label dicts of wordDict.txt,
 * verbDict.txt and targetDict.txt. Paddle keeps them in the folder conll05st (dataset.c's dir_of). */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dataset/dataset_impl.h"

#define TGZ "conll05st-tests.tar.gz"
#define WHAT "paddle.dataset.conll05: " TGZ
#define WORDS "conll05st-release/test.wsj/words/test.wsj.words.gz"
#define PROPS "conll05st-release/test.wsj/props/test.wsj.props.gz"
#define UNK_IDX 0 /* Paddle's: a word the word dict lacks */

enum { F_WORD, F_CTX_N2, F_CTX_N1, F_CTX_0, F_CTX_P1, F_CTX_P2, F_VERB, F_MARK, F_LABEL, NFIELDS };

static const char *const field_names[NFIELDS] = {"word",   "ctx_n2", "ctx_n1", "ctx_0", "ctx_p1",
                                                 "ctx_p2", "verb",   "mark",   "label"};

void fl_ds_conll05_layout(const FlDsArgs *a, FlDsLayout *l) {
    (void)a; /* test() takes no arguments: find() checked */
    l->nfields = NFIELDS;
    for (size_t f = 0; f < NFIELDS; f++) l->fields[f] = (FlDsField){field_names[f], FL_DT_INT64, 1, true};
}

/* ---------------------------------------------------------------- lines */

static bool blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* The lines of a text as Python's file iteration gives them (split after each '\n'; a last line
 * without one counts), each stripped of blanks at both ends and NUL-terminated in place. */
typedef FL_VEC(char *) Lines;

static void split_lines(char *text, size_t len, Lines *out) {
    out->len = 0;
    char *p = text, *end = text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        char *s = p, *t = le;
        while (s < t && blank(*s)) s++;
        while (t > s && blank(t[-1])) t--;
        *t = '\0'; /* t <= le: the '\n' or the text's terminating NUL */
        FL_VEC_PUSH(out, s);
        p = nl ? nl + 1 : end;
    }
}

/* File `file` of the cache folder (Paddle's name, or `alt`, the name Paddle's download gives it)
 * as its lines; *text owns them. */
static FlStatus read_lines(const char *file, const char *alt, char **text, Lines *out, FlErr *e) {
    size_t len;
    if (fl_ds_read("conll05", file, alt, text, &len, e)) return FL_ERROR;
    split_lines(*text, len, out);
    return FL_OK;
}

/* Paddle's load_dict: the line's text (stripped) has the line's index as its id; a line seen twice
 * keeps its later index, as a Python dict assignment does. */
static FlStatus plain_dict(const char *file, const char *alt, FlDsDict *out, FlErr *e) {
    char *text;
    Lines lines = {0};
    if (read_lines(file, alt, &text, &lines, e)) return FL_ERROR;
    out->n = lines.len;
    out->words = fl_xmalloc(fl_mul_size(lines.len + 1, sizeof *out->words));
    for (size_t i = 0; i < lines.len; i++) out->words[i] = fl_xstrdup(lines.data[i]);
    FL_VEC_FREE(&lines);
    free(text);
    return FL_OK;
}

/* Paddle's load_label_dict: the tags of the lines that start with "B-" or "I-", each giving "B-tag"
 * and "I-tag" the next two ids, then "O". Paddle walks a Python set of the tags, whose order is
 * its hashing's; here the tags come in the order of their first line. */
static FlStatus label_dict(FlDsDict *out, FlErr *e) {
    char *text;
    Lines lines = {0};
    if (read_lines("targetDict.txt", "conll05st%2FtargetDict.txt", &text, &lines, e)) return FL_ERROR;
    FlMap seen;
    fl_map_init(&seen);
    FL_VEC(char *) words = {0};
    for (size_t i = 0; i < lines.len; i++) {
        const char *l = lines.data[i];
        if ((l[0] != 'B' && l[0] != 'I') || l[1] != '-' || fl_map_find_str(&seen, l + 2)) continue;
        fl_map_put_str(&seen, l + 2, (void *)1);
        FlBuf b = {0}, ib = {0};
        fl_buf_printf(&b, "B-%s", l + 2);
        fl_buf_printf(&ib, "I-%s", l + 2);
        FL_VEC_PUSH(&words, b.data);
        FL_VEC_PUSH(&words, ib.data);
    }
    FL_VEC_PUSH(&words, fl_xstrdup("O"));
    fl_map_fini(&seen);
    FL_VEC_FREE(&lines);
    free(text);
    out->n = words.len;
    out->words = words.data;
    return FL_OK;
}

FlStatus fl_ds_conll05_dict(const char *which, FlDsDict *out, FlErr *e) {
    *out = (FlDsDict){0};
    if (strcmp(which, "word") == 0) return plain_dict("wordDict.txt", "conll05st%2FwordDict.txt", out, e);
    if (strcmp(which, "verb") == 0) return plain_dict("verbDict.txt", "conll05st%2FverbDict.txt", out, e);
    if (strcmp(which, "label") == 0) return label_dict(out, e);
    return fl_err(e, "paddle.dataset.conll05 has no dict '%s' (word, verb and label)", which);
}

/* ---------------------------------------------------------------- the corpus */

/* A gzip member of the archive, inflated (malloc'd, NUL-terminated). */
static FlStatus gunzip(const char *data, size_t size, const char *member, char **out, size_t *olen, FlErr *e) {
    z_stream z = {0};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return fl_err(e, "%s: %s: zlib cannot start", WHAT, member);
    FlBuf b = {0};
    char chunk[1 << 16];
    z.next_in = (Bytef *)(uintptr_t)data;
    z.avail_in = (uInt)size;
    int rc;
    do {
        z.next_out = (Bytef *)chunk;
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) break;
        fl_buf_append(&b, chunk, sizeof chunk - z.avail_out);
    } while (rc != Z_STREAM_END && (z.avail_in || z.avail_out == 0));
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        fl_buf_free(&b);
        return fl_err(e, "%s: %s is not a whole gzip file (%s)", WHAT, member, z.msg ? z.msg : "it ends early");
    }
    fl_buf_putc(&b, '\0');
    *olen = b.len - 1;
    *out = b.data;
    return FL_OK;
}

/* The dicts as maps: word -> 1 + its id (a later line's id replacing an earlier one's). */
typedef struct Dicts {
    FlDsDict d[3]; /* word, verb, label */
    FlMap m[3];
} Dicts;

static FlStatus dicts_load(Dicts *ds, FlErr *e) {
    static const char *const which[3] = {"word", "verb", "label"};
    for (int k = 0; k < 3; k++) {
        fl_map_init(&ds->m[k]);
        if (fl_ds_conll05_dict(which[k], &ds->d[k], e)) return FL_ERROR;
        for (size_t i = 0; i < ds->d[k].n; i++) fl_map_put_str(&ds->m[k], ds->d[k].words[i], (void *)(uintptr_t)(i + 1));
    }
    return FL_OK;
}

static void dicts_fini(Dicts *ds) {
    for (int k = 0; k < 3; k++) {
        fl_ds_dict_free(&ds->d[k]);
        fl_map_fini(&ds->m[k]);
    }
}

/* The id of a word in dict k, -1 if it lacks it. */
static int64_t id_in(const Dicts *ds, int k, const char *w) {
    uintptr_t slot = (uintptr_t)fl_map_find_str(&ds->m[k], w);
    return slot ? (int64_t)slot - 1 : -1;
}

/* One sentence: its words, and a row of label columns per word (column 0 the verbs, then one
 * column per predicate), read from the props file's lines first_line... */
typedef struct Sentence {
    FL_VEC(const char *) words;
    FL_VEC(const char *) cells; /* row r's columns: cells[r * ncols ...] */
    size_t ncols, first_line;   /* first_line: 1-based, of the props file */
} Sentence;

typedef struct Out {
    FL_VEC(int64_t) f[NFIELDS];
    FL_VEC(int64_t) offs;
} Out;

/* Paddle's corpus_reader (the bracketed columns as B-/I-/O tags) and reader_creator (the
 * predicate's context words and the mark) of one sentence: a sample per predicate column. */
static FlStatus sentence_samples(const Sentence *s, const Dicts *ds, Out *o, FlErr *e) {
    size_t n = s->words.len, nc = s->ncols;
    FL_VEC(const char *) verbs = {0};
    for (size_t r = 0; r < n; r++)
        if (strcmp(s->cells.data[r * nc], "-") != 0) FL_VEC_PUSH(&verbs, s->cells.data[r * nc]);
    FL_VEC(char *) tags = {0};
    FlStatus st = FL_OK;
    for (size_t col = 1; col < nc && st == FL_OK; col++) {
        for (size_t i = 0; i < tags.len; i++) free(tags.data[i]);
        tags.len = 0;
        const char *cur = "O";
        size_t cur_len = 1;
        bool in_bracket = false;
        for (size_t r = 0; r < n && st == FL_OK; r++) {
            const char *l = s->cells.data[r * nc + col], *star = strchr(l, '*');
            FlBuf b = {0};
            bool open = strchr(l, '(') != NULL, close = strchr(l, ')') != NULL;
            if (strcmp(l, "*") == 0) {
                if (in_bracket) fl_buf_printf(&b, "I-%.*s", (int)cur_len, cur);
                else fl_buf_puts(&b, "O");
            } else if (strcmp(l, "*)") == 0) {
                fl_buf_printf(&b, "I-%.*s", (int)cur_len, cur);
                in_bracket = false;
            } else if (open) { /* "(A0*" or "(A0*)": the tag is Paddle's l[1:l.find('*')] */
                size_t ll = strlen(l), to = star ? (size_t)(star - l) : ll - 1; /* find's -1: to the end's last */
                cur = l + 1;
                cur_len = to > 1 ? to - 1 : 0;
                fl_buf_printf(&b, "B-%.*s", (int)cur_len, cur);
                in_bracket = !close;
            } else {
                st = fl_err(e, "%s: test.wsj.props.gz:%zu: unexpected label '%s' (RuntimeError in Paddle's reader)",
                            WHAT, s->first_line + r, l);
                break;
            }
            FL_VEC_PUSH(&tags, b.data);
        }
        if (st) break;
        if (col - 1 >= verbs.len) {
            st = fl_err(e, "%s: test.wsj.props.gz:%zu: the sentence has %zu predicate columns but %zu verbs in its "
                        "first column", WHAT, s->first_line, nc - 1, verbs.len);
            break;
        }
        const char *pred = verbs.data[col - 1];
        size_t vi = 0;
        while (vi < n && strcmp(tags.data[vi], "B-V") != 0) vi++;
        if (vi == n) {
            st = fl_err(e, "%s: test.wsj.props.gz:%zu: predicate column %zu has no 'B-V' (ValueError in Paddle's "
                        "reader)", WHAT, s->first_line, col);
            break;
        }
        int64_t pid = id_in(ds, 1, pred);
        if (pid < 0) {
            st = fl_err(e, "%s: test.wsj.props.gz:%zu: the verb '%s' is not in verbDict.txt", WHAT, s->first_line, pred);
            break;
        }
        const char *ctx[5];
        for (int k = 0; k < 5; k++) { /* the words at vi - 2 ... vi + 2, 'bos' or 'eos' beyond the sentence */
            ptrdiff_t at = (ptrdiff_t)vi + k - 2;
            ctx[k] = at < 0 ? "bos" : (size_t)at >= n ? "eos" : s->words.data[at];
        }
        for (size_t r = 0; r < n && st == FL_OK; r++) {
            int64_t w = id_in(ds, 0, s->words.data[r]), lab = id_in(ds, 2, tags.data[r]);
            if (lab < 0) {
                st = fl_err(e, "%s: test.wsj.props.gz:%zu: the label '%s' is not in targetDict.txt's labels", WHAT,
                            s->first_line + r, tags.data[r]);
                break;
            }
            FL_VEC_PUSH(&o->f[F_WORD], w < 0 ? UNK_IDX : w);
            for (int k = 0; k < 5; k++) {
                int64_t c = id_in(ds, 0, ctx[k]);
                FL_VEC_PUSH(&o->f[F_CTX_N2 + k], c < 0 ? UNK_IDX : c);
            }
            FL_VEC_PUSH(&o->f[F_VERB], pid);
            ptrdiff_t d = (ptrdiff_t)r - (ptrdiff_t)vi;
            FL_VEC_PUSH(&o->f[F_MARK], d >= -2 && d <= 2 ? 1 : 0);
            FL_VEC_PUSH(&o->f[F_LABEL], lab);
        }
        if (st == FL_OK) FL_VEC_PUSH(&o->offs, (int64_t)o->f[F_WORD].len);
    }
    for (size_t i = 0; i < tags.len; i++) free(tags.data[i]);
    FL_VEC_FREE(&tags);
    FL_VEC_FREE(&verbs);
    return st;
}

/* The words and props files side by side (Python's zip: to the shorter), a sentence ending at a
 * props line without labels. */
static FlStatus corpus(char *words, size_t wlen, char *props, size_t plen, const Dicts *ds, Out *o, FlErr *e) {
    Lines wl = {0}, pl = {0};
    split_lines(words, wlen, &wl);
    split_lines(props, plen, &pl);
    Sentence s = {0};
    FL_VEC(char *) toks = {0}; /* the current line's labels, NUL-terminated in place */
    FlStatus st = FL_OK;
    size_t n = wl.len < pl.len ? wl.len : pl.len;
    for (size_t i = 0; i < n && st == FL_OK; i++) {
        toks.len = 0;
        for (char *p = pl.data[i]; *p;) {
            while (*p && blank(*p)) p++;
            if (!*p) break;
            FL_VEC_PUSH(&toks, p);
            while (*p && !blank(*p)) p++;
            if (*p) *p++ = '\0';
        }
        if (toks.len == 0) { /* the end of a sentence */
            if (!s.words.len)
                st = fl_err(e, "%s: test.wsj.props.gz:%zu: a blank line without a sentence before it (IndexError in "
                            "Paddle's reader)", WHAT, i + 1);
            else st = sentence_samples(&s, ds, o, e);
            s.words.len = s.cells.len = 0;
            continue;
        }
        if (!s.words.len) {
            s.ncols = toks.len;
            s.first_line = i + 1;
        } else if (toks.len < s.ncols) {
            st = fl_err(e, "%s: test.wsj.props.gz:%zu: %zu label columns, but the sentence's first line has %zu "
                        "(IndexError in Paddle's reader)", WHAT, i + 1, toks.len, s.ncols);
            break;
        }
        FL_VEC_PUSH(&s.words, wl.data[i]);
        for (size_t k = 0; k < s.ncols; k++) FL_VEC_PUSH(&s.cells, toks.data[k]);
    }
    FL_VEC_FREE(&toks);
    FL_VEC_FREE(&s.words);
    FL_VEC_FREE(&s.cells);
    FL_VEC_FREE(&wl);
    FL_VEC_FREE(&pl);
    return st;
}

FlStatus fl_ds_conll05_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    (void)part; /* test: find() checked */
    *out = NULL;
    Dicts ds = {.d = {{0}}};
    char *tgz = NULL, *words = NULL, *props = NULL;
    size_t len, wlen, plen, wsz, psz;
    const char *wdata, *pdata;
    Out o = {0};
    FL_VEC_PUSH(&o.offs, 0);
    FlStatus st = dicts_load(&ds, e);
    if (st == FL_OK) st = fl_ds_read("conll05", TGZ, NULL, &tgz, &len, e);
    if (st == FL_OK) st = fl_ds_tar_member(tgz, len, WORDS, WHAT, &wdata, &wsz, e);
    if (st == FL_OK) st = fl_ds_tar_member(tgz, len, PROPS, WHAT, &pdata, &psz, e);
    if (st == FL_OK) st = gunzip(wdata, wsz, "test.wsj.words.gz", &words, &wlen, e);
    if (st == FL_OK) st = gunzip(pdata, psz, "test.wsj.props.gz", &props, &plen, e);
    if (st == FL_OK) st = corpus(words, wlen, props, plen, &ds, &o, e);
    if (st == FL_OK) {
        FlDsLayout l;
        fl_ds_conll05_layout(a, &l);
        FlDsTable *t = fl_ds_table_new(&l, o.offs.len - 1);
        for (size_t f = 0; f < NFIELDS; f++) {
            memcpy(t->offsets[f], o.offs.data, o.offs.len * sizeof *o.offs.data);
            t->data[f] = o.f[f].data ? (void *)o.f[f].data : fl_xcalloc(1, sizeof(int64_t));
            o.f[f].data = NULL;
        }
        *out = t;
    }
    for (size_t f = 0; f < NFIELDS; f++) FL_VEC_FREE(&o.f[f]);
    FL_VEC_FREE(&o.offs);
    free(words);
    free(props);
    free(tgz);
    dicts_fini(&ds);
    return st;
}
