/* plan_verify.c: the consistency checks of a distributed plan (see plan_verify.h).
 *
 * How: the rank map and the roles first (the other checks index the roles by position, so a
 * plan whose roles are out of place stops there); then each role's programs through the IR
 * verifier; then one pass over the pservers collects what each serves (its listen_and_serv,
 * grad_to_block, the X it receives, the params its optimizer ops update) and one pass over each
 * trainer what it sends and receives, and the rules compare the two. Attributes are read by
 * type, never with the asserting getters: a plan file is user input.
 * Names in the maps are borrowed from the plan or from the arena; the plan is not mutated.
 */
#include "compiler/plan_verify.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/rules.h"
#include "compiler/ops.h"
#include "compiler/verify.h"

static const char *const rule_names[] = {
    [FL_PLAN_RULE_RANKS] = "the rank map is a permutation consistent with the roles",
    [FL_PLAN_RULE_IR] = "every program passes the IR verifier",
    [FL_PLAN_RULE_MODE] = "sync and async roles are not mixed",
    [FL_PLAN_RULE_SEND] = "every send has a receiver",
    [FL_PLAN_RULE_EXPECT] = "every expected gradient is sent",
    [FL_PLAN_RULE_RECV] = "every recv is answered",
    [FL_PLAN_RULE_FETCH] = "every updated block is received",
    [FL_PLAN_RULE_FANIN] = "barrier fan-in matches the trainer count",
    [FL_PLAN_RULE_ROWS] = "the blocks cover each parameter's rows exactly once",
    [FL_PLAN_RULE_STATE] = "optimizer state is sliced like its parameter",
    [FL_PLAN_RULE_INIT] = "every pserver starts from the local values",
    [FL_PLAN_RULE_ALLREDUCE] = "every trainer's allreduce lists match",
};
_Static_assert(FL_ARRAY_LEN(rule_names) == FL_PLAN_RULE_COUNT, "a name per rule");

const char *fl_plan_verify_rule_name(FlPlanRule r) {
    return r >= 0 && r < FL_PLAN_RULE_COUNT ? rule_names[r] : "?";
}

void fl_plan_verify_issues_fini(FlPlanIssues *v) {
    for (size_t i = 0; i < v->items.len; i++) free(v->items.data[i].msg);
    FL_VEC_FREE(&v->items);
}

/* What a pserver serves. */
typedef struct Server {
    const FlBundle *b;
    const FlOpDesc *ls; /* its one listen_and_serv in block 0; NULL when it has none or several */
    FlMap x;            /* listen_and_serv's X -> MARK */
    FlMap g2b;          /* grad_to_block's gradient -> its optimize block + 1 */
    FlMap params;       /* the Param of each optimizer op of its optimize blocks -> the op */
    FlMap param_block;  /* the same Param -> its optimize block + 1 */
    FL_VEC(const char *) params_in_order, grads_in_order; /* the keys of params and g2b */
} Server;

/* What a trainer sends and receives: var -> pserver + 1. */
typedef struct Trainer {
    const FlBundle *b;
    FlMap sent, recvd;
} Trainer;

typedef struct Pv {
    const FlPlan *p;
    FlPlanIssues *out;
    int count;
    FlArena arena;
    int64_t T, P;
    bool sync, allreduce;
    Server *srv;
    Trainer *tr;
    FlMap block_of; /* trainer 0: a block "W.blockK" of a cut parameter -> its concat */
    FlMap concat0;  /* trainer 0: a cut parameter W -> its concat */
} Pv;

#define MARK ((void *)1)
#define AS_VAL(i) ((void *)(uintptr_t)((i) + 1))
#define OF_VAL(v) ((int64_t)(uintptr_t)(v)-1)

static void issue(Pv *v, FlPlanRule rule, const char *fmt, ...) FL_PRINTF(3, 4);
static void issue(Pv *v, FlPlanRule rule, const char *fmt, ...) {
    FlBuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    fl_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    fl_buf_printf(&b, " (rule: %s)", rule_names[rule]);
    FlPlanIssue it = {rule, fl_xstrdup(fl_buf_str(&b))};
    fl_buf_free(&b);
    FL_VEC_PUSH(&v->out->items, it);
    v->count++;
}

/* ---- reading ops and attributes (by type: a file may hold anything) ---- */

static const FlAttr *attr_typed(const FlOpDesc *op, const char *name, FlAttrType t) {
    const FlAttr *a = fl_ir_op_attr(op, name);
    return a && a->type == t ? a : NULL;
}

static int64_t attr_int(const FlOpDesc *op, const char *name, int64_t dflt) {
    const FlAttr *a = attr_typed(op, name, FL_ATTR_INT);
    return a ? a->i : dflt;
}

static bool attr_bool(const FlOpDesc *op, const char *name, bool dflt) {
    const FlAttr *a = attr_typed(op, name, FL_ATTR_BOOL);
    return a ? a->i != 0 : dflt;
}

/* epmap[i], or -1 when the op has no server for its i-th var. */
static int64_t epmap_at(const FlOpDesc *op, size_t i) {
    const FlAttr *a = attr_typed(op, "epmap", FL_ATTR_INTS);
    if (!a || a->n == 0) return -1;
    return i < a->n ? a->ints[i] : -1;
}

static const FlSlot *slot_in(const FlOpDesc *op, const char *s) { return fl_ir_op_input(op, s); }
static const FlSlot *slot_out(const FlOpDesc *op, const char *s) { return fl_ir_op_output(op, s); }
static size_t nargs(const FlSlot *s) { return s ? s->nargs : 0; }

static const char *role_str(Pv *v, const FlBundle *b) {
    bool server = b->role && strcmp(b->role, "pserver") == 0;
    return fl_arena_printf(&v->arena, "%s %lld", server ? "pserver" : "trainer", (long long)b->role_index);
}

static const char *shape_str(Pv *v, const FlVarDesc *d) {
    FlBuf b = {0};
    fl_ir_shape_str(d->ndim, d->shape, &b);
    const char *s = fl_arena_strdup(&v->arena, fl_buf_str(&b));
    fl_buf_free(&b);
    return s;
}

static bool same_shape(const FlVarDesc *a, const FlVarDesc *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static FlVarDesc *var0(const FlProgram *p, const char *name) {
    return p && p->blocks.len ? fl_ir_var_find(p->blocks.data[0], name) : NULL;
}

/* Calls fn on every op of every block of p. */
typedef void (*OpFn)(Pv *v, int64_t role, const FlBlock *b, size_t i, const FlOpDesc *op);
static void each_op(Pv *v, int64_t role, const FlProgram *p, OpFn fn) {
    for (size_t bi = 0; bi < p->blocks.len; bi++) {
        const FlBlock *b = p->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len; i++) fn(v, role, b, i, b->ops.data[i]);
    }
}

