/* pickle.c: Python's pickles as data (dataset_impl.h): the opcodes of protocols 0 to 5 run on a
 * stack into a tree of FlPk nodes. Nothing is called: a global (`c`, `\x93`) is a name, a
 * REDUCE or NEWOBJ a node holding the callable and its arguments, a BUILD sets that node's state.
 * The reader of a format (cifar.c's numpy arrays) decides what such a call means.
 *
 * Strings keep their bytes: Python 2's str and Python 3's bytes are FL_PK_BYTES (also when
 * protocol 2 spells them _codecs.encode(str, 'latin1')), unicode strings FL_PK_STR (UTF-8), as
 * pickle.load(f, encoding='bytes') gives them. Nodes live in the caller's
 * arena; strings point into the pickle, which must outlive the tree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_impl.h"

#define MEMO_MAX (1u << 24)

typedef struct Unpickler {
    FlArena *a;
    const char *p, *end, *start;
    const char *what;
    FlErr *e;
    FL_VEC(FlPk *) stack;
    FL_VEC(size_t) marks;
    FL_VEC(FlPk *) memo;
} Unpickler;

static FlPk *node(Unpickler *u, FlPkKind k) {
    FlPk *n = fl_arena_alloc(u->a, sizeof *n);
    n->kind = k;
    return n;
}

static void add_item(Unpickler *u, FlPk *n, FlPk *x) {
    if (n->n == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 4;
        FlPk **items = fl_arena_alloc(u->a, fl_mul_size(cap, sizeof *items));
        if (n->n) memcpy(items, n->items, n->n * sizeof *items);
        n->items = items;
        n->cap = cap;
    }
    n->items[n->n++] = x;
}

static FlStatus bad(Unpickler *u, const char *fmt, const char *detail) {
    char msg[160];
    snprintf(msg, sizeof msg, fmt, detail);
    return fl_err(u->e, "%s: not a pickle Python reads (%s at byte %zu)", u->what, msg,
                  (size_t)(u->p - u->start));
}

static bool need(Unpickler *u, size_t n) { return (size_t)(u->end - u->p) >= n; }

static uint64_t le(const char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | (unsigned char)p[i];
    return v;
}

/* A text argument: the bytes up to the next newline (protocol 0's opcodes). */
static const char *line(Unpickler *u, size_t *len) {
    const char *nl = memchr(u->p, '\n', (size_t)(u->end - u->p));
    if (!nl) return NULL;
    const char *s = u->p;
    *len = (size_t)(nl - s);
    u->p = nl + 1;
    return s;
}

static void push(Unpickler *u, FlPk *x) { FL_VEC_PUSH(&u->stack, x); }

static FlPk *pop(Unpickler *u) {
    size_t floor = u->marks.len ? u->marks.data[u->marks.len - 1] : 0;
    if (u->stack.len <= floor) return NULL;
    return u->stack.data[--u->stack.len];
}

static FlPk *top(Unpickler *u) {
    size_t floor = u->marks.len ? u->marks.data[u->marks.len - 1] : 0;
    return u->stack.len > floor ? u->stack.data[u->stack.len - 1] : NULL;
}

/* The items above the last mark, as a new node of kind k (the mark popped). */
static FlPk *pop_mark(Unpickler *u, FlPkKind k) {
    if (!u->marks.len) return NULL;
    size_t from = u->marks.data[--u->marks.len];
    FlPk *n = node(u, k);
    for (size_t i = from; i < u->stack.len; i++) add_item(u, n, u->stack.data[i]);
    u->stack.len = from;
    return n;
}

static FlPk *str_node(Unpickler *u, FlPkKind k, const char *s, size_t len) {
    FlPk *n = node(u, k);
    n->s = s;
    n->len = len;
    return n;
}

static FlPk *int_node(Unpickler *u, FlPkKind k, int64_t v) {
    FlPk *n = node(u, k);
    n->i = v;
    return n;
}

static FlStatus memo_put(Unpickler *u, uint64_t idx) {
    FlPk *t = top(u);
    if (!t) return bad(u, "%s", "a memo put on an empty stack");
    if (idx >= MEMO_MAX) return bad(u, "%s", "a memo index out of range");
    while (u->memo.len <= idx) FL_VEC_PUSH(&u->memo, NULL);
    u->memo.data[idx] = t;
    return FL_OK;
}

