/* driver_pyreader.c: Fluid's py_reader family on the driver's reader ops (docs/driver.md, "Data").
 * The native module `_pyreader` (used by stdlib/fluid/layers/io.fl and stdlib/fluid/io.fl):
 *
 *   new(name, iterable)       a PyReader record: its data vars (set_vars), the paddle reader it is
 *                             decorated with (decorate) and the driver var of its epoch
 *   set_vars(h, vars)         the data vars it fills (read_file's, or a feed_list)
 *   decorate(h, reader, what, places)  the batched paddle reader it reads
 *   files(h, reader)          the reader of fluid.layers.open_files (and layers.batch and shuffle over
 *                             it) that h reads: a file reader, which reads from the start (its
 *                             epoch begins in the driver's global block) and whose reset() begins
 *                             a new epoch, as Fluid's file readers restart on reset
 *   start(h), reset(h)        reader_epoch into its epoch var; reader_end of it (a file reader's
 *                             reset: reader_epoch)
 *   iter(h)                   `for data in reader():` of an iterable PyReader
 *   EOFException              the class fluid.core.EOFException
 *
 * A non-iterable reader feeds the programs that hold its data vars (the program they were made in,
 * and a clone the run does not feed them to): exe.run of such a program (fl_ev_pyreader_feeds)
 * takes the epoch's next batch (reader_next) and, when there is none, raises the EOFException:
 * inside `try: ... except fluid.core.EOFException:` it sets the try's flag and leaves the runtime
 * loops up to the try, as a break would; outside one it ends the run with status 1, as Python's
 * uncaught exception does. The run_program runs under the batch's Ok.
 *
 * A try (fl_ev_stmt_try) is a runtime loop that runs once (fl_ev_lower_once), so the loop-exit
 * machinery of lower.c (RtLoop's flags) skips what follows the raise; a TryFrame records the loops
 * the EOFException has left so far, and fl_ev_eof_after_stmt leaves the next loop out after a
 * statement whose inner loop it left. The except clause runs in a conditional_block on the flag.
 */
#include <stdint.h>
#include <string.h>

#include "lang/eval_impl.h"

#define PYREADER_TYPE "PyReader"
#define PYITER_TYPE "PyReaderIter"

typedef struct TryFrame {
    const char *eof; /* the driver's bool [1] var: the EOFException was raised */
    size_t nloops;   /* c->rtloops.len when the try began: rtloops[nloops] is its body's loop */
    size_t pending;  /* the index (in rtloops) of the outermost loop the EOFException has left so
                        far; SIZE_MAX: none */
    int user_calls;  /* c->user_calls then: exe.run is called in the try's own code */
} TryFrame;

static FlValue *get(FlValue *r, const char *name) {
    return r && r->kind == VK_RECORD && r->rec.attrs ? fl_map_find_str(&r->rec.attrs->map, name) : NULL;
}

static bool is_rec(const FlValue *v, const char *type) {
    return v && v->kind == VK_RECORD && !v->rec.cls && v->rec.type && strcmp(v->rec.type, type) == 0;
}

/* The module's globals: the readers made so far (_all) and the EOFException class. */
static Env *globals(Ctx *c) {
    FlValue *m = fl_map_find_str(&c->modules, "_pyreader");
    return m->mod->globals;
}

static FlValue *eof_class(Ctx *c) { return fl_env_find(globals(c), fl_intern_str(&c->in, "EOFException")); }

static const char *rname(FlValue *h) { return get(h, "_name")->str.s; }

static bool is_file_reader(FlValue *h) {
    FlValue *f = get(h, "_file");
    return f && f->kind == VK_BOOL && f->b;
}

/* ------------------------------------------------------------------ the native functions */

static FlValue *p_new(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("new", "name iterable", 2);
    if (!fl_ev_want_str(c, v[0], "py_reader name", a->span)) return c->error;
    FlValue *h = fl_v_record(c, PYREADER_TYPE);
    fl_v_rec_set(c, h, "_name", v[0]);
    fl_v_rec_set(c, h, "_iterable", fl_v_bool(c, v[1]->kind == VK_BOOL && v[1]->b));
    fl_v_rec_set(c, h, "_vars", c->none);
    fl_v_rec_set(c, h, "_reader", c->none);
    FlValue *all = fl_env_find(globals(c), fl_intern_str(&c->in, "_all"));
    fl_v_list_push(c, all, h);
    return h;
}