static size_t count_ops(const FlProgram *p, FlOpId id) {
    size_t n = 0;
    for (size_t bi = 0; bi < p->blocks.len; bi++)
        for (size_t i = 0; i < p->blocks.data[bi]->ops.len; i++)
            n += fl_ops_is(p->blocks.data[bi]->ops.data[i], id);
    return n;
}

/* ---- RANKS ---- */

/* false when the roles are not where the other checks look for them */
static bool check_ranks(Pv *v) {
    const FlPlan *p = v->p;
    bool ok = true;
    if (p->trainers < 1 || p->pservers < 0 || (uint64_t)p->trainers + (uint64_t)p->pservers != p->roles.len) {
        issue(v, FL_PLAN_RULE_RANKS, "the plan has %zu roles for %lld trainers and %lld pservers", p->roles.len,
              (long long)p->trainers, (long long)p->pservers);
        return false;
    }
    for (size_t i = 0; i < p->roles.len; i++) {
        const FlBundle *b = p->roles.data[i];
        bool trainer = i < (size_t)p->trainers;
        int64_t want = trainer ? (int64_t)i : (int64_t)i - p->trainers;
        if (!b->role || strcmp(b->role, trainer ? "trainer" : "pserver") || b->role_index != want) {
            issue(v, FL_PLAN_RULE_RANKS, "role %zu is %s %lld; expected %s %lld (trainers first, then pservers)", i,
                  b->role ? b->role : "(none)", (long long)b->role_index, trainer ? "trainer" : "pserver",
                  (long long)want);
            ok = false;
        }
    }
    if (!ok) return false;
    size_t n = p->roles.len;
    int64_t *rank_of = malloc(n * sizeof *rank_of);
    for (size_t i = 0; i < n; i++) rank_of[i] = -1;
    if (p->rank_role.len != n)
        issue(v, FL_PLAN_RULE_RANKS, "the rank map has %zu ranks for %zu roles: one rank per role", p->rank_role.len,
              n);
    int64_t next[2] = {0, p->trainers}; /* each kind numbered in rank order */
    for (size_t r = 0; r < p->rank_role.len; r++) {
        int64_t k = p->rank_role.data[r];
        if (k < 0 || (uint64_t)k >= n) {
            issue(v, FL_PLAN_RULE_RANKS, "rank %zu maps to role %lld, but the plan has roles 0..%zu", r, (long long)k,
                  n - 1);
            continue;
        }
        const char *who = role_str(v, p->roles.data[k]);
        if (rank_of[k] >= 0) {
            issue(v, FL_PLAN_RULE_RANKS, "ranks %lld and %zu both run %s", (long long)rank_of[k], r, who);
            continue;
        }
        rank_of[k] = (int64_t)r;
        int kind = k >= p->trainers;
        if (k != next[kind])
            issue(v, FL_PLAN_RULE_RANKS, "rank %zu runs %s, but the ranks number each kind in rank order: it should "
                  "run %s %lld", r, who, kind ? "pserver" : "trainer",
                  (long long)(kind ? next[1] - p->trainers : next[0]));
        next[kind] = k + 1;
    }
    for (size_t k = 0; k < n; k++)
        if (rank_of[k] < 0 && p->rank_role.len == n)
            issue(v, FL_PLAN_RULE_RANKS, "no rank runs %s", role_str(v, p->roles.data[k]));
    free(rank_of);
    return true;
}

/* ---- IR ---- */

static void check_ir(Pv *v) {
    for (size_t i = 0; i < v->p->roles.len; i++) {
        const FlBundle *b = v->p->roles.data[i];
        for (int m = 0; m < 2; m++) {
            FlVerifyIssues vi = {0};
            int n = m ? fl_verify_program(b->main, b->startup, &vi) : fl_verify_program(b->startup, NULL, &vi);
            for (int k = 0; k < n; k++) {
                const FlVerifyIssue *it = &vi.items.data[k];
                const char *src = it->loc.file >= 0 && (size_t)it->loc.file < b->source_paths.len
                                      ? b->source_paths.data[it->loc.file] : NULL;
                if (src)
                    issue(v, FL_PLAN_RULE_IR, "%s's %s program: %s:%d:%d: %s", role_str(v, b), m ? "main" : "startup",
                          src, it->loc.line, it->loc.col, it->msg);
                else
                    issue(v, FL_PLAN_RULE_IR, "%s's %s program: %s", role_str(v, b), m ? "main" : "startup", it->msg);
            }
            fl_verify_issues_fini(&vi);
        }
    }
}

/* ---- MODE and the servers ---- */

static void mode_op(Pv *v, int64_t role, const FlBlock *b, size_t i, const FlOpDesc *op) {
    (void)i;
    const FlBundle *rb = v->p->roles.data[role];
    const char *who = role_str(v, rb);
    bool trainer = role < v->T;
    bool dist = fl_ops_is(op, FL_OPID_send) || fl_ops_is(op, FL_OPID_recv) || fl_ops_is(op, FL_OPID_distributed_lookup_table) ||
                fl_ops_is(op, FL_OPID_send_barrier) || fl_ops_is(op, FL_OPID_fetch_barrier);
    const char *mode = v->p->mode;
    if (v->allreduce && (dist || fl_ops_is(op, FL_OPID_listen_and_serv))) {
        issue(v, FL_PLAN_RULE_MODE, "%s has a '%s' op, but the plan is allreduce (its trainers sum their gradients "
              "with allreduce ops)", who, op->type);
        return;
    }
    if (!v->allreduce && fl_ops_is(op, FL_OPID_allreduce)) {
        issue(v, FL_PLAN_RULE_MODE, "%s has an 'allreduce' op, but the plan is %s (its trainers send their "
              "gradients to pservers)", who, mode);
        return;
    }
    if (v->allreduce) return;
    if (!trainer && dist) {
        issue(v, FL_PLAN_RULE_MODE, "%s has a '%s' op; pservers only serve (listen_and_serv)", who, op->type);
        return;
    }
    if (trainer && fl_ops_is(op, FL_OPID_listen_and_serv)) {
        issue(v, FL_PLAN_RULE_MODE, "%s has a 'listen_and_serv' op; only pservers serve", who);
        return;
    }
    if (!v->sync && (fl_ops_is(op, FL_OPID_send_barrier) || fl_ops_is(op, FL_OPID_fetch_barrier)))
        issue(v, FL_PLAN_RULE_MODE, "%s has a '%s', but the plan is async (no role waits for the others)", who,
              op->type);
    if (fl_ops_is(op, FL_OPID_send) && attr_bool(op, "sync", true) != v->sync) {
        const FlSlot *x = slot_in(op, "X");
        issue(v, FL_PLAN_RULE_MODE, "send of '%s' from %s has sync=%s, but the plan is %s", nargs(x) ? x->args[0] : "",
              who, v->sync ? "false" : "true", mode);
    }
    if (fl_ops_is(op, FL_OPID_listen_and_serv) && attr_bool(op, "sync_mode", true) != v->sync)
        issue(v, FL_PLAN_RULE_MODE, "%s's listen_and_serv has sync_mode=%s, but the plan is %s", who,
              v->sync ? "false" : "true", mode);
    if (fl_ops_is(op, FL_OPID_listen_and_serv) && b->idx != 0)
        issue(v, FL_PLAN_RULE_MODE, "%s has a listen_and_serv in block %d; a pserver serves from block 0", who, b->idx);
}

