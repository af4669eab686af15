/* rows.c: SelectedRows (rows.h): checks, densifying and merging of duplicate rows. Values are
 * float32 or float64; rows are added in the order they are listed, so a merged row equals the
 * same row of the dense tensor bit for bit. */
#include "runtime/rows.h"

#include <stdlib.h>
#include <string.h>

void fl_rows_init(FlSelectedRows *r) {
    fl_tensor_init(&r->rows);
    fl_tensor_init(&r->value);
    r->height = 0;
}

void fl_rows_fini(FlSelectedRows *r) {
    if (!r) return;
    fl_tensor_fini(&r->rows);
    fl_tensor_fini(&r->value);
    r->height = 0;
}

bool fl_rows_has_data(const FlSelectedRows *r) { return r && fl_tensor_has_data(&r->value); }

void fl_rows_ref(FlSelectedRows *dst, const FlSelectedRows *src) {
    fl_tensor_ref(&dst->rows, &src->rows);
    fl_tensor_ref(&dst->value, &src->value);
    dst->height = src->height;
}

FlStatus fl_rows_check(FlErr *e, const FlSelectedRows *r) {
    const FlTensor *v = &r->value;
    if (r->rows.dtype != FL_DT_INT64 || r->rows.ndim != 1)
        return fl_err(e, "SelectedRows: rows must be an int64 vector, found %s %s",
                      fl_dtype_name(r->rows.dtype), fl_tensor_shape(&r->rows).s);
    if (v->dtype != FL_DT_FLOAT32 && v->dtype != FL_DT_FLOAT64)
        return fl_err(e, "SelectedRows: the value must be float32 or float64, found %s", fl_dtype_name(v->dtype));
    if (v->ndim < 2 || v->ne[0] != r->rows.ne[0])
        return fl_err(e, "SelectedRows: the value %s must have one row per row index (%lld) and rank >= 2",
                      fl_tensor_shape(v).s, (long long)r->rows.ne[0]);
    const int64_t *ids = fl_tensor_data(&r->rows);
    for (int64_t i = 0; i < r->rows.ne[0]; i++)
        if (ids[i] < 0 || ids[i] >= r->height)
            return fl_err(e, "SelectedRows: rows[%lld] = %lld is outside [0, %lld)", (long long)i,
                          (long long)ids[i], (long long)r->height);
    return FL_OK;
}

/* Adds value row i of r to row `to` of the float block dst (row width w). */
static void add_row(const FlSelectedRows *r, int64_t i, void *dst, int64_t to, int64_t w) {
    if (r->value.dtype == FL_DT_FLOAT32) {
        float *d = (float *)dst + to * w;
        const float *s = (const float *)fl_tensor_data(&r->value) + i * w;
        for (int64_t j = 0; j < w; j++) d[j] += s[j];
    } else {
        double *d = (double *)dst + to * w;
        const double *s = (const double *)fl_tensor_data(&r->value) + i * w;
        for (int64_t j = 0; j < w; j++) d[j] += s[j];
    }
}

static int64_t row_width(const FlSelectedRows *r) {
    int64_t w = 1;
    for (int k = 1; k < r->value.ndim; k++) w *= r->value.ne[k];
    return w;
}

FlStatus fl_rows_to_dense(FlErr *e, const FlSelectedRows *r, FlTensor *out) {
    if (fl_rows_check(e, r)) return FL_ERROR;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, r->value.ne, sizeof ne);
    ne[0] = r->height;
    FlTensor d = FL_TENSOR_INIT;
    if (fl_tensor_alloc(e, &d, r->value.dtype, r->value.ndim, ne)) return FL_ERROR;
    const int64_t *ids = fl_tensor_data(&r->rows);
    int64_t w = row_width(r);
    for (int64_t i = 0; i < r->rows.ne[0]; i++) add_row(r, i, fl_tensor_data(&d), ids[i], w);
    fl_tensor_fini(out);
    *out = d;
    return FL_OK;
}

/* Sorts v[0..n) (values in [0, height)) ascending: LSD radix sort by 11-bit digits through tmp
 * (n elements), as many passes as height needs, insertion sort for short arrays. */