/* The width of one row of data var d (its dims after the first), -1 when one is unknown. */
static int64_t row_width(const FlVarDesc *d) {
    int64_t w = 1;
    for (int i = 1; i < d->ndim; i++) {
        if (d->shape[i] < 0) return -1;
        w *= d->shape[i];
    }
    return w;
}

/* Whether reader record r's fields fit h's data vars (as DataFeeder.feed checks them). */
static bool fields_fit(Ctx *c, FlValue *h, FlValue *r, FlSpan sp) {
    FlValue *vars = get(h, "_vars"), *fields = fl_ev_reader_attr(r, "_fields");
    if (vars->kind != VK_LIST) return true;
    if (fields->list.len != vars->list.len) {
        fl_ev_error(c, sp, "py_reader '%s': the reader's samples have %zu fields but the py_reader has %zu data vars",
                    rname(h), fields->list.len, vars->list.len);
        return false;
    }
    for (size_t i = 0; i < vars->list.len; i++) {
        FlVarDesc *d = fl_ev_var_desc(c, vars->list.items[i]);
        int64_t want = fields->list.items[i]->list.items[1]->i, have = d ? row_width(d) : -1;
        if (have >= 0 && want >= 0 && have != want) {
            fl_ev_error(c, sp, "py_reader '%s': field %zu of the reader's samples holds %lld values but data var '%s' "
                        "takes %lld a row", rname(h), i, (long long)want, d->name, (long long)have);
            return false;
        }
        bool seq = fields->list.items[i]->list.items[3]->b; /* a sequence field: its steps and offsets */
        if (d && seq != (d->lod_level == 1)) {
            fl_ev_error(c, sp, seq ? "py_reader '%s': field %zu of the reader's samples is a sequence but data var '%s' "
                                     "has lod_level %d (lod_levels=[..., 1, ...], or layers.data(..., lod_level=1))"
                                   : "py_reader '%s': field %zu of the reader's samples is not a sequence but data var "
                                     "'%s' has lod_level %d",
                        rname(h), i, d->name, d->lod_level);
            return false;
        }
    }
    return true;
}

static FlValue *p_set_vars(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("set_vars", "h vars", 2);
    for (size_t i = 0; i < v[1]->list.len; i++) {
        FlValue *x = v[1]->list.items[i];
        FlVarDesc *d = x->kind == VK_VAR ? fl_ev_var_desc(c, x) : NULL;
        if (!d) return fl_ev_error(c, a->span, "feed_list must hold data vars (fluid.layers.data), found %s",
                                   fl_v_type_name(x));
        if (d->lod_level > 1)
            return fl_ev_error(c, a->span, "py_reader '%s': data var '%s' has lod_level %d: a reader's sequence "
                               "fields have one level of offsets (lod_level 1)", rname(v[0]), d->name, d->lod_level);
    }
    fl_v_rec_set(c, v[0], "_vars", v[1]);
    FlValue *r = get(v[0], "_reader");
    if (r->kind == VK_RECORD && !fields_fit(c, v[0], r, a->span)) return c->error;
    return c->none;
}

