/* driver_dist.c: fluid.DistributeTranspiler in a script (docs/distributed.md, "DistributeTranspiler
 * in a script"). The native module `_dist` (used by stdlib/fluid/transpiler/):
 *
 *   transpile(trainer_id, program, startup_program, endpoints, trainers, sync, min_block, dispatch)
 *                         records the plan the script asks for (checked; a second call must ask
 *                         for the same one)
 *   trainer_program()     the default main program (Fluid's transpiler rewrites it in place; the
 *                         plan's trainers get it transpiled)
 *   pserver_program(p, which)
 *                         a Program standing for pserver p's "main" or "startup" program: an
 *                         empty program of its own, which the driver runs by name; the plan gives
 *                         that role the transpiler's programs instead
 *   check_pserver_program(p, prog), check_startup(prog)
 *                         get_startup_program's optional arguments must be those programs
 *
 * A compilation hands what was asked to its caller (FlCompileOptions.dist, fl_ev_dist_finish);
 * fl_compile_plan compiles the script once per role with the role's variables in the environment
 * the script reads (os.getenv), transpiles each compilation with compiler/transpile.c and keeps
 * that role's bundle. So trainer t's bundle is what the script does as trainer t (its driver,
 * feeding its own batches), and pserver p's is the transpiler's pserver p, once the script, run as
 * pserver p, is seen to do what a pserver does (its startup program, then its pserver program).
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/ops.h"
#include "compiler/plan_verify.h"
#include "compiler/transpile.h"
#include "lang/eval.h"
#include "lang/eval_impl.h"

typedef struct DistState {
    bool present;
    FlSpan at;            /* the first transpile() call */
    int64_t trainer_id, trainers;
    bool sync, hash;
    int64_t min_block;
    FL_VEC(char *) eps;   /* owned */
    int64_t pserver;      /* whose programs pserver_program() gave, -1: none yet */
    FlProgram *ps_main, *ps_startup; /* in c->programs (or adopted by the bundle) */
    char *load;           /* owned: load_persistables_for_increment's dirname on ps_main, else NULL */
} DistState;

static DistState *state(Ctx *c) {
    if (!c->dist) {
        c->dist = fl_xcalloc(1, sizeof *c->dist);
        c->dist->pserver = -1;
    }
    return c->dist;
}

void fl_ev_dist_free(Ctx *c) {
    if (!c->dist) return;
    for (size_t i = 0; i < c->dist->eps.len; i++) free(c->dist->eps.data[i]);
    FL_VEC_FREE(&c->dist->eps);
    free(c->dist->load);
    free(c->dist);
    c->dist = NULL;
}

void fl_script_dist_fini(FlScriptDist *d) {
    for (int64_t i = 0; d->endpoints && i < d->pservers; i++) free(d->endpoints[i]);
    free(d->endpoints);
    free(d->pserver_main);
    free(d->pserver_startup);
    free(d->load);
    free(d->where);
    memset(d, 0, sizeof *d);
}

static bool is_default(Ctx *c, FlValue *p, const FlProgram *want) {
    return !p || p->kind == VK_NONE || (p->kind == VK_PROGRAM && p->prog == want);
}