static void check_mode(Pv *v) {
    for (size_t i = 0; i < v->p->roles.len; i++) each_op(v, (int64_t)i, v->p->roles.data[i]->main, mode_op);
    for (int64_t t = 0; t < v->T && v->allreduce; t++)
        if (count_ops(v->tr[t].b->main, FL_OPID_allreduce) == 0)
            issue(v, FL_PLAN_RULE_MODE, "trainer %lld has no allreduce op, but the plan is allreduce (it would train "
                  "on its own share only)", (long long)t);
    for (int64_t s = 0; s < v->P; s++) {
        size_t n = count_ops(v->srv[s].b->main, FL_OPID_listen_and_serv);
        if (n != 1)
            issue(v, FL_PLAN_RULE_MODE, "pserver %lld has %zu listen_and_serv ops; a pserver serves with exactly one",
                  (long long)s, n);
    }
}

/* Fills srv[s] from its listen_and_serv (the EXPECT issues of a malformed one on the way). */
static void read_server(Pv *v, int64_t s) {
    Server *sv = &v->srv[s];
    const FlProgram *p = sv->b->main;
    if (!p->blocks.len) return;
    const FlBlock *b0 = p->blocks.data[0];
    for (size_t i = 0; i < b0->ops.len; i++)
        if (fl_ops_is(b0->ops.data[i], FL_OPID_listen_and_serv)) {
            if (sv->ls) return; /* several: MODE said so */
            sv->ls = b0->ops.data[i];
        }
    if (!sv->ls || count_ops(p, FL_OPID_listen_and_serv) != 1) {
        sv->ls = NULL;
        return;
    }
    const FlSlot *x = slot_in(sv->ls, "X");
    for (size_t i = 0; i < nargs(x); i++) fl_map_put_str(&sv->x, x->args[i], MARK);
    const FlAttr *ob = attr_typed(sv->ls, "optimize_blocks", FL_ATTR_BLOCKS);
    FlMap is_opt;
    fl_map_init(&is_opt);
    for (size_t i = 0; ob && i < ob->n; i++) {
        int64_t bi = ob->ints[i];
        if (bi <= 0 || (uint64_t)bi >= p->blocks.len) continue; /* the IR verifier reports it */
        const FlBlock *blk = p->blocks.data[bi];
        fl_map_put(&is_opt, (const char *)&ob->ints[i], sizeof ob->ints[i], MARK);
        for (size_t k = 0; k < blk->ops.len; k++) {
            const FlOpDesc *op = blk->ops.data[k];
            const char *param = (fl_ops_flags(op) & FL_OPF_OPTIMIZE) ? fl_ir_op_input1(op, "Param") : NULL;
            if (!param) continue;
            const FlOpDesc *other = fl_map_find_str(&sv->params, param);
            if (other)
                issue(v, FL_PLAN_RULE_ROWS, "pserver %lld updates '%s' twice (optimize ops '%s' and '%s'): its rows "
                      "would move twice a step", (long long)s, param, other->type, op->type);
            else {
                fl_map_put_str(&sv->params, param, (void *)op);
                fl_map_put_str(&sv->param_block, param, AS_VAL(bi));
                FL_VEC_PUSH(&sv->params_in_order, param);
            }
        }
    }
    const FlAttr *g = attr_typed(sv->ls, "grad_to_block", FL_ATTR_STRINGS);
    for (size_t i = 0; g && i < g->n; i++) {
        const char *e = g->strs[i], *colon = strrchr(e, ':');
        char *end = NULL;
        long long bi = colon ? strtoll(colon + 1, &end, 10) : -1;
        if (!colon || colon == e || !end || *end || end == colon + 1 ||
            !fl_map_find(&is_opt, (const char *)&(int64_t){bi}, sizeof(int64_t))) {
            issue(v, FL_PLAN_RULE_EXPECT, "pserver %lld's grad_to_block entry '%s' names none of its optimize blocks",
                  (long long)s, e);
            continue;
        }
        const char *name = fl_arena_strndup(&v->arena, e, (size_t)(colon - e));
        if (fl_map_find_str(&sv->g2b, name))
            issue(v, FL_PLAN_RULE_EXPECT, "pserver %lld's grad_to_block maps '%s' twice", (long long)s, name);
        else {
            fl_map_put_str(&sv->g2b, name, AS_VAL(bi));
            FL_VEC_PUSH(&sv->grads_in_order, name);
        }
    }
    fl_map_fini(&is_opt);
}

/* ---- what the trainers send and receive ---- */

/* A trainer's distributed_lookup_table: its table's blocks count as received from their servers
 * (the trainer reads their rows there, and the servers must update them). */
static void trainer_lookup(Pv *v, int64_t t, const FlOpDesc *op) {
    const FlAttr *tn = fl_ir_op_attr(op, "table_names"), *ep = attr_typed(op, "epmap", FL_ATTR_INTS);
    size_t n = tn && tn->type == FL_ATTR_STRINGS ? tn->n : 0;
    for (size_t k = 0; k < n; k++) {
        const char *x = tn->strs[k];
        int64_t to = ep && k < ep->n ? ep->ints[k] : -1;
        if (to < 0 || to >= v->P) {
            issue(v, FL_PLAN_RULE_RECV, "distributed_lookup_table of '%s' by trainer %lld names pserver %lld, but the "
                  "plan has pservers 0..%lld", x, (long long)t, (long long)to, (long long)v->P - 1);
            continue;
        }
        void *had = fl_map_find_str(&v->tr[t].recvd, x);
        if (had && OF_VAL(had) != to)
            issue(v, FL_PLAN_RULE_RECV, "trainer %lld looks '%s' up on pservers %lld and %lld", (long long)t, x,
                  (long long)OF_VAL(had), (long long)to);
        if (had) continue; /* a table looked up several times */
        fl_map_put_str(&v->tr[t].recvd, x, AS_VAL(to));
        if (!fl_map_find_str(&v->srv[to].params, x))
            issue(v, FL_PLAN_RULE_RECV, "distributed_lookup_table of '%s' by trainer %lld from pserver %lld: pserver "
                  "%lld does not update it", x, (long long)t, (long long)to, (long long)to);
    }
}