/* decorate(h, reader, what, places): what names the method for messages. */
static FlValue *p_decorate(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("decorate", "h reader what places", 4);
    const char *what = v[2]->str.s;
    FlValue *r = fl_ev_reader_record(v[1]);
    if (!r) {
        if (v[1]->kind == VK_FUNC)
            return fl_ev_error(c, a->span, "%s(%s): a Python generator function is not compiled (the runtime runs no "
                               "Python); give a paddle reader: paddle.batch(paddle.dataset.NAME.train(), batch_size) "
                               "and paddle.reader's decorators", what, v[1]->func.def ? v[1]->func.def->def.name : "f");
        return fl_ev_error(c, a->span, "%s takes a paddle reader (paddle.batch(paddle.dataset.NAME.train(), "
                           "batch_size)), found %s", what, fl_v_type_name(v[1]));
    }
    if (!fl_ev_reader_attr(r, "_batched")->b)
        return fl_ev_error(c, a->span, "%s takes a reader of batches (a sample list generator): apply "
                           "paddle.batch(reader, batch_size) to it", what);
    bool iterable = get(v[0], "_iterable")->b;
    if (iterable && v[3]->kind == VK_NONE)
        return fl_ev_error(c, a->span, "%s of an iterable PyReader needs places= (fluid.cpu_places()), as Fluid's",
                           what);
    if (v[3]->kind == VK_LIST || v[3]->kind == VK_TUPLE) {
        if (v[3]->list.len != 1)
            return fl_ev_error(c, a->span, "%s(places=%zu places): fluidc runs one place (its kernels use the "
                               "process's threads: flrun --threads N)", what, v[3]->list.len);
    }
    if (get(v[0], "_reader")->kind != VK_NONE)
        return fl_ev_error(c, a->span, "py_reader '%s' is decorated already: decorate it once", rname(v[0]));
    if (!fields_fit(c, v[0], r, a->span)) return c->error;
    fl_v_rec_set(c, v[0], "_reader", r);
    return c->none;
}

static bool end_epoch(Ctx *c, FlBlock *b, const char *ep, FlSpan sp);

/* files(h, reader): h reads open_files' reader (a reader of samples that are batches). */
static FlValue *p_files(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("files", "h reader", 2);
    FlValue *r = fl_ev_reader_record(v[1]);
    if (!r) return fl_ev_error(c, a->span, "files: a reader, found %s", fl_v_type_name(v[1]));
    fl_v_rec_set(c, v[0], "_reader", r);
    fl_v_rec_set(c, v[0], "_file", c->vtrue);
    return c->none;
}

/* The driver var of h's epoch (a raw var of the driver's global block), made the first time,
 * empty (a reader_end there: what runs later, in loops, finds it written). */
static const char *epoch_var(Ctx *c, FlValue *h, FlSpan sp) {
    FlValue *ev = get(h, "_epoch");
    if (ev) return ev->var.name;
    const char *name = fl_arena_printf(&c->arena, "%s.epoch", fl_ev_unique(c, rname(h)));
    FlBlock *g = fl_ir_block(fl_ev_driver(c), 0);
    FlVarDesc *d = fl_ev_new_var(c, g, name, sp);
    d->kind = FL_VAR_RAW;
    d->stop_gradient = true;
    if (is_file_reader(h)) { /* reading from the start */
        FlBlock *here = c->b.block;
        c->b.block = g;
        fl_ev_reader_epoch_into(c, get(h, "_reader"), name, sp);
        c->b.block = here;
    } else {
        end_epoch(c, g, name, sp);
    }
    fl_v_rec_set(c, h, "_epoch", fl_v_var(c, name));
    return name;
}

/* h's paddle reader, or an error naming the method that gives one. */
static FlValue *source(Ctx *c, FlValue *h, const char *what, FlSpan sp) {
    FlValue *r = get(h, "_reader");
    if (r->kind == VK_RECORD) return r;
    fl_ev_error(c, sp, "%s of py_reader '%s', which has no data: decorate it first "
                "(decorate_paddle_reader(paddle.batch(reader, batch_size)))", what, rname(h));
    return NULL;
}

static FlValue *p_start(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("start", "h", 1);
    FlValue *r = source(c, v[0], "start()", a->span);
    if (!r) return c->error;
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    const char *ep = epoch_var(c, v[0], a->span);
    bool ok = fl_ev_reader_epoch_into(c, r, ep, a->span) != NULL;
    fl_ev_driver_leave(c, &sw);
    return ok ? c->none : c->error;
}

/* reader_end of epoch var ep in block b. */
static bool end_epoch(Ctx *c, FlBlock *b, const char *ep, FlSpan sp) {
    FlOpDesc *op = fl_ev_op_raw(c, b, "reader_end", sp);
    fl_ir_op_add_output(op, "Epoch", ep);
    return fl_ev_infer(c, b, op, sp);
}