static FlValue *d_transpile(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("transpile", "trainer_id program startup_program endpoints trainers sync min_block dispatch", 8);
    int64_t tid, T, minb;
    if (!fl_ev_want_int(c, v[0], "transpile(trainer_id=)", a->span, &tid) ||
        !fl_ev_want_int(c, v[4], "transpile(trainers=)", a->span, &T) ||
        !fl_ev_want_int(c, v[6], "min_block_size", a->span, &minb))
        return c->error;
    if (!is_default(c, v[1], c->bundle->main))
        return fl_ev_error(c, a->span, "transpile(program=): the plan is made of the default main program (the "
                           "one the script's trainers run); build the model in it");
    if (!is_default(c, v[2], c->bundle->startup))
        return fl_ev_error(c, a->span, "transpile(startup_program=): the plan is made of the default startup "
                           "program; initialise the model in it");
    if (T < 1 || T > 4096)
        return fl_ev_error(c, a->span, "transpile(trainers=%lld): the number of trainers must be between 1 and "
                           "4096", (long long)T);
    if (tid < 0 || tid >= T)
        return fl_ev_error(c, a->span, "transpile(trainer_id=%lld): a trainer's id is between 0 and trainers - 1 "
                           "(%lld)", (long long)tid, (long long)(T - 1));
    FlValue *eps = v[3];
    if (eps->list.len < 1 || eps->list.len > 4096)
        return fl_ev_error(c, a->span, "transpile(pservers=): between 1 and 4096 endpoints, found %zu", eps->list.len);
    for (size_t i = 0; i < eps->list.len; i++) {
        FlValue *e = eps->list.items[i];
        if (e->kind != VK_STR || !e->str.n)
            return fl_ev_error(c, a->span, "transpile(pservers=): endpoint %zu is empty (pservers='ip:port,ip:port')",
                               i + 1);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(eps->list.items[k]->str.s, e->str.s))
                return fl_ev_error(c, a->span, "transpile(pservers=): '%s' is given twice", e->str.s);
    }
    DistState *d = state(c);
    bool sync = v[5]->kind == VK_BOOL && v[5]->b, hash = v[7]->kind == VK_STR && !strcmp(v[7]->str.s, "hash");
    if (d->present) {
        bool same = d->trainer_id == tid && d->trainers == T && d->sync == sync && d->hash == hash &&
                    d->min_block == minb && d->eps.len == eps->list.len;
        for (size_t i = 0; same && i < eps->list.len; i++) same = !strcmp(d->eps.data[i], eps->list.items[i]->str.s);
        if (!same)
            return fl_ev_error(c, a->span, "transpile() again with other arguments: a script makes one plan (the "
                               "first call is at line %d)", fl_ev_loc(c, d->at).line);
        return c->none;
    }
    d->present = true;
    d->at = fl_ev_user_span(c, a->span);
    d->trainer_id = tid;
    d->trainers = T;
    d->sync = sync;
    d->hash = hash;
    d->min_block = minb;
    for (size_t i = 0; i < eps->list.len; i++) FL_VEC_PUSH(&d->eps, fl_xstrdup(eps->list.items[i]->str.s));
    return c->none;
}

static FlValue *program_value(Ctx *c, FlProgram *p) {
    FlValue *v = fl_v_new(c, VK_PROGRAM);
    v->prog = p;
    return v;
}

static FlValue *d_trainer_program(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("trainer_program", "", 0);
    (void)v;
    return program_value(c, c->bundle->main);
}

static FlValue *d_pserver_program(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("pserver_program", "p which", 2);
    DistState *d = state(c);
    int64_t p = v[0]->i;
    if (d->pserver >= 0 && d->pserver != p)
        return fl_ev_error(c, a->span, "the programs of pserver %lld ('%s') after those of pserver %lld ('%s'): a "
                           "script run as one pserver asks for that pserver's programs alone", (long long)p,
                           d->eps.data[p], (long long)d->pserver, d->eps.data[d->pserver]);
    d->pserver = p;
    bool main = !strcmp(v[1]->str.s, "main");
    FlProgram **slot = main ? &d->ps_main : &d->ps_startup;
    if (!*slot) {
        *slot = fl_ir_program_new();
        FL_VEC_PUSH(&c->programs, *slot);
    }
    return program_value(c, *slot);
}

static FlValue *d_check_pserver_program(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("check_pserver_program", "p prog", 2);
    DistState *d = state(c);
    if (v[1]->kind != VK_PROGRAM || !d->ps_main || v[1]->prog != d->ps_main || d->pserver != v[0]->i)
        return fl_ev_error(c, a->span, "get_startup_program(pserver_program=): not the program get_pserver_program() "
                           "gave for this endpoint");
    return c->none;
}