static void trainer_op(Pv *v, int64_t t, const FlBlock *b, size_t i, const FlOpDesc *op) {
    (void)b, (void)i;
    if (fl_ops_is(op, FL_OPID_distributed_lookup_table)) {
        trainer_lookup(v, t, op);
        return;
    }
    bool send = fl_ops_is(op, FL_OPID_send), recv = fl_ops_is(op, FL_OPID_recv);
    if (!send && !recv) return;
    Trainer *tr = &v->tr[t];
    const FlSlot *s = send ? slot_in(op, "X") : slot_out(op, "Out");
    for (size_t k = 0; k < nargs(s); k++) {
        const char *x = s->args[k];
        if (fl_rule_is_empty(x)) continue;
        int64_t to = epmap_at(op, k);
        FlMap *m = send ? &tr->sent : &tr->recvd;
        if (to < 0 || to >= v->P) {
            issue(v, send ? FL_PLAN_RULE_SEND : FL_PLAN_RULE_RECV, "%s of '%s' by trainer %lld names pserver %lld, but "
                  "the plan has pservers 0..%lld", op->type, x, (long long)t, (long long)to, (long long)v->P - 1);
            continue;
        }
        void *had = fl_map_find_str(m, x);
        if (had) {
            issue(v, send ? FL_PLAN_RULE_SEND : FL_PLAN_RULE_RECV, "trainer %lld %s '%s' twice (pservers %lld and "
                  "%lld)", (long long)t, send ? "sends" : "receives", x, (long long)OF_VAL(had), (long long)to);
            continue;
        }
        fl_map_put_str(m, x, AS_VAL(to));
        if (send) {
            const Server *sv = &v->srv[to];
            if (!sv->ls) continue; /* MODE said so */
            const char *want = v->sync ? fl_rule_trainer_name(&v->arena, x, t) : x;
            if (!fl_map_find_str(&sv->g2b, x))
                issue(v, FL_PLAN_RULE_SEND, "send of '%s' from trainer %lld to pserver %lld: pserver %lld has no block "
                      "for it", x, (long long)t, (long long)to, (long long)to);
            else if (!fl_map_find_str(&sv->x, want))
                issue(v, FL_PLAN_RULE_SEND, "send of '%s' from trainer %lld to pserver %lld: pserver %lld's "
                      "listen_and_serv does not receive '%s'", x, (long long)t, (long long)to, (long long)to, want);
        } else if (!fl_map_find_str(&v->srv[to].params, x)) {
            const char *also = "";
            for (int64_t s2 = 0; s2 < v->P; s2++)
                if (fl_map_find_str(&v->srv[s2].params, x))
                    also = fl_arena_printf(&v->arena, " (pserver %lld does)", (long long)s2);
            issue(v, FL_PLAN_RULE_RECV, "recv of '%s' by trainer %lld from pserver %lld: pserver %lld does not update "
                  "it%s", x, (long long)t, (long long)to, (long long)to, also);
        }
    }
}

/* EXPECT and FETCH: what each server expects and updates, against each trainer. */
static void check_expected(Pv *v) {
    for (int64_t s = 0; s < v->P; s++) {
        const Server *sv = &v->srv[s];
        if (!sv->ls) continue;
        for (size_t i = 0; i < sv->grads_in_order.len; i++) {
            const char *g = sv->grads_in_order.data[i];
            for (int64_t t = 0; t < v->T; t++) {
                void *to = fl_map_find_str(&v->tr[t].sent, g);
                if (!to)
                    issue(v, FL_PLAN_RULE_EXPECT, "pserver %lld expects '%s' from trainer %lld, which does not send it",
                          (long long)s, g, (long long)t);
                else if (OF_VAL(to) != s)
                    issue(v, FL_PLAN_RULE_EXPECT, "pserver %lld expects '%s' from trainer %lld, which sends it to "
                          "pserver %lld", (long long)s, g, (long long)t, (long long)OF_VAL(to));
            }
        }
        const FlSlot *x = slot_in(sv->ls, "X");
        for (size_t i = 0; i < nargs(x); i++) {
            const char *n = x->args[i];
            bool known = !v->sync && fl_map_find_str(&sv->g2b, n);
            if (v->sync) { /* n = "G.trainer_t", t < T, for a G of grad_to_block */
                const char *at = NULL;
                for (const char *q = n; (q = strstr(q, FL_RULE_TRAINER_INFIX)); q++) at = q;
                char *end = NULL;
                long long t = at ? strtoll(at + strlen(FL_RULE_TRAINER_INFIX), &end, 10) : -1;
                known = at && end && !*end && end != at + strlen(FL_RULE_TRAINER_INFIX) && t >= 0 && t < v->T &&
                        fl_map_find(&sv->g2b, n, (size_t)(at - n));
            }
            if (!known)
                issue(v, FL_PLAN_RULE_EXPECT, "pserver %lld's listen_and_serv receives '%s', which is no %s in its "
                      "grad_to_block", (long long)s, n, v->sync ? "trainer's copy of a gradient" : "gradient");
        }
        for (size_t i = 0; i < sv->params_in_order.len; i++) {
            const char *pn = sv->params_in_order.data[i];
            for (int64_t t = 0; t < v->T; t++) {
                void *from = fl_map_find_str(&v->tr[t].recvd, pn);
                if (!from)
                    issue(v, FL_PLAN_RULE_FETCH, "pserver %lld updates '%s', but trainer %lld does not receive it",
                          (long long)s, pn, (long long)t);
            }
        }
    }
}

/* ---- FANIN ---- */