static FlStatus memo_get(Unpickler *u, uint64_t idx) {
    if (idx >= u->memo.len || !u->memo.data[idx]) return bad(u, "%s", "a memo get of an unset index");
    push(u, u->memo.data[idx]);
    return FL_OK;
}

/* Protocol 0's quoted string (Python's repr of a str): 'text' or "text" with backslash escapes. */
static FlStatus quoted(Unpickler *u, const char *s, size_t len) {
    while (len && (s[len - 1] == '\r' || s[len - 1] == ' ')) len--;
    if (len < 2 || (s[0] != '\'' && s[0] != '"') || s[len - 1] != s[0])
        return bad(u, "%s", "a STRING argument without quotes");
    char *out = fl_arena_alloc(u->a, len);
    size_t n = 0;
    for (size_t i = 1; i + 1 < len; i++) {
        char ch = s[i];
        if (ch != '\\' || i + 2 >= len) {
            out[n++] = ch;
            continue;
        }
        ch = s[++i];
        switch (ch) {
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case 'x':
            if (i + 3 < len) {
                char hex[3] = {s[i + 1], s[i + 2], 0};
                out[n++] = (char)strtol(hex, NULL, 16);
                i += 2;
                break;
            }
            return bad(u, "%s", "a bad \\x escape");
        default: out[n++] = ch; break; /* \\, \', \" */
        }
    }
    push(u, str_node(u, FL_PK_BYTES, out, n));
    return FL_OK;
}

/* A counted string: a length of `lw` little-endian bytes (8 at most), then the bytes. */
static FlStatus counted(Unpickler *u, int lw, FlPkKind k) {
    if (!need(u, (size_t)lw)) return bad(u, "%s", "a truncated length");
    uint64_t n = le(u->p, lw);
    u->p += lw;
    if (n > (uint64_t)(u->end - u->p)) return bad(u, "%s", "a string past the end");
    push(u, str_node(u, k, u->p, (size_t)n));
    u->p += n;
    return FL_OK;
}

/* Python's LONG1/LONG4: a little-endian two's complement of n bytes, within int64. */
static FlStatus long_bytes(Unpickler *u, int lw) {
    if (!need(u, (size_t)lw)) return bad(u, "%s", "a truncated length");
    uint64_t n = le(u->p, lw);
    u->p += lw;
    if (n > 8) return bad(u, "%s", "an integer beyond 64 bits");
    if (n > (uint64_t)(u->end - u->p)) return bad(u, "%s", "an integer past the end");
    uint64_t v = n ? le(u->p, (int)n) : 0;
    if (n && n < 8 && ((unsigned char)u->p[n - 1] & 0x80)) v |= ~(uint64_t)0 << (8 * n);
    u->p += n;
    push(u, int_node(u, FL_PK_INT, (int64_t)v));
    return FL_OK;
}

static FlStatus text_int(Unpickler *u, bool is_long) {
    size_t len;
    const char *s = line(u, &len);
    if (!s) return bad(u, "%s", "a text integer without a newline");
    if (!is_long && len == 2 && (memcmp(s, "00", 2) == 0 || memcmp(s, "01", 2) == 0)) {
        push(u, int_node(u, FL_PK_BOOL, s[1] == '1'));
        return FL_OK;
    }
    char buf[32];
    if (len == 0 || len >= sizeof buf) return bad(u, "%s", "a bad text integer");
    memcpy(buf, s, len);
    buf[len] = 0;
    if (is_long && buf[len - 1] == 'L') buf[len - 1] = 0;
    char *endp;
    long long v = strtoll(buf, &endp, 10);
    if (*endp) return bad(u, "%s", "a bad text integer");
    push(u, int_node(u, FL_PK_INT, v));
    return FL_OK;
}

static FlStatus global(Unpickler *u, FlPk *mod, FlPk *name) {
    if (!mod || !name || (mod->kind != FL_PK_STR && mod->kind != FL_PK_BYTES) ||
        (name->kind != FL_PK_STR && name->kind != FL_PK_BYTES))
        return bad(u, "%s", "a global without its module and name");
    FlPk *g = node(u, FL_PK_GLOBAL);
    g->s = fl_arena_strndup(u->a, mod->s, mod->len);
    g->name = fl_arena_strndup(u->a, name->s, name->len);
    push(u, g);
    return FL_OK;
}

/* Python 3 writes bytes at protocol 2 as _codecs.encode(str, 'latin1') (each byte a code point
 * below 256, in UTF-8): those bytes, else NULL. */