static FlValue *d_check_startup(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("check_startup", "prog", 1);
    if (!is_default(c, v[0], c->bundle->startup))
        return fl_ev_error(c, a->span, "get_startup_program(startup_program=): the plan is made of the default "
                           "startup program");
    return c->none;
}

/* increment(dirname, program): contrib.load_persistables_for_increment on this pserver's own
 * program (get_pserver_program's): the role loads its vars from checkpoint dirname after its
 * startup program (Bundle.load), as flrun --load does; True. Another program: False (the
 * stdlib loads it on the driver). */
static FlValue *d_increment(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("increment", "dirname program", 2);
    if (!fl_ev_want_str(c, v[0], "load_persistables_for_increment(dirname=)", a->span)) return c->error;
    DistState *d = c->dist;
    if (v[1]->kind != VK_PROGRAM || !d || !d->ps_main || v[1]->prog != d->ps_main) return c->vfalse;
    if (d->load && strcmp(d->load, v[0]->str.s) != 0)
        return fl_ev_error(c, a->span, "load_persistables_for_increment: the pserver loads '%s' already; a pserver "
                           "loads one checkpoint", d->load);
    free(d->load);
    d->load = fl_xstrdup(v[0]->str.s);
    return c->vtrue;
}

static const NativeFn dist_fns[] = {
    {"increment", d_increment},
    {"transpile", d_transpile},
    {"trainer_program", d_trainer_program},
    {"pserver_program", d_pserver_program},
    {"check_pserver_program", d_check_pserver_program},
    {"check_startup", d_check_startup},
};

void fl_ev_dist_install(Ctx *c) { fl_ev_module_of_fns(c, "_dist", dist_fns, FL_ARRAY_LEN(dist_fns)); }

static char *bundle_name_of(const FlBundle *b, const FlProgram *p) {
    for (size_t i = 0; p && i < b->programs.len; i++)
        if (b->programs.data[i].program == p) return fl_xstrdup(b->programs.data[i].name);
    return NULL;
}

void fl_ev_dist_finish(Ctx *c) {
    DistState *d = c->dist;
    if (!d || !d->present) return;
    FlScriptDist *o = c->opt->dist;
    if (!o) {
        fl_diag_error(&c->diag, d->at, "the script transpiles itself (DistributeTranspiler.transpile): build its plan "
                      "with `flc build FILE.fl -o FILE.plan` (one compilation per role) and run the plan under mpirun");
        return;
    }
    o->present = true;
    o->trainer_id = d->trainer_id;
    o->trainers = d->trainers;
    o->pservers = (int64_t)d->eps.len;
    o->sync = d->sync;
    o->hash = d->hash;
    o->min_block_size = d->min_block;
    o->endpoints = fl_xcalloc(d->eps.len, sizeof *o->endpoints);
    for (size_t i = 0; i < d->eps.len; i++) o->endpoints[i] = fl_xstrdup(d->eps.data[i]);
    o->pserver = d->pserver;
    o->pserver_main = bundle_name_of(c->bundle, d->ps_main);
    o->pserver_startup = bundle_name_of(c->bundle, d->ps_startup);
    o->load = d->load ? fl_xstrdup(d->load) : NULL;
    FlLoc l = fl_ev_loc(c, d->at);
    const char *src = l.file >= 0 && (size_t)l.file < c->bundle->source_paths.len ? c->bundle->source_paths.data[l.file]
                                                                                   : NULL;
    o->where = src ? fl_xstrdup(fl_arena_printf(&c->arena, "%s:%d:%d: ", src, l.line, l.col)) : fl_xstrdup("");
}

/* ------------------------------------------------------------------ the plan: one compile per role */

typedef FL_VEC(char *) RoleEnv;

