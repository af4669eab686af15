/* movielens.c: paddle.dataset.movielens (dataset.h): MovieLens 1M's ml-1m.zip (users.dat,
 * movies.dat, ratings.dat; '::'-separated Latin-1 text) read as Paddle's movielens.py reads it:
 * a rating line is a sample of the user's id, gender (0 M, 1 F), age (its index in age_table)
 * and job, the movie's id, categories and title words (ids of the two dicts), and the rating * 2
 * - 5; test takes the lines for which numpy.random (seeded with 0; MT19937, random_sample)
 * draws below 0.1, train the others. The dicts are Python sets' in Paddle, whose order changes
 * from run to run with Python's string hashing: here the words and categories are numbered by
 * their UTF-8 bytes, the same on every run. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dataset/dataset_impl.h"

#define ZIP "ml-1m.zip"
#define ZIP_ALT "movielens%2Fml-1m.zip" /* Paddle 2's name */
#define WHAT "paddle.dataset.movielens: " ZIP

static const int ages[] = {1, 18, 25, 35, 45, 50, 56}; /* Paddle's age_table */

/* ---------------------------------------------------------------- zip */

static uint32_t le32(const unsigned char *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint32_t le16(const unsigned char *p) { return p[0] | (uint32_t)p[1] << 8; }

/* Member `member` of a zip archive in memory, inflated (malloc'd) or stored. */
static FlStatus zip_member(const char *zip, size_t len, const char *member, char **out, size_t *olen, FlErr *e) {
    const unsigned char *z = (const unsigned char *)zip;
    size_t eocd = len >= 22 ? len - 22 : 0;
    while (len >= 22 && eocd > 0 && le32(z + eocd) != 0x06054b50) eocd--;
    if (len < 22 || le32(z + eocd) != 0x06054b50) return fl_err(e, "%s: not a zip archive (no end of its directory)", WHAT);
    size_t n = le16(z + eocd + 10), pos = le32(z + eocd + 16), ml = strlen(member);
    for (size_t i = 0; i < n; i++) {
        if (pos + 46 > len || le32(z + pos) != 0x02014b50) return fl_err(e, "%s: a damaged directory entry %zu", WHAT, i);
        size_t method = le16(z + pos + 10), csize = le32(z + pos + 20), usize = le32(z + pos + 24);
        size_t nl = le16(z + pos + 28), xl = le16(z + pos + 30), cl = le16(z + pos + 32), off = le32(z + pos + 42);
        if (pos + 46 + nl > len) return fl_err(e, "%s: a damaged directory entry %zu", WHAT, i);
        if (nl != ml || memcmp(z + pos + 46, member, ml) != 0) {
            pos += 46 + nl + xl + cl;
            continue;
        }
        if (off + 30 > len || le32(z + off) != 0x04034b50) return fl_err(e, "%s: %s: a damaged local header", WHAT, member);
        size_t data = off + 30 + le16(z + off + 26) + le16(z + off + 28);
        if (data > len || csize > len - data) return fl_err(e, "%s: %s runs past the archive's end", WHAT, member);
        if (method == 0) {
            *out = fl_xstrndup((const char *)z + data, csize);
            *olen = csize;
            return FL_OK;
        }
        if (method != 8) return fl_err(e, "%s: %s is compressed by method %zu (deflate and stored are read)", WHAT, member, method);
        if (usize / 1032 > csize + 1) /* deflate's largest ratio: a damaged size, not an allocation to try */
            return fl_err(e, "%s: %s claims %zu bytes from %zu compressed", WHAT, member, usize, csize);
        char *buf = fl_xmalloc(usize + 1);
        z_stream s = {0};
        if (inflateInit2(&s, -15) != Z_OK) {
            free(buf);
            return fl_err(e, "%s: zlib's inflate did not start", WHAT);
        }
        s.next_in = (Bytef *)(z + data);
        s.avail_in = (uInt)csize;
        s.next_out = (Bytef *)buf;
        s.avail_out = (uInt)usize;
        int rc = inflate(&s, Z_FINISH);
        size_t got = s.total_out;
        inflateEnd(&s);
        if (rc != Z_STREAM_END || got != usize) {
            free(buf);
            return fl_err(e, "%s: %s does not inflate to its %zu bytes", WHAT, member, usize);
        }
        buf[usize] = '\0';
        *out = buf;
        *olen = usize;
        return FL_OK;
    }
    return fl_err(e, "%s holds no '%s'", WHAT, member);
}

/* ---------------------------------------------------------------- lines */

/* The '::'-separated fields of line `line` (stripped of blanks), n of them exactly. */
static FlStatus fields_of(char *line, size_t len, const char *file, size_t lineno, size_t n, char **f, FlErr *e) {
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r')) len--;
    while (len && (*line == ' ' || *line == '\t')) line++, len--;
    line[len] = '\0';
    size_t k = 0;
    for (char *p = line;; k++) {
        char *sep = strstr(p, "::");
        if (k < n) f[k] = p;
        if (!sep) break;
        *sep = '\0';
        p = sep + 2;
    }
    if (k + 1 != n)
        return fl_err(e, "%s: %s:%zu: %zu fields separated by '::', expected %zu", WHAT, file, lineno, k + 1, n);
    return FL_OK;
}

static FlStatus int_of(const char *s, const char *file, size_t lineno, int64_t *out, FlErr *e) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end) return fl_err(e, "%s: %s:%zu: '%s' is not an int", WHAT, file, lineno, s);
    *out = v;
    return FL_OK;
}