static void sort_ids(int64_t *v, int64_t *tmp, int64_t n, int64_t height) {
    if (n <= 32) {
        for (int64_t i = 1; i < n; i++) {
            int64_t x = v[i], k = i;
            for (; k > 0 && v[k - 1] > x; k--) v[k] = v[k - 1];
            v[k] = x;
        }
        return;
    }
    enum { BITS = 11, BUCKETS = 1 << BITS };
    int64_t *src = v, *dst = tmp;
    for (int shift = 0; shift < 63 && (height - 1) >> shift; shift += BITS) {
        int64_t count[BUCKETS + 1] = {0};
        for (int64_t i = 0; i < n; i++) count[((src[i] >> shift) & (BUCKETS - 1)) + 1]++;
        for (int b = 0; b < BUCKETS; b++) count[b + 1] += count[b];
        for (int64_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & (BUCKETS - 1)]++] = src[i];
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, (size_t)n * sizeof *v);
}

/* An open-addressing map id -> slot (ids >= 0; cap a power of two, keys -1 when free). */
typedef struct IdMap {
    int64_t *key, *val;
    size_t mask;
} IdMap;

static size_t id_hash(int64_t id, size_t mask) { return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 20) & mask; }

/* The entry of id: its slot when present, else the free slot it would take. */
static size_t id_find(const IdMap *m, int64_t id) {
    size_t h = id_hash(id, m->mask);
    while (m->key[h] != id && m->key[h] != -1) h = (h + 1) & m->mask;
    return h;
}

/* xs[0..n) are valid and alike (dtype, row shape, height): else an error saying they cannot be
 * `verb`ed; *total = their rows. */
static FlStatus rows_alike(FlErr *e, const FlSelectedRows *const *xs, int n, const char *verb, int64_t *total) {
    for (int k = 0; k < n; k++) {
        if (fl_rows_check(e, xs[k])) return FL_ERROR;
        const FlTensor *v = &xs[k]->value, *v0 = &xs[0]->value;
        bool same = v->dtype == v0->dtype && v->ndim == v0->ndim && xs[k]->height == xs[0]->height;
        for (int d = 1; same && d < v->ndim; d++) same = v->ne[d] == v0->ne[d];
        if (!same)
            return fl_err(e, "SelectedRows: cannot %s rows of %s %s (height %lld) to rows of %s %s (height %lld)", verb,
                          fl_dtype_name(v->dtype), fl_tensor_shape(v).s, (long long)xs[k]->height,
                          fl_dtype_name(v0->dtype), fl_tensor_shape(v0).s, (long long)xs[0]->height);
        *total += xs[k]->rows.ne[0];
    }
    return FL_OK;
}

FlStatus fl_rows_merge(FlErr *e, const FlSelectedRows *const *xs, int n, FlSelectedRows *out) {
    FL_ASSERT(n >= 1);
    int64_t total = 0;
    if (rows_alike(e, xs, n, "add", &total)) return FL_ERROR;
    /* the distinct ids (a map id -> its place among them), sorted, then each listed row added
     * to its id's merged row in the order listed */
    size_t cap = 16;
    while (cap < 2 * (size_t)total) cap *= 2;
    int64_t *ids = malloc(2 * ((size_t)total + 1) * sizeof *ids);
    IdMap map = {malloc(cap * sizeof *map.key), malloc(cap * sizeof *map.val), cap - 1};
    if (!ids || !map.key || !map.val) {
        free(ids), free(map.key), free(map.val);
        return fl_err(e, "SelectedRows: out of memory merging %lld rows", (long long)total);
    }
    memset(map.key, 0xff, cap * sizeof *map.key); /* -1: free */
    int64_t u = 0;
    for (int k = 0; k < n; k++) {
        const int64_t *src = fl_tensor_data(&xs[k]->rows);
        for (int64_t i = 0; i < xs[k]->rows.ne[0]; i++) {
            size_t h = id_find(&map, src[i]);
            if (map.key[h] == -1) {
                map.key[h] = src[i];
                ids[u++] = src[i];
            }
        }
    }
    sort_ids(ids, ids + total + 1, u, xs[0]->height);
    for (int64_t p = 0; p < u; p++) map.val[id_find(&map, ids[p])] = p;
    FlSelectedRows r;
    fl_rows_init(&r);
    r.height = xs[0]->height;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, xs[0]->value.ne, sizeof ne);
    ne[0] = u;
    FlStatus st = FL_ERROR;
    if (fl_tensor_alloc(e, &r.rows, FL_DT_INT64, 1, &u) ||
        fl_tensor_alloc(e, &r.value, xs[0]->value.dtype, xs[0]->value.ndim, ne))
        goto fail;
    memcpy(fl_tensor_data(&r.rows), ids, (size_t)u * sizeof *ids);
    int64_t w = row_width(xs[0]);
    for (int k = 0; k < n; k++) {
        const int64_t *src = fl_tensor_data(&xs[k]->rows);
        for (int64_t i = 0; i < xs[k]->rows.ne[0]; i++)
            add_row(xs[k], i, fl_tensor_data(&r.value), map.val[id_find(&map, src[i])], w);
    }
    fl_rows_fini(out);
    *out = r;
    fl_rows_init(&r);
    st = FL_OK;
