/* base.c: allocation, growth, arena, hash map, interning, strings, errors, whole-file I/O.
 * The hash map uses linear probing over a power-of-two table kept at most 3/4 full (tombstones
 * included); removal leaves a tombstone (key != NULL, val == NULL). */
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fl_panic(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "fluidc: internal error at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static void *check(void *p) {
    if (!p) fl_panic(__FILE__, __LINE__, "out of memory");
    return p;
}

void *fl_xmalloc(size_t n) { return check(malloc(n ? n : 1)); }
void *fl_xcalloc(size_t c, size_t s) { return check(calloc(c ? c : 1, s ? s : 1)); }
void *fl_xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1)); }
char *fl_xstrdup(const char *s) { return fl_xstrndup(s, strlen(s)); }
char *fl_xstrndup(const char *s, size_t n) {
    char *d = fl_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

size_t fl_mul_size(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) fl_panic(__FILE__, __LINE__, "size overflow");
    return count * size;
}

void fl_grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 4;
    while (c < need) {
        if (c > SIZE_MAX / 2) fl_panic(__FILE__, __LINE__, "vector too large");
        c *= 2;
    }
    *p = fl_xrealloc(*p, fl_mul_size(c, elem));
    *cap = c;
}

/* ---- arena ---- */
struct FlArenaChunk {
    FlArenaChunk *next;
    size_t size, used;
    _Alignas(16) unsigned char mem[];
};

void fl_arena_init(FlArena *a) { memset(a, 0, sizeof *a); }

void fl_arena_fini(FlArena *a) {
    FlArenaChunk *c = a->head;
    while (c) {
        FlArenaChunk *n = c->next;
        free(c);
        c = n;
    }
    memset(a, 0, sizeof *a);
}

void *fl_arena_alloc(FlArena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!n) n = 16;
    FlArenaChunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t sz = n > 64 * 1024 ? n : 64 * 1024;
        c = fl_xmalloc(sizeof *c + sz);
        c->size = sz;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->mem + c->used;
    c->used += n;
    a->used_total += n;
    memset(p, 0, n);
    return p;
}

