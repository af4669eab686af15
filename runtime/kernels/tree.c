/* tree.c: tree_conv and its gradient (kernels_tree.h). */
#include "runtime/kernels/kernels_tree.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

/* One instance's tree and the scratch of its patches, sized for N nodes and E edges. */
typedef struct Tree {
    int64_t count;          /* nodes: 1 + the pairs without a 0 */
    int64_t *start, *child; /* the children of node v: child[start[v] .. start[v + 1]), in edge order */
    int64_t *stk_node, *stk_depth;
    unsigned char *seen;
} Tree;

/* A node of a patch and its weights. */
typedef struct Ent {
    int64_t node;
    double el, er, et;
} Ent;

typedef struct Work {
    Tree t;
    Ent *ents;
    void *block;
} Work;

static FlStatus work_init(FlErr *e, const char *op, Work *w, int64_t n, int64_t ne) {
    size_t words = (size_t)(n + 2) + (size_t)ne + 2 * (size_t)(n + 1);
    size_t bytes = words * sizeof(int64_t) + (size_t)(n + 1) * sizeof(Ent) + (size_t)(n + 1);
    w->block = malloc(bytes);
    if (!w->block) return fl_err(e, "%s: out of memory for the trees' scratch (%zu bytes)", op, bytes);
    int64_t *p = w->block;
    w->t.start = p, p += n + 2;
    w->t.child = p, p += ne;
    w->t.stk_node = p, p += n + 1;
    w->t.stk_depth = p, p += n + 1;
    w->ents = (Ent *)p;
    w->t.seen = (unsigned char *)(w->ents + n + 1);
    return FL_OK;
}

static int64_t edge_at(const FlTensor *edges, int64_t b, int64_t j, int side) {
    return fl_tensor_get_int(edges, (b * edges->ne[1] + j) * 2 + side);
}

/* Instance b's tree from its edges, checked against the N nodes of NodesVector. */
static FlStatus build(FlErr *e, const char *op, const FlTensor *nodes, const FlTensor *edges, int64_t b, Tree *t) {
    int64_t ne = edges->ne[1], n = nodes->ne[1];
    int64_t cnt = 1, used = 0;
    for (int64_t j = 0; j < ne; j++)
        if (edge_at(edges, b, j, 0) != 0 && edge_at(edges, b, j, 1) != 0) cnt++;
    if (cnt > n)
        return fl_err(e, "%s: instance %lld of EdgeSet %s has %lld edges without a 0, so %lld nodes, more than "
                         "NodesVector %s's %lld",
                      op, (long long)b, fl_tensor_shape(edges).s, (long long)(cnt - 1), (long long)cnt,
                      fl_tensor_shape(nodes).s, (long long)n);
    memset(t->start, 0, (size_t)(cnt + 2) * sizeof *t->start);
    for (; used < ne; used++) {
        int64_t u = edge_at(edges, b, used, 0), v = edge_at(edges, b, used, 1);
        if (u == 0 || v == 0) break; /* the tree's edges end at the first pair holding a 0 */
        if (u < 1 || u > cnt || v < 1 || v > cnt)
            return fl_err(e, "%s: EdgeSet %s [%lld, %lld] = (%lld, %lld): the node ids of instance %lld's tree of %lld "
                             "nodes are 1 to %lld",
                          op, fl_tensor_shape(edges).s, (long long)b, (long long)used, (long long)u, (long long)v,
                          (long long)b, (long long)cnt, (long long)cnt);
        t->start[u + 1]++;
    }
    for (int64_t v = 1; v <= cnt + 1; v++) t->start[v] += t->start[v - 1];
    int64_t *next = t->stk_node; /* a cursor per node while the children are placed */
    memcpy(next, t->start, (size_t)(cnt + 1) * sizeof *next);
    for (int64_t j = 0; j < used; j++) t->child[next[edge_at(edges, b, j, 0)]++] = edge_at(edges, b, j, 1);
    t->count = cnt;
    return FL_OK;
}

static Ent ent(int64_t node, int64_t index, int64_t siblings, int64_t depth, int64_t max_depth) {
    double et = (double)(max_depth - depth) / (double)max_depth;
    double side = siblings == 1 ? 0.5 : (double)(index - 1) / (double)(siblings - 1);
    double el = (1 - et) * side;
    return (Ent){node, el, (1 - et) * (1 - el), et};
}