/* Latin-1 bytes as UTF-8, lowered as Python's str.lower() lowers Latin-1 letters. */
static char *latin1_utf8(const char *s, size_t n, bool lower) {
    char *out = fl_xmalloc(fl_mul_size(n, 2) + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (lower && ((ch >= 'A' && ch <= 'Z') || (ch >= 0xc0 && ch <= 0xde && ch != 0xd7))) ch += 0x20;
        if (ch < 0x80) {
            out[k++] = (char)ch;
        } else {
            out[k++] = (char)(0xc0 | ch >> 6);
            out[k++] = (char)(0x80 | (ch & 0x3f));
        }
    }
    out[k] = '\0';
    return out;
}

/* ---------------------------------------------------------------- the meta data */

typedef struct Movie {
    int64_t id;
    FL_VEC(char *) cats;  /* owned, UTF-8 */
    FL_VEC(char *) words; /* owned, lowered UTF-8 */
} Movie;

typedef struct User {
    int64_t id, gender, age, job;
} User;

typedef struct Meta {
    FL_VEC(Movie) movies;
    FL_VEC(User) users;
    int64_t *movie_at, *user_at; /* id -> 1-based index in movies, users (0: none) */
    int64_t max_movie, max_user;
    FlDsDict cats, titles;
    FlMap cat_id, title_id; /* word -> 1 + its id */
} Meta;

static void meta_fini(Meta *m) {
    for (size_t i = 0; i < m->movies.len; i++) {
        Movie *mv = &m->movies.data[i];
        for (size_t k = 0; k < mv->cats.len; k++) free(mv->cats.data[k]);
        for (size_t k = 0; k < mv->words.len; k++) free(mv->words.data[k]);
        FL_VEC_FREE(&mv->cats);
        FL_VEC_FREE(&mv->words);
    }
    FL_VEC_FREE(&m->movies);
    FL_VEC_FREE(&m->users);
    free(m->movie_at);
    free(m->user_at);
    fl_map_fini(&m->cat_id);
    fl_map_fini(&m->title_id);
    fl_ds_dict_free(&m->cats);
    fl_ds_dict_free(&m->titles);
}

static int by_bytes(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The distinct words of a set, numbered by their bytes: a dict and its index. */
static void number(FlMap *seen, FlDsDict *d, FlMap *ids) {
    d->n = 0;
    d->words = fl_xmalloc(fl_mul_size(seen->len + 1, sizeof *d->words));
    for (size_t i = 0; i < seen->cap; i++)
        if (fl_map_slot_live(seen, i)) d->words[d->n++] = fl_xstrndup(seen->buckets[i].key, seen->buckets[i].klen);
    qsort(d->words, d->n, sizeof *d->words, by_bytes);
    for (size_t i = 0; i < d->n; i++) fl_map_put_str(ids, d->words[i], (void *)(uintptr_t)(i + 1));
}

#define MAX_ID (1 << 24)

/* An index of ids: at[id] the 1-based position of the item of that id. */
static FlStatus index_ids(const char *file, const int64_t *ids, size_t n, int64_t **at, int64_t *max, FlErr *e) {
    *max = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t id = ids[i];
        if (id < 0 || id >= MAX_ID) return fl_err(e, "%s: %s: the id %lld is outside [0, %d)", WHAT, file, (long long)id, MAX_ID);
        if (id > *max) *max = id;
    }
    *at = fl_xcalloc((size_t)*max + 1, sizeof **at);
    for (size_t i = 0; i < n; i++) (*at)[ids[i]] = (int64_t)i + 1;
    return FL_OK;
}

