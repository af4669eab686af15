/* lodstream.c: Fluid's LoDTensor stream format (lodstream.h says what the bytes are).
 *
 * The reader walks a cursor over the bytes and checks every length against what is left before
 * it reads, so a truncated or corrupt stream is a message naming the byte where it went wrong;
 * the TensorDesc message is decoded by hand (two fields; unknown fields are skipped as protobuf
 * says). The writer appends to a growable buffer.
 */
#define _GNU_SOURCE
#include "runtime/lodstream.h"

#include <stdio.h>
#include <string.h>

/* Fluid's VarType.Type numbers (framework.proto). */
enum {
    VT_BOOL = 0,
    VT_INT16 = 1,
    VT_INT32 = 2,
    VT_INT64 = 3,
    VT_FP16 = 4,
    VT_FP32 = 5,
    VT_FP64 = 6,
    VT_SIZE_T = 19,
    VT_UINT8 = 20,
    VT_INT8 = 21,
};

int fl_lodstream_vartype(FlDType dt) {
    switch (dt) {
    case FL_DT_FLOAT32: return VT_FP32;
    case FL_DT_FLOAT64: return VT_FP64;
    case FL_DT_INT32: return VT_INT32;
    case FL_DT_INT64: return VT_INT64;
    case FL_DT_BOOL: return VT_BOOL;
    case FL_DT_FLOAT16: return VT_FP16;
    case FL_DT_INT8: return VT_INT8;
    case FL_DT_UINT8: return VT_UINT8;
    case FL_DT_COUNT: break;
    }
    FL_ASSERT(0);
    return -1;
}

static const char *vartype_name(uint64_t vt) {
    switch (vt) {
    case VT_INT16: return "INT16";
    case VT_SIZE_T: return "SIZE_T";
    default: return NULL;
    }
}

static bool dtype_of(uint64_t vt, FlDType *dt) {
    switch (vt) {
    case VT_BOOL: *dt = FL_DT_BOOL; return true;
    case VT_INT32: *dt = FL_DT_INT32; return true;
    case VT_INT64: *dt = FL_DT_INT64; return true;
    case VT_FP32: *dt = FL_DT_FLOAT32; return true;
    case VT_FP64: *dt = FL_DT_FLOAT64; return true;
    case VT_FP16: *dt = FL_DT_FLOAT16; return true;
    case VT_UINT8: *dt = FL_DT_UINT8; return true;
    case VT_INT8: *dt = FL_DT_INT8; return true;
    default: return false;
    }
}

void fl_lodtensor_init(FlLodTensor *lt) {
    lt->t = (FlTensor)FL_TENSOR_INIT;
    lt->nlevels = 0;
    for (int i = 0; i < FL_LODSTREAM_MAX_LEVELS; i++) lt->lod[i] = (FlTensor)FL_TENSOR_INIT;
}

void fl_lodtensor_fini(FlLodTensor *lt) {
    if (!lt) return;
    fl_tensor_fini(&lt->t);
    for (int i = 0; i < FL_LODSTREAM_MAX_LEVELS; i++) fl_tensor_fini(&lt->lod[i]);
    lt->nlevels = 0;
}

/* ---------------------------------------------------------------- reading */

typedef struct Cur {
    const unsigned char *p;
    size_t len, pos, base;
    FlErr *e;
} Cur;

static FlStatus need(Cur *c, size_t n, const char *what) {
    if (c->len - c->pos >= n) return FL_OK;
    return fl_err(c->e, "the stream ends inside %s: it needs %zu bytes at byte %zu, and %zu are left", what, n,
                  c->base + c->pos, c->len - c->pos);
}

static FlStatus get_u32(Cur *c, uint32_t *v, const char *what) {
    if (need(c, 4, what)) return FL_ERROR;
    memcpy(v, c->p + c->pos, 4);
    c->pos += 4;
    return FL_OK;
}

static FlStatus get_u64(Cur *c, uint64_t *v, const char *what) {
    if (need(c, 8, what)) return FL_ERROR;
    memcpy(v, c->p + c->pos, 8);
    c->pos += 8;
    return FL_OK;
}