fail:
    free(ids), free(map.key), free(map.val);
    fl_rows_fini(&r);
    return st;
}

/* Bytes of one row of t (dims 1..). */
static size_t row_bytes(const FlTensor *t) {
    size_t b = fl_tensor_nbytes(t);
    return t->ne[0] ? b / (size_t)t->ne[0] : 0;
}

static FlStatus check_rows_of(FlErr *e, const FlTensor *t, const FlTensor *rows) {
    if (t->ndim < 1 || rows->dtype != FL_DT_INT64 || rows->ndim != 1)
        return fl_err(e, "SelectedRows: cannot index rows of %s by %s %s", fl_tensor_shape(t).s,
                      fl_dtype_name(rows->dtype), fl_tensor_shape(rows).s);
    const int64_t *ids = fl_tensor_data(rows);
    for (int64_t i = 0; i < rows->ne[0]; i++)
        if (ids[i] < 0 || ids[i] >= t->ne[0])
            return fl_err(e, "SelectedRows: row %lld is outside [0, %lld) of %s", (long long)ids[i],
                          (long long)t->ne[0], fl_tensor_shape(t).s);
    return FL_OK;
}

FlStatus fl_rows_gather(FlErr *e, const FlTensor *t, const FlTensor *rows, FlTensor *out) {
    if (check_rows_of(e, t, rows)) return FL_ERROR;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, t->ne, sizeof ne);
    ne[0] = rows->ne[0];
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_alloc_uninit(e, &r, t->dtype, t->ndim, ne)) return FL_ERROR;
    size_t rb = row_bytes(t);
    const int64_t *ids = fl_tensor_data(rows);
    for (int64_t i = 0; i < rows->ne[0]; i++)
        memcpy((char *)fl_tensor_data(&r) + (size_t)i * rb, (const char *)fl_tensor_data(t) + (size_t)ids[i] * rb, rb);
    fl_tensor_fini(out);
    *out = r;
    return FL_OK;
}

/* sub [n, ...] fits rows (n ids of t) of t. */
static FlStatus check_scatter(FlErr *e, const FlTensor *t, const FlTensor *rows, const FlTensor *sub) {
    if (check_rows_of(e, t, rows)) return FL_ERROR;
    bool fits = sub->dtype == t->dtype && sub->ndim == t->ndim && sub->ne[0] == rows->ne[0];
    for (int d = 1; fits && d < t->ndim; d++) fits = sub->ne[d] == t->ne[d];
    if (!fits)
        return fl_err(e, "SelectedRows: rows %s %s do not fit into %s %s", fl_dtype_name(sub->dtype),
                      fl_tensor_shape(sub).s, fl_dtype_name(t->dtype), fl_tensor_shape(t).s);
    return FL_OK;
}

/* Row rows[i] of the buffer dst (t's shape) = row i of sub. */
static void scatter_rows(void *dst, const FlTensor *t, const FlTensor *rows, const FlTensor *sub) {
    size_t rb = row_bytes(t);
    const int64_t *ids = fl_tensor_data(rows);
    for (int64_t i = 0; i < rows->ne[0]; i++)
        memcpy((char *)dst + (size_t)ids[i] * rb, (const char *)fl_tensor_data(sub) + (size_t)i * rb, rb);
}