char *fl_arena_strndup(FlArena *a, const char *s, size_t n) {
    char *d = fl_arena_alloc(a, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}
char *fl_arena_strdup(FlArena *a, const char *s) { return fl_arena_strndup(a, s, strlen(s)); }

char *fl_arena_printf(FlArena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    char small[256]; /* most texts fit: formatted once, then copied */
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    FL_ASSERT(n >= 0);
    char *d;
    if ((size_t)n < sizeof small) {
        d = fl_arena_strndup(a, small, (size_t)n);
    } else {
        d = fl_arena_alloc(a, (size_t)n + 1);
        vsnprintf(d, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    return d;
}

/* ---- hash map ---- */
uint64_t fl_hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

void fl_map_init(FlMap *m) { memset(m, 0, sizeof *m); }
void fl_map_fini(FlMap *m) {
    free(m->buckets);
    memset(m, 0, sizeof *m);
}

bool fl_map_slot_live(const FlMap *m, size_t i) { return m->buckets[i].key && m->buckets[i].val; }

static FlMapEntry *lookup(const FlMap *m, const char *key, size_t klen, uint64_t h) {
    if (!m->cap) return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        FlMapEntry *e = &m->buckets[i];
        if (!e->key) return NULL;
        if (e->val && e->hash == h && e->klen == klen && (e->key == key || memcmp(e->key, key, klen) == 0))
            return e; /* an interned key is found by its pointer */
    }
}

void *fl_map_find(const FlMap *m, const char *key, size_t klen) {
    if (m->len == 0) return NULL;
    FlMapEntry *e = lookup(m, key, klen, fl_hash_bytes(key, klen));
    return e ? e->val : NULL;
}
void *fl_map_find_hashed(const FlMap *m, const char *key, size_t klen, uint64_t hash) {
    if (m->len == 0) return NULL;
    FlMapEntry *e = lookup(m, key, klen, hash);
    return e ? e->val : NULL;
}
void *fl_map_find_str(const FlMap *m, const char *key) { return fl_map_find(m, key, strlen(key)); }
size_t fl_map_slot(const FlMap *m, const char *key, size_t klen) {
    FlMapEntry *e = m->len ? lookup(m, key, klen, fl_hash_bytes(key, klen)) : NULL;
    return e ? (size_t)(e - m->buckets) : m->cap;
}

static void rehash(FlMap *m, size_t cap) {
    FlMapEntry *old = m->buckets;
    size_t oldcap = m->cap;
    m->buckets = fl_xcalloc(cap, sizeof *m->buckets);
    m->cap = cap;
    m->len = m->used = 0;
    for (size_t i = 0; i < oldcap; i++) {
        FlMapEntry *e = &old[i];
        if (!e->key || !e->val) continue;
        size_t j = e->hash & (cap - 1);
        while (m->buckets[j].key) j = (j + 1) & (cap - 1);
        m->buckets[j] = *e;
        m->len++;
        m->used++;
    }
    free(old);
}

void fl_map_put(FlMap *m, const char *key, size_t klen, void *val) {
    FL_ASSERT(val != NULL);
    uint64_t h = fl_hash_bytes(key, klen);
    FlMapEntry *e = lookup(m, key, klen, h);
    if (e) {
        e->val = val;
        return;
    }
    if ((m->used + 1) * 4 >= m->cap * 3) {
        size_t cap = m->cap ? m->cap : 16;
        while ((m->len + 1) * 4 >= cap * 2) cap *= 2; /* leave room after dropping tombstones */
        rehash(m, cap);
    }
    size_t i = h & (m->cap - 1);
    while (m->buckets[i].key) i = (i + 1) & (m->cap - 1);
    m->buckets[i] = (FlMapEntry){key, klen, h, val};
    m->len++;
    m->used++;
}
void fl_map_put_str(FlMap *m, const char *key, void *val) { fl_map_put(m, key, strlen(key), val); }

bool fl_map_remove(FlMap *m, const char *key, size_t klen) {
    FlMapEntry *e = lookup(m, key, klen, fl_hash_bytes(key, klen));
    if (!e) return false;
    e->val = NULL; /* tombstone */
    m->len--;
    return true;
}

/* ---- interning ---- */
void fl_intern_init(FlInterner *in) {
    fl_arena_init(&in->arena);
    fl_map_init(&in->map);
}
void fl_intern_fini(FlInterner *in) {
    fl_map_fini(&in->map);
    fl_arena_fini(&in->arena);
}
const char *fl_intern(FlInterner *in, const char *s, size_t n) {
    const char *p = fl_map_find(&in->map, s, n);
    if (p) return p;
    char *d = fl_arena_strndup(&in->arena, s, n);
    fl_map_put(&in->map, d, n, d);
    return d;
}
const char *fl_intern_str(FlInterner *in, const char *s) { return fl_intern(in, s, strlen(s)); }

/* ---- strings ---- */
void fl_buf_append(FlBuf *b, const char *s, size_t n) {
    fl_grow((void **)&b->data, &b->cap, b->len + n + 1, 1);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}
void fl_buf_puts(FlBuf *b, const char *s) { fl_buf_append(b, s, strlen(s)); }
void fl_buf_putc(FlBuf *b, char c) { fl_buf_append(b, &c, 1); }
void fl_buf_vprintf(FlBuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    size_t room = b->cap > b->len ? b->cap - b->len : 0; /* formatted once when it fits */
    int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
    FL_ASSERT(n >= 0);
    if ((size_t)n >= room) {
        fl_grow((void **)&b->data, &b->cap, b->len + (size_t)n + 1, 1);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    b->len += (size_t)n;
}
void fl_buf_printf(FlBuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fl_buf_vprintf(b, fmt, ap);
    va_end(ap);
}
const char *fl_buf_str(const FlBuf *b) { return b->data ? b->data : ""; }
void fl_buf_free(FlBuf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

FlStatus fl_err(FlErr *e, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return FL_ERROR;
}

/* What a file that is not regular is, for messages. */
static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "of an unknown kind";
}

FILE *fl_open_regular(const char *path, FlErr *e) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        fl_err(e, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fl_err(e, "cannot read '%s': %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        fl_err(e, "'%s' is not a regular file (%s)", path, file_kind(st.st_mode));
        close(fd);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        fl_err(e, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

/* The rest of f, whole (f is closed). */
static char *read_all(FILE *f, const char *path, size_t *len, FlErr *e) {
    FlBuf b = {0};
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) fl_buf_append(&b, tmp, n);
    if (ferror(f)) {
        fl_err(e, "cannot read '%s': %s", path, strerror(errno));
        fclose(f);
        fl_buf_free(&b);
        return NULL;
    }
    fclose(f);
    if (!b.data) fl_buf_append(&b, "", 0);
    *len = b.len;
    return b.data;
}

char *fl_read_file(const char *path, size_t *len, FlErr *e) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fl_err(e, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    return read_all(f, path, len, e);
}

char *fl_read_regular_file(const char *path, size_t *len, FlErr *e) {
    FILE *f = fl_open_regular(path, e);
    return f ? read_all(f, path, len, e) : NULL;
}

FlStatus fl_write_file(const char *path, const void *data, size_t len, FlErr *e) {
    FlBuf tmp = {0};
    fl_buf_printf(&tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp.data); /* a name nobody else has: never someone's own file */
    if (fd < 0) {
        fl_err(e, "cannot write '%s': %s", path, strerror(errno));
        fl_buf_free(&tmp);
        return FL_ERROR;
    }
    mode_t mask = umask(0);
    umask(mask);
    bool ok = fchmod(fd, 0666 & ~mask) == 0;
    FILE *f = ok ? fdopen(fd, "wb") : NULL;
    if (!f) close(fd);
    ok = f && fwrite(data, 1, len, f) == len;
    ok = (f && fclose(f) == 0) && ok;
    if (!ok || rename(tmp.data, path) != 0) {
        fl_err(e, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        remove(tmp.data);
        fl_buf_free(&tmp);
        return FL_ERROR;
    }
    fl_buf_free(&tmp);
    return FL_OK;
}

/* ---- paths ---- */
char *fl_path_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return fl_xstrdup(".");
    if (slash == path) return fl_xstrdup("/");
    return fl_xstrndup(path, (size_t)(slash - path));
}

/* The next component of *s (skipping slashes); its length in *n, NULL at the end. */
static const char *component(const char **s, size_t *n) {
    while (**s == '/') (*s)++;
    if (!**s) return NULL;
    const char *c = *s;
    while (**s && **s != '/') (*s)++;
    *n = (size_t)(*s - c);
    return c;
}

char *fl_path_relative(const char *from, const char *to) {
    if (from[0] != '/' || to[0] != '/') return fl_xstrdup(to);
    const char *f = from, *t = to;
    for (;;) { /* drop the common leading components */
        const char *f0 = f, *t0 = t;
        size_t fn = 0, tn = 0;
        const char *fc = component(&f, &fn), *tc = component(&t, &tn);
        if (!fc || !tc || fn != tn || memcmp(fc, tc, fn) != 0) {
            f = f0;
            t = t0;
            break;
        }
    }
    FlBuf b = {0};
    size_t n;
    while (component(&f, &n)) fl_buf_puts(&b, b.len ? "/.." : "..");
    const char *c;
    while ((c = component(&t, &n))) {
        if (b.len) fl_buf_putc(&b, '/');
        fl_buf_append(&b, c, n);
    }
    if (!b.len) fl_buf_putc(&b, '.');
    return b.data;
}

char *fl_path_join(const char *dir, const char *rel) {
    if (rel[0] == '/') return fl_xstrdup(rel);
    if (!rel[0] || strcmp(rel, ".") == 0) return fl_xstrdup(dir);
    FlBuf b = {0};
    fl_buf_puts(&b, dir);
    bool lexical = dir[0] == '/'; /* "." and ".." of rel taken off an absolute dir as written */
    const char *s = rel, *c;
    size_t n;
    while ((c = component(&s, &n))) {
        if (lexical && n == 1 && c[0] == '.') continue;
        if (lexical && n == 2 && c[0] == '.' && c[1] == '.') {
            while (b.len > 1 && b.data[b.len - 1] == '/') b.len--;
            while (b.len > 1 && b.data[b.len - 1] != '/') b.len--;
            if (b.len > 1) b.len--; /* the slash before the dropped component */
            b.data[b.len] = 0;
            continue;
        }
        if (b.len && b.data[b.len - 1] != '/') fl_buf_putc(&b, '/');
        fl_buf_append(&b, c, n);
    }
    return b.data;
}
