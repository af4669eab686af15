/* text.c: what the text datasets share (dataset_impl.h): tar archives in memory, Python's
 * bytes.split() and word counts turned into Paddle's sorted word dicts. */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_impl.h"

/* ---------------------------------------------------------------- tar */

/* The octal number of a header field (blank- or NUL-terminated), -1 if it is none. */
static int64_t octal(const char *p, size_t n) {
    int64_t v = 0;
    size_t i = 0;
    while (i < n && p[i] == ' ') i++;
    if (i == n || p[i] < '0' || p[i] > '7') return -1;
    for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
        if (v > (INT64_MAX >> 3)) return -1;
        v = v * 8 + (p[i] - '0');
    }
    return v;
}

static const char *skip_dot(const char *s, size_t *n) {
    while (*n >= 2 && s[0] == '.' && s[1] == '/') s += 2, *n -= 2;
    return s;
}

/* The "path=" record of a pax header's data, else NULL. */
static const char *pax_path(const char *d, size_t size, size_t *plen) {
    for (size_t i = 0; i < size;) {
        char *end;
        long rl = strtol(d + i, &end, 10); /* "LEN path=VALUE\n" */
        if (rl <= 0 || (size_t)rl > size - i || end >= d + size || *end != ' ') return NULL;
        const char *kv = end + 1, *rec_end = d + i + rl;
        if (rec_end - kv > 5 && memcmp(kv, "path=", 5) == 0) {
            *plen = (size_t)(rec_end - 1 - (kv + 5));
            return kv + 5;
        }
        i += (size_t)rl;
    }
    return NULL;
}

FlStatus fl_ds_tar_each(const char *tar, size_t len, const char *what, FlDsTarFn fn, void *arg, FlErr *e) {
    const char *long_name = NULL;
    size_t long_len = 0;
    for (size_t pos = 0; pos + 512 <= len;) {
        const char *h = tar + pos;
        if (!h[0]) break; /* the end-of-archive blocks */
        int64_t sz = octal(h + 124, 12);
        if (sz < 0 || (uint64_t)sz > len - pos - 512)
            return fl_err(e, "%s: not a tar archive (a bad header at byte %zu)", what, pos);
        const char *body = h + 512;
        char type = h[156];
        size_t next = pos + 512 + (((size_t)sz + 511) / 512) * 512;
        if (type == 'L') { /* GNU: the next entry's long name */
            long_name = body;
            long_len = strnlen(body, (size_t)sz);
        } else if (type == 'x') { /* pax: its path= record names the next entry */
            long_name = pax_path(body, (size_t)sz, &long_len);
        } else if (type == 'g') {
        } else {
            char name[256 + 2];
            const char *nm = long_name;
            size_t nlen = long_len;
            if (!nm) {
                size_t pl = memcmp(h + 257, "ustar", 5) == 0 ? strnlen(h + 345, 155) : 0, bl = strnlen(h, 100);
                memcpy(name, h + 345, pl);
                if (pl) name[pl++] = '/';
                memcpy(name + pl, h, bl);
                nm = name;
                nlen = pl + bl;
            }
            long_name = NULL;
            nm = skip_dot(nm, &nlen);
            int stop = 0;
            if ((type == '0' || type == '\0') && (stop = fn(arg, nm, nlen, body, (size_t)sz)) != 0)
                return stop < 0 ? FL_ERROR : FL_OK;
        }
        pos = next;
    }
    return FL_OK;
}

typedef struct Member {
    const char *want;
    size_t want_len;
    const char *data;
    size_t size;
    bool found;
} Member;

static int is_member(void *arg, const char *name, size_t nlen, const char *data, size_t size) {
    Member *m = arg;
    if (nlen != m->want_len || memcmp(name, m->want, nlen) != 0) return 0;
    *m = (Member){.data = data, .size = size, .found = true};
    return 1;
}

FlStatus fl_ds_tar_member(const char *tar, size_t len, const char *member, const char *what, const char **data,
                          size_t *size, FlErr *e) {
    Member m = {.want_len = strlen(member)};
    m.want = skip_dot(member, &m.want_len);
    if (fl_ds_tar_each(tar, len, what, is_member, &m, e)) return FL_ERROR;
    if (!m.found) return fl_err(e, "%s holds no '%s'", what, member);
    *data = m.data;
    *size = m.size;
    return FL_OK;
}

/* ---------------------------------------------------------------- tokens */

static bool blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'; }

const char *fl_ds_token(const char **p, const char *end, size_t *len) {
    const char *s = *p;
    while (s < end && blank(*s)) s++;
    if (s == end) {
        *p = s;
        return NULL;
    }
    const char *t = s;
    while (s < end && !blank(*s)) s++;
    *len = (size_t)(s - t);
    *p = s;
    return t;
}

/* ---------------------------------------------------------------- word counts */

void fl_ds_count_add(FlDsCount *c, const char *w, size_t len) {
    uintptr_t slot = (uintptr_t)fl_map_find(&c->index, w, len);
    if (slot) {
        c->words.data[slot - 1].count++;
        return;
    }
    FL_VEC_PUSH(&c->words, ((FlDsWord){w, len, 1}));
    fl_map_put(&c->index, w, len, (void *)(uintptr_t)c->words.len);
}

static int by_count_then_bytes(const void *pa, const void *pb) {
    const FlDsWord *a = *(const FlDsWord *const *)pa, *b = *(const FlDsWord *const *)pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    int r = memcmp(a->w, b->w, a->len < b->len ? a->len : b->len);
    if (r) return r;
    return a->len < b->len ? -1 : a->len > b->len;
}

void fl_ds_count_dict(const FlDsCount *c, int64_t cutoff, const char *last, FlDsDict *out) {
    const FlDsWord **keep = fl_xmalloc(fl_mul_size(c->words.len + 1, sizeof *keep));
    size_t n = 0;
    for (size_t i = 0; i < c->words.len; i++)
        if (c->words.data[i].count > cutoff) keep[n++] = &c->words.data[i];
    qsort(keep, n, sizeof *keep, by_count_then_bytes);
    out->words = fl_xmalloc(fl_mul_size(n + 1, sizeof *out->words));
    for (size_t i = 0; i < n; i++) {
        char *w = fl_xmalloc(keep[i]->len + 1);
        memcpy(w, keep[i]->w, keep[i]->len);
        w[keep[i]->len] = '\0';
        out->words[i] = w;
    }
    if (last) out->words[n++] = fl_xstrdup(last);
    out->n = n;
    free(keep);
}

void fl_ds_count_fini(FlDsCount *c) {
    fl_map_fini(&c->index);
    FL_VEC_FREE(&c->words);
}

void fl_ds_dict_free(FlDsDict *d) {
    for (size_t i = 0; i < d->n; i++) free(d->words[i]);
    free(d->words);
    d->words = NULL;
    d->n = 0;
}