/* The patch of node u (Fluid's depth-first walk: the top of the stack takes all its children
 * not yet seen and less than max_depth deep, and leaves the stack when it has none) -> its size. */
static int64_t patch(Tree *t, int64_t u, int64_t max_depth, Ent *out) {
    memset(t->seen, 0, (size_t)(t->count + 1));
    int64_t sp = 0, n = 0;
    t->stk_node[sp] = u, t->stk_depth[sp++] = 0;
    out[n++] = ent(u, 1, 1, 0, max_depth);
    t->seen[u] = 1;
    while (sp > 0) {
        int64_t node = t->stk_node[sp - 1], d = t->stk_depth[sp - 1], sz = t->start[node + 1] - t->start[node];
        bool end = true;
        for (int64_t i = 0; i < sz; i++) {
            int64_t v = t->child[t->start[node] + i];
            if (t->seen[v] || d + 1 >= max_depth) continue;
            t->seen[v] = 1;
            t->stk_node[sp] = v, t->stk_depth[sp++] = d + 1;
            out[n++] = ent(v, i + 1, sz, d + 1, max_depth);
            end = false;
        }
        if (end) sp--;
    }
    return n;
}

static FlStatus check(FlErr *e, const char *op, const FlTensor *nodes, const FlTensor *edges, const FlTensor *filter,
                      int64_t max_depth) {
    if (kneed_float(e, op, "NodesVector", nodes) || ksame_dtype(e, op, "NodesVector", nodes, "Filter", filter) ||
        khas(e, op, "EdgeSet", edges))
        return FL_ERROR;
    if (!kis_int(edges->dtype))
        return fl_err(e, "%s: EdgeSet %s has dtype %s; int32 or int64 expected", op, fl_tensor_shape(edges).s,
                      fl_dtype_name(edges->dtype));
    if (nodes->ndim != 3 || edges->ndim != 3 || edges->ne[2] != 2 || filter->ndim != 4 || filter->ne[1] != 3 ||
        filter->ne[0] != nodes->ne[2] || edges->ne[0] != nodes->ne[0])
        return fl_err(e, "%s: NodesVector %s, EdgeSet %s and Filter %s must be [B, N, F], [B, E, 2] and [F, 3, O, K]",
                      op, fl_tensor_shape(nodes).s, fl_tensor_shape(edges).s, fl_tensor_shape(filter).s);
    if (max_depth < 1) return fl_err(e, "%s: max_depth must be at least 1, found %lld", op, (long long)max_depth);
    return FL_OK;
}

/* t's values as doubles (NULL when out of memory). */
static double *doubles(const FlTensor *t) {
    int64_t n = fl_tensor_numel(t);
    double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
    if (d)
        for (int64_t i = 0; i < n; i++) d[i] = fl_tensor_get(t, i);
    return d;
}