FlStatus fl_rows_scatter_into(FlErr *e, FlTensor *t, const FlTensor *rows, const FlTensor *sub) {
    if (check_scatter(e, t, rows, sub)) return FL_ERROR;
    scatter_rows(fl_tensor_data(t), t, rows, sub);
    return FL_OK;
}

FlStatus fl_rows_scatter(FlErr *e, const FlTensor *t, const FlTensor *rows, const FlTensor *sub, FlTensor *out) {
    if (out == t && t->buf && fl_buffer_refs(t->buf) == 1) return fl_rows_scatter_into(e, out, rows, sub);
    if (check_scatter(e, t, rows, sub)) return FL_ERROR;
    FlTensor r = FL_TENSOR_INIT;
    if (fl_tensor_copy(e, &r, t)) return FL_ERROR;
    scatter_rows(fl_tensor_data(&r), t, rows, sub);
    fl_tensor_fini(out);
    *out = r;
    return FL_OK;
}

/* ---- split by row ranges, scale, and the wire form ---- */

FlStatus fl_rows_split(FlErr *e, const FlSelectedRows *r, const int64_t *sections, int n, FlSelectedRows *outs) {
    FL_ASSERT(n >= 1);
    if (fl_rows_check(e, r)) return FL_ERROR;
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
        if (sections[k] < 0) return fl_err(e, "SelectedRows: section %d has %lld rows", k, (long long)sections[k]);
        total += sections[k];
    }
    if (total != r->height)
        return fl_err(e, "SelectedRows: the sections add up to %lld rows but the height is %lld", (long long)total,
                      (long long)r->height);
    const int64_t *ids = fl_tensor_data(&r->rows);
    int64_t nr = r->rows.ne[0];
    size_t rb = row_bytes(&r->value);
    FlStatus st = FL_OK;
    int64_t lo = 0;
    for (int k = 0; k < n && st == FL_OK; k++) {
        int64_t hi = lo + sections[k], cnt = 0;
        for (int64_t i = 0; i < nr; i++) cnt += ids[i] >= lo && ids[i] < hi;
        FlSelectedRows o;
        fl_rows_init(&o);
        o.height = sections[k];
        int64_t ne[FL_MAX_DIMS];
        memcpy(ne, r->value.ne, sizeof ne);
        ne[0] = cnt;
        st = fl_tensor_alloc_uninit(e, &o.rows, FL_DT_INT64, 1, &cnt);
        if (st == FL_OK) st = fl_tensor_alloc_uninit(e, &o.value, r->value.dtype, r->value.ndim, ne);
        if (st == FL_OK) {
            int64_t *oi = fl_tensor_data(&o.rows), j = 0;
            char *ov = fl_tensor_data(&o.value);
            for (int64_t i = 0; i < nr; i++) {
                if (ids[i] < lo || ids[i] >= hi) continue;
                oi[j] = ids[i] - lo;
                memcpy(ov + (size_t)j * rb, (const char *)fl_tensor_data(&r->value) + (size_t)i * rb, rb);
                j++;
            }
            fl_rows_fini(&outs[k]);
            outs[k] = o;
        } else {
            fl_rows_fini(&o);
        }
        lo = hi;
    }
    return st;
}

/* *out (released first) = r's rows and height with the value v (its reference moves to out). */
static void set_value(const FlSelectedRows *r, FlTensor v, FlSelectedRows *out) {
    FlSelectedRows o;
    fl_rows_init(&o);
    fl_tensor_ref(&o.rows, &r->rows);
    o.value = v;
    o.height = r->height;
    fl_rows_fini(out);
    *out = o;
}