static FlPk *latin1_bytes(Unpickler *u, const FlPk *fn, const FlPk *args) {
    if (!fl_ds_pk_is_global(fn, "_codecs", "encode") || args->n != 2 || args->items[0]->kind != FL_PK_STR ||
        !fl_ds_pk_is_str(args->items[1], "latin1"))
        return NULL;
    const unsigned char *s = (const unsigned char *)args->items[0]->s;
    size_t n = args->items[0]->len, k = 0;
    char *out = fl_arena_alloc(u->a, n + 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x80) out[k++] = (char)s[i];
        else if ((s[i] == 0xc2 || s[i] == 0xc3) && i + 1 < n) out[k++] = (char)(((s[i] & 3) << 6) | (s[i + 1] & 0x3f)), i++;
        else return NULL;
    }
    return str_node(u, FL_PK_BYTES, out, k);
}

static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f)), 2;
    if (cp < 0x10000)
        return out[0] = (char)(0xe0 | cp >> 12), out[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
               out[2] = (char)(0x80 | (cp & 0x3f)), 3;
    return out[0] = (char)(0xf0 | cp >> 18), out[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
           out[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), out[3] = (char)(0x80 | (cp & 0x3f)), 4;
}

/* Protocol 0's UNICODE argument (raw-unicode-escape: each byte a code point, \uXXXX and
 * \UXXXXXXXX escapes) as a str in UTF-8. */
static FlPk *raw_unicode(Unpickler *u, const char *s, size_t len) {
    char *out = fl_arena_alloc(u->a, fl_mul_size(len, 4) + 1);
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        size_t w = i + 1 < len && s[i] == '\\' ? (s[i + 1] == 'u' ? 4 : s[i + 1] == 'U' ? 8 : 0) : 0;
        if (w && i + 2 + w <= len) {
            char hex[9] = {0};
            memcpy(hex, s + i + 2, w);
            char *endp;
            unsigned long cp = strtoul(hex, &endp, 16);
            if (!*endp && cp <= 0x10ffff) {
                k += put_utf8(out + k, (uint32_t)cp);
                i += 1 + w;
                continue;
            }
        }
        k += put_utf8(out + k, (unsigned char)s[i]);
    }
    return str_node(u, FL_PK_STR, out, k);
}