static FlValue *p_reset(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("reset", "h", 1);
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    const char *ep = epoch_var(c, v[0], a->span);
    bool ok = is_file_reader(v[0]) ? fl_ev_reader_epoch_into(c, get(v[0], "_reader"), ep, a->span) != NULL
                                   : end_epoch(c, c->b.block, ep, a->span);
    fl_ev_driver_leave(c, &sw);
    return ok ? c->none : c->error;
}

static FlValue *p_iter(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("iter", "h", 1);
    if (!source(c, v[0], "for data in reader()", a->span)) return c->error;
    FlValue *it = fl_v_record(c, PYITER_TYPE);
    fl_v_rec_set(c, it, "_h", v[0]);
    return it;
}

/* ------------------------------------------------------------------ a batch as feeds */

/* Field f ([rows, width]) as data var `to` takes it: cast to its dtype, reshaped to its shape. */
static FlValue *convert(Ctx *c, FlValue *f, const FlVarDesc *to, FlSpan sp) {
    FlVarDesc *fd = fl_ev_var_desc(c, f);
    if (fd && fd->dtype != to->dtype) {
        const char *names[3] = {"X", "in_dtype", "out_dtype"};
        FlValue *vals[3] = {f, fl_v_int(c, fd->dtype), fl_v_int(c, to->dtype)};
        CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 3, .span = sp};
        if ((f = fl_ev_op(c, "cast", &a, sp))->kind == VK_ERROR) return f;
    }
    if (to->ndim == 2) return f;
    FlValue *shape = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, shape, fl_v_int(c, -1));
    for (int i = 1; i < to->ndim; i++) fl_v_list_push(c, shape, fl_v_int(c, to->shape[i]));
    const char *names[2] = {"X", "shape"};
    FlValue *vals[2] = {f, shape};
    CallArgs a = {.kwnames = names, .kwvals = vals, .nkw = 2, .span = sp};
    return fl_ev_op(c, "reshape", &a, sp);
}

/* ------------------------------------------------------------------ the EOFException */

/* A new block of the current one, made current, one runtime level deeper. */
static FlBlock *enter_sub(Ctx *c) {
    FlBlock *sub = fl_ir_block_new(c->b.main, c->b.block->idx);
    c->b.block = sub;
    c->rt_depth++;
    return sub;
}

/* Leaves sub for parent: a conditional_block on cond runs it. */
static bool leave_sub(Ctx *c, FlBlock *parent, FlBlock *sub, const char *cond, FlSpan sp) {
    c->rt_depth--;
    c->b.block = parent;
    FlOpDesc *op = fl_ev_op_raw(c, parent, "conditional_block", sp);
    fl_ir_op_set_block(op, "sub_block", sub->idx);
    fl_ir_op_add_input(op, "Cond", cond);
    fl_ev_control_io(c, parent, sub, op, "X", "Out");
    return fl_ev_infer(c, parent, op, sp);
}

/* Sets the bool [1] var `name` to true in the current block. */
static bool set_true(Ctx *c, const char *name, FlSpan sp) {
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "fill_constant", sp);
    int64_t one = 1;
    fl_ir_op_add_output(op, "Out", name);
    fl_ir_op_set_ints(op, "shape", &one, 1);
    fl_ir_op_set_float(op, "value", 1);
    fl_ir_op_set_int(op, "dtype", FL_DT_BOOL);
    return fl_ev_infer(c, c->b.block, op, sp);
}

/* When the bool var cond holds: the EOFException of py_reader h, caught by the innermost try
 * (its flag set, the loops up to it left) or ending the run. */