static void env_add(RoleEnv *env, const char *name, const char *fmt, ...) FL_PRINTF(3, 4);
static void env_add(RoleEnv *env, const char *name, const char *fmt, ...) {
    FlBuf b = {0};
    fl_buf_printf(&b, "%s=", name);
    va_list ap;
    va_start(ap, fmt);
    fl_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    FL_VEC_PUSH(env, fl_xstrdup(fl_buf_str(&b)));
    fl_buf_free(&b);
}

/* The variables of role r (trainers 0..T-1, then pservers), as Paddle's launchers set them. */
static void role_env(const FlScriptDist *sd, int64_t r, RoleEnv *env, FlBuf *who) {
    bool server = r >= sd->trainers;
    int64_t idx = server ? r - sd->trainers : r;
    FlBuf eps = {0};
    for (int64_t i = 0; i < sd->pservers; i++) fl_buf_printf(&eps, "%s%s", i ? "," : "", sd->endpoints[i]);
    const char *role = server ? "PSERVER" : "TRAINER";
    env_add(env, "PADDLE_TRAINING_ROLE", "%s", role);
    env_add(env, "TRAINING_ROLE", "%s", role);
    env_add(env, "PADDLE_TRAINER_ID", "%lld", server ? 0LL : (long long)idx);
    env_add(env, "PADDLE_TRAINERS_NUM", "%lld", (long long)sd->trainers);
    env_add(env, "PADDLE_PSERVER_ENDPOINTS", "%s", fl_buf_str(&eps));
    env_add(env, "PADDLE_PSERVERS_IP_PORT_LIST", "%s", fl_buf_str(&eps));
    if (server) {
        const char *ep = sd->endpoints[idx], *colon = strrchr(ep, ':');
        env_add(env, "PADDLE_CURRENT_ENDPOINT", "%s", ep);
        env_add(env, "POD_IP", "%.*s", (int)(colon ? colon - ep : (ptrdiff_t)strlen(ep)), ep);
        env_add(env, "PADDLE_PORT", "%s", colon ? colon + 1 : "");
        fl_buf_printf(who, "pserver %lld (PADDLE_TRAINING_ROLE=PSERVER PADDLE_CURRENT_ENDPOINT=%s)", (long long)idx, ep);
    } else {
        fl_buf_printf(who, "trainer %lld (PADDLE_TRAINING_ROLE=TRAINER PADDLE_TRAINER_ID=%lld)", (long long)idx,
                      (long long)idx);
    }
    fl_buf_free(&eps);
}

static bool same_plan(const FlScriptDist *a, const FlScriptDist *b) {
    if (a->trainers != b->trainers || a->pservers != b->pservers || a->sync != b->sync || a->hash != b->hash ||
        a->min_block_size != b->min_block_size)
        return false;
    for (int64_t i = 0; i < a->pservers; i++)
        if (strcmp(a->endpoints[i], b->endpoints[i])) return false;
    return true;
}

static const char *src_of(const FlBundle *b, FlLoc l, FlBuf *out) {
    out->len = 0;
    if (l.file >= 0 && (size_t)l.file < b->source_paths.len && l.line > 0)
        fl_buf_printf(out, "%s:%d:%d: ", b->source_paths.data[l.file], l.line, l.col);
    return fl_buf_str(out);
}

/* Pserver p's script must run its startup program, then its pserver program, and nothing else
 * with an effect: the role is the transpiler's pserver, which does exactly that. */
