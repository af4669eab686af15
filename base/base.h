/* base.h: the small support layer every module of fluidc stands on; it depends on libc alone.
 *
 *   - FL_ASSERT: an always-on check for bugs (never for user input), reported through fl_panic.
 *   - fl_xmalloc & co: allocation of the project's own structures; out of memory aborts with a
 *     message. User-sized tensors do NOT go through these: the runtime checks those and returns
 *     an error instead.
 *   - fl_grow / FL_VEC: the one overflow-checked growth helper and a typed vector on top of it.
 *   - FlArena: bump allocation; everything is freed at once by fl_arena_fini.
 *   - FlMap: an open-addressing hash map from byte strings to pointers.
 *   - FlInterner: string interning; equal strings give the same pointer.
 *   - FlBuf: a growable string with printf.
 *   - FlErr: a status message kept by a context ("what went wrong") for environment errors.
 *
 * Ownership: arguments are borrowed unless a function's name says _take. Nothing here is
 * thread-safe unless its comment says so; each structure belongs to one thread at a time.
 */
#ifndef FL_BASE_H
#define FL_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FL_WARN_UNUSED __attribute__((warn_unused_result))
#define FL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define FL_NORETURN __attribute__((noreturn))
#define FL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Status of an operation that can fail because of its environment or input. */
typedef enum { FL_OK = 0, FL_ERROR = 1 } FlStatus;