static bool raise_eof(Ctx *c, FlValue *h, const char *cond, FlSpan sp) {
    TryFrame *t = c->tries.len ? c->tries.data[c->tries.len - 1] : NULL;
    size_t k = c->rtloops.len; /* the innermost runtime loop, under the library's calls (exe.run) */
    while (t && k > t->nloops && !c->rtloops.data[k - 1]) k--;
    if (t) {
        if (c->user_calls != t->user_calls || k <= t->nloops) {
            fl_ev_error(c, sp, "exe.run of a program py_reader '%s' feeds, inside a function, goroutine or "
                        "compile-time loop within 'try': not compiled (its EOFException could not leave them); call "
                        "exe.run in the try's body or in a runtime loop there", rname(h));
            return false;
        }
    }
    FlBlock *parent = c->b.block, *sub = enter_sub(c);
    bool ok;
    if (t) {
        k--;
        ok = set_true(c, t->eof, sp);
        int saved = c->rt_depth; /* fl_ev_lower_exit: an exit nested in the loop's body */
        c->rt_depth = c->rtloops.data[k]->depth + 1;
        fl_ev_lower_exit(c, c->rtloops.data[k], true, sp);
        c->rt_depth = saved;
        if (k < t->pending) t->pending = k;
    } else {
        for (size_t j = 0; j < c->rtloops.len; j++)
            if (c->rtloops.data[j]) c->rtloops.data[j]->ends_run = true;
        FlValue *msg = fl_v_list(c, VK_LIST);
        fl_v_list_push(c, msg, fl_v_cstr(c, fl_arena_printf(&c->arena, "fluid.core.EOFException: there is no next "
                                                           "data (%s '%s' gave its last batch; catch it with "
                                                           "try: ... except fluid.core.EOFException: reader.reset())",
                                                           is_file_reader(h) ? "reader" : "py_reader", rname(h))));
        ok = fl_ev_driver_print_stream(c, msg, NULL, NULL, "stderr", sp)->kind != VK_ERROR;
        FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "exit", sp);
        fl_ir_op_set_int(op, "code", 1);
        ok = ok && fl_ev_infer(c, c->b.block, op, sp);
    }
    return leave_sub(c, parent, sub, cond, sp) && ok;
}

void fl_ev_eof_after_stmt(Ctx *c, RtLoop *l, FlSpan sp) {
    TryFrame *t = c->tries.data[c->tries.len - 1];
    size_t k = c->rtloops.len - 1;
    if (t->pending == SIZE_MAX || k < t->nloops || k >= t->pending || c->rtloops.data[k] != l) return;
    FlBlock *parent = c->b.block, *sub = enter_sub(c);
    fl_ev_lower_exit(c, l, true, sp);
    leave_sub(c, parent, sub, t->eof, sp);
    t->pending = k;
}

/* ------------------------------------------------------------------ exe.run of a program a py_reader feeds */

static bool feeds_name(const FlValue *feed, const char *name) {
    for (size_t i = 0; feed && i < feed->dict.len; i++) {
        const FlValue *k = feed->dict.keys[i];
        if ((k->kind == VK_VAR && strcmp(k->var.name, name) == 0) || (k->kind == VK_STR && strcmp(k->str.s, name) == 0))
            return true;
    }
    return false;
}