/* Runs one opcode; *stop at STOP. */
static FlStatus step(Unpickler *u, bool *stop) {
    unsigned char op = (unsigned char)*u->p++;
    FlPk *x, *y, *z;
    size_t len;
    const char *s;
    switch (op) {
    case 0x80: /* PROTO */
        if (!need(u, 1)) return bad(u, "%s", "a truncated PROTO");
        if ((unsigned char)*u->p > 5) return bad(u, "protocol %s", "beyond 5");
        u->p++;
        return FL_OK;
    case 0x95: /* FRAME: a length; the frame's opcodes follow as usual */
        if (!need(u, 8)) return bad(u, "%s", "a truncated FRAME");
        u->p += 8;
        return FL_OK;
    case '.': *stop = true; return FL_OK;
    case '(': FL_VEC_PUSH(&u->marks, u->stack.len); return FL_OK;
    case ')': push(u, node(u, FL_PK_TUPLE)); return FL_OK;
    case ']': push(u, node(u, FL_PK_LIST)); return FL_OK;
    case '}': push(u, node(u, FL_PK_DICT)); return FL_OK;
    case 0x8f: push(u, node(u, FL_PK_LIST)); return FL_OK; /* EMPTY_SET: its items as a list */
    case 't':
    case 'l':
    case 'd':
    case 0x91: /* FROZENSET */
        if (!(x = pop_mark(u, op == 't' ? FL_PK_TUPLE : op == 'd' ? FL_PK_DICT : FL_PK_LIST)))
            return bad(u, "%s", "no mark");
        if (op == 'd' && x->n % 2) return bad(u, "%s", "a DICT of an odd number of items");
        push(u, x);
        return FL_OK;
    case 0x85:
    case 0x86:
    case 0x87: { /* TUPLE1..3 */
        size_t k = op - 0x84u;
        FlPk *t = node(u, FL_PK_TUPLE), *it[3];
        for (size_t i = 0; i < k; i++)
            if (!(it[k - 1 - i] = pop(u))) return bad(u, "%s", "a TUPLE of an empty stack");
        for (size_t i = 0; i < k; i++) add_item(u, t, it[i]);
        push(u, t);
        return FL_OK;
    }
    case 'a': /* APPEND */
        if (!(x = pop(u)) || !(y = top(u)) || y->kind != FL_PK_LIST) return bad(u, "%s", "an APPEND not to a list");
        add_item(u, y, x);
        return FL_OK;
    case 'e':  /* APPENDS */
    case 0x90: /* ADDITEMS (to a set) */
    case 'u':  /* SETITEMS */
        if (!(x = pop_mark(u, FL_PK_LIST)) || !(y = top(u)) || y->kind != (op == 'u' ? FL_PK_DICT : FL_PK_LIST))
            return bad(u, "%s", op == 'u' ? "a SETITEMS not to a dict" : "an APPENDS not to a list");
        if (op == 'u' && x->n % 2) return bad(u, "%s", "a SETITEMS of an odd number of items");
        for (size_t i = 0; i < x->n; i++) add_item(u, y, x->items[i]);
        return FL_OK;
    case 's': /* SETITEM */
        if (!(x = pop(u)) || !(y = pop(u)) || !(z = top(u)) || z->kind != FL_PK_DICT)
            return bad(u, "%s", "a SETITEM not to a dict");
        add_item(u, z, y);
        add_item(u, z, x);
        return FL_OK;
    case '0': return pop(u) ? FL_OK : bad(u, "%s", "a POP of an empty stack");
    case '1':
        if (!pop_mark(u, FL_PK_TUPLE)) return bad(u, "%s", "no mark");
        return FL_OK;
    case '2':
        if (!(x = top(u))) return bad(u, "%s", "a DUP of an empty stack");
        push(u, x);
        return FL_OK;
    case 'N': push(u, node(u, FL_PK_NONE)); return FL_OK;
    case 0x88: push(u, int_node(u, FL_PK_BOOL, 1)); return FL_OK;
    case 0x89: push(u, int_node(u, FL_PK_BOOL, 0)); return FL_OK;
    case 'K':
    case 'M':
    case 'J': { /* BININT1, BININT2 (unsigned), BININT (signed 4 bytes) */
        int w = op == 'K' ? 1 : op == 'M' ? 2 : 4;
        if (!need(u, (size_t)w)) return bad(u, "%s", "a truncated integer");
        uint64_t v = le(u->p, w);
        u->p += w;
        push(u, int_node(u, FL_PK_INT, w == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v));
        return FL_OK;
    }
    case 0x8a: return long_bytes(u, 1);
    case 0x8b: return long_bytes(u, 4);
    case 'I': return text_int(u, false);
    case 'L': return text_int(u, true);
    case 'G': {
        if (!need(u, 8)) return bad(u, "%s", "a truncated float");
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++) bits = bits << 8 | (unsigned char)u->p[i]; /* big-endian */
        u->p += 8;
        double d;
        memcpy(&d, &bits, sizeof d);
        FlPk *f = node(u, FL_PK_FLOAT);
        f->f = d;
        push(u, f);
        return FL_OK;
    }
    case 'F': {
        if (!(s = line(u, &len))) return bad(u, "%s", "a text float without a newline");
        char buf[64];
        if (len >= sizeof buf) return bad(u, "%s", "a bad text float");
        memcpy(buf, s, len);
        buf[len] = 0;
        FlPk *f = node(u, FL_PK_FLOAT);
        f->f = strtod(buf, NULL);
        push(u, f);
        return FL_OK;
    }
    case 'U': return counted(u, 1, FL_PK_BYTES);  /* SHORT_BINSTRING (Python 2's str) */
    case 'T': return counted(u, 4, FL_PK_BYTES);  /* BINSTRING */
    case 'C': return counted(u, 1, FL_PK_BYTES);  /* SHORT_BINBYTES */
    case 'B': return counted(u, 4, FL_PK_BYTES);  /* BINBYTES */
    case 0x8e: return counted(u, 8, FL_PK_BYTES); /* BINBYTES8 */
    case 0x96: return counted(u, 8, FL_PK_BYTES); /* BYTEARRAY8 */
    case 0x8c: return counted(u, 1, FL_PK_STR);   /* SHORT_BINUNICODE */
    case 'X': return counted(u, 4, FL_PK_STR);    /* BINUNICODE */
    case 0x8d: return counted(u, 8, FL_PK_STR);   /* BINUNICODE8 */
    case 'S':
        if (!(s = line(u, &len))) return bad(u, "%s", "a STRING without a newline");
        return quoted(u, s, len);
    case 'V':
        if (!(s = line(u, &len))) return bad(u, "%s", "a UNICODE without a newline");
        push(u, raw_unicode(u, s, len));
        return FL_OK;
    case 'q':
    case 'h':
        if (!need(u, 1)) return bad(u, "%s", "a truncated memo index");
        return op == 'q' ? memo_put(u, (unsigned char)*u->p++) : memo_get(u, (unsigned char)*u->p++);
    case 'r':
    case 'j': {
        if (!need(u, 4)) return bad(u, "%s", "a truncated memo index");
        uint64_t idx = le(u->p, 4);
        u->p += 4;
        return op == 'r' ? memo_put(u, idx) : memo_get(u, idx);
    }
    case 'p':
    case 'g': {
        if (!(s = line(u, &len)) || len == 0 || len > 10) return bad(u, "%s", "a bad text memo index");
        char buf[16];
        memcpy(buf, s, len);
        buf[len] = 0;
        uint64_t idx = strtoull(buf, NULL, 10);
        return op == 'p' ? memo_put(u, idx) : memo_get(u, idx);
    }
    case 0x94: return memo_put(u, u->memo.len); /* MEMOIZE */
    case 'c': {
        const char *m, *nm;
        size_t ml, nl;
        if (!(m = line(u, &ml)) || !(nm = line(u, &nl))) return bad(u, "%s", "a GLOBAL without its two lines");
        return global(u, str_node(u, FL_PK_STR, m, ml), str_node(u, FL_PK_STR, nm, nl));
    }
    case 0x93: /* STACK_GLOBAL */
        y = pop(u);
        x = pop(u);
        return global(u, x, y);
    case 'R':    /* REDUCE: callable(*args) */
    case 0x81: { /* NEWOBJ: cls.__new__(cls, *args) */
        y = pop(u);
        x = pop(u);
        if (!x || !y || y->kind != FL_PK_TUPLE) return bad(u, "%s", "a REDUCE without a callable and its arguments");
        FlPk *b = latin1_bytes(u, x, y);
        if (b) {
            push(u, b);
            return FL_OK;
        }
        FlPk *call = node(u, FL_PK_CALL);
        add_item(u, call, x);
        add_item(u, call, y);
        push(u, call);
        return FL_OK;
    }
    case 'b': /* BUILD: obj.__setstate__(state) */
        if (!(y = pop(u)) || !(x = top(u))) return bad(u, "%s", "a BUILD without an object and its state");
        if (x->kind != FL_PK_CALL) return bad(u, "%s", "a BUILD of an object no call made");
        x->state = y;
        return FL_OK;
    default: {
        u->p--;
        char code[8];
        snprintf(code, sizeof code, "0x%02x", op);
        return bad(u, "opcode %s", code);
    }
    }
}