FL_NORETURN void fl_panic(const char *file, int line, const char *fmt, ...) FL_PRINTF(3, 4);
#define FL_ASSERT(c)                                                                      \
    do {                                                                                  \
        if (!(c)) fl_panic(__FILE__, __LINE__, "assertion failed: %s", #c);               \
    } while (0)
#define FL_UNREACHABLE() fl_panic(__FILE__, __LINE__, "unreachable")

/* Allocation of internal structures: never returns NULL (aborts with a message instead). */
void *fl_xmalloc(size_t n);
void *fl_xcalloc(size_t count, size_t size);
void *fl_xrealloc(void *p, size_t n);
char *fl_xstrdup(const char *s);
char *fl_xstrndup(const char *s, size_t n);
/* The checked product count*size; aborts on overflow. */
size_t fl_mul_size(size_t count, size_t size);

/* Grows the array *p of elements of `elem` bytes so that it holds at least `need` elements;
 * *cap is updated. Capacity doubles; overflow aborts. */
void fl_grow(void **p, size_t *cap, size_t need, size_t elem);

/* A typed vector: FL_VEC(int) v = {0}; FL_VEC_PUSH(&v, 3); free(v.data). */
#define FL_VEC(T)                                                                         \
    struct {                                                                              \
        T *data;                                                                          \
        size_t len, cap;                                                                  \
    }
#define FL_VEC_RESERVE(v, n) fl_grow((void **)&(v)->data, &(v)->cap, (n), sizeof(*(v)->data))
#define FL_VEC_PUSH(v, x)                                                                 \
    do {                                                                                  \
        FL_VEC_RESERVE((v), (v)->len + 1);                                                \
        (v)->data[(v)->len++] = (x);                                                      \
    } while (0)
#define FL_VEC_FREE(v)                                                                    \
    do {                                                                                  \
        free((v)->data);                                                                  \
        (v)->data = NULL;                                                                 \
        (v)->len = (v)->cap = 0;                                                          \
    } while (0)

/* ---- arena ---- */
typedef struct FlArenaChunk FlArenaChunk;
typedef struct FlArena {
    FlArenaChunk *head;
    size_t used_total; /* bytes handed out, for statistics */
} FlArena;

void fl_arena_init(FlArena *a);
void fl_arena_fini(FlArena *a); /* frees everything allocated from a */
void *fl_arena_alloc(FlArena *a, size_t n); /* zeroed, 16-byte aligned */
char *fl_arena_strndup(FlArena *a, const char *s, size_t n);
char *fl_arena_strdup(FlArena *a, const char *s);
char *fl_arena_printf(FlArena *a, const char *fmt, ...) FL_PRINTF(2, 3);

/* ---- hash map: byte-string keys to pointers ----
 * Keys are borrowed: they must outlive the map (intern them or keep them in an arena).
 * Values may not be NULL (NULL means "absent"). */
typedef struct FlMapEntry {
    const char *key;
    size_t klen;
    uint64_t hash;
    void *val;
} FlMapEntry;
typedef struct FlMap {
    FlMapEntry *buckets;
    size_t cap, len, used; /* used counts tombstones too */
} FlMap;

void fl_map_init(FlMap *m);
void fl_map_fini(FlMap *m);
void *fl_map_find(const FlMap *m, const char *key, size_t klen); /* NULL if absent */
void *fl_map_find_str(const FlMap *m, const char *key);
/* fl_map_find with the key's fl_hash_bytes(key, klen) already computed (a key looked up in several
 * maps in turn is hashed once). */
void *fl_map_find_hashed(const FlMap *m, const char *key, size_t klen, uint64_t hash);
void fl_map_put(FlMap *m, const char *key, size_t klen, void *val); /* insert or replace */
void fl_map_put_str(FlMap *m, const char *key, void *val);
bool fl_map_remove(FlMap *m, const char *key, size_t klen);
/* FNV-1a's scheme with 64-bit prime 1099511628211 and offset 1469598103934665603 (not FNV's
 * standard offset basis; kept, since plans place blocks by it); stable across runs and versions. */
uint64_t fl_hash_bytes(const void *p, size_t n);
/* Iteration: for (size_t i = 0; i < m->cap; i++) if (fl_map_slot_live(m, i)) ... */
bool fl_map_slot_live(const FlMap *m, size_t i);
/* The slot of key (where that iteration meets it), m->cap when key is absent. */
size_t fl_map_slot(const FlMap *m, const char *key, size_t klen);

/* ---- string interning ---- */
typedef struct FlInterner {
    FlArena arena;
    FlMap map;
} FlInterner;
void fl_intern_init(FlInterner *in);
void fl_intern_fini(FlInterner *in);
const char *fl_intern(FlInterner *in, const char *s, size_t n);
const char *fl_intern_str(FlInterner *in, const char *s);

/* ---- growable string ---- */
typedef struct FlBuf {
    char *data; /* always NUL-terminated once anything was appended; NULL when empty */
    size_t len, cap;
} FlBuf;
void fl_buf_append(FlBuf *b, const char *s, size_t n);
void fl_buf_puts(FlBuf *b, const char *s);
void fl_buf_putc(FlBuf *b, char c);
void fl_buf_printf(FlBuf *b, const char *fmt, ...) FL_PRINTF(2, 3);
void fl_buf_vprintf(FlBuf *b, const char *fmt, va_list ap);
const char *fl_buf_str(const FlBuf *b); /* "" when empty */
void fl_buf_free(FlBuf *b);

/* ---- error message kept by a context ---- */
typedef struct FlErr {
    char msg[1024];
} FlErr;
/* Sets the message and returns FL_ERROR, so `return fl_err(e, "...")` reads naturally.
 * e may be NULL (the message is dropped). */
FlStatus fl_err(FlErr *e, const char *fmt, ...) FL_PRINTF(2, 3);

/* Reads a whole file; returns NULL and sets e on failure. *len receives the size. The result is
 * NUL-terminated and owned by the caller (free). */
char *fl_read_file(const char *path, size_t *len, FlErr *e) FL_WARN_UNUSED;
/* Opens path for reading when it is a regular file (or a link to one); anything else (a FIFO, a
 * device, a directory, a socket) is refused without blocking: the open is non-blocking, the
 * kind comes from fstat, so a FIFO nobody writes never hangs the caller. Errors: "cannot open
 * 'path': ...", "'path' is not a regular file (a FIFO)". The FILE is the caller's (fclose). */
FILE *fl_open_regular(const char *path, FlErr *e) FL_WARN_UNUSED;
/* fl_read_file of a regular file only (fl_open_regular's rule): for files a program does not
 * name itself, such as the parts of a checkpoint directory. */
char *fl_read_regular_file(const char *path, size_t *len, FlErr *e) FL_WARN_UNUSED;
/* Writes a whole file atomically (to a new temporary file beside it, "path.tmp.XXXXXX", then
 * rename), so that nothing is left half-way and no other file is touched. */
FlStatus fl_write_file(const char *path, const void *data, size_t len, FlErr *e) FL_WARN_UNUSED;

/* ---- paths (strings only; results are malloc'ed, owned by the caller) ---- */
/* The directory part of path ("a/b.flp" -> "a", "b.flp" -> "."). */
char *fl_path_dir(const char *path);
/* to relative to the directory from, both absolute ("/p/a", "/p/b/c" -> "../b/c"; equal -> ".");
 * to itself when either is not absolute. Components are compared as written: pass realpath()s. */
char *fl_path_relative(const char *from, const char *to);
/* rel resolved against dir: rel itself when absolute, dir when rel is "." or empty; against an
 * absolute dir, rel's "." and ".." components are applied as written (no file system access),
 * so fl_path_join(from, fl_path_relative(from, to)) == to for absolute, normalised paths. */
char *fl_path_join(const char *dir, const char *rel);

#endif