static FlStatus read_movies(Meta *m, char *text, size_t len, FlErr *e) {
    FlMap cats, words;
    fl_map_init(&cats);
    fl_map_init(&words);
    FlStatus st = FL_OK;
    size_t lineno = 0;
    for (char *p = text; st == FL_OK && p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p)), *end = nl ? nl : text + len;
        lineno++;
        char *f[3];
        size_t ll = (size_t)(end - p);
        char *line = p;
        p = end + 1;
        if ((st = fields_of(line, ll, "movies.dat", lineno, 3, f, e))) break;
        Movie mv = {0};
        if ((st = int_of(f[0], "movies.dat", lineno, &mv.id, e))) break;
        /* the title: Paddle's '^(.*)\((\d+)\)$', group 1 */
        char *t = f[1];
        size_t tl = strlen(t), k = tl;
        bool ok = tl >= 3 && t[tl - 1] == ')';
        if (ok) {
            k = tl - 1;
            while (k > 0 && t[k - 1] >= '0' && t[k - 1] <= '9') k--;
            ok = k < tl - 1 && k > 0 && t[k - 1] == '(';
        }
        if (!ok) {
            st = fl_err(e, "%s: movies.dat:%zu: the title '%s' does not end in '(YEAR)'", WHAT, lineno, t);
            break;
        }
        const char *tend = t + k - 1, *q = t;
        size_t wl;
        for (const char *w; (w = fl_ds_token(&q, tend, &wl));) {
            char *u = latin1_utf8(w, wl, true);
            fl_map_put_str(&words, u, (void *)1);
            FL_VEC_PUSH(&mv.words, u);
        }
        for (char *c = f[2];;) {
            char *bar = strchr(c, '|');
            if (bar) *bar = '\0';
            char *u = latin1_utf8(c, strlen(c), false);
            fl_map_put_str(&cats, u, (void *)1);
            FL_VEC_PUSH(&mv.cats, u);
            if (!bar) break;
            c = bar + 1;
        }
        FL_VEC_PUSH(&m->movies, mv);
    }
    FL_VEC(int64_t) ids = {0};
    for (size_t i = 0; st == FL_OK && i < m->movies.len; i++) FL_VEC_PUSH(&ids, m->movies.data[i].id);
    if (st == FL_OK) st = index_ids("movies.dat", ids.data, ids.len, &m->movie_at, &m->max_movie, e);
    FL_VEC_FREE(&ids);
    if (st == FL_OK) {
        number(&cats, &m->cats, &m->cat_id);
        number(&words, &m->titles, &m->title_id);
    }
    fl_map_fini(&cats);
    fl_map_fini(&words);
    return st;
}

static FlStatus read_users(Meta *m, char *text, size_t len, FlErr *e) {
    size_t lineno = 0;
    for (char *p = text; p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p)), *end = nl ? nl : text + len;
        lineno++;
        char *f[5], *line = p;
        size_t ll = (size_t)(end - p);
        p = end + 1;
        User u = {0};
        int64_t age = 0;
        if (fields_of(line, ll, "users.dat", lineno, 5, f, e) || int_of(f[0], "users.dat", lineno, &u.id, e) ||
            int_of(f[2], "users.dat", lineno, &age, e) || int_of(f[3], "users.dat", lineno, &u.job, e))
            return FL_ERROR;
        u.gender = strcmp(f[1], "M") == 0 ? 0 : 1;
        u.age = -1;
        for (size_t i = 0; i < FL_ARRAY_LEN(ages); i++)
            if (ages[i] == age) u.age = (int64_t)i;
        if (u.age < 0)
            return fl_err(e, "%s: users.dat:%zu: age %lld is not in age_table (1, 18, 25, 35, 45, 50, 56)", WHAT,
                          lineno, (long long)age);
        FL_VEC_PUSH(&m->users, u);
    }
    FL_VEC(int64_t) ids = {0};
    for (size_t i = 0; i < m->users.len; i++) FL_VEC_PUSH(&ids, m->users.data[i].id);
    FlStatus st = index_ids("users.dat", ids.data, ids.len, &m->user_at, &m->max_user, e);
    FL_VEC_FREE(&ids);
    return st;
}