FlStatus fl_rows_scale(FlErr *e, const FlSelectedRows *r, double scale, FlSelectedRows *out) {
    if (fl_rows_check(e, r)) return FL_ERROR;
    FlTensor v = FL_TENSOR_INIT;
    if (fl_tensor_copy(e, &v, &r->value)) return FL_ERROR;
    int64_t n = fl_tensor_numel(&v);
    if (v.dtype == FL_DT_FLOAT32) {
        float *a = fl_tensor_data(&v);
        for (int64_t i = 0; i < n; i++) a[i] *= (float)scale;
    } else {
        double *a = fl_tensor_data(&v);
        for (int64_t i = 0; i < n; i++) a[i] *= scale;
    }
    set_value(r, v, out);
    return FL_OK;
}

FlStatus fl_rows_decay(FlErr *e, const FlSelectedRows *r, const FlTensor *t, double coeff, bool l1,
                       FlSelectedRows *out) {
    if (fl_rows_check(e, r)) return FL_ERROR;
    bool fits = t->dtype == r->value.dtype && t->ndim == r->value.ndim && t->ne[0] == r->height;
    for (int d = 1; fits && d < t->ndim; d++) fits = t->ne[d] == r->value.ne[d];
    if (!fits)
        return fl_err(e, "SelectedRows: the parameter %s %s does not match the rows %s %s of height %lld",
                      fl_dtype_name(t->dtype), fl_tensor_shape(t).s, fl_dtype_name(r->value.dtype),
                      fl_tensor_shape(&r->value).s, (long long)r->height);
    FlTensor g = FL_TENSOR_INIT, v = FL_TENSOR_INIT;
    if (fl_rows_gather(e, t, &r->rows, &g)) return FL_ERROR;
    if (fl_tensor_copy(e, &v, &r->value)) {
        fl_tensor_fini(&g);
        return FL_ERROR;
    }
    int64_t n = fl_tensor_numel(&v);
    if (v.dtype == FL_DT_FLOAT32) {
        float *a = fl_tensor_data(&v);
        const float *b = fl_tensor_data(&g);
        for (int64_t i = 0; i < n; i++)
            a[i] += (float)coeff * (l1 ? (float)((b[i] > 0) - (b[i] < 0)) : b[i]);
    } else {
        double *a = fl_tensor_data(&v);
        const double *b = fl_tensor_data(&g);
        for (int64_t i = 0; i < n; i++) a[i] += coeff * (l1 ? (double)((b[i] > 0) - (b[i] < 0)) : b[i]);
    }
    fl_tensor_fini(&g);
    set_value(r, v, out);
    return FL_OK;
}

/* The wire form: int64 words
 *   [0] FL_ROWS_MAGIC  [1] height  [2] n  [3] value dtype  [4] value rank d
 *   [5 .. 5+d-2] the value's dims 1..d-1   then rows[n]   then the value's bytes, padded to 8 */
#define FL_ROWS_MAGIC 0x52534c46 /* "FLSR" */
#define HDR_WORDS 5

FlStatus fl_rows_pack(FlErr *e, const FlSelectedRows *r, FlTensor *out) {
    if (fl_rows_check(e, r)) return FL_ERROR;
    const FlTensor *v = &r->value;
    int64_t n = r->rows.ne[0];
    size_t vb = fl_tensor_nbytes(v);
    int64_t words = HDR_WORDS + (v->ndim - 1) + n + (int64_t)((vb + 7) / 8);
    FlTensor t = FL_TENSOR_INIT;
    if (fl_tensor_alloc(e, &t, FL_DT_INT64, 1, &words)) return FL_ERROR;
    int64_t *w = fl_tensor_data(&t);
    w[0] = FL_ROWS_MAGIC;
    w[1] = r->height;
    w[2] = n;
    w[3] = v->dtype;
    w[4] = v->ndim;
    for (int d = 1; d < v->ndim; d++) w[HDR_WORDS + d - 1] = v->ne[d];
    int64_t *ids = w + HDR_WORDS + v->ndim - 1;
    if (n) memcpy(ids, fl_tensor_data(&r->rows), (size_t)n * sizeof *ids);
    if (vb) memcpy(ids + n, fl_tensor_data(v), vb);
    fl_tensor_fini(out);
    *out = t;
    return FL_OK;
}