static void check_fanin(Pv *v) {
    for (int64_t s = 0; s < v->P; s++) {
        const FlOpDesc *ls = v->srv[s].ls;
        if (!ls) continue;
        int64_t fanin = attr_int(ls, "fanin", 1);
        if (fanin != v->T)
            issue(v, FL_PLAN_RULE_FANIN, "pserver %lld's listen_and_serv has fanin=%lld, but the plan has %lld "
                  "trainers", (long long)s, (long long)fanin, (long long)v->T);
    }
    if (!v->sync || v->allreduce) return;
    for (int64_t t = 0; t < v->T; t++) {
        const FlProgram *p = v->tr[t].b->main;
        size_t nsb = count_ops(p, FL_OPID_send_barrier), nfb = count_ops(p, FL_OPID_fetch_barrier);
        if (nsb != 1 || nfb != 1) {
            issue(v, FL_PLAN_RULE_FANIN, "trainer %lld passes %zu send_barrier and %zu fetch_barrier ops a step; each "
                  "sync pserver counts one of each from every one of the %lld trainers", (long long)t, nsb, nfb,
                  (long long)v->T);
            continue;
        }
        /* block 0: sends, send_barrier, recvs, fetch_barrier */
        const FlBlock *b0 = p->blocks.data[0];
        int phase = 0; /* 0 before the send barrier, 1 between, 2 after the fetch barrier */
        for (size_t i = 0; i < b0->ops.len; i++) {
            const FlOpDesc *op = b0->ops.data[i];
            if (fl_ops_is(op, FL_OPID_send_barrier)) phase = phase == 0 ? 1 : phase;
            else if (fl_ops_is(op, FL_OPID_fetch_barrier)) phase = 2;
            else if (fl_ops_is(op, FL_OPID_send) && phase != 0)
                issue(v, FL_PLAN_RULE_FANIN, "trainer %lld sends '%s' after its send_barrier: the pservers would "
                      "start the step without it", (long long)t, nargs(slot_in(op, "X")) ? slot_in(op, "X")->args[0] : "");
            else if (fl_ops_is(op, FL_OPID_recv) && phase != 1)
                issue(v, FL_PLAN_RULE_FANIN, "trainer %lld receives '%s' %s", (long long)t,
                      nargs(slot_out(op, "Out")) ? slot_out(op, "Out")->args[0] : "",
                      phase == 0 ? "before its send_barrier: the pservers have not updated it yet"
                                 : "after its fetch_barrier");
        }
    }
}

/* ---- ROWS ---- */

/* The rows the pserver holding block `name` declares, and the holder (-1: none, -2: several). */
static int64_t holder_of(Pv *v, const char *name, const FlVarDesc **decl, int64_t *second) {
    int64_t h = -1;
    *decl = NULL;
    for (int64_t s = 0; s < v->P; s++) {
        if (!fl_map_find_str(&v->srv[s].params, name)) continue;
        if (h >= 0) {
            *second = s;
            return -2 - h;
        }
        h = s;
        *decl = var0(v->srv[s].b->main, name);
    }
    return h;
}

/* The gradient pserver s expects for its parameter block pb: the grad_to_block entry of the
 * optimize block that updates pb. NULL when there is none. */
static const char *grad_for(Pv *v, int64_t s, const char *pb) {
    const Server *sv = &v->srv[s];
    void *bi = fl_map_find_str(&sv->param_block, pb);
    for (size_t i = 0; bi && i < sv->grads_in_order.len; i++)
        if (fl_map_find_str(&sv->g2b, sv->grads_in_order.data[i]) == bi) return sv->grads_in_order.data[i];
    return NULL;
}

/* One parameter W of trainer 0 (blocks: its concat's X; NULL when kept whole). */
static void check_param_rows(Pv *v, const char *w, const FlSlot *blocks) {
    const FlVarDesc *full = var0(v->tr[0].b->main, w);
    if (!full || full->ndim < 1) return;
    size_t n = blocks ? blocks->nargs : 1;
    int64_t *rows = calloc(n, sizeof *rows), *holders = calloc(n, sizeof *holders), sum = 0;
    const char **gnames = calloc(n, sizeof *gnames);
    bool known = true;
    for (size_t k = 0; k < n; k++) {
        const char *bn = blocks ? blocks->args[k] : w;
        const FlVarDesc *d;
        int64_t second = -1, h = holder_of(v, bn, &d, &second);
        if (h == -1) {
            issue(v, FL_PLAN_RULE_ROWS, "no pserver updates '%s'%s", bn,
                  blocks ? fl_arena_printf(&v->arena, ", block %zu of '%s' in trainer 0's concat", k, w)
                         : ", a parameter trainer 0 receives whole");
            known = false;
            continue;
        }
        if (h < -1) {
            issue(v, FL_PLAN_RULE_ROWS, "'%s' is updated by pservers %lld and %lld: its rows of '%s' would be covered "
                  "twice", bn, (long long)(-2 - h), (long long)second, w);
            known = false;
            continue;
        }
        if (!d || d->ndim != full->ndim) {
            issue(v, FL_PLAN_RULE_ROWS, "pserver %lld declares '%s' as %s, which is no block of rows of '%s' %s",
                  (long long)h, bn, d ? shape_str(v, d) : "nothing", w, shape_str(v, full));
            known = false;
            continue;
        }
        bool cols = true;
        for (int i = 1; i < d->ndim; i++) cols = cols && d->shape[i] == full->shape[i];
        if (!cols || d->shape[0] < 1 || (!blocks && d->shape[0] != full->shape[0]) || d->dtype != full->dtype) {
            issue(v, FL_PLAN_RULE_ROWS, "pserver %lld declares '%s' as %s %s, which is no block of rows of '%s' %s %s",
                  (long long)h, bn, fl_dtype_name(d->dtype), shape_str(v, d), w, fl_dtype_name(full->dtype),
                  shape_str(v, full));
            known = false;
            continue;
        }
        rows[k] = d->shape[0];
        holders[k] = h;
        sum += rows[k];
    }
    if (known && blocks && sum != full->shape[0])
        issue(v, FL_PLAN_RULE_ROWS, "the %zu blocks of '%s' hold %lld rows on the pservers, but '%s' has %lld", n, w,
              (long long)sum, w, (long long)full->shape[0]);
    /* every trainer's split of the gradient (W@GRAD, or what the trainers make of it: a
     * regularized sum) into the blocks the holders expect, with the blocks' rows */
    if (!blocks || !known) goto done;
    for (size_t k = 0; k < n; k++)
        if (!(gnames[k] = grad_for(v, holders[k], blocks->args[k]))) goto done; /* EXPECT/SEND tell */
    FlBuf want = {0};
    for (size_t k = 0; k < n; k++)
        fl_buf_printf(&want, "%s'%s' (%lld rows)", k ? ", " : "", gnames[k], (long long)rows[k]);
    for (int64_t t = 0; t < v->T; t++) {
        const FlProgram *p = v->tr[t].b->main;
        const FlOpDesc *split = NULL;
        for (size_t bi = 0; bi < p->blocks.len && !split; bi++)
            for (size_t i = 0; i < p->blocks.data[bi]->ops.len && !split; i++) {
                const FlOpDesc *op = p->blocks.data[bi]->ops.data[i];
                const FlSlot *out = fl_ops_is(op, FL_OPID_split) || fl_ops_is(op, FL_OPID_split_selected_rows)
                                        ? slot_out(op, "Out")
                                        : NULL;
                for (size_t a = 0; a < nargs(out) && !split; a++)
                    for (size_t k = 0; k < n && !split; k++)
                        if (!strcmp(out->args[a], gnames[k])) split = op;
            }
        if (!split) {
            issue(v, FL_PLAN_RULE_ROWS, "trainer %lld splits no gradient of '%s' into the blocks the pservers expect: "
                  "%s", (long long)t, w, fl_buf_str(&want));
            continue;
        }
        const FlSlot *out = slot_out(split, "Out");
        /* a sparse gradient's split_selected_rows cuts by height_sections, always along the rows */
        bool rows_split = fl_ops_is(split, FL_OPID_split_selected_rows);
        const FlAttr *sec = attr_typed(split, rows_split ? "height_sections" : "sections", FL_ATTR_INTS);
        bool ok = nargs(out) == n && sec && sec->n == n && (rows_split || attr_int(split, "axis", 0) == 0);
        for (size_t k = 0; ok && k < n; k++) ok = sec->ints[k] == rows[k] && !strcmp(out->args[k], gnames[k]);
        if (!ok)
            issue(v, FL_PLAN_RULE_ROWS, "trainer %lld's split of '%s' does not cut it along axis 0 into the blocks the "
                  "pservers expect: %s", (long long)t, fl_ir_op_input1(split, "X") ? fl_ir_op_input1(split, "X") : "",
                  fl_buf_str(&want));
    }
    fl_buf_free(&want);
done:
    free(rows);
    free(holders);
    free(gnames);
}