static FlStatus meta_read(Meta *m, char **zip, size_t *zlen, FlErr *e) {
    *m = (Meta){0};
    fl_map_init(&m->cat_id);
    fl_map_init(&m->title_id);
    if (fl_ds_read("movielens", ZIP, ZIP_ALT, zip, zlen, e)) return FL_ERROR;
    char *text;
    size_t len;
    if (zip_member(*zip, *zlen, "ml-1m/movies.dat", &text, &len, e)) return FL_ERROR;
    FlStatus st = read_movies(m, text, len, e);
    free(text);
    if (st || zip_member(*zip, *zlen, "ml-1m/users.dat", &text, &len, e)) return FL_ERROR;
    st = read_users(m, text, len, e);
    free(text);
    return st;
}

FlStatus fl_ds_movielens_meta(FlDsMovielens *out, FlErr *e) {
    *out = (FlDsMovielens){0};
    Meta m;
    char *zip = NULL;
    size_t zlen;
    FlStatus st = meta_read(&m, &zip, &zlen, e);
    free(zip);
    if (st == FL_OK) {
        for (size_t i = 0; i < m.movies.len; i++)
            if (m.movies.data[i].id > out->max_movie_id) out->max_movie_id = m.movies.data[i].id;
        for (size_t i = 0; i < m.users.len; i++) {
            if (m.users.data[i].id > out->max_user_id) out->max_user_id = m.users.data[i].id;
            if (m.users.data[i].job > out->max_job_id) out->max_job_id = m.users.data[i].job;
        }
        out->categories = m.cats;
        out->titles = m.titles;
        m.cats = (FlDsDict){0};
        m.titles = (FlDsDict){0};
    }
    meta_fini(&m);
    return st;
}

void fl_ds_movielens_fini(FlDsMovielens *m) {
    fl_ds_dict_free(&m->categories);
    fl_ds_dict_free(&m->titles);
}

/* ---------------------------------------------------------------- numpy.random's MT19937 */

typedef struct Mt {
    uint32_t s[624];
    int i;
} Mt;

static void mt_seed(Mt *m, uint32_t seed) {
    m->s[0] = seed;
    for (int i = 1; i < 624; i++) m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
    m->i = 624;
}