FlStatus fl_rows_unpack(FlErr *e, const FlTensor *t, FlSelectedRows *out) {
    if (t->dtype != FL_DT_INT64 || t->ndim != 1 || t->ne[0] < HDR_WORDS)
        return fl_err(e, "SelectedRows: a packed form must be an int64 vector of at least %d words, found %s %s",
                      HDR_WORDS, fl_dtype_name(t->dtype), fl_tensor_shape(t).s);
    const int64_t *w = fl_tensor_data(t);
    int64_t words = t->ne[0], height = w[1], n = w[2], dt = w[3], nd = w[4];
    if (w[0] != FL_ROWS_MAGIC) return fl_err(e, "SelectedRows: the packed form has a bad magic number");
    if (height < 0 || n < 0 || (dt != FL_DT_FLOAT32 && dt != FL_DT_FLOAT64) || nd < 2 || nd > FL_MAX_DIMS ||
        HDR_WORDS + nd - 1 > words)
        return fl_err(e, "SelectedRows: a malformed packed form (height %lld, %lld rows, dtype %lld, rank %lld)",
                      (long long)height, (long long)n, (long long)dt, (long long)nd);
    int64_t ne[FL_MAX_DIMS] = {0}, rw = 1;
    ne[0] = n;
    for (int d = 1; d < nd; d++) {
        ne[d] = w[HDR_WORDS + d - 1];
        if (ne[d] < 0 || (ne[d] && rw > INT64_MAX / 16 / ne[d]))
            return fl_err(e, "SelectedRows: a malformed packed form (dim %d is %lld)", d, (long long)ne[d]);
        rw *= ne[d];
    }
    int64_t avail = words - (HDR_WORDS + nd - 1);
    size_t es = fl_dtype_size((FlDType)dt);
    if (n > avail || (rw && (avail - n) * 8 / (int64_t)es / rw < n))
        return fl_err(e, "SelectedRows: the packed form holds %lld words, too few for %lld rows of %lld elements",
                      (long long)words, (long long)n, (long long)rw);
    FlSelectedRows r;
    fl_rows_init(&r);
    r.height = height;
    if (fl_tensor_alloc_uninit(e, &r.rows, FL_DT_INT64, 1, &n) ||
        fl_tensor_alloc_uninit(e, &r.value, (FlDType)dt, (int)nd, ne)) {
        fl_rows_fini(&r);
        return FL_ERROR;
    }
    const int64_t *ids = w + HDR_WORDS + nd - 1;
    if (n) memcpy(fl_tensor_data(&r.rows), ids, (size_t)n * sizeof *ids);
    if (fl_tensor_nbytes(&r.value)) memcpy(fl_tensor_data(&r.value), ids + n, fl_tensor_nbytes(&r.value));
    if (fl_rows_check(e, &r)) {
        fl_rows_fini(&r);
        return FL_ERROR;
    }
    fl_rows_fini(out);
    *out = r;
    return FL_OK;
}

FlStatus fl_rows_concat(FlErr *e, const FlSelectedRows *const *xs, int n, FlSelectedRows *out) {
    FL_ASSERT(n >= 1);
    int64_t total = 0;
    if (rows_alike(e, xs, n, "join", &total)) return FL_ERROR;
    FlSelectedRows r;
    fl_rows_init(&r);
    r.height = xs[0]->height;
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, xs[0]->value.ne, sizeof ne);
    ne[0] = total;
    if (fl_tensor_alloc_uninit(e, &r.rows, FL_DT_INT64, 1, &total) ||
        fl_tensor_alloc_uninit(e, &r.value, xs[0]->value.dtype, xs[0]->value.ndim, ne)) {
        fl_rows_fini(&r);
        return FL_ERROR;
    }
    char *ri = fl_tensor_data(&r.rows), *rv = fl_tensor_data(&r.value);
    for (int k = 0; k < n; k++) {
        size_t ib = fl_tensor_nbytes(&xs[k]->rows), vb = fl_tensor_nbytes(&xs[k]->value);
        if (ib) memcpy(ri, fl_tensor_data(&xs[k]->rows), ib);
        if (vb) memcpy(rv, fl_tensor_data(&xs[k]->value), vb);
        ri += ib;
        rv += vb;
    }
    fl_rows_fini(out);
    *out = r;
    return FL_OK;
}