/* n zeros (NULL when out of memory). */
static double *zeros(int64_t n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

static void put_all(FlTensor *t, const double *v) {
    for (int64_t i = 0, n = fl_tensor_numel(t); i < n; i++) fl_tensor_set(t, i, v[i]);
}

/* The sums of tree_conv over the patches of every instance (x, wt and g: NodesVector, Filter and
 * Out@GRAD as doubles; K = O * K'): forward (g NULL) adds each patch's product into its root's
 * row of acc [B, N, K]; backward adds g's root rows back through the weights into acc (dNodes,
 * [B, N, F]) and dw (dFilter, [F, 3, K]). */
static FlStatus walk(FlErr *e, const char *op, const FlTensor *nodes, const FlTensor *edges, int64_t K,
                     int64_t max_depth, const double *x, const double *wt, const double *g, double *acc, double *dw) {
    int64_t B = nodes->ne[0], N = nodes->ne[1], F = nodes->ne[2];
    Work w = {0};
    if (work_init(e, op, &w, N, edges->ne[1])) return FL_ERROR;
    for (int64_t b = 0; b < B; b++) {
        if (build(e, op, nodes, edges, b, &w.t)) {
            free(w.block);
            return FL_ERROR;
        }
        for (int64_t u = 1; u <= w.t.count; u++) {
            int64_t root = (b * N + u - 1) * K;
            for (int64_t p = 0, np = patch(&w.t, u, max_depth, w.ents); p < np; p++) {
                const Ent *en = &w.ents[p];
                int64_t at = (b * N + en->node - 1) * F;
                for (int64_t f = 0; f < F; f++) {
                    const double *w0 = wt + f * 3 * K, *w1 = w0 + K, *w2 = w1 + K;
                    double a = en->el * x[at + f], r = en->er * x[at + f], c = en->et * x[at + f];
                    if (!g) {
                        for (int64_t k = 0; k < K; k++) acc[root + k] += a * w0[k] + r * w1[k] + c * w2[k];
                        continue;
                    }
                    const double *gr = g + root;
                    double *d0 = dw + f * 3 * K, *d1 = d0 + K, *d2 = d1 + K;
                    double s0 = 0, s1 = 0, s2 = 0;
                    for (int64_t k = 0; k < K; k++) {
                        s0 += w0[k] * gr[k], s1 += w1[k] * gr[k], s2 += w2[k] * gr[k];
                        d0[k] += a * gr[k], d1[k] += r * gr[k], d2[k] += c * gr[k];
                    }
                    acc[at + f] += en->el * s0 + en->er * s1 + en->et * s2;
                }
            }
        }
    }
    free(w.block);
    return FL_OK;
}

FlStatus fl_kernel_tree_conv(FlErr *e, const FlTensor *nodes, const FlTensor *edges, const FlTensor *filter,
                             int64_t max_depth, FlTensor *out) {
    const char *op = "tree_conv";
    if (kwant(e, op, "Out", out) || check(e, op, nodes, edges, filter, max_depth)) return FL_ERROR;
    int64_t B = nodes->ne[0], N = nodes->ne[1], K = filter->ne[2] * filter->ne[3];
    FlTensor o = FL_TENSOR_INIT;
    double *x = doubles(nodes), *wt = doubles(filter), *acc = zeros(B * N * K);
    FlStatus st = FL_ERROR;
    if (!x || !wt || !acc) {
        fl_err(e, "%s: out of memory", op);
        goto fail;
    }
    if (walk(e, op, nodes, edges, K, max_depth, x, wt, NULL, acc, NULL) ||
        kalloc_raw(e, op, &o, nodes->dtype, 4, (int64_t[]){B, N, filter->ne[2], filter->ne[3]}))
        goto fail;
    put_all(&o, acc);
    kout(out, &o);
    st = FL_OK;
fail:
    free(x), free(wt), free(acc);
    return st;
}

FlStatus fl_kernel_tree_conv_grad(FlErr *e, const FlTensor *nodes, const FlTensor *edges, const FlTensor *filter,
                                  const FlTensor *dout, int64_t max_depth, FlTensor *dnodes, FlTensor *dfilter) {
    const char *op = "tree_conv_grad";
    if (!dnodes && !dfilter) return FL_OK;
    if (check(e, op, nodes, edges, filter, max_depth) || ksame_dtype(e, op, "NodesVector", nodes, "Out@GRAD", dout))
        return FL_ERROR;
    int64_t B = nodes->ne[0], N = nodes->ne[1], F = nodes->ne[2], K = filter->ne[2] * filter->ne[3];
    if (dout->ndim != 4 || dout->ne[0] != B || dout->ne[1] != N || dout->ne[2] != filter->ne[2] ||
        dout->ne[3] != filter->ne[3])
        return fl_err(e, "%s: Out@GRAD %s must be [B, N, O, K] of NodesVector %s and Filter %s", op,
                      fl_tensor_shape(dout).s, fl_tensor_shape(nodes).s, fl_tensor_shape(filter).s);
    FlTensor gx = FL_TENSOR_INIT, gw = FL_TENSOR_INIT;
    double *x = doubles(nodes), *wt = doubles(filter), *g = doubles(dout), *dx = zeros(B * N * F),
           *dw = zeros(F * 3 * K);
    FlStatus st = FL_ERROR;
    if (!x || !wt || !g || !dx || !dw) {
        fl_err(e, "%s: out of memory", op);
        goto fail;
    }
    if (walk(e, op, nodes, edges, K, max_depth, x, wt, g, dx, dw) ||
        (dnodes && kalloc_raw_like(e, op, &gx, nodes)) || (dfilter && kalloc_raw_like(e, op, &gw, filter)))
        goto fail;
    if (dnodes) put_all(&gx, dx), kout(dnodes, &gx);
    if (dfilter) put_all(&gw, dw), kout(dfilter, &gw);
    st = FL_OK;
fail:
    fl_tensor_fini(&gx), fl_tensor_fini(&gw);
    free(x), free(wt), free(g), free(dx), free(dw);
    return st;
}