static uint32_t mt_next(Mt *m) {
    if (m->i >= 624) {
        for (int k = 0; k < 624; k++) {
            uint32_t y = (m->s[k] & 0x80000000u) | (m->s[(k + 1) % 624] & 0x7fffffffu);
            m->s[k] = m->s[(k + 397) % 624] ^ (y >> 1) ^ (y & 1 ? 0x9908b0dfu : 0);
        }
        m->i = 0;
    }
    uint32_t y = m->s[m->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

/* numpy's random_sample: 53 bits from two draws. */
static double mt_double(Mt *m) {
    uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

/* ---------------------------------------------------------------- the readers */

void fl_ds_movielens_layout(const FlDsArgs *a, FlDsLayout *l) {
    (void)a; /* takes none: find() checked */
    *l = (FlDsLayout){.nfields = 8,
                      .fields = {{"user_id", FL_DT_INT64, 1, false},
                                 {"gender_id", FL_DT_INT64, 1, false},
                                 {"age_id", FL_DT_INT64, 1, false},
                                 {"job_id", FL_DT_INT64, 1, false},
                                 {"movie_id", FL_DT_INT64, 1, false},
                                 {"category_id", FL_DT_INT64, 1, true},
                                 {"movie_title", FL_DT_INT64, 1, true},
                                 {"score", FL_DT_FLOAT32, 1, false}}};
}

FlStatus fl_ds_movielens_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) {
    *out = NULL;
    Meta m;
    char *zip = NULL, *text = NULL;
    size_t zlen, len;
    FlStatus st = meta_read(&m, &zip, &zlen, e);
    if (st == FL_OK) st = zip_member(zip, zlen, "ml-1m/ratings.dat", &text, &len, e);
    free(zip);
    bool is_test = strcmp(part, "test") == 0;
    FL_VEC(int64_t) ints = {0}, cats = {0}, words = {0}, cat_off = {0}, word_off = {0};
    FL_VEC(float) score = {0};
    Mt mt;
    mt_seed(&mt, 0);
    size_t lineno = 0, rows = 0;
    FL_VEC_PUSH(&cat_off, 0);
    FL_VEC_PUSH(&word_off, 0);
    for (char *p = text; st == FL_OK && p && p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p)), *end = nl ? nl : text + len;
        lineno++;
        char *line = p, *f[4];
        size_t ll = (size_t)(end - p);
        p = end + 1;
        if ((mt_double(&mt) < 0.1) != is_test) continue;
        int64_t uid = 0, mid = 0, r = 0;
        if ((st = fields_of(line, ll, "ratings.dat", lineno, 4, f, e)) || (st = int_of(f[0], "ratings.dat", lineno, &uid, e)) ||
            (st = int_of(f[1], "ratings.dat", lineno, &mid, e)) || (st = int_of(f[2], "ratings.dat", lineno, &r, e)))
            break;
        int64_t ui = uid >= 0 && uid <= m.max_user && m.user_at ? m.user_at[uid] : 0;
        int64_t mi = mid >= 0 && mid <= m.max_movie && m.movie_at ? m.movie_at[mid] : 0;
        if (!ui || !mi) {
            st = fl_err(e, "%s: ratings.dat:%zu: %s %lld is not in %s (KeyError)", WHAT, lineno, ui ? "movie" : "user",
                        (long long)(ui ? mid : uid), ui ? "movies.dat" : "users.dat");
            break;
        }
        const User *u = &m.users.data[ui - 1];
        const Movie *mv = &m.movies.data[mi - 1];
        int64_t row[5] = {u->id, u->gender, u->age, u->job, mv->id};
        for (int k = 0; k < 5; k++) FL_VEC_PUSH(&ints, row[k]);
        for (size_t k = 0; k < mv->cats.len; k++)
            FL_VEC_PUSH(&cats, (int64_t)(uintptr_t)fl_map_find_str(&m.cat_id, mv->cats.data[k]) - 1);
        for (size_t k = 0; k < mv->words.len; k++)
            FL_VEC_PUSH(&words, (int64_t)(uintptr_t)fl_map_find_str(&m.title_id, mv->words.data[k]) - 1);
        FL_VEC_PUSH(&cat_off, (int64_t)cats.len);
        FL_VEC_PUSH(&word_off, (int64_t)words.len);
        FL_VEC_PUSH(&score, (float)((double)r * 2 - 5.0));
        rows++;
    }
    free(text);
    if (st == FL_OK) {
        FlDsLayout l;
        fl_ds_movielens_layout(a, &l);
        FlDsTable *t = fl_ds_table_new(&l, rows);
        for (size_t r = 0; r < rows; r++)
            for (int k = 0; k < 5; k++) ((int64_t *)t->data[k])[r] = ints.data[r * 5 + k];
        memcpy(t->offsets[5], cat_off.data, (rows + 1) * sizeof(int64_t));
        memcpy(t->offsets[6], word_off.data, (rows + 1) * sizeof(int64_t));
        t->data[5] = cats.data ? (void *)cats.data : fl_xcalloc(1, sizeof(int64_t));
        t->data[6] = words.data ? (void *)words.data : fl_xcalloc(1, sizeof(int64_t));
        cats.data = NULL;
        words.data = NULL;
        if (rows) memcpy(t->data[7], score.data, rows * sizeof(float));
        *out = t;
    }
    FL_VEC_FREE(&ints);
    FL_VEC_FREE(&cats);
    FL_VEC_FREE(&words);
    FL_VEC_FREE(&cat_off);
    FL_VEC_FREE(&word_off);
    FL_VEC_FREE(&score);
    meta_fini(&m);
    return st;
}