/* A protobuf varint of the message p[*i, end). */
static bool varint(const unsigned char *p, size_t end, size_t *i, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *i < end; shift += 7) {
        unsigned char b = p[(*i)++];
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

typedef struct Desc {
    bool has_type;
    uint64_t vt;
    int ndim;
    int64_t ne[FL_MAX_DIMS];
} Desc;

static FlStatus add_dim(Cur *c, Desc *d, uint64_t v, size_t at) {
    if (d->ndim == FL_MAX_DIMS)
        return fl_err(c->e, "the TensorDesc at byte %zu has more than %d dims (the most a tensor has here)", at,
                      FL_MAX_DIMS);
    if ((int64_t)v < 0)
        return fl_err(c->e, "the TensorDesc at byte %zu has dim %lld: a stored tensor's dims are not negative", at,
                      (long long)(int64_t)v);
    d->ne[d->ndim++] = (int64_t)v;
    return FL_OK;
}

/* The TensorDesc message p[0, n) at byte `at` of the stream. */
static FlStatus parse_desc(Cur *c, const unsigned char *p, size_t n, size_t at, Desc *d) {
    size_t i = 0;
    while (i < n) {
        uint64_t key, v;
        if (!varint(p, n, &i, &key)) goto bad;
        unsigned wire = (unsigned)(key & 7);
        uint64_t field = key >> 3;
        if (wire == 0) {
            if (!varint(p, n, &i, &v)) goto bad;
            if (field == 1) {
                d->has_type = true;
                d->vt = v;
            } else if (field == 2 && add_dim(c, d, v, at)) return FL_ERROR;
        } else if (wire == 2) {
            if (!varint(p, n, &i, &v) || v > n - i) goto bad;
            if (field == 2) { /* packed dims */
                size_t end = i + (size_t)v;
                while (i < end) {
                    uint64_t dim;
                    if (!varint(p, end, &i, &dim)) goto bad;
                    if (add_dim(c, d, dim, at)) return FL_ERROR;
                }
            } else i += (size_t)v;
        } else if (wire == 1 || wire == 5) {
            size_t w = wire == 1 ? 8 : 4;
            if (w > n - i) goto bad;
            i += w;
        } else goto bad;
    }
    if (!d->has_type) return fl_err(c->e, "the TensorDesc at byte %zu has no data_type", at);
    return FL_OK;
bad:
    return fl_err(c->e, "the TensorDesc at byte %zu (%zu bytes) is not a valid protobuf message (byte %zu of it)", at,
                  n, i);
}

/* Offsets of a level: from 0, never decreasing, ending at `last` (checked by the caller once the
 * next level or the rows are known). */
static FlStatus check_level(Cur *c, const FlTensor *off, int level, size_t at) {
    const int64_t *o = fl_tensor_data(off);
    int64_t n = off->ne[0];
    if (n < 1) return fl_err(c->e, "LoD level %d at byte %zu has no offsets (a level holds at least the 0 it starts at)",
                             level, at);
    if (o[0] != 0) return fl_err(c->e, "LoD level %d at byte %zu starts at %lld, not 0", level, at, (long long)o[0]);
    for (int64_t i = 1; i < n; i++)
        if (o[i] < o[i - 1])
            return fl_err(c->e, "LoD level %d at byte %zu decreases: offset %lld is %lld after %lld", level, at,
                          (long long)i, (long long)o[i], (long long)o[i - 1]);
    return FL_OK;
}

FlStatus fl_lodstream_read(FlErr *e, const void *data, size_t len, size_t base, size_t *used, FlLodTensor *out) {
    Cur c = {.p = data, .len = len, .base = base, .e = e};
    size_t lvl_at[FL_LODSTREAM_MAX_LEVELS] = {0};
    uint32_t ver;
    uint64_t nlev;
    if (get_u32(&c, &ver, "the LoD version")) goto fail;
    if (ver != 0) {
        fl_err(e, "the LoD version at byte %zu is %u: Fluid writes 0, and no other is known", base, ver);
        goto fail;
    }
    if (get_u64(&c, &nlev, "the number of LoD levels")) goto fail;
    if (nlev > FL_LODSTREAM_MAX_LEVELS) {
        fl_err(e, "the stream at byte %zu says %llu LoD levels (at most %d are read)", base + 4,
               (unsigned long long)nlev, FL_LODSTREAM_MAX_LEVELS);
        goto fail;
    }
    out->nlevels = (int)nlev;
    for (int l = 0; l < (int)nlev; l++) {
        uint64_t bytes;
        lvl_at[l] = base + c.pos;
        if (get_u64(&c, &bytes, "the size of a LoD level")) goto fail;
        if (bytes % 8 != 0) {
            fl_err(e, "LoD level %d at byte %zu has %llu bytes, not a whole number of 8-byte offsets", l, lvl_at[l],
                   (unsigned long long)bytes);
            goto fail;
        }
        if (bytes > c.len - c.pos) {
            need(&c, bytes > SIZE_MAX ? SIZE_MAX : (size_t)bytes, "a LoD level's offsets");
            goto fail;
        }
        int64_t n = (int64_t)(bytes / 8);
        if (fl_tensor_alloc_uninit(e, &out->lod[l], FL_DT_INT64, 1, &n)) goto fail;
        if (n) memcpy(fl_tensor_data(&out->lod[l]), c.p + c.pos, (size_t)bytes);
        c.pos += (size_t)bytes;
        if (check_level(&c, &out->lod[l], l, lvl_at[l])) goto fail;
    }
    size_t tat = base + c.pos;
    if (get_u32(&c, &ver, "the tensor version")) goto fail;
    if (ver != 0) {
        fl_err(e, "the tensor version at byte %zu is %u: Fluid writes 0, and no other is known", tat, ver);
        goto fail;
    }
    uint32_t dsz;
    if (get_u32(&c, &dsz, "the size of the TensorDesc")) goto fail;
    if ((int32_t)dsz < 0) {
        fl_err(e, "the size of the TensorDesc at byte %zu is %d, negative", tat + 4, (int32_t)dsz);
        goto fail;
    }
    if (need(&c, dsz, "the TensorDesc")) goto fail;
    Desc d = {0};
    size_t dat = base + c.pos;
    if (parse_desc(&c, c.p + c.pos, dsz, dat, &d)) goto fail;
    c.pos += dsz;
    FlDType dt;
    if (!dtype_of(d.vt, &dt)) {
        const char *nm = vartype_name(d.vt);
        if (nm)
            fl_err(e, "the tensor at byte %zu holds %s values (Fluid's dtype %llu), which fluidc has no tensors of: "
                      "it reads float32, float64, float16, int32, int64, int8, uint8 and bool", dat, nm, (unsigned long long)d.vt);
        else
            fl_err(e, "the TensorDesc at byte %zu has data_type %llu, which is no dtype of a tensor", dat,
                   (unsigned long long)d.vt);
        goto fail;
    }
    int64_t numel;
    if (fl_shape_numel(e, d.ndim, d.ne, &numel)) goto fail;
    size_t es = fl_dtype_size(dt);
    if ((uint64_t)numel > (c.len - c.pos) / es) {
        FlShapeStr s = fl_shape_str(d.ndim, d.ne);
        fl_err(e, "the stream ends inside the values of the %s %s tensor: it needs %llu bytes at byte %zu, and %zu are "
                  "left", fl_dtype_name(dt), s.s, (unsigned long long)numel * es, base + c.pos, c.len - c.pos);
        goto fail;
    }
    if (fl_tensor_alloc_uninit(e, &out->t, dt, d.ndim, d.ne)) goto fail;
    size_t nb = (size_t)numel * es;
    if (nb) memcpy(fl_tensor_data(&out->t), c.p + c.pos, nb);
    if (dt == FL_DT_BOOL) {
        const unsigned char *b = fl_tensor_data(&out->t);
        for (size_t i = 0; i < nb; i++)
            if (b[i] > 1) {
                fl_err(e, "the bool tensor's value %zu (byte %zu) is %u: a bool holds 0 or 1", i, base + c.pos + i,
                       b[i]);
                goto fail;
            }
    }
    c.pos += nb;
    /* the levels cut one another and, innermost, the rows */
    for (int l = 0; l < out->nlevels; l++) {
        const FlTensor *off = &out->lod[l];
        int64_t last = ((const int64_t *)fl_tensor_data(off))[off->ne[0] - 1];
        bool inner = l == out->nlevels - 1;
        int64_t want = inner ? (d.ndim ? d.ne[0] : 1) : out->lod[l + 1].ne[0] - 1;
        if (last != want) {
            fl_err(e, "LoD level %d at byte %zu ends at %lld, but %s has %lld %s", l, lvl_at[l], (long long)last,
                   inner ? "the tensor" : "the next level", (long long)want, inner ? "rows" : "sequences");
            goto fail;
        }
    }
    *used = c.pos;
    return FL_OK;
fail:
    fl_lodtensor_fini(out);
    return FL_ERROR;
}

/* The bytes of `n` of f at its position, into p (at byte `at` of the stream, for messages). */
static FlStatus fread_all(Cur *c, FILE *f, void *p, size_t n, size_t at, const char *what) {
    if (fread(p, 1, n, f) == n) return FL_OK;
    return fl_err(c->e, "the stream ends inside %s at byte %zu", what, at);
}

FlStatus fl_lodstream_size(FlErr *e, FILE *f, size_t base, uint64_t *size) {
    Cur c = {.e = e, .base = base};
    unsigned char h[12];
    uint32_t ver;
    uint64_t nlev, at = base;
    if (fread_all(&c, f, h, 12, at, "the LoD header")) return FL_ERROR;
    memcpy(&ver, h, 4);
    memcpy(&nlev, h + 4, 8);
    if (ver != 0) return fl_err(e, "the LoD version at byte %zu is %u: Fluid writes 0, and no other is known", base, ver);
    if (nlev > FL_LODSTREAM_MAX_LEVELS)
        return fl_err(e, "the stream at byte %zu says %llu LoD levels (at most %d are read)", base + 4,
                      (unsigned long long)nlev, FL_LODSTREAM_MAX_LEVELS);
    at += 12;
    for (uint64_t l = 0; l < nlev; l++) {
        uint64_t bytes;
        if (fread_all(&c, f, &bytes, 8, (size_t)at, "the size of a LoD level")) return FL_ERROR;
        if (bytes % 8 != 0 || bytes > (uint64_t)INT64_MAX - at - 8 || fseeko(f, (off_t)bytes, SEEK_CUR) != 0)
            return fl_err(e, "LoD level %d at byte %zu has %llu bytes, not a whole number of 8-byte offsets in the "
                          "file", (int)l, (size_t)at, (unsigned long long)bytes);
        at += 8 + bytes;
    }
    uint32_t td[2];
    if (fread_all(&c, f, td, 8, (size_t)at, "the tensor header")) return FL_ERROR;
    if (td[0] != 0)
        return fl_err(e, "the tensor version at byte %zu is %u: Fluid writes 0, and no other is known", (size_t)at, td[0]);
    if ((int32_t)td[1] < 0 || td[1] > 4096)
        return fl_err(e, "the size of the TensorDesc at byte %zu is %d, not that of a TensorDesc", (size_t)at + 4,
                      (int32_t)td[1]);
    at += 8;
    unsigned char desc[4096];
    if (fread_all(&c, f, desc, td[1], (size_t)at, "the TensorDesc")) return FL_ERROR;
    Desc d = {0};
    if (parse_desc(&c, desc, td[1], (size_t)at, &d)) return FL_ERROR;
    FlDType dt;
    if (!dtype_of(d.vt, &dt))
        return fl_err(e, "the TensorDesc at byte %zu has data_type %llu, which is no dtype fluidc reads", (size_t)at,
                      (unsigned long long)d.vt);
    int64_t numel;
    if (fl_shape_numel(e, d.ndim, d.ne, &numel)) return FL_ERROR;
    at += td[1];
    uint64_t nb;
    if (__builtin_mul_overflow((uint64_t)numel, (uint64_t)fl_dtype_size(dt), &nb) || nb > (uint64_t)INT64_MAX - at)
        return fl_err(e, "the tensor at byte %zu claims more bytes than a file holds", (size_t)at);
    *size = at + nb - base;
    return FL_OK;
}

/* ---------------------------------------------------------------- writing */

static void put_varint(FlBuf *b, uint64_t v) {
    while (v >= 0x80) {
        fl_buf_putc(b, (char)(unsigned char)(v | 0x80));
        v >>= 7;
    }
    fl_buf_putc(b, (char)(unsigned char)v);
}

static void put_bytes(FlBuf *b, const void *p, size_t n) { fl_buf_append(b, p, n); }

FlStatus fl_lodstream_write(FlErr *e, FlBuf *out, const FlTensor *t, int nlevels, const FlTensor *lod) {
    if (fl_lodstream_write_head(e, out, t, nlevels, lod)) return FL_ERROR;
    put_bytes(out, fl_tensor_data(t), fl_tensor_nbytes(t));
    return FL_OK;
}

FlStatus fl_lodstream_write_head(FlErr *e, FlBuf *out, const FlTensor *t, int nlevels, const FlTensor *lod) {
    if (!fl_tensor_has_data(t)) return fl_err(e, "the tensor to write holds no data");
    if (nlevels < 0 || nlevels > FL_LODSTREAM_MAX_LEVELS)
        return fl_err(e, "%d LoD levels (at most %d are written)", nlevels, FL_LODSTREAM_MAX_LEVELS);
    for (int l = 0; l < nlevels; l++)
        if (lod[l].dtype != FL_DT_INT64 || lod[l].ndim != 1 || !fl_tensor_has_data(&lod[l]))
            return fl_err(e, "LoD level %d to write is not an int64 vector of offsets", l);
    /* the TensorDesc first, to know its size */
    FlBuf desc = {0};
    put_varint(&desc, 1 << 3 | 0);
    put_varint(&desc, (uint64_t)fl_lodstream_vartype(t->dtype));
    for (int i = 0; i < t->ndim; i++) {
        put_varint(&desc, 2 << 3 | 0);
        put_varint(&desc, (uint64_t)t->ne[i]);
    }
    uint32_t ver = 0;
    uint64_t n = (uint64_t)nlevels;
    put_bytes(out, &ver, 4);
    put_bytes(out, &n, 8);
    for (int l = 0; l < nlevels; l++) {
        uint64_t bytes = (uint64_t)lod[l].ne[0] * 8;
        put_bytes(out, &bytes, 8);
        put_bytes(out, fl_tensor_data(&lod[l]), (size_t)bytes);
    }
    int32_t dsz = (int32_t)desc.len;
    put_bytes(out, &ver, 4);
    put_bytes(out, &dsz, 4);
    put_bytes(out, desc.data, desc.len);
    fl_buf_free(&desc);
    return FL_OK;
}