bool fl_ev_pyreader_feeds(Ctx *c, const FlProgram *prog, FlValue *feed, const char ***names, FlValue ***vals,
                          size_t *n, const char **guard, FlSpan sp) {
    *guard = NULL;
    FlValue *mod = fl_map_find_str(&c->modules, "_pyreader");
    FlValue *all = mod ? fl_env_find(mod->mod->globals, fl_intern_str(&c->in, "_all")) : NULL;
    const FlBlock *g = fl_ir_block(prog, 0);
    FlValue *h = NULL;
    for (size_t i = 0; all && i < all->list.len; i++) {
        FlValue *x = all->list.items[i], *vars = get(x, "_vars");
        if (get(x, "_iterable")->b || vars->kind != VK_LIST || !vars->list.len) continue;
        const FlValue *v0 = vars->list.items[0];
        if (!fl_ir_var_find(g, v0->var.name)) continue;
        bool own = v0->var.prog == prog, fed = false;
        for (size_t k = 0; k < vars->list.len; k++) fed = fed || feeds_name(feed, vars->list.items[k]->var.name);
        if (fed && !own) continue; /* a program of its own, fed by the run */
        if (fed) {
            fl_ev_error(c, sp, "exe.run(feed=...) feeds a data var that py_reader '%s' fills (Fluid's read op): "
                        "feed the others only", rname(x));
            return false;
        }
        if (h) {
            fl_ev_error(c, sp, "two py_readers ('%s' and '%s') feed this program: not compiled; give it one",
                        rname(h), rname(x));
            return false;
        }
        h = x;
    }
    if (!h) return true;
    FlValue *r = source(c, h, "exe.run of a program it feeds", sp);
    if (!r || !fields_fit(c, h, r, sp)) return false;
    const char *ep = epoch_var(c, h, sp);
    const char *ok = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "py_reader_ok"));
    FlVarDesc *okd = fl_ev_new_var(c, c->b.block, ok, sp);
    int64_t one = 1;
    okd->dtype = FL_DT_BOOL;
    fl_ir_var_set_shape(okd, 1, &one);
    okd->stop_gradient = true;
    FlValue *lods, *fields = fl_ev_reader_next_fields(c, c->b.block, ok, r, ep, &lods, sp);
    if (fields->kind == VK_ERROR) return false;
    FlValue *notok = fl_ev_op2(c, "logical_not", fl_v_var(c, ok), NULL, sp);
    if (notok->kind == VK_ERROR || !raise_eof(c, h, notok->var.name, sp)) return false;
    enter_sub(c);
    FlValue *vars = get(h, "_vars");
    size_t add = 2 * vars->list.len, k = *n; /* each field, and a sequence field's offsets */
    const char **nn = fl_arena_alloc(&c->arena, (*n + add + 1) * sizeof *nn);
    FlValue **nv = fl_arena_alloc(&c->arena, (*n + add + 1) * sizeof *nv);
    memcpy(nn, *names, *n * sizeof *nn);
    memcpy(nv, *vals, *n * sizeof *nv);
    for (size_t i = 0; i < vars->list.len; i++) {
        FlVarDesc *to = fl_ev_var_desc(c, vars->list.items[i]);
        FlValue *x = convert(c, fields->list.items[i], to, sp);
        if (x->kind == VK_ERROR) {
            c->rt_depth--; /* the caller restores the block */
            return false;
        }
        nn[k] = to->name;
        nv[k++] = x;
        if (to->lod_level == 1) {
            nn[k] = to->lod[0];
            nv[k++] = lods->list.items[i];
        }
    }
    *names = nn;
    *vals = nv;
    *n = k;
    *guard = ok;
    return true;
}

bool fl_ev_pyreader_fetch_init(Ctx *c, FlVarDesc *d, FlSpan sp) {
    return fl_ev_zero_init(c, fl_ir_block(fl_ev_driver(c), 0), d, sp);
}

bool fl_ev_pyreader_guard_end(Ctx *c, FlBlock *outer, const char *guard, FlSpan sp) {
    return leave_sub(c, outer, c->b.block, guard, sp);
}

/* ------------------------------------------------------------------ for data in reader(): (iterable) */

bool fl_ev_is_pyreader_iter(const FlValue *v) { return is_rec(v, PYITER_TYPE); }

typedef struct IterArg {
    FlValue *h, *reader;
    const char *epoch;
} IterArg;

/* The next batch as Fluid's iterable PyReader gives it: a list of one feed dict (one place). */
static FlValue *iter_next(Ctx *c, FlBlock *sub, const char *ok, void *arg, FlSpan sp) {
    IterArg *ia = arg;
    FlValue *lods, *fields = fl_ev_reader_next_fields(c, sub, ok, ia->reader, ia->epoch, &lods, sp);
    if (fields->kind == VK_ERROR) return fields;
    FlValue *vars = get(ia->h, "_vars"), *d = fl_v_dict(c), *out = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < vars->list.len; i++) {
        FlVarDesc *to = fl_ev_var_desc(c, vars->list.items[i]);
        FlValue *x = convert(c, fields->list.items[i], to, sp);
        if (x->kind == VK_ERROR) return x;
        fl_v_dict_set(c, d, fl_v_cstr(c, to->name), x);
        if (to->lod_level == 1) fl_v_dict_set(c, d, fl_v_cstr(c, to->lod[0]), lods->list.items[i]);
    }
    fl_v_list_push(c, out, d);
    return out;
}