static FlStatus check_pserver_driver(const FlBundle *b, const FlScriptDist *sd, FlErr *e) {
    if (!sd->pserver_main || !sd->pserver_startup)
        return fl_err(e, "%sthe script does not run both of its programs (exe.run(get_startup_program(ep)), then "
                      "exe.run(get_pserver_program(ep))): a pserver runs them and nothing else", sd->where);
    const char *want[2] = {sd->pserver_startup, sd->pserver_main};
    int next = 0;
    FlBuf at = {0};
    FlStatus st = FL_OK;
    for (size_t bi = 0; bi < b->driver->blocks.len && st == FL_OK; bi++) {
        const FlBlock *blk = b->driver->blocks.data[bi];
        for (size_t i = 0; i < blk->ops.len && st == FL_OK; i++) {
            const FlOpDesc *op = blk->ops.data[i];
            if (!(fl_ops_flags(op) & FL_OPF_SIDE_EFFECT)) continue;
            const FlAttr *pa = fl_ops_is(op, FL_OPID_run_program) ? fl_ir_op_attr(op, "program") : NULL;
            const char *pn = pa ? pa->s : NULL;
            if (bi == 0 && next < 2 && pn && !strcmp(pn, want[next])) {
                next++;
                continue;
            }
            st = fl_err(e, "%sop '%s'%s%s%s: a pserver's role runs its startup program, then its pserver program "
                        "(listen_and_serv until every trainer is done), and nothing else",
                        src_of(b, op->loc, &at), op->type, pn ? " of program '" : "", pn ? pn : "", pn ? "'" : "");
        }
    }
    if (st == FL_OK && next < 2)
        st = fl_err(e, "%sthe script runs its pserver program before its startup program", sd->where);
    fl_buf_free(&at);
    return st;
}

/* Trainer t's script must not run a pserver's programs. */
static FlStatus check_trainer(const FlScriptDist *sd, int64_t t, FlErr *e) {
    if (sd->pserver_main || sd->pserver_startup)
        return fl_err(e, "%sthe script, run as trainer %lld, runs a pserver's programs (get_pserver_program, "
                      "get_startup_program)", sd->where, (long long)t);
    if (sd->trainer_id != t)
        return fl_err(e, "%sthe script, run as trainer %lld, passes trainer_id=%lld to transpile() (read it from "
                      "PADDLE_TRAINER_ID)", sd->where, (long long)t, (long long)sd->trainer_id);
    return FL_OK;
}

/* Compiles role r and takes its bundle out of the transpiled plan: *out, or an error in diag. */
static int compile_role(const char *path, const FlCompileOptions *opt, const FlScriptDist *first, int64_t r,
                        FlBundle **out, FlBuf *diag) {
    *out = NULL;
    RoleEnv env = {0};
    FlBuf who = {0}, rd = {0};
    role_env(first, r, &env, &who);
    for (size_t i = 0; i < opt->nenv; i++) FL_VEC_PUSH(&env, fl_xstrdup(opt->env[i]));
    FlCompileOptions o = *opt;
    FlScriptDist sd = {0};
    o.env = (const char *const *)env.data;
    o.nenv = env.len;
    o.dist = &sd;
    FlBundle *b = NULL;
    FlPlan *plan = NULL;
    const char *tool = opt->tool ? opt->tool : "flc";
    int nerr = fl_compile_file(path, &o, &b, &rd);
    FlErr e = {{0}};
    bool server = r >= first->trainers;
    if (!nerr && !sd.present)
        fl_err(&e, "%sthe script, run as %s, does not call transpile()", first->where, fl_buf_str(&who));
    else if (!nerr && !same_plan(first, &sd))
        fl_err(&e, "%sthe script, run as %s, asks for another plan (pservers, trainers or mode) than it does run "
               "as it was first", sd.where, fl_buf_str(&who));
    else if (!nerr && server && sd.pserver != r - first->trainers)
        fl_err(&e, "%sthe script, run as %s, does not ask for that pserver's programs (get_pserver_program(ep) of "
               "PADDLE_CURRENT_ENDPOINT)", sd.where, fl_buf_str(&who));
    else if (!nerr && server && b->driver && check_pserver_driver(b, &sd, &e) != FL_OK) {
    } else if (!nerr && server && !b->driver)
        fl_err(&e, "%sthe script, run as %s, runs no program", sd.where, fl_buf_str(&who));
    else if (!nerr && !server && check_trainer(&sd, r, &e) != FL_OK) {
    } else if (!nerr) {
        FlTranspileOptions to = {.pservers = sd.pservers, .trainers = sd.trainers,
                                 .mode = sd.sync ? FL_TRANSPILE_SYNC : FL_TRANSPILE_ASYNC,
                                 .min_block_size = sd.min_block_size ? sd.min_block_size : INT64_MAX,
                                 .dispatch = sd.hash ? FL_TRANSPILE_HASH : FL_TRANSPILE_ROUND_ROBIN};
        if (fl_transpile(b, &to, &plan, &e) == FL_OK) {
            *out = plan->roles.data[r];
            plan->roles.data[r] = NULL;
            if (server && sd.load) (*out)->load = fl_xstrdup(sd.load); /* load_persistables_for_increment */
        }
    }
    if (!nerr && e.msg[0]) nerr = 1;
    if (nerr) {
        fl_buf_printf(diag, "%s: note: compiling the script as %s:\n", tool, fl_buf_str(&who));
        fl_buf_append(diag, fl_buf_str(&rd), rd.len);
        if (e.msg[0]) fl_buf_printf(diag, "%s: error: %s\n", tool, e.msg);
    }
    fl_ir_plan_free(plan);
    fl_ir_bundle_free(b);
    fl_script_dist_fini(&sd);
    for (size_t i = 0; i < env.len; i++) free(env.data[i]);
    FL_VEC_FREE(&env);
    fl_buf_free(&who);
    fl_buf_free(&rd);
    return nerr;
}