/* Each trainer's concats; trainer 0's parameters against the servers. */
static void check_rows(Pv *v) {
    for (int64_t t = 0; t < v->T; t++) {
        const FlProgram *p = v->tr[t].b->main;
        for (size_t bi = 0; bi < p->blocks.len; bi++)
            for (size_t i = 0; i < p->blocks.data[bi]->ops.len; i++) {
                const FlOpDesc *op = p->blocks.data[bi]->ops.data[i];
                const char *w = fl_ops_is(op, FL_OPID_concat) ? fl_ir_op_output1(op, "Out") : NULL;
                const FlSlot *x = w ? slot_in(op, "X") : NULL;
                bool ours = false; /* a concat of received blocks */
                for (size_t k = 0; k < nargs(x); k++) ours = ours || fl_map_find_str(&v->tr[t].recvd, x->args[k]);
                if (!ours) continue;
                bool ok = attr_int(op, "axis", 0) == 0;
                for (size_t k = 0; ok && k < x->nargs; k++) {
                    int64_t kk = -1;
                    size_t bl = fl_rule_block_base_len(x->args[k], &kk);
                    ok = bl == strlen(w) && !strncmp(x->args[k], w, bl) && kk == (int64_t)k &&
                         fl_map_find_str(&v->tr[t].recvd, x->args[k]);
                }
                if (!ok) {
                    issue(v, FL_PLAN_RULE_ROWS, "trainer %lld's concat of '%s' does not join the received blocks "
                          "%s.block0..%zu in order along axis 0", (long long)t, w, w, x->nargs - 1);
                    continue;
                }
                if (t != 0) {
                    const FlOpDesc *c0 = fl_map_find_str(&v->concat0, w);
                    size_t n0 = c0 ? nargs(slot_in(c0, "X")) : 0;
                    if (n0 != x->nargs)
                        issue(v, FL_PLAN_RULE_ROWS, "trainer %lld joins '%s' from %zu blocks, trainer 0 from %zu",
                              (long long)t, w, x->nargs, n0);
                    continue;
                }
                fl_map_put_str(&v->concat0, w, (void *)op);
                for (size_t k = 0; k < x->nargs; k++) fl_map_put_str(&v->block_of, x->args[k], (void *)op);
            }
    }
    /* trainer 0's parameters in the order of its recvs: the blocks it joins, the vars it
     * receives whole */
    FlMap done;
    fl_map_init(&done);
    const FlProgram *p0 = v->tr[0].b->main;
    for (size_t bi = 0; bi < p0->blocks.len; bi++)
        for (size_t i = 0; i < p0->blocks.data[bi]->ops.len; i++) {
            const FlOpDesc *op = p0->blocks.data[bi]->ops.data[i];
            const FlSlot *out = fl_ops_is(op, FL_OPID_recv) ? slot_out(op, "Out") : NULL;
            for (size_t k = 0; k < nargs(out); k++) {
                const FlOpDesc *c = fl_map_find_str(&v->block_of, out->args[k]);
                const char *w = c ? fl_ir_op_output1(c, "Out") : out->args[k];
                if (fl_rule_is_empty(w) || fl_map_find_str(&done, w)) continue;
                fl_map_put_str(&done, w, MARK);
                check_param_rows(v, w, c ? slot_in(c, "X") : NULL);
            }
        }
    fl_map_fini(&done);
}

/* ---- STATE ---- */

/* The optimizer op `op` of pserver s on parameter block `pb` (block k of w; k = -1: w whole). */
static void check_op_state(Pv *v, int64_t s, const FlOpDesc *op, const char *pb, const char *w, int64_t k,
                           FlMap *owner) {
    const FlProgram *sp = v->srv[s].b->main;
    const FlVarDesc *pd = var0(sp, pb), *full = var0(v->tr[0].b->main, w);
    for (size_t si = 0; si < op->ins.len; si++) {
        const FlSlot *sl = &op->ins.data[si];
        if (!strcmp(sl->name, "Param") || !strcmp(sl->name, "Grad") || !strcmp(sl->name, "LearningRate")) continue;
        for (size_t a = 0; a < sl->nargs; a++) {
            const char *st = sl->args[a];
            if (fl_rule_is_empty(st)) continue;
            const char *base = st;
            if (k >= 0) {
                int64_t kk = -1;
                size_t bl = fl_rule_block_base_len(st, &kk);
                if (!bl || kk != k) {
                    issue(v, FL_PLAN_RULE_STATE, "pserver %lld's %s on '%s' uses '%s' (%s), which is not that "
                          "block's own state (a name ending in '" FL_RULE_BLOCK_INFIX "%lld')", (long long)s,
                          op->type, pb, st, sl->name, (long long)k);
                    continue;
                }
                base = fl_arena_strndup(&v->arena, st, bl);
            }
            bool written = false;
            for (size_t o = 0; o < op->outs.len && !written; o++)
                for (size_t b = 0; b < op->outs.data[o].nargs; b++)
                    written = written || !strcmp(op->outs.data[o].args[b], st);
            const char *other = written ? fl_map_find_str(owner, st) : NULL;
            if (other && strcmp(other, pb)) {
                issue(v, FL_PLAN_RULE_STATE, "pserver %lld updates the state '%s' for both '%s' and '%s'", (long long)s,
                      st, other, pb);
                continue;
            }
            if (written) fl_map_put_str(owner, st, (void *)pb);
            const FlVarDesc *sd = var0(sp, st), *local = var0(v->tr[0].b->startup, base);
            if (!sd || !pd || !full || !local) continue; /* the IR verifier reports undeclared vars */
            bool like_param = same_shape(local, full);
            const FlVarDesc *want = like_param ? pd : local;
            if (sd->dtype != local->dtype)
                issue(v, FL_PLAN_RULE_STATE, "pserver %lld declares '%s' (%s of '%s') as %s, but the local '%s' is %s",
                      (long long)s, st, sl->name, pb, fl_dtype_name(sd->dtype), base, fl_dtype_name(local->dtype));
            else if (!same_shape(sd, want))
                issue(v, FL_PLAN_RULE_STATE, "pserver %lld declares '%s' (%s of '%s') as %s, but it should be %s: %s", (long long)s, st, sl->name, pb,
                      shape_str(v, sd), shape_str(v, want),
                      like_param ? fl_arena_printf(&v->arena, "the local '%s' has the parameter's shape, so it is cut like '%s'", base, pb)
                                 : fl_arena_printf(&v->arena, "the local '%s' %s is copied whole", base, shape_str(v, local)));
        }
    }
}