Flow fl_ev_lower_for_pyreader(Ctx *c, Env *e, FlAst *s, FlValue *it) {
    IterArg ia = {.h = get(it, "_h")};
    ia.reader = get(ia.h, "_reader");
    if (s->loop.target->kind != FL_AST_NAME) {
        fl_ev_error(c, s->loop.target->span, "'for ... in' an iterable PyReader binds one name (the batch's feed)");
        return FLOW_ERROR;
    }
    if (!fields_fit(c, ia.h, ia.reader, s->loop.iter->span)) return FLOW_ERROR;
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    Flow f = FLOW_ERROR;
    if ((ia.epoch = fl_ev_reader_epoch_into(c, ia.reader, NULL, s->loop.iter->span)))
        f = fl_ev_lower_for_next(c, e, s, iter_next, &ia);
    fl_ev_driver_leave(c, &sw);
    return f;
}

/* ------------------------------------------------------------------ try: ... except fluid.core.EOFException: */

/* Whether the exception an except clause names (NULL: a bare except) catches the EOFException. */
static bool catches_eof(Ctx *c, FlValue *x) {
    if (!x) return true;
    if (x->kind == VK_TUPLE || x->kind == VK_LIST) {
        for (size_t i = 0; i < x->list.len; i++)
            if (catches_eof(c, x->list.items[i])) return true;
        return false;
    }
    return x->kind == VK_CLASS && fl_ev_is_subclass(eof_class(c), x);
}

Flow fl_ev_stmt_try(Ctx *c, Env *e, FlAst *s) {
    FlValue *x = s->loop.iter ? fl_ev_expr(c, e, s->loop.iter) : NULL;
    if (x && x->kind == VK_ERROR) return FLOW_ERROR;
    if (!catches_eof(c, x)) {
        fl_ev_error(c, s->loop.iter->span, "'try' is compiled only around a reader's EOFException (except "
                    "fluid.core.EOFException:), the one exception raised at run time; found except %s",
                    x->kind == VK_CLASS ? x->cls.name : fl_v_type_name(x));
        return FLOW_ERROR;
    }
    if (!fl_ev_body_runs_programs(c, e, &s->loop.body)) /* nothing in it can raise the EOFException */
        return fl_ev_block(c, e, &s->loop.body);
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    Flow f = FLOW_ERROR;
    FlValue *eof = fl_ev_const_var(c, c->vfalse, FL_DT_BOOL, s->span);
    if (eof->kind == VK_ERROR) goto done;
    TryFrame t = {.eof = eof->var.name, .nloops = c->rtloops.len, .pending = SIZE_MAX, .user_calls = c->user_calls};
    FL_VEC_PUSH(&c->tries, &t);
    RtLoop l;
    Flow fb = fl_ev_lower_once(c, e, &s->loop.body, &l, s->span);
    c->tries.len--;
    if (fb == FLOW_RETURN) {
        fl_ev_error(c, s->span, "'return' inside a 'try' around a reader's EOFException cannot be compiled");
        goto done;
    }
    if (fb == FLOW_ERROR) goto done;
    if (s->loop.target) {
        CallArgs none = {.span = s->loop.target->span};
        FlValue *inst = fl_ev_instantiate(c, eof_class(c), &none);
        if (inst->kind == VK_ERROR) goto done;
        fl_env_set(e, s->loop.target->name, inst);
    }
    f = fl_ev_lower_cond_body(c, e, &s->loop.else_body, eof->var.name, s->span, "an 'except' clause");
done:
    fl_ev_driver_leave(c, &sw);
    return f;
}

/* ------------------------------------------------------------------ the module */

static const NativeFn pyreader_fns[] = {
    {"new", p_new},     {"set_vars", p_set_vars}, {"decorate", p_decorate},
    {"start", p_start}, {"reset", p_reset},       {"iter", p_iter},     {"files", p_files},
};

void fl_ev_driver_pyreader_install(Ctx *c) {
    Module *m = fl_ev_module_of_fns(c, "_pyreader", pyreader_fns, FL_ARRAY_LEN(pyreader_fns));
    fl_env_set(m->globals, fl_intern_str(&c->in, "_all"), fl_v_list(c, VK_LIST));
    FlValue *cls = fl_v_new(c, VK_CLASS);
    cls->cls.name = "EOFException";
    cls->cls.base = fl_env_find(c->builtins, fl_intern_str(&c->in, "Exception"));
    cls->cls.attrs = fl_env_new(c, NULL);
    fl_env_set(m->globals, fl_intern_str(&c->in, "EOFException"), cls);
}