int fl_compile_plan(const char *path, const FlCompileOptions *opt, FlPlan **out, FlBuf *diag_out) {
    *out = NULL;
    FlCompileOptions o = *opt;
    FlScriptDist first = {0};
    o.dist = &first;
    FlBundle *b = NULL;
    FlBuf diag = {0};
    int nerr = fl_compile_file(path, &o, &b, &diag);
    fl_ir_bundle_free(b);
    const char *tool = opt->tool ? opt->tool : "flc";
    if (!nerr && !first.present) {
        fl_buf_printf(&diag, "%s: error: %s: the script does not call DistributeTranspiler.transpile(); flc build makes "
                      "a plan of a script that does\n", tool, path);
        nerr = 1;
    }
    FlPlan *plan = NULL;
    if (!nerr) {
        plan = fl_ir_plan_new();
        free(plan->mode);
        plan->mode = fl_xstrdup(first.sync ? "sync" : "async");
        plan->pservers = first.pservers;
        plan->trainers = first.trainers;
        for (int64_t r = 0; r < first.trainers + first.pservers && !nerr; r++) {
            FlBundle *rb;
            nerr = compile_role(path, opt, &first, r, &rb, &diag);
            if (!nerr) {
                FL_VEC_PUSH(&plan->roles, rb);
                FL_VEC_PUSH(&plan->rank_role, r);
            }
        }
    }
    if (!nerr) {
        FlErr e;
        FlPlanIssues vi = {0};
        if (fl_ir_validate_plan(plan, &e) != FL_OK) {
            fl_buf_printf(&diag, "%s: error: internal: the plan does not validate: %s\n", tool, e.msg);
            nerr = 1;
        } else if (fl_plan_verify(plan, &vi) > 0) {
            fl_buf_printf(&diag, "%s: error: the roles of the plan do not fit together: %s\n", tool, vi.items.data[0].msg);
            nerr = 1;
        }
        fl_plan_verify_issues_fini(&vi);
    }
    if (diag_out) fl_buf_append(diag_out, fl_buf_str(&diag), diag.len);
    fl_buf_free(&diag);
    fl_script_dist_fini(&first);
    if (nerr) {
        fl_ir_plan_free(plan);
        return nerr;
    }
    *out = plan;
    return 0;
}