static void check_state(Pv *v) {
    for (int64_t s = 0; s < v->P; s++) {
        const Server *sv = &v->srv[s];
        FlMap owner;
        fl_map_init(&owner);
        for (size_t i = 0; i < sv->params_in_order.len; i++) {
            const char *pb = sv->params_in_order.data[i];
            const FlOpDesc *op = fl_map_find_str(&sv->params, pb), *c = fl_map_find_str(&v->block_of, pb);
            int64_t k = -1;
            const char *w = pb;
            if (c) {
                w = fl_ir_op_output1(c, "Out");
                fl_rule_block_base_len(pb, &k);
            }
            if (w) check_op_state(v, s, op, pb, w, k, &owner);
        }
        fl_map_fini(&owner);
    }
}

/* ---- INIT ---- */

static bool writes(const FlOpDesc *op, const char *name) {
    for (size_t o = 0; o < op->outs.len; o++)
        for (size_t a = 0; a < op->outs.data[o].nargs; a++)
            if (!strcmp(op->outs.data[o].args[a], name)) return true;
    return false;
}

/* A startup split of pserver s: each block it keeps is output K of "X.blockK", with the rows
 * main declares for it; the sections add up to X's rows. */
static void check_init_split(Pv *v, int64_t s, const FlOpDesc *op) {
    const FlProgram *sp = v->srv[s].b->startup, *mp = v->srv[s].b->main;
    const char *x = fl_ir_op_input1(op, "X");
    const FlSlot *out = slot_out(op, "Out");
    const FlAttr *sec = attr_typed(op, "sections", FL_ATTR_INTS);
    const FlVarDesc *xd = x ? var0(sp, x) : NULL;
    if (!xd || xd->ndim < 1 || !sec || sec->n != nargs(out)) return; /* not a cut into blocks */
    int64_t sum = 0;
    bool blocks = false;
    for (size_t k = 0; k < sec->n; k++) {
        sum += sec->ints[k];
        const char *n = out->args[k];
        int64_t kk = -1;
        size_t bl = fl_rule_block_base_len(n, &kk);
        const FlVarDesc *md = var0(mp, n);
        if (fl_rule_is_empty(n) || !bl || strncmp(n, x, bl) || x[bl]) continue;
        blocks = true;
        if (kk != (int64_t)k)
            issue(v, FL_PLAN_RULE_INIT, "pserver %lld's startup split of '%s' writes '%s' as its output %zu, which "
                  "holds the rows of block %zu", (long long)s, x, n, k, k);
        else if (md && md->ndim >= 1 && md->shape[0] != sec->ints[k])
            issue(v, FL_PLAN_RULE_INIT, "pserver %lld's startup split of '%s' gives '%s' %lld rows, but its main "
                  "program declares %lld", (long long)s, x, n, (long long)sec->ints[k], (long long)md->shape[0]);
    }
    if (blocks && xd->shape[0] >= 0 && sum != xd->shape[0])
        issue(v, FL_PLAN_RULE_INIT, "pserver %lld's startup split of '%s' cuts %lld rows, but '%s' has %lld",
              (long long)s, x, (long long)sum, x, (long long)xd->shape[0]);
}

static void check_init(Pv *v) {
    const FlProgram *local = v->tr[0].b->startup;
    for (int64_t s = 0; s < v->P; s++) {
        const FlBundle *b = v->srv[s].b;
        if (!b->main->blocks.len || !b->startup->blocks.len) continue;
        const FlBlock *m0 = b->main->blocks.data[0], *s0 = b->startup->blocks.data[0];
        for (size_t i = 0; i < m0->vars.len; i++) {
            const FlVarDesc *d = m0->vars.data[i];
            if (!d->persistable) continue;
            bool init = false;
            for (size_t k = 0; k < s0->ops.len && !init; k++) init = writes(s0->ops.data[k], d->name);
            if (!init)
                issue(v, FL_PLAN_RULE_INIT, "pserver %lld holds '%s', but its startup program does not initialise it",
                      (long long)s, d->name);
        }
        for (size_t i = 0; i < s0->vars.len; i++) {
            const FlVarDesc *d = s0->vars.data[i], *ld = var0(local, d->name);
            if (ld && (d->dtype != ld->dtype || !same_shape(d, ld)))
                issue(v, FL_PLAN_RULE_INIT, "pserver %lld's startup program declares '%s' as %s %s, but the local "
                      "program (trainer 0's startup) as %s %s", (long long)s, d->name, fl_dtype_name(d->dtype),
                      shape_str(v, d), fl_dtype_name(ld->dtype), shape_str(v, ld));
        }
        for (size_t k = 0; k < s0->ops.len; k++)
            if (fl_ops_is(s0->ops.data[k], FL_OPID_split)) check_init_split(v, s, s0->ops.data[k]);
    }
}

/* ---- ALLREDUCE ---- */

static const FlOpDesc *nth_allreduce(const FlProgram *p, size_t n) {
    for (size_t bi = 0; bi < p->blocks.len; bi++)
        for (size_t i = 0; i < p->blocks.data[bi]->ops.len; i++) {
            const FlOpDesc *op = p->blocks.data[bi]->ops.data[i];
            if (fl_ops_is(op, FL_OPID_allreduce) && n-- == 0) return op;
        }
    return NULL;
}