FlStatus fl_ds_pickle_load(FlArena *a, const char *data, size_t len, const char *what, FlPk **out, FlErr *e) {
    Unpickler u = {.a = a, .p = data, .end = data + len, .start = data, .what = what, .e = e};
    FlStatus st = FL_OK;
    bool stop = false;
    while (st == FL_OK && !stop) {
        if (u.p == u.end) st = bad(&u, "%s", "no STOP");
        else st = step(&u, &stop);
    }
    if (st == FL_OK && (u.stack.len != 1 || u.marks.len)) st = bad(&u, "%s", "STOP with other than one object");
    *out = st == FL_OK ? u.stack.data[0] : NULL;
    FL_VEC_FREE(&u.stack);
    FL_VEC_FREE(&u.marks);
    FL_VEC_FREE(&u.memo);
    return st;
}

bool fl_ds_pk_is_str(const FlPk *o, const char *s) {
    size_t n = strlen(s);
    return o && (o->kind == FL_PK_STR || o->kind == FL_PK_BYTES) && o->len == n && memcmp(o->s, s, n) == 0;
}

FlPk *fl_ds_pk_find(const FlPk *dict, const char *key) {
    if (!dict || dict->kind != FL_PK_DICT) return NULL;
    for (size_t i = 0; i + 1 < dict->n; i += 2)
        if (fl_ds_pk_is_str(dict->items[i], key)) return dict->items[i + 1];
    return NULL;
}

bool fl_ds_pk_is_global(const FlPk *o, const char *module, const char *name) {
    return o && o->kind == FL_PK_GLOBAL && strcmp(o->s, module) == 0 && strcmp(o->name, name) == 0;
}