/* The first difference of two slots, as a phrase; NULL when they match. */
static const char *slot_diff(Pv *v, const FlSlot *a, const FlSlot *b) {
    size_t na = nargs(a), nb = nargs(b);
    for (size_t i = 0; i < na || i < nb; i++) {
        const char *x = i < na ? a->args[i] : NULL, *y = i < nb ? b->args[i] : NULL;
        if (x && y && !strcmp(x, y)) continue;
        return fl_arena_printf(&v->arena, "%s%s%s at position %zu where trainer 0's has %s%s%s", x ? "'" : "",
                               x ? x : "nothing", x ? "'" : "", i, y ? "'" : "", y ? y : "nothing", y ? "'" : "");
    }
    return NULL;
}

static void check_allreduce(Pv *v) {
    const FlProgram *p0 = v->tr[0].b->main;
    size_t n0 = count_ops(p0, FL_OPID_allreduce);
    for (int64_t t = 1; t < v->T; t++) {
        const FlProgram *p = v->tr[t].b->main;
        size_t n = count_ops(p, FL_OPID_allreduce);
        if (n != n0) {
            issue(v, FL_PLAN_RULE_ALLREDUCE, "trainer %lld has %zu allreduce ops, trainer 0 has %zu: a collective "
                  "that one trainer does not join never completes", (long long)t, n, n0);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            const FlOpDesc *a = nth_allreduce(p, i), *b = nth_allreduce(p0, i);
            const char *d = slot_diff(v, slot_in(a, "X"), slot_in(b, "X")), *what = "X";
            if (!d) d = slot_diff(v, slot_out(a, "Out"), slot_out(b, "Out")), what = "Out";
            if (d)
                issue(v, FL_PLAN_RULE_ALLREDUCE, "trainer %lld's allreduce #%zu lists %s in %s: the trainers would "
                      "sum different gradients", (long long)t, i, d, what);
            else if (attr_bool(a, "loss_sum", false) != attr_bool(b, "loss_sum", false))
                issue(v, FL_PLAN_RULE_ALLREDUCE, "trainer %lld's allreduce #%zu has loss_sum=%s, trainer 0's %s",
                      (long long)t, i, attr_bool(a, "loss_sum", false) ? "true" : "false",
                      attr_bool(b, "loss_sum", false) ? "true" : "false");
        }
    }
    /* trainer 0 sums the gradient of every parameter it updates */
    FlMap summed;
    fl_map_init(&summed);
    for (size_t i = 0; i < n0; i++) {
        const FlSlot *x = slot_in(nth_allreduce(p0, i), "X");
        for (size_t k = 0; k < nargs(x); k++) fl_map_put_str(&summed, x->args[k], MARK);
    }
    for (size_t bi = 0; bi < p0->blocks.len && n0; bi++)
        for (size_t i = 0; i < p0->blocks.data[bi]->ops.len; i++) {
            const FlOpDesc *op = p0->blocks.data[bi]->ops.data[i];
            const char *w = (fl_ops_flags(op) & FL_OPF_OPTIMIZE) ? fl_ir_op_input1(op, "Param") : NULL;
            if (!w) continue;
            const char *g = fl_rule_grad_name(&v->arena, w);
            if (fl_ir_var_lookup(p0, p0->blocks.data[bi], g) && !fl_map_find_str(&summed, g))
                issue(v, FL_PLAN_RULE_ALLREDUCE, "trainer 0 updates '%s', but no allreduce sums '%s': the trainers' "
                      "copies of it would drift apart", w, g);
        }
    fl_map_fini(&summed);
}

/* ---- the plan ---- */

int fl_plan_verify(const FlPlan *plan, FlPlanIssues *out) {
    Pv v = {.p = plan, .out = out};
    fl_arena_init(&v.arena);
    fl_map_init(&v.block_of);
    fl_map_init(&v.concat0);
    if (!plan->mode || (strcmp(plan->mode, "sync") && strcmp(plan->mode, "async") && strcmp(plan->mode, "allreduce"))) {
        issue(&v, FL_PLAN_RULE_MODE, "the plan's mode is '%s'; expected sync, async or allreduce",
              plan->mode ? plan->mode : "");
        goto done;
    }
    v.sync = !strcmp(plan->mode, "sync");
    v.allreduce = !strcmp(plan->mode, "allreduce");
    if (!check_ranks(&v)) goto done;
    v.T = plan->trainers;
    v.P = plan->pservers;
    if (v.allreduce && v.P)
        issue(&v, FL_PLAN_RULE_MODE, "the plan is allreduce but has %lld pservers", (long long)v.P);
    v.tr = calloc((size_t)v.T, sizeof *v.tr);
    v.srv = calloc((size_t)v.P + 1, sizeof *v.srv);
    for (int64_t t = 0; t < v.T; t++) {
        v.tr[t].b = plan->roles.data[t];
        fl_map_init(&v.tr[t].sent);
        fl_map_init(&v.tr[t].recvd);
    }
    for (int64_t s = 0; s < v.P; s++) {
        v.srv[s].b = plan->roles.data[v.T + s];
        fl_map_init(&v.srv[s].x);
        fl_map_init(&v.srv[s].g2b);
        fl_map_init(&v.srv[s].params);
        fl_map_init(&v.srv[s].param_block);
    }
    check_ir(&v);
    check_mode(&v);
    if (v.allreduce) {
        check_allreduce(&v);
    } else {
        for (int64_t s = 0; s < v.P; s++) read_server(&v, s);
        for (int64_t t = 0; t < v.T; t++) each_op(&v, t, v.tr[t].b->main, trainer_op);
        check_expected(&v);
        check_fanin(&v);
        check_rows(&v);
        check_state(&v);
        check_init(&v);
    }
    for (int64_t t = 0; t < v.T; t++) {
        fl_map_fini(&v.tr[t].sent);
        fl_map_fini(&v.tr[t].recvd);
    }
    for (int64_t s = 0; s < v.P; s++) {
        fl_map_fini(&v.srv[s].x);
        fl_map_fini(&v.srv[s].g2b);
        fl_map_fini(&v.srv[s].params);
        fl_map_fini(&v.srv[s].param_block);
        FL_VEC_FREE(&v.srv[s].params_in_order);
        FL_VEC_FREE(&v.srv[s].grads_in_order);
    }
    free(v.tr);
    free(v.srv);
done:
    fl_map_fini(&v.block_of);
    fl_map_fini(&v.concat0);
    fl_arena_fini(&v.arena);
    return v.count;
}
