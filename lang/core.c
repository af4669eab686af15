/* core.c: the native module `_core`, the C layer that the stdlib (the .fl files of
 * stdlib/fluid) is written against.
 *
 * Ops (`_core.op`), data vars, parameters and their initialisers in the startup program,
 * persistable globals, unique names, backward, records and errors for the stdlib's own
 * messages; programs and guards (program_guard, unique_name.guard, name_scope, go,
 * parallel_for, server.do); channels; the parameter-server layers (dist_split, send, recv,
 * split_to_chan, concat); io readers; the run spec (`train`) and compile-time flags (-D).
 *
 * Invariants: `_core` is a native module (no file) made once per compilation; what it builds
 * for the stdlib is located at the user's line that called into the stdlib (fl_ev_call sets
 * the span); Programs and readers it makes are owned by the Ctx until the bundle adopts them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/rules.h"
#include "compiler/ir/train_driver.h"
#include "compiler/ops.h"
#include "lang/eval_impl.h"

static bool want_shape(Ctx *c, FlValue *v, const char *what, FlSpan sp, int *nd, int64_t *shape) {
    if (v->kind == VK_INT) {
        *nd = 1;
        shape[0] = v->i;
        return true;
    }
    if (!fl_v_is_seq(v)) {
        fl_ev_error(c, sp, "%s must be a list of ints, found %s", what, fl_v_type_name(v));
        return false;
    }
    if (v->list.len > FL_IR_MAX_DIMS - 1) {
        fl_ev_error(c, sp, "%s has %zu dimensions; at most %d are supported", what, v->list.len, FL_IR_MAX_DIMS - 1);
        return false;
    }
    for (size_t i = 0; i < v->list.len; i++) {
        FlValue *x = v->list.items[i];
        int64_t d = 0;
        int w = x->kind == VK_BOOL ? 0 : fl_ev_whole_int(c, x, what, sp, &d); /* size / 2 is a dimension */
        if (w < 0) return false;
        if (w == 0 || d < -1 || d == 0) {
            fl_ev_error(c, sp, "%s must hold positive ints (or -1), found %s", what,
                        w ? "a non-positive dimension" : fl_v_type_name(x));
            return false;
        }
        shape[i] = d;
    }
    *nd = (int)v->list.len;
    return true;
}
static bool want_dtype(Ctx *c, FlValue *v, FlSpan sp, FlDType *dt) {
    if (v && v->kind == VK_STR && fl_dtype_from_name(v->str.s, dt)) return true;
    if (v && v->kind == VK_STR && strcmp(v->str.s, "float") == 0) {
        *dt = FL_DT_FLOAT32;
        return true;
    }
    if (v && v->kind == VK_STR && strcmp(v->str.s, "int") == 0) {
        *dt = FL_DT_INT64;
        return true;
    }
    FlBuf b = {0};
    if (v) fl_v_repr(c, v, &b);
    fl_ev_error(c, sp, "unknown dtype '%s' (expected float32, float64, int32, int64, bool, float16, int8 or uint8)", fl_buf_str(&b));
    fl_buf_free(&b);
    return false;
}
/* A name the program gives a var: a non-empty string that the IR does not reserve (FL_RULE_EMPTY
 * marks an argument holding no value; a var of that name would read as no var at all). Names
 * holding FL_RULE_GRAD_SUFFIX are the user's to choose, as in Fluid. */
static bool want_var_name(Ctx *c, FlValue *v, FlSpan sp) {
    if (!fl_ev_want_str(c, v, "name", sp)) return false;
    if (v->str.n == 0 || strlen(v->str.s) != v->str.n || fl_rule_is_empty(v->str.s)) {
        fl_ev_error(c, sp, "'%s' cannot name a var: %s", v->str.s,
                    v->str.n == 0 ? "a name must not be empty"
                    : strlen(v->str.s) != v->str.n ? "a name cannot hold a NUL character"
                                                   : "the IR reserves it for an argument that holds no value");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ _core: plain values */

static FlValue *c_is_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("is_var", "x", 1);
    return fl_v_bool(c, v[0]->kind == VK_VAR);
}

static FlValue *c_is_list(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("is_list", "x", 1);
    return fl_v_bool(c, fl_v_is_seq(v[0]));
}

/* An int or a bool, as Python's isinstance(x, int). */
static FlValue *c_is_int(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("is_int", "x", 1);
    return fl_v_bool(c, v[0]->kind == VK_INT || v[0]->kind == VK_BOOL);
}

/* whole_int(what, x): x itself unless it is a float; a whole float as an int (what `/` gives
 * where an int is meant); any other float is an error naming `what`, with a note on '//'. */
static FlValue *c_whole_int(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("whole_int", "what x", 2);
    if (!fl_ev_want_str(c, v[0], "what", a->span)) return c->error;
    if (!v[1] || v[1]->kind != VK_FLOAT) return v[1] ? v[1] : c->none;
    int64_t x;
    return fl_ev_whole_int(c, v[1], v[0]->str.s, a->span, &x) > 0 ? fl_v_int(c, x) : c->error;
}

static FlValue *c_type_name(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("type_name", "x", 1);
    return fl_v_cstr(c, fl_v_type_name(v[0]));
}

/* ------------------------------------------------------------------ _core: ops and vars */

static FlValue *c_op(Ctx *c, FlValue *self, CallArgs *a) {
    if (a->npos != 1 || a->pos[0]->kind != VK_STR) return fl_ev_error(c, a->span, "op() takes the op type, then keyword arguments");
    CallArgs oa = *a;
    oa.npos = 0;
    return fl_ev_op(c, a->pos[0]->str.s, &oa, a->span);
}

static FlValue *c_data(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("data", "name shape dtype= append_batch_size= lod_level= stop_gradient=", 6);
    if (!want_var_name(c, v[0], a->span)) return c->error;
    int nd;
    int64_t shape[FL_IR_MAX_DIMS];
    if (!want_shape(c, v[1], "shape", a->span, &nd, shape)) return c->error;
    FlDType dt = FL_DT_FLOAT32;
    if (v[2] && !want_dtype(c, v[2], a->span, &dt)) return c->error;
    bool batch = !v[3] || (v[3]->kind == VK_BOOL ? v[3]->b : true);
    FlBlock *b0 = fl_ir_block(c->b.main, 0);
    if (fl_ir_var_find(b0, v[0]->str.s)) return fl_ev_error(c, a->span, "a var named '%s' already exists", v[0]->str.s);
    FlVarDesc *d = fl_ev_new_var(c, b0, v[0]->str.s, a->span);
    int64_t full[FL_IR_MAX_DIMS];
    int n = 0;
    if (batch) full[n++] = -1;
    for (int i = 0; i < nd; i++) full[n++] = shape[i];
    fl_ir_var_set_shape(d, n, full);
    d->dtype = dt;
    d->stop_gradient = !v[5] || (v[5]->kind == VK_BOOL ? v[5]->b : true);
    d->fed = true;
    int64_t levels = 0;
    if (v[4] && v[4]->kind != VK_NONE && !fl_ev_want_int(c, v[4], "lod_level", a->span, &levels)) return c->error;
    if (levels < 0 || levels > FL_IR_MAX_LOD)
        return fl_ev_error(c, a->span, "lod_level must be 0 to %d, found %lld", FL_IR_MAX_LOD, (long long)levels);
    /* a shape given whole as [-1, d] is the rows of sequences, as [d] with the batch dimension
     * added (Fluid's CTR tests declare their ids so); of a higher rank it is padded (below) */
    bool rows = !batch && n == 2 && full[0] == -1;
    if (levels > 0 && !batch && !rows) {
        /* Fluid's padded inputs (the Transformer's [batch, seq_len, 1] word ids) declare a lod_level
         * and are fed dense arrays, whose LoD is empty: say so, and make a dense var */
        FlBuf sh = {0};
        fl_ir_shape_str(n, full, &sh);
        fl_diag_warning(&c->diag, a->span,
                        "'%s' has lod_level=%lld and append_batch_size=False: its shape %s is given whole, so it is "
                        "a dense (padded) tensor without sequence offsets; with append_batch_size=True (or a shape "
                        "[-1, d]) its rows are the tokens of sequences",
                        v[0]->str.s, (long long)levels, fl_buf_str(&sh));
        fl_buf_free(&sh);
        levels = 0;
    }
    /* the offsets of each level are data too: NAME@LOD0 (outermost) .. (docs/sequences.md) */
    const char *lods[FL_IR_MAX_LOD];
    char *dname = fl_xstrdup(v[0]->str.s);
    for (int64_t k = 0; k < levels; k++) {
        lods[k] = fl_arena_printf(&c->arena, "%s@LOD%lld", dname, (long long)k);
        if (fl_ir_var_find(b0, lods[k])) {
            free(dname);
            return fl_ev_error(c, a->span, "a var named '%s' already exists", lods[k]);
        }
        FlVarDesc *o = fl_ev_new_var(c, b0, lods[k], a->span);
        int64_t dim = -1;
        fl_ir_var_set_shape(o, 1, &dim);
        o->dtype = FL_DT_INT64;
        o->stop_gradient = true;
        o->fed = true;
    }
    fl_ir_var_set_lod(fl_ir_var_find(b0, dname), (int)levels, lods);
    FlValue *r = fl_v_var(c, dname);
    free(dname);
    return r;
}

/* lod(x): the offset Vars of x's LoD levels, outermost first; [] for a dense var. */
static FlValue *c_lod(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("lod", "x", 1);
    if (v[0]->kind != VK_VAR) return fl_ev_error(c, a->span, "lod() needs a Var, found %s", fl_v_type_name(v[0]));
    FlVarDesc *d = fl_ev_var_desc(c, v[0]);
    if (!d) return fl_ev_error(c, a->span, "var '%s' is not visible here", v[0]->var.name);
    FlValue *l = fl_v_list(c, VK_LIST);
    for (int i = 0; i < d->lod_level; i++) fl_v_list_push(c, l, fl_v_var(c, d->lod[i]));
    return l;
}

/* set_lod(x, lods): x (a Var made by this program) becomes a LoD tensor with the offset Vars lods
 * (int64 vectors, outermost first; [] makes it dense); returns x. */
static FlValue *c_set_lod(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("set_lod", "x lods", 2);
    if (v[0]->kind != VK_VAR) return fl_ev_error(c, a->span, "set_lod() needs a Var, found %s", fl_v_type_name(v[0]));
    FlVarDesc *d = fl_ev_var_desc(c, v[0]);
    if (!d) return fl_ev_error(c, a->span, "var '%s' is not visible here", v[0]->var.name);
    if (!fl_v_is_seq(v[1]) || v[1]->list.len > FL_IR_MAX_LOD)
        return fl_ev_error(c, a->span, "set_lod() takes a list of at most %d offset Vars", FL_IR_MAX_LOD);
    const char *names[FL_IR_MAX_LOD];
    for (size_t i = 0; i < v[1]->list.len; i++) {
        FlValue *x = v[1]->list.items[i];
        FlVarDesc *o = x->kind == VK_VAR ? fl_ev_var_desc(c, x) : NULL;
        if (!o || o->kind != FL_VAR_DENSE || o->dtype != FL_DT_INT64 || o->ndim != 1)
            return fl_ev_error(c, a->span, "set_lod(): LoD level %zu must be an int64 vector of offsets, found %s", i,
                               o ? fl_dtype_name(o->dtype) : fl_v_type_name(x));
        names[i] = x->var.name;
    }
    if (d->persistable) return fl_ev_error(c, a->span, "set_lod(): '%s' is persistable (a parameter or state), not a batch", d->name);
    fl_ir_var_set_lod(d, (int)v[1]->list.len, names);
    return v[0];
}

/* Fluid's fans of a parameter shape: a vector's length both ways, a matrix [in, out], a filter
 * [out, in, k...] in*k and out*k (the receptive field's size k). */
static void fans(const FlVarDesc *d, double *fan_in, double *fan_out) {
    double rf = 1;
    for (int i = 2; i < d->ndim; i++) rf *= (double)d->shape[i];
    if (d->ndim == 0) *fan_in = *fan_out = 1;
    else if (d->ndim == 1) *fan_in = *fan_out = (double)d->shape[0];
    else if (d->ndim == 2) *fan_in = (double)d->shape[0], *fan_out = (double)d->shape[1];
    else *fan_in = (double)d->shape[1] * rf, *fan_out = (double)d->shape[0] * rf;
}

/* The number at item i of an initializer tuple, or dflt when it is absent or None. */
static double init_num(const FlValue *init, size_t i, double dflt) {
    if (!init || init->list.len <= i || !fl_v_is_num(init->list.items[i])) return dflt;
    return fl_v_num(init->list.items[i]);
}

/* The startup op `type` that initialises the parameter `name` (described by d): its output,
 * shape and dtype set; the caller adds its attributes and checks it (init_op_check). */
static FlOpDesc *init_op_new(Ctx *c, FlBlock *sb, const char *type, const char *name, const FlVarDesc *d,
                             FlSpan sp) {
    FlOpDesc *op = fl_ev_op_raw(c, sb, type, sp);
    fl_ir_op_add_output(op, "Out", name);
    fl_ir_op_set_ints(op, "shape", d->shape, (size_t)d->ndim);
    fl_ir_op_set_int(op, "dtype", d->dtype);
    return op;
}

static bool init_op_check(Ctx *c, FlOpDesc *op, FlSpan sp) {
    FlErr e;
    fl_ops_fill_defaults(op);
    if (fl_ops_check(op, &e) != FL_OK) {
        fl_ev_error(c, sp, "%s", e.msg);
        return false;
    }
    return true;
}

/* ("numpy", shape, values) (fluid.initializer.NumpyArrayInitializer): an assign_value op in the
 * startup program with the values, whose shape must be the parameter's. */
static bool init_array(Ctx *c, FlBlock *sb, const char *name, const FlVarDesc *d, const FlValue *init,
                       FlSpan sp) {
    const FlValue *shape = init->list.len == 3 ? init->list.items[1] : NULL;
    const FlValue *vals = init->list.len == 3 ? init->list.items[2] : NULL;
    if (!shape || !fl_v_is_seq(shape) || !vals || !fl_v_is_seq(vals)) {
        fl_ev_error(c, sp, "a 'numpy' initializer is ('numpy', shape, values): use fluid.initializer.NumpyArrayInitializer");
        return false;
    }
    bool same = shape->list.len == (size_t)d->ndim;
    for (size_t i = 0; same && i < shape->list.len; i++)
        same = fl_v_is_num(shape->list.items[i]) && fl_v_num(shape->list.items[i]) == (double)d->shape[i];
    if (!same) {
        FlBuf want = {0}, got = {0};
        fl_ir_shape_str(d->ndim, d->shape, &want);
        fl_buf_putc(&got, '[');
        for (size_t i = 0; i < shape->list.len; i++)
            fl_buf_printf(&got, "%s%.0f", i ? ", " : "", fl_v_num(shape->list.items[i]));
        fl_buf_putc(&got, ']');
        fl_ev_error(c, sp, "NumpyArrayInitializer's array is %s, but parameter '%s' is %s", fl_buf_str(&got), name,
                    fl_buf_str(&want));
        fl_buf_free(&want);
        fl_buf_free(&got);
        return false;
    }
    size_t n = vals->list.len;
    double *v = fl_xmalloc(fl_mul_size(n ? n : 1, sizeof *v));
    for (size_t i = 0; i < n; i++) v[i] = fl_v_num(vals->list.items[i]);
    FlOpDesc *op = init_op_new(c, sb, "assign_value", name, d, sp);
    fl_ir_op_set_floats(op, "values", v, n);
    fl_ev_set_int_twin(c, op, "values", (FlValue *)vals); /* ints beyond 2^53 stay exact */
    free(v);
    return init_op_check(c, op, sp);
}

/* ("bilinear",) (fluid.initializer.Bilinear): Fluid's bilinear upsampling filter for a
 * conv2d_transpose weight [C_in, C_out, K, K], each K x K plane the same: element (y, x) is
 * (1 - |x / f - c|) (1 - |y / f - c|) with f = ceil(K / 2) and c = (2f - 1 - f mod 2) / 2f; an
 * assign_value op in the startup program. */
static bool init_bilinear(Ctx *c, FlBlock *sb, const char *name, const FlVarDesc *d, FlSpan sp) {
    bool ok = d->ndim == 4 && d->shape[2] == d->shape[3];
    int64_t n = 1;
    for (int i = 0; ok && i < d->ndim; i++) ok = d->shape[i] > 0 && !__builtin_mul_overflow(n, d->shape[i], &n);
    if (!ok || n > (int64_t)1 << 26) {
        FlBuf got = {0};
        fl_ir_shape_str(d->ndim, d->shape, &got);
        fl_ev_error(c, sp, "BilinearInitializer needs a 4-D parameter [C_in, C_out, K, K] (a conv2d_transpose filter, "
                    "its last two dimensions equal, at most 2^26 elements), but '%s' is %s", name, fl_buf_str(&got));
        fl_buf_free(&got);
        return false;
    }
    int64_t k = d->shape[3];
    double f = ceil((double)k / 2), ctr = (2 * f - 1 - fmod(f, 2)) / (2 * f);
    double *v = fl_xmalloc(fl_mul_size((size_t)n, sizeof *v));
    for (int64_t i = 0; i < n; i++) {
        double x = (double)(i % k), y = (double)(i / k % k);
        v[i] = (1 - fabs(x / f - ctr)) * (1 - fabs(y / f - ctr));
    }
    FlOpDesc *op = init_op_new(c, sb, "assign_value", name, d, sp);
    fl_ir_op_set_floats(op, "values", v, (size_t)n);
    free(v);
    return init_op_check(c, op, sp);
}

/* init (from fluid.initializer): ("uniform", lo, hi, seed) | ("normal", mean, std, seed) |
 * ("truncated_normal", mean, std, seed) | ("constant", value) | ("xavier", uniform, fan_in, fan_out, seed) | ("msra", uniform, fan_in,
 * None, seed) | ("numpy", shape, values) | ("bilinear",); fans None come from the shape, seed 0
 * from the program's sequence. */
static bool init_op(Ctx *c, FlProgram *startup, const char *name, FlVarDesc *d, FlValue *init, FlSpan sp) {
    FlBlock *sb = fl_ir_block(startup, 0);
    const char *kind = "constant";
    if (init) {
        if (!fl_v_is_seq(init) || init->list.len < 1 || init->list.items[0]->kind != VK_STR) {
            fl_ev_error(c, sp, "an initializer is a tuple like ('uniform', low, high), ('normal', mean, std) or ('constant', value)");
            return false;
        }
        kind = init->list.items[0]->str.s;
    }
    if (strcmp(kind, "numpy") == 0) return init_array(c, sb, name, d, init, sp);
    if (strcmp(kind, "bilinear") == 0) return init_bilinear(c, sb, name, d, sp);
    double p1 = init_num(init, 1, 0), p2 = init_num(init, 2, 0), seed = init_num(init, 3, 0);
    if (strcmp(kind, "xavier") == 0 || strcmp(kind, "msra") == 0) {
        double fi, fo;
        fans(d, &fi, &fo);
        fi = init_num(init, 2, fi);
        fo = init_num(init, 3, fo);
        bool uniform = init_num(init, 1, 1) != 0;
        double n = kind[0] == 'x' ? fi + fo : fi;
        seed = init_num(init, 4, 0);
        kind = uniform ? "uniform" : "normal";
        p2 = sqrt((uniform ? 6.0 : 2.0) / n);
        p1 = uniform ? -p2 : 0;
    }
    const char *type = strcmp(kind, "uniform") == 0 ? "uniform_random"
                       : strcmp(kind, "normal") == 0 ? "gaussian_random"
                       : strcmp(kind, "truncated_normal") == 0 ? "truncated_gaussian_random"
                       : strcmp(kind, "constant") == 0 ? "fill_constant"
                                                       : NULL;
    if (!type) {
        fl_ev_error(c, sp, "unknown initializer '%s' (expected uniform, normal, truncated_normal, constant, xavier, msra or numpy)", kind);
        return false;
    }
    FlOpDesc *op = init_op_new(c, sb, type, name, d, sp);
    if (type[0] == 'u') {
        fl_ir_op_set_float(op, "min", p1);
        fl_ir_op_set_float(op, "max", p2);
        fl_ir_op_set_int(op, "seed", seed != 0 ? (int64_t)seed : ++c->random_seed);
    } else if (type[0] == 'g' || type[0] == 't') {
        fl_ir_op_set_float(op, "mean", p1);
        fl_ir_op_set_float(op, "std", p2);
        fl_ir_op_set_int(op, "seed", seed != 0 ? (int64_t)seed : ++c->random_seed);
    } else {
        fl_ir_op_set_float(op, "value", p1);
        if (init && init->list.len > 1) fl_ev_set_int_twin(c, op, "value", init->list.items[1]);
    }
    return init_op_check(c, op, sp);
}

/* A persistable var in block 0 of main and of startup, initialised in startup. */
static FlValue *persistable(Ctx *c, const char *name, int nd, const int64_t *shape, FlDType dt, FlValue *init,
                            bool trainable, FlSpan sp) {
    FlBlock *mb = fl_ir_block(c->b.main, 0), *sb = fl_ir_block(c->b.startup, 0);
    if (fl_ir_var_find(mb, name)) return fl_ev_error(c, sp, "a var named '%s' already exists", name);
    for (int i = 0; i < nd; i++)
        if (shape[i] < 1) return fl_ev_error(c, sp, "parameter '%s' needs a known positive shape", name);
    FlVarDesc *d = fl_ev_new_var(c, mb, name, sp);
    fl_ir_var_set_shape(d, nd, shape);
    d->dtype = dt;
    d->persistable = true;
    d->trainable = trainable;
    d->stop_gradient = !trainable;
    FlVarDesc *sd = fl_ir_var_find(sb, name);
    if (!sd) sd = fl_ir_var_add(sb, name);
    fl_ir_var_copy(sd, d);
    if (!init_op(c, c->b.startup, name, d, init, sp)) return c->error;
    return fl_v_var(c, name);
}

/* A parameter created again by name (Fluid's ParamAttr(name=...) or param_attr='name' on several
 * layers) is the same parameter: same shape and dtype, or an error naming both lines. Its
 * initialiser and attributes are the first creation's. */
static FlValue *shared_parameter(Ctx *c, const char *name, int nd, const int64_t *shape, FlDType dt,
                                 FlSpan first, FlSpan sp) {
    FlVarDesc *d = fl_ir_var_find(fl_ir_block(c->b.main, 0), name);
    FL_ASSERT(d);
    bool same = d->ndim == nd && d->dtype == dt;
    for (int i = 0; same && i < nd; i++) same = d->shape[i] == shape[i];
    if (same) return fl_v_var(c, name);
    FlBuf was = {0}, now = {0};
    fl_ir_shape_str(d->ndim, d->shape, &was);
    fl_ir_shape_str(nd, shape, &now);
    fl_ev_error(c, sp, "the shared parameter '%s' is %s %s here, but %s %s where it was created",
                name, fl_dtype_name(dt), fl_buf_str(&now), fl_dtype_name(d->dtype), fl_buf_str(&was));
    fl_diag_note(&c->diag, first, "'%s' was created here", name);
    fl_buf_free(&was);
    fl_buf_free(&now);
    return c->error;
}

static FlValue *c_create_parameter(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("create_parameter", "shape dtype= name= init= trainable=", 5);
    int nd;
    int64_t shape[FL_IR_MAX_DIMS];
    if (!want_shape(c, v[0], "shape", a->span, &nd, shape)) return c->error;
    FlDType dt = FL_DT_FLOAT32;
    if (v[1] && !want_dtype(c, v[1], a->span, &dt)) return c->error;
    const char *name;
    if (v[2]) {
        if (!want_var_name(c, v[2], a->span)) return c->error;
        name = v[2]->str.s;
    } else {
        name = fl_ev_unique(c, "param");
    }
    bool trainable = !v[4] || v[4]->kind != VK_BOOL || v[4]->b;
    const char *key = fl_arena_printf(&c->arena, "%p/%s", (void *)c->b.main, name);
    FlValue *hook = fl_map_find_str(&c->param_hooks, key);
    if (hook) { /* the parameter is made by its hook: hook(shape, dtype, init, trainable) */
        FlValue *hargs[4] = {v[0], fl_v_cstr(c, fl_dtype_name(dt)), v[3] ? v[3] : c->none, fl_v_bool(c, trainable)};
        CallArgs ha = {.pos = hargs, .npos = 4, .span = a->span};
        return fl_ev_call(c, hook, &ha);
    }
    FlSpan *first = fl_map_find_str(&c->params, key);
    if (first) return shared_parameter(c, name, nd, shape, dt, *first, a->span);
    FlValue *r = persistable(c, name, nd, shape, dt, v[3] ? v[3] : NULL, trainable, a->span);
    if (r->kind == VK_ERROR) return r;
    first = fl_arena_alloc(&c->arena, sizeof *first);
    *first = fl_ev_user_span(c, a->span);
    fl_map_put_str(&c->params, key, first);
    return r;
}

static FlValue *c_global_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("global_var", "name shape value dtype=", 4);
    if (!want_var_name(c, v[0], a->span)) return c->error;
    int nd;
    int64_t shape[FL_IR_MAX_DIMS];
    if (!want_shape(c, v[1], "shape", a->span, &nd, shape)) return c->error;
    if (!fl_v_is_num(v[2])) return fl_ev_error(c, a->span, "value must be a number, found %s", fl_v_type_name(v[2]));
    FlDType dt = FL_DT_FLOAT32;
    if (v[3] && !want_dtype(c, v[3], a->span, &dt)) return c->error;
    FlValue *init = fl_v_list(c, VK_TUPLE);
    fl_v_list_push(c, init, fl_v_cstr(c, "constant"));
    fl_v_list_push(c, init, v[2]->kind == VK_INT ? v[2] : fl_v_float(c, fl_v_num(v[2])));
    return persistable(c, v[0]->str.s, nd, shape, dt, init, false, a->span);
}

/* create_var(prefix=, shape=, dtype=, name=, persistable=): a var of the current block to be
 * written later. With name= it is that var (the one of that name when the block has it, as
 * Fluid's Block.create_var gives), else a new one named from prefix; persistable=True makes it a
 * var of the main program's block 0 that keeps its value across runs and is saved as the
 * parameters are (Fluid's create_tensor(persistable=True)). */
FlValue *fl_ev_core_create_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("create_var", "prefix= shape= dtype= name= persistable=", 5);
    const char *prefix = v[0] && v[0]->kind == VK_STR ? v[0]->str.s : "tmp";
    if (v[4] && v[4]->kind != VK_BOOL)
        return fl_ev_error(c, a->span, "persistable must be True or False, found %s", fl_v_type_name(v[4]));
    bool keep = v[4] && v[4]->b;
    FlBlock *b = keep ? fl_ir_block(c->b.main, 0) : c->b.block;
    if (keep && b != c->b.block)
        return fl_ev_error(c, a->span, "a persistable var is made in the program's global block, not inside a block of control flow");
    FlDType dt = FL_DT_FLOAT32;
    if (v[2] && !want_dtype(c, v[2], a->span, &dt)) return c->error;
    if (v[3] && !want_var_name(c, v[3], a->span)) return c->error;
    FlVarDesc *d = v[3] ? fl_ir_var_find(b, v[3]->str.s) : NULL;
    if (d) {
        if (v[2] && d->dtype != dt)
            return fl_ev_error(c, a->span, "a var named '%s' already exists as %s, not %s", v[3]->str.s,
                               fl_dtype_name(d->dtype), fl_dtype_name(dt));
        if (keep && !d->persistable)
            return fl_ev_error(c, a->span, "a var named '%s' already exists and is not persistable", v[3]->str.s);
        return fl_v_var(c, d->name);
    }
    const char *name = v[3] ? v[3]->str.s : fl_ev_unique(c, prefix);
    d = fl_ev_new_var(c, b, name, a->span);
    if (v[1]) {
        int nd;
        int64_t shape[FL_IR_MAX_DIMS];
        if (!want_shape(c, v[1], "shape", a->span, &nd, shape)) return c->error;
        fl_ir_var_set_shape(d, nd, shape);
    }
    if (v[2]) d->dtype = dt;
    d->persistable = keep;
    return fl_v_var(c, name);
}

/* Variable: fluid.framework.Variable, the type of every Var (isinstance(v, fluid.Variable);
 * lang/pylib.c). A script makes Vars with layers and Block.create_var, not by calling it. */
static FlValue *c_variable(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    return fl_ev_error(c, a->span, "fluid.framework.Variable(...) is not called to make a var: use a layer, "
                                   "fluid.layers.create_tensor or block.create_var; Variable is for isinstance()");
}

/* create_array(dtype): a new tensor array var (Fluid's LOD_TENSOR_ARRAY) in the current block. */
static FlValue *c_create_array(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("create_array", "dtype", 1);
    FlDType dt = FL_DT_FLOAT32;
    if (!want_dtype(c, v[0], a->span, &dt)) return c->error;
    const char *name = fl_ev_unique(c, "array");
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, a->span);
    d->kind = FL_VAR_TENSOR_ARRAY;
    d->dtype = dt;
    d->stop_gradient = false; /* a float array carries gradients (an array of them) */
    return fl_v_var(c, name);
}

/* array_lod(array, levels): the companion arrays holding the offsets of the array's elements (an
 * int64 array per LoD level, outermost first), made beside the array when it has none and has
 * not been written yet; None when the array's elements have another lod_level. */
static FlValue *c_array_lod(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("array_lod", "array levels", 2);
    FlVarDesc *d = v[0]->kind == VK_VAR ? fl_ev_var_desc(c, v[0]) : NULL;
    if (!d || d->kind != FL_VAR_TENSOR_ARRAY)
        return fl_ev_error(c, a->span, "array_lod() needs a tensor array, found %s", fl_v_type_name(v[0]));
    int64_t levels;
    if (!fl_ev_want_int(c, v[1], "levels", a->span, &levels)) return c->error;
    if (levels < 0 || levels > FL_IR_MAX_LOD) return fl_ev_error(c, a->span, "array_lod(): levels must be 0 to %d", FL_IR_MAX_LOD);
    if (d->lod_level == 0 && levels > 0 && d->ndim == 0) {
        FlBlock *b = c->b.block;
        while (b && !fl_ir_var_find(b, d->name)) b = b->parent >= 0 ? fl_ir_block(c->b.main, b->parent) : NULL;
        if (!b) return fl_ev_error(c, a->span, "array_lod(): the array '%s' is not declared here", d->name);
        const char *names[FL_IR_MAX_LOD];
        char *aname = fl_xstrdup(d->name);
        FlSpan sp = a->span;
        for (int64_t k = 0; k < levels; k++) {
            names[k] = fl_arena_printf(&c->arena, "%s@LOD%lld", aname, (long long)k);
            FlVarDesc *o = fl_ev_new_var(c, b, names[k], sp);
            if (!o) {
                free(aname);
                return fl_ev_error(c, sp, "a var named '%s' already exists", names[k]);
            }
            int64_t dim = -1;
            fl_ir_var_set_shape(o, 1, &dim); /* its elements: offset vectors */
            o->kind = FL_VAR_TENSOR_ARRAY;
            o->dtype = FL_DT_INT64;
            o->stop_gradient = true;
        }
        d = fl_ir_var_find(b, aname);
        free(aname);
        fl_ir_var_set_lod(d, (int)levels, names);
    }
    if (d->lod_level != levels) return c->none;
    FlValue *l = fl_v_list(c, VK_LIST);
    for (int i = 0; i < d->lod_level; i++) fl_v_list_push(c, l, fl_v_var(c, d->lod[i]));
    return l;
}

/* find_var(name): the var of that name in block 0 of the main program, or None. */
static FlValue *c_find_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("find_var", "name", 1);
    if (!fl_ev_want_str(c, v[0], "name", a->span)) return c->error;
    return fl_ir_var_find(fl_ir_block(c->b.main, 0), v[0]->str.s) ? fl_v_var(c, v[0]->str.s) : c->none;
}

/* parameters(): the names of the main program's trainable parameters, in creation order. */
static FlValue *c_parameters(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("parameters", "", 0);
    (void)v;
    FlBlock *b0 = fl_ir_block(c->b.main, 0);
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < b0->vars.len; i++)
        if (b0->vars.data[i]->trainable) fl_v_list_push(c, l, fl_v_cstr(c, b0->vars.data[i]->name));
    return l;
}

static FlValue *c_unique_name(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("unique_name", "prefix", 1);
    if (!fl_ev_want_str(c, v[0], "prefix", a->span)) return c->error;
    return fl_v_cstr(c, fl_ev_unique(c, v[0]->str.s));
}

/* unique_name_switch(to, prefix=None): names come from generator `to` (an index this returned;
 * None: a new one, with prefix) from now on; returns the index of the one they came from. */
static FlValue *c_unique_switch(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("unique_name_switch", "to prefix=", 2);
    int64_t to = -1;
    if (v[0]->kind != VK_NONE &&
        (!fl_ev_want_int(c, v[0], "generator", a->span, &to) || to < 0 || to >= (int64_t)c->unique_gens.len))
        return fl_ev_error(c, a->span, "unique_name.switch(): not a generator of this program");
    if (v[1] && v[1]->kind != VK_NONE && !fl_ev_want_str(c, v[1], "prefix", a->span)) return c->error;
    return fl_v_int(c, fl_ev_unique_switch(c, to, v[1] && v[1]->kind == VK_STR ? v[1]->str.s : NULL));
}

/* param_hook(name, fn): create_parameter(name) of the main program calls fn(shape, dtype, init,
 * trainable) from now on and gives its result (a WeightNormParamAttr's weight, made of others). */
static FlValue *c_param_hook(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("param_hook", "name fn", 2);
    if (!want_var_name(c, v[0], a->span)) return c->error;
    if (v[1]->kind != VK_FUNC) return fl_ev_error(c, a->span, "param_hook() needs a function, found %s", fl_v_type_name(v[1]));
    const char *key = fl_arena_printf(&c->arena, "%p/%s", (void *)c->b.main, v[0]->str.s);
    fl_map_put_str(&c->param_hooks, fl_intern_str(&c->in, key), v[1]);
    return c->none;
}

static FlValue *c_append_backward(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("append_backward", "loss parameter_list= no_grad_set= callbacks=", 4);
    /* Fluid's names, accepted so its programs read the same, refused when given: ignoring them
     * would differentiate what the program asked to leave out */
    if (v[2] && v[2]->kind != VK_NONE)
        return fl_ev_error(c, a->span, "append_backward(): 'no_grad_set' is not supported (set stop_gradient = True on those vars)");
    /* callbacks: fluid.backward passes True for Fluid's error_clip_callback, the one it takes */
    if (v[3] && v[3]->kind != VK_NONE && v[3]->kind != VK_BOOL)
        return fl_ev_error(c, a->span, "append_backward(): 'callbacks' is not supported");
    size_t n0 = fl_ir_block(c->b.main, 0)->ops.len;
    FlValue *r = fl_ev_append_backward(c, v[0], v[1], a->span);
    if (r->kind != VK_ERROR && v[3] && v[3]->kind == VK_BOOL && v[3]->b && !fl_ev_error_clips(c, n0, a->span))
        return c->error;
    return r;
}

/* minimize()'s backward: append_backward, its ops then moved before the updates of the
 * program's earlier minimizes, so that every minimize differentiates the forward as it was
 * before any update (what a transpiled plan computes too: its trainers run every backward and
 * no update). The updates of all minimizes follow, in their order. Updates built elsewhere
 * than block 0 (server.do()) are not tracked. */
static FlValue *c_minimize_backward(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("minimize_backward", "loss parameter_list=", 2);
    FlBlock *b0 = fl_ir_block(c->b.main, 0);
    size_t n0 = b0->ops.len;
    FlValue *r = fl_ev_append_backward(c, v[0], v[1], a->span);
    if (r->kind == VK_ERROR || c->b.block != b0) return r;
    /* Fluid's minimize passes error_clip_callback to its backward */
    if (!fl_ev_error_clips(c, n0, a->span)) return c->error;
    size_t n1 = b0->ops.len;
    const char *key = fl_arena_printf(&c->arena, "%p", (void *)c->b.main);
    size_t *at = fl_map_find_str(&c->updates_at, key);
    if (!at) {
        at = fl_arena_alloc(&c->arena, sizeof *at);
        fl_map_put_str(&c->updates_at, key, at);
        *at = n1;
    } else if (*at < n0) {
        fl_ir_ops_move_tail(b0, n0, *at);
        *at += n1 - n0;
    } else {
        *at = n1; /* no op since the last minimize's backward */
    }
    return r;
}

static FlValue *c_error(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("error", "message", 1);
    if (!fl_ev_want_str(c, v[0], "message", a->span)) return c->error;
    return fl_ev_error(c, a->span, "%s", v[0]->str.s);
}

static FlValue *c_record(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("record", "_kind **attrs", 2);
    if (!fl_ev_want_str(c, v[0], "type", a->span)) return c->error;
    FlValue *r = fl_v_record(c, fl_intern_str(&c->in, v[0]->str.s));
    for (size_t i = 0; i < v[1]->dict.len; i++) fl_v_rec_set(c, r, v[1]->dict.keys[i]->str.s, v[1]->dict.vals[i]);
    return r;
}

/* export(name, value): binds name in the calling module (for names that are keywords in the
 * language, like go and parallel_for, which `go = ...` cannot bind). */
static FlValue *c_export(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("export", "name value", 2);
    if (!fl_ev_want_str(c, v[0], "name", a->span)) return c->error;
    if (!c->cur_mod) return c->none;
    fl_env_set(c->cur_mod->globals, fl_intern_str(&c->in, v[0]->str.s), v[1]);
    return c->none;
}

static FlValue *c_in_server_block(Ctx *c, FlValue *self, CallArgs *a) { return fl_v_bool(c, c->in_server_do); }

/* ------------------------------------------------------------------ _core: programs and guards */

static FlValue *guard(Ctx *c, GuardKind k, FlValue *ga, FlValue *gb, int64_t n) {
    FlValue *g = fl_v_new(c, VK_GUARD);
    g->guard.kind = k;
    g->guard.a = ga;
    g->guard.b = gb;
    g->guard.n = n;
    return g;
}

static FlValue *c_program(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("Program", "", 0);
    (void)v;
    FlValue *p = fl_v_new(c, VK_PROGRAM);
    p->prog = fl_ir_program_new();
    FL_VEC_PUSH(&c->programs, p->prog);
    return p;
}
/* Program.clone(for_test=False): a copy; for_test sets is_test on every op that has it (dropout,
 * batch_norm) and drops the backward and the optimizer, as Fluid's test programs are made
 * (fl_ev_program_for_test, program.c). */
static FlValue *prog_clone(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("clone", "for_test=", 1);
    if (v[0] && v[0]->kind != VK_BOOL) return fl_ev_error(c, a->span, "for_test must be True or False, found %s", fl_v_type_name(v[0]));
    FlValue *p = fl_v_new(c, VK_PROGRAM);
    p->prog = fl_ev_program_copy(c, self->prog);
    if (v[0] && v[0]->b && !fl_ev_program_for_test(c, p->prog, a->span)) return c->error;
    return p;
}
FlValue *fl_ev_program_method(Ctx *c, FlValue *prog, const char *name, FlSpan sp) {
    FlValue *m = fl_ev_program_attr(c, prog, name);
    if (m) return m;
    if (strcmp(name, "clone") == 0) return fl_v_builtin(c, "clone", prog_clone, prog);
    if (strcmp(name, "random_seed") == 0) return fl_v_int(c, c->random_seed);
    return fl_ev_error(c, sp, "a Program has no attribute '%s' (it has global_block, block, current_block, num_blocks, list_vars, to_string, clone, random_seed)", name);
}

/* program.random_seed = N (Fluid's way to make a program's random ops reproducible): the random
 * ops made after it draw their seeds from the sequence N+1, N+2, ...; every compilation's
 * sequence is fixed already (it starts at 0), so N only chooses another one. The sequence is one
 * for the startup and main programs, as their random ops are numbered in the order they are
 * made. */
bool fl_ev_program_set(Ctx *c, FlValue *prog, const char *name, FlValue *v, FlSpan sp) {
    (void)prog;
    if (strcmp(name, "random_seed") != 0) {
        fl_ev_error(c, sp, "cannot set attribute '%s' of a Program (only random_seed)", name);
        return false;
    }
    int64_t seed;
    if (!fl_ev_want_int(c, v, "random_seed", sp, &seed)) return false;
    if (seed < 0) {
        fl_ev_error(c, sp, "random_seed must be >= 0, found %lld", (long long)seed);
        return false;
    }
    c->random_seed = seed;
    return true;
}

static FlValue *c_default_main(Ctx *c, FlValue *self, CallArgs *a) {
    FlValue *p = fl_v_new(c, VK_PROGRAM);
    p->prog = c->bundle->main;
    return p;
}
static FlValue *c_default_startup(Ctx *c, FlValue *self, CallArgs *a) {
    FlValue *p = fl_v_new(c, VK_PROGRAM);
    p->prog = c->bundle->startup;
    return p;
}
static FlValue *c_program_guard(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("program_guard", "main_program startup_program=", 2);
    if (v[0]->kind != VK_PROGRAM) return fl_ev_error(c, a->span, "program_guard() needs a Program, found %s", fl_v_type_name(v[0]));
    if (v[1] && v[1]->kind != VK_PROGRAM) return fl_ev_error(c, a->span, "program_guard() needs a Program, found %s", fl_v_type_name(v[1]));
    return guard(c, GK_PROGRAM, v[0], v[1], 0);
}
/* guard(enter, exit=None): a `with` guard of the stdlib's own: enter() is called before the body
 * (its result is the `as` name's value), exit() after it, also when the body failed. */
static FlValue *c_guard(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("guard", "enter exit=", 2);
    for (int i = 0; i < 2; i++)
        if (v[i] && !(i == 1 && v[i]->kind == VK_NONE) && v[i]->kind != VK_FUNC && v[i]->kind != VK_BUILTIN)
            return fl_ev_error(c, a->span, "guard() needs functions, found %s", fl_v_type_name(v[i]));
    return guard(c, GK_CALLS, v[0], v[1] && v[1]->kind != VK_NONE ? v[1] : NULL, 0);
}
static FlValue *c_unique_guard(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("guard", "new_generator=", 1);
    /* Fluid's guard(new_generator): a string is the prefix of every name made inside */
    if (v[0] && v[0]->kind != VK_NONE && v[0]->kind != VK_STR)
        return fl_ev_error(c, a->span, "unique_name.guard(): new_generator must be a prefix string or None, found %s",
                           fl_v_type_name(v[0]));
    return guard(c, GK_UNIQUE_NAME, v[0] && v[0]->kind == VK_STR ? v[0] : NULL, NULL, 0);
}
static FlValue *c_name_scope(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("name_scope", "prefix=", 1);
    if (v[0] && !fl_ev_want_str(c, v[0], "prefix", a->span)) return c->error;
    return guard(c, GK_NAME_SCOPE, v[0], NULL, 0);
}
static FlValue *c_go(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("go", "", 0);
    (void)v;
    return guard(c, GK_GO, NULL, NULL, 0);
}
static FlValue *c_parallel_for(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("parallel_for", "n", 1);
    int64_t n;
    if (fl_v_is_seq(v[0])) n = (int64_t)v[0]->list.len;
    else if (!fl_ev_want_int(c, v[0], "parallel_for() count", a->span, &n)) return c->error;
    if (n < 1) return fl_ev_error(c, a->span, "parallel_for needs at least one iteration, found %lld", (long long)n);
    return guard(c, GK_PARALLEL_FOR, NULL, NULL, n);
}

/* rnn_block(owner): the guard of a recurrent layer's block (DynamicRNN.block(), StaticRNN.step()):
 * its body goes into a new sub-block, between calls of owner._block_begin(index) and
 * owner._block_end() (lower.c). */
static FlValue *c_rnn_block(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("rnn_block", "owner", 1);
    if (v[0]->kind != VK_RECORD) return fl_ev_error(c, a->span, "rnn_block() needs an object, found %s", fl_v_type_name(v[0]));
    return guard(c, GK_RNN, v[0], NULL, 0);
}

/* while_block(cond, end=None): the guard of layers.While(cond).block() (lower.c); end, a function
 * of no arguments, is called in the loop's block after the body (the contrib decoders' step end). */
static FlValue *c_while_block(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("while_block", "cond end=", 2);
    if (!fl_ev_is_var(v[0])) return fl_ev_error(c, a->span, "While() needs a bool Variable as its condition, found %s", fl_v_type_name(v[0]));
    if (v[1] && v[1]->kind != VK_NONE && v[1]->kind != VK_FUNC)
        return fl_ev_error(c, a->span, "while_block() end must be a function, found %s", fl_v_type_name(v[1]));
    return guard(c, GK_WHILE, v[0], v[1] && v[1]->kind == VK_FUNC ? v[1] : NULL, 0);
}

/* block_guard(index): the guard whose body's ops and vars go to block `index`, the current block
 * or one that encloses it (Fluid's parent_block().append_op from inside a loop's block). */
static FlValue *c_block_guard(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("block_guard", "index", 1);
    int64_t idx;
    if (!fl_ev_want_int(c, v[0], "index", a->span, &idx)) return c->error;
    for (const FlBlock *b = c->b.block;; b = fl_ir_block(c->b.main, b->parent)) {
        if (b->idx == idx) return guard(c, GK_BLOCK, NULL, NULL, idx);
        if (b->idx == 0 || b->parent < 0) break;
    }
    return fl_ev_error(c, a->span, "block_guard(): block %lld does not enclose the current block %d", (long long)idx,
                       c->b.block->idx);
}

/* cond_block(cond): the guard whose body runs when cond (a bool [1] Var) holds (layers.Switch). */
static FlValue *c_cond_block(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("cond_block", "cond", 1);
    if (!fl_ev_is_var(v[0])) return fl_ev_error(c, a->span, "a case needs a bool Variable as its condition, found %s", fl_v_type_name(v[0]));
    return guard(c, GK_COND, v[0], NULL, 0);
}

/* block_index(): the index of the block ops go to now. */
static FlValue *c_block_index(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("block_index", "", 0);
    (void)v;
    return fl_v_int(c, c->b.block->idx);
}

/* block_io(index): ([Vars the sub-block `index` of the current block reads from outside],
 * [Vars it writes outside]), each once, in the order of first use. */
static FlValue *c_block_io(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("block_io", "index", 1);
    int64_t idx;
    if (!fl_ev_want_int(c, v[0], "index", a->span, &idx)) return c->error;
    if (idx <= 0 || (uint64_t)idx >= c->b.main->blocks.len || fl_ir_block(c->b.main, (int)idx)->parent != c->b.block->idx)
        return fl_ev_error(c, a->span, "block_io(): block %lld is not a sub-block of the current block", (long long)idx);
    FlBlockIo io;
    fl_ir_block_io_init(&io);
    fl_ir_block_io(c->b.main, c->b.block, fl_ir_block(c->b.main, (int)idx), &io);
    FlValue *r = fl_v_list(c, VK_TUPLE);
    for (int k = 0; k < 2; k++) {
        FlValue *l = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < (k ? io.outs.len : io.ins.len); i++) {
            const char *n = k ? io.outs.data[i] : io.ins.data[i];
            if (fl_ir_var_lookup(c->b.main, c->b.block, n)) fl_v_list_push(c, l, fl_v_var(c, n));
        }
        fl_v_list_push(c, r, l);
    }
    fl_ir_block_io_fini(&io);
    return r;
}

static FlValue *server_do(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("do", "", 0);
    (void)v;
    return guard(c, GK_SERVER_DO, fl_map_find_str(&self->rec.attrs->map, "fanin"), NULL, 0);
}
static FlValue *c_listen_and_serv(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("listen_and_serv", "endpoint= fanin= sync_mode=", 3);
    /* never accepted and ignored: MPI ranks replace endpoints, and a hand-written server is sync */
    if (v[0] && v[0]->kind != VK_NONE)
        return fl_ev_error(c, a->span, "listen_and_serv(): 'endpoint' is not supported: the ranks of an MPI job find "
                                       "each other without addresses (remove it)");
    if (v[2] && v[2]->kind != VK_NONE && !(v[2]->kind == VK_BOOL && v[2]->b))
        return fl_ev_error(c, a->span, "listen_and_serv(): sync_mode=%s is not supported: a hand-written server is "
                                       "synchronous (for asynchronous training, transpile with --mode async)",
                           v[2]->kind == VK_BOOL ? "False" : fl_v_type_name(v[2]));
    FlValue *r = fl_v_record(c, "ListenAndServ");
    if (v[1]) {
        int64_t n;
        if (!fl_ev_want_int(c, v[1], "fanin", a->span, &n)) return c->error;
        fl_v_rec_set(c, r, "fanin", fl_v_int(c, n));
    }
    fl_v_rec_set(c, r, "do", fl_v_builtin(c, "do", server_do, r));
    return r;
}

/* A new channel var of the current block whose elements are given by dtype (dv: "int64", or
 * "chan int64" for a channel of channels, nested as often as written; NULL: float32) and shape
 * (sv, NULL: unknown); NULL after a diagnostic. */
static FlVarDesc *chan_var(Ctx *c, FlValue *dv, FlValue *sv, int64_t cap, FlSpan sp) {
    FlDType dt = FL_DT_FLOAT32;
    int depth = 0;
    for (const char *s = dv && dv->kind == VK_STR ? dv->str.s : ""; strncmp(s, "chan ", 5) == 0; depth++) {
        for (s += 5; *s == ' ';) s++;
        dv = fl_v_cstr(c, s);
    }
    if (depth > FL_IR_MAX_DIMS) {
        fl_ev_error(c, sp, "channels nested %d deep: at most %d", depth, FL_IR_MAX_DIMS);
        return NULL;
    }
    if (dv && !want_dtype(c, dv, sp, &dt)) return NULL;
    int nd = 0;
    int64_t shape[FL_IR_MAX_DIMS];
    if (sv && !want_shape(c, sv, "shape", sp, &nd, shape)) return NULL;
    if (cap < 0) {
        fl_ev_error(c, sp, "a channel's capacity cannot be negative (%lld)", (long long)cap);
        return NULL;
    }
    const char *name = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, "channel"));
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, sp);
    d->kind = FL_VAR_CHANNEL;
    d->dtype = dt;
    fl_ir_var_set_shape(d, nd, shape); /* the elements' shape (rank 0: unknown) */
    d->capacity = cap;
    d->elem_chans = depth;
    d->stop_gradient = true;
    return d;
}

static FlValue *c_make_chan(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("make_chan", "dtype= capacity= shape=", 3);
    int64_t cap = 0;
    if (v[1] && !fl_ev_want_int(c, v[1], "capacity", a->span, &cap)) return c->error;
    FlVarDesc *d = chan_var(c, v[0], v[2], cap, a->span);
    if (!d) return c->error;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "channel_create", a->span);
    fl_ir_op_add_output(op, "Out", d->name);
    fl_ir_op_set_int(op, "dtype", d->dtype);
    fl_ir_op_set_int(op, "capacity", cap);
    if (!fl_ev_infer(c, c->b.block, op, a->span)) return c->error;
    return fl_v_var(c, d->name);
}

/* nil_chan: Go's `var ch chan T`, a channel var of that element type holding the nil channel
 * (never ready in a select until the program rebinds the name to a channel). */
static FlValue *c_nil_chan(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("nil_chan", "dtype= shape=", 2);
    FlVarDesc *d = chan_var(c, v[0], v[1], 0, a->span);
    if (!d) return c->error;
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "channel_nil", a->span);
    fl_ir_op_add_output(op, "Out", d->name);
    if (!fl_ev_infer(c, c->b.block, op, a->span)) return c->error;
    return fl_v_var(c, d->name);
}

/* ------------------------------------------------------------------ _core: parameter-server layers */

static bool var_list(Ctx *c, FlValue *x, const char *what, FlSpan sp, FlValue **out) {
    if (x->kind == VK_VAR) {
        FlValue *l = fl_v_list(c, VK_LIST);
        fl_v_list_push(c, l, x);
        *out = l;
        return true;
    }
    if (!fl_v_is_seq(x)) {
        fl_ev_error(c, sp, "%s must be a Var or a list of Vars, found %s", what, fl_v_type_name(x));
        return false;
    }
    for (size_t i = 0; i < x->list.len; i++)
        if (x->list.items[i]->kind != VK_VAR) {
            fl_ev_error(c, sp, "%s must hold Vars, found %s", what, fl_v_type_name(x->list.items[i]));
            return false;
        }
    *out = x;
    return true;
}

/* The block rule (compiler/ir/rules.h) on a var's declared shape (unknown dims count as 1).
 * Returns the rows of each block (from c's arena) and their count in *n. */
static int64_t *block_rows(Ctx *c, const FlVarDesc *d, int64_t pservers, int64_t min_block, size_t *n) {
    int64_t numel = 1;
    for (int i = 0; i < d->ndim; i++)
        if (d->shape[i] > 0 && __builtin_mul_overflow(numel, d->shape[i], &numel)) numel = INT64_MAX;
    int64_t dim0 = d->ndim > 0 && d->shape[0] > 0 ? d->shape[0] : 1;
    int64_t pieces = fl_rule_block_count(dim0, numel, pservers, min_block > 0 ? min_block : 1);
    int64_t *rows = fl_arena_alloc(&c->arena, fl_mul_size((size_t)pieces, sizeof *rows));
    for (int64_t k = 0; k < pieces; k++) rows[k] = fl_rule_block_rows(dim0, pieces, k);
    *n = (size_t)pieces;
    return rows;
}

static FlValue *c_dist_split(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("split", "params grads pservers= min_block_size=", 4);
    FlValue *ps, *gs;
    if (!var_list(c, v[0], "params", a->span, &ps) || !var_list(c, v[1], "grads", a->span, &gs)) return c->error;
    if (ps->list.len != gs->list.len)
        return fl_ev_error(c, a->span, "split() needs as many gradients as parameters (%zu and %zu)", ps->list.len, gs->list.len);
    int64_t pservers = 1, minb = 8192;
    if (v[2] && !fl_ev_want_int(c, v[2], "pservers", a->span, &pservers)) return c->error;
    if (v[3] && !fl_ev_want_int(c, v[3], "min_block_size", a->span, &minb)) return c->error;
    FlValue *pb = fl_v_list(c, VK_LIST), *gb = fl_v_list(c, VK_LIST);
    FlBlock *b = c->b.block;
    for (size_t i = 0; i < ps->list.len; i++) {
        FlVarDesc *pd = fl_ev_var_desc(c, ps->list.items[i]);
        FlVarDesc *gd = fl_ev_var_desc(c, gs->list.items[i]);
        if (!pd || !gd) return fl_ev_error(c, a->span, "split(): a var is not visible here");
        size_t n;
        int64_t *rows = block_rows(c, pd, pservers, minb, &n);
        FlOpDesc *op = fl_ev_op_raw(c, b, "split", a->span);
        fl_ir_op_add_input(op, "X", gs->list.items[i]->var.name);
        fl_ir_op_add_output_slot(op, "Out");
        fl_ir_op_set_int(op, "axis", 0);
        fl_ir_op_set_ints(op, "sections", rows, n);
        for (size_t k = 0; k < n; k++) {
            const char *pn = fl_rule_block_name(&c->arena, ps->list.items[i]->var.name, (int64_t)k);
            const char *gn = fl_rule_block_name(&c->arena, gs->list.items[i]->var.name, (int64_t)k);
            FlVarDesc *g = fl_ev_new_var(c, b, gn, a->span);
            FlVarDesc *p = fl_ev_new_var(c, b, pn, a->span);
            if (!g || !p) return fl_ev_error(c, a->span, "split(): the parameter '%s' was split already", ps->list.items[i]->var.name);
            fl_ir_op_add_output(op, "Out", gn);
            fl_ir_var_copy(p, pd);
            p->loc = fl_ev_loc(c, a->span);
            p->shape[0] = rows[k];
            p->persistable = false;
            p->trainable = false;
            p->stop_gradient = true;
            fl_map_put_str(&c->block_of_var, fl_intern_str(&c->in, pn), (void *)fl_intern_str(&c->in, ps->list.items[i]->var.name));
            fl_v_list_push(c, pb, fl_v_var(c, pn));
            fl_v_list_push(c, gb, fl_v_var(c, gn));
        }
        if (!fl_ev_infer(c, b, op, a->span)) return c->error;
        /* the parameter blocks start as the parameter's current rows; recv overwrites them */
        FlOpDesc *pop = fl_ev_op_raw(c, b, "split", a->span);
        fl_ir_op_add_input(pop, "X", ps->list.items[i]->var.name);
        fl_ir_op_add_output_slot(pop, "Out");
        fl_ir_op_set_int(pop, "axis", 0);
        fl_ir_op_set_ints(pop, "sections", rows, n);
        for (size_t k = 0; k < n; k++)
            fl_ir_op_add_output(pop, "Out", fl_rule_block_name(&c->arena, ps->list.items[i]->var.name, (int64_t)k));
        if (!fl_ev_infer(c, b, pop, a->span)) return c->error;
    }
    FlValue *r = fl_v_record(c, "SplitResult");
    fl_v_rec_set(c, r, "param", pb);
    fl_v_rec_set(c, r, "grad", gb);
    fl_v_rec_set(c, r, "__len__", fl_v_int(c, (int64_t)pb->list.len));
    return r;
}

static FlValue *dist_op(Ctx *c, const char *type, FlValue *xs, bool out_too, FlSpan sp) {
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, type, sp);
    fl_ir_op_add_input_slot(op, "X");
    for (size_t i = 0; i < xs->list.len; i++) fl_ir_op_add_input(op, "X", xs->list.items[i]->var.name);
    if (out_too) {
        fl_ir_op_add_output_slot(op, "Out");
        for (size_t i = 0; i < xs->list.len; i++) fl_ir_op_add_output(op, "Out", xs->list.items[i]->var.name);
    }
    if (!fl_ev_infer(c, c->b.block, op, sp)) return c->error;
    return c->none;
}

static FlValue *c_send(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("send", "input", 1);
    FlValue *xs;
    if (!var_list(c, v[0], "send() input", a->span, &xs)) return c->error;
    return dist_op(c, "send", xs, false, a->span);
}
static FlValue *c_recv(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("recv", "input", 1);
    FlValue *xs;
    if (!var_list(c, v[0], "recv() input", a->span, &xs)) return c->error;
    FlValue *r = dist_op(c, "recv", xs, true, a->span);
    if (r->kind == VK_ERROR) return r;
    return v[0];
}
static FlValue *c_split_to_chan(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("split_to_chan", "input channel pservers= min_block_size=", 4);
    FlValue *xs;
    if (!var_list(c, v[0], "split_to_chan() input", a->span, &xs)) return c->error;
    if (v[1]->kind != VK_VAR || !fl_ev_is_channel(c, v[1]))
        return fl_ev_error(c, a->span, "split_to_chan() needs a channel, found %s", v[1]->kind == VK_VAR ? "a tensor Var" : fl_v_type_name(v[1]));
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "split_to_chan", a->span);
    fl_ir_op_add_input_slot(op, "X");
    for (size_t i = 0; i < xs->list.len; i++) fl_ir_op_add_input(op, "X", xs->list.items[i]->var.name);
    fl_ir_op_add_input(op, "Channel", v[1]->var.name);
    int64_t pservers = 1, minb = FL_RULE_MIN_BLOCK_SIZE;
    if (v[2] && !fl_ev_want_int(c, v[2], "pservers", a->span, &pservers)) return c->error;
    if (v[3] && !fl_ev_want_int(c, v[3], "min_block_size", a->span, &minb)) return c->error;
    if (pservers < 1 || minb < 1)
        return fl_ev_error(c, a->span, "split_to_chan() needs pservers >= 1 and min_block_size >= 1, found %lld and %lld",
                           (long long)pservers, (long long)minb);
    fl_ir_op_set_int(op, "pservers", pservers);
    fl_ir_op_set_int(op, "min_block_size", minb);
    if (!fl_ev_infer(c, c->b.block, op, a->span)) return c->error;
    return c->none;
}

/* concat: of a channel (drain it back into the parameters), of parameter blocks (one concat per
 * parameter), or of plain Vars along an axis. */
static FlValue *c_concat(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("concat", "input axis= name=", 3);
    FlValue *in = v[0];
    if (in->kind == VK_VAR && fl_ev_is_channel(c, in)) {
        FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "chan_concat", a->span);
        fl_ir_op_add_input(op, "Channel", in->var.name);
        fl_ir_op_add_output_slot(op, "Out");
        if (!fl_ev_infer(c, c->b.block, op, a->span)) return c->error;
        return c->none;
    }
    FlValue *xs;
    if (!var_list(c, in, "concat() input", a->span, &xs)) return c->error;
    if (!xs->list.len) return fl_ev_error(c, a->span, "concat() of an empty list");
    bool blocks = true;
    for (size_t i = 0; i < xs->list.len; i++)
        if (!fl_map_find_str(&c->block_of_var, xs->list.items[i]->var.name)) blocks = false;
    if (blocks) {
        FlValue *res = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < xs->list.len;) {
            const char *param = fl_map_find_str(&c->block_of_var, xs->list.items[i]->var.name);
            FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "concat", a->span);
            fl_ir_op_add_input_slot(op, "X");
            while (i < xs->list.len && fl_map_find_str(&c->block_of_var, xs->list.items[i]->var.name) == param)
                fl_ir_op_add_input(op, "X", xs->list.items[i++]->var.name);
            fl_ir_op_add_output(op, "Out", param);
            fl_ir_op_set_int(op, "axis", 0);
            if (!fl_ev_infer(c, c->b.block, op, a->span)) return c->error;
            fl_v_list_push(c, res, fl_v_var(c, param));
        }
        return res->list.len == 1 ? res->list.items[0] : res;
    }
    /* concat keeps the first LoD input's offsets (the op table's LoD rule), which cut its rows
     * only when the rows stay those of each input: along axis 0 they would not */
    int64_t axis = 0;
    if (v[1] && !fl_ev_want_int(c, v[1], "axis", a->span, &axis)) return c->error;
    for (size_t i = 0; i < xs->list.len && axis == 0; i++) {
        FlVarDesc *d = fl_ev_var_desc(c, xs->list.items[i]);
        if (d && d->lod_level > 0)
            return fl_ev_error(c, a->span, "concat() along axis 0 of '%s', a LoD tensor (lod_level %d), would mix up its "
                                           "sequences: sequence_concat joins sequences, axis=1 joins columns",
                               d->name, d->lod_level);
    }
    const char *names[2] = {"X", "axis"};
    FlValue *vals[2] = {xs, v[1] ? v[1] : fl_v_int(c, 0)};
    CallArgs oa = {.kwnames = names, .kwvals = vals, .nkw = 2, .span = a->span};
    return fl_ev_op(c, "concat", &oa, a->span);
}

/* ------------------------------------------------------------------ _core: io, train, flags */

static FlReaderSpec *reader_new(Ctx *c) {
    FlReaderSpec *r = fl_xcalloc(1, sizeof *r);
    FL_VEC_PUSH(&c->readers, r);
    return r;
}

/* io.sequence(column, levels=1): in io.csv's columns=, a column whose field holds a sequence per
 * row (numbers separated by blanks; with levels=2, sub-sequences separated by '|'). */
static FlValue *c_io_sequence(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("sequence", "column levels=", 2);
    int64_t col, levels = 1;
    if (!fl_ev_want_int(c, v[0], "column", a->span, &col)) return c->error;
    if (col < 0) return fl_ev_error(c, a->span, "io.sequence() needs a non-negative column index, found %lld", (long long)col);
    if (v[1] && !fl_ev_want_int(c, v[1], "levels", a->span, &levels)) return c->error;
    if (levels < 1 || levels > 2)
        return fl_ev_error(c, a->span, "io.sequence() reads sequences of 1 or 2 levels, found levels=%lld", (long long)levels);
    FlValue *r = fl_v_record(c, "io.sequence");
    fl_v_rec_set(c, r, "column", fl_v_int(c, col));
    fl_v_rec_set(c, r, "levels", fl_v_int(c, levels));
    return r;
}

static bool is_sequence_col(const FlValue *v) {
    return v->kind == VK_RECORD && !v->rec.cls && strcmp(v->rec.type, "io.sequence") == 0;
}

/* The located errors of a reader whose feed fc is a sequence: a blank separator would cut its
 * numbers apart, '|' its sub-sequences, and sequences are not normalised. */
static bool check_sequence_feed(Ctx *c, const FlReaderSpec *r, const FlFeedCols *fc, FlSpan sp) {
    if (r->sep == ' ' || r->sep == '\t') {
        fl_ev_error(c, sp, "feed '%s' is a sequence of blank-separated numbers: sep cannot be a blank", fc->feed);
        return false;
    }
    if (fc->lod_level == 2 && r->sep == '|') {
        fl_ev_error(c, sp, "feed '%s' is a nested sequence whose sub-sequences '|' separates: sep cannot be '|'", fc->feed);
        return false;
    }
    for (size_t i = 0; i < r->normalize.len; i++)
        if (strcmp(r->normalize.data[i], fc->feed) == 0) {
            fl_ev_error(c, sp, "normalize names '%s', a sequence (io.sequence): sequences cannot be normalised", fc->feed);
            return false;
        }
    return true;
}

static FlValue *c_io_csv(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("csv", "path columns skip_rows= sep= normalize= scale=", 6);
    if (!fl_ev_want_str(c, v[0], "path", a->span)) return c->error;
    if (v[0]->str.n == 0) return fl_ev_error(c, a->span, "io.csv() needs the path of a data file, found ''");
    if (v[1]->kind != VK_DICT) return fl_ev_error(c, a->span, "columns must be a dict of feed name to column indices, found %s", fl_v_type_name(v[1]));
    FlReaderSpec *r = reader_new(c);
    r->path = fl_xstrdup(v[0]->str.s);
    const char *dir = c->cur_mod && c->cur_mod->dir ? c->cur_mod->dir : ".";
    char *abs = realpath(dir, NULL);
    r->base_dir = abs ? abs : fl_xstrdup(dir);
    r->sep = ',';
    for (size_t i = 0; i < v[1]->dict.len; i++) {
        FlValue *k = v[1]->dict.keys[i], *cols = v[1]->dict.vals[i];
        if (k->kind != VK_STR) return fl_ev_error(c, a->span, "columns keys must be feed names");
        FlFeedCols fc = {0};
        if (is_sequence_col(cols)) {
            /* its attributes may have been assigned since io.sequence() checked them */
            FlValue *col = fl_env_find(cols->rec.attrs, "column"), *lv = fl_env_find(cols->rec.attrs, "levels");
            if (!col || col->kind != VK_INT || col->i < 0 || !lv || lv->kind != VK_INT || lv->i < 1 || lv->i > 2)
                return fl_ev_error(c, a->span, "columns['%s'] is not an io.sequence(column, levels) of a column index and 1 or 2 levels",
                                   k->str.s);
            fc.feed = fl_xstrdup(k->str.s);
            fc.ncols = 1;
            fc.cols = fl_xcalloc(1, sizeof(int64_t));
            fc.cols[0] = col->i;
            fc.lod_level = (int)lv->i;
            FL_VEC_PUSH(&r->feeds, fc);
            continue;
        }
        FlValue *l = cols->kind == VK_INT ? NULL : cols;
        if (l && !fl_v_is_seq(l))
            return fl_ev_error(c, a->span, "columns['%s'] must be a list of column indices or io.sequence(column), found %s", k->str.s,
                               fl_v_type_name(cols));
        fc.feed = fl_xstrdup(k->str.s);
        fc.ncols = l ? l->list.len : 1;
        fc.cols = fl_xcalloc(fc.ncols, sizeof(int64_t));
        for (size_t j = 0; j < fc.ncols; j++) {
            FlValue *x = l ? l->list.items[j] : cols;
            if (x->kind != VK_INT || x->i < 0) {
                FL_VEC_PUSH(&r->feeds, fc);
                return fl_ev_error(c, a->span, "columns['%s'] must hold non-negative column indices", k->str.s);
            }
            fc.cols[j] = x->i;
        }
        FL_VEC_PUSH(&r->feeds, fc);
    }
    if (v[2] && !fl_ev_want_int(c, v[2], "skip_rows", a->span, &r->skip_rows)) return c->error;
    if (r->skip_rows < 0) return fl_ev_error(c, a->span, "skip_rows cannot be negative, found %lld", (long long)r->skip_rows);
    if (v[3]) {
        if (!fl_ev_want_str(c, v[3], "sep", a->span)) return c->error;
        if (v[3]->str.n != 1) return fl_ev_error(c, a->span, "sep must be one character, found '%s'", v[3]->str.s);
        r->sep = v[3]->str.s[0];
    }
    if (v[4]) {
        if (!fl_v_is_seq(v[4])) return fl_ev_error(c, a->span, "normalize must be a list of feed names");
        for (size_t i = 0; i < v[4]->list.len; i++) {
            FlValue *x = v[4]->list.items[i];
            if (x->kind != VK_STR) return fl_ev_error(c, a->span, "normalize must be a list of feed names");
            FL_VEC_PUSH(&r->normalize, fl_xstrdup(x->str.s));
        }
    }
    if (v[5]) {
        if (v[5]->kind != VK_DICT) return fl_ev_error(c, a->span, "scale must be a dict of feed name to factor");
        for (size_t i = 0; i < v[5]->dict.len; i++) {
            FlValue *k = v[5]->dict.keys[i], *f = v[5]->dict.vals[i];
            if (k->kind != VK_STR || !fl_v_is_num(f)) return fl_ev_error(c, a->span, "scale must be a dict of feed name to factor");
            FL_VEC_PUSH(&r->scale_feeds, fl_xstrdup(k->str.s));
            FL_VEC_PUSH(&r->scale_factors, fl_v_num(f));
        }
    }
    for (size_t i = 0; i < r->feeds.len; i++)
        if (r->feeds.data[i].lod_level && !check_sequence_feed(c, r, &r->feeds.data[i], a->span)) return c->error;
    FlValue *rv = fl_v_new(c, VK_READER);
    rv->reader = r;
    return rv;
}

static FlValue *c_io_split(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("split", "reader fraction seed=", 3);
    if (v[0]->kind != VK_READER) return fl_ev_error(c, a->span, "split() needs a reader from io.csv(), found %s", fl_v_type_name(v[0]));
    if (v[0]->reader->has_split) return fl_ev_error(c, a->span, "this reader is already one part of a split");
    if (!fl_v_is_num(v[1]) || fl_v_num(v[1]) <= 0 || fl_v_num(v[1]) >= 1)
        return fl_ev_error(c, a->span, "the split fraction must be a number between 0 and 1 (exclusive)");
    int64_t seed = 0;
    if (v[2] && !fl_ev_want_int(c, v[2], "seed", a->span, &seed)) return c->error;
    FlValue *t = fl_v_list(c, VK_TUPLE);
    for (int part = FL_PART_TRAIN; part <= FL_PART_TEST; part++) {
        FlReaderSpec *r = fl_ir_reader_clone(v[0]->reader);
        FL_VEC_PUSH(&c->readers, r);
        r->has_split = true;
        r->split_fraction = fl_v_num(v[1]);
        r->split_seed = seed;
        r->part = (FlReaderPart)part;
        FlValue *out = fl_v_new(c, VK_READER);
        out->reader = r;
        fl_v_list_push(c, t, out);
    }
    return t;
}

static bool check_reader(Ctx *c, FlReaderSpec *r, FlSpan sp) {
    FlBlock *b0 = fl_ir_block(c->bundle->main, 0);
    for (size_t i = 0; i < r->feeds.len; i++) {
        FlVarDesc *d = fl_ir_var_find(b0, r->feeds.data[i].feed);
        if (!d) {
            fl_ev_error(c, sp, "the reader feeds '%s' but the program has no data var '%s'", r->feeds.data[i].feed, r->feeds.data[i].feed);
            return false;
        }
        int levels = r->feeds.data[i].lod_level;
        if (levels != d->lod_level) {
            if (!levels && d->lod_level > 2)
                fl_ev_error(c, sp, "the data var '%s' holds sequences of %d levels; a reader gives at most 2 (io.sequence)",
                            d->name, d->lod_level);
            else if (!levels)
                fl_ev_error(c, sp, "the data var '%s' holds sequences (lod_level %d) but the reader gives it plain columns: "
                                   "read its column with io.sequence(column%s)",
                            d->name, d->lod_level, d->lod_level == 1 ? "" : ", levels=2");
            else
                fl_ev_error(c, sp, "the reader gives '%s' sequences of %d level%s (io.sequence) but the data var has lod_level %d "
                                   "(layers.data(..., lod_level=%d))",
                            d->name, levels, levels == 1 ? "" : "s", d->lod_level, levels);
            return false;
        }
        int64_t numel = 1;
        for (int k = 0; k < d->ndim; k++)
            if (d->shape[k] > 0) numel *= d->shape[k];
        if (levels == 2 && numel != 1) { /* one level: steps of numel values (boxes: shape=[4]) */
            FlBuf b = {0};
            fl_ir_shape_str(d->ndim, d->shape, &b);
            fl_ev_error(c, sp, "the reader gives '%s' one value per step of its nested sequences but the data var has shape %s "
                               "(%lld values per row); declare it with shape=[1]",
                        d->name, fl_buf_str(&b), (long long)numel);
            fl_buf_free(&b);
            return false;
        }
        if (!levels && numel != (int64_t)r->feeds.data[i].ncols) {
            FlBuf b = {0};
            fl_ir_shape_str(d->ndim, d->shape, &b);
            fl_ev_error(c, sp, "the reader gives '%s' %zu columns but the data var has shape %s (%lld values per row)",
                        d->name, r->feeds.data[i].ncols, fl_buf_str(&b), (long long)numel);
            fl_buf_free(&b);
            return false;
        }
        r->feeds.data[i].dtype = d->dtype;
    }
    for (int which = 0; which < 2; which++) {
        char **names = which ? r->scale_feeds.data : r->normalize.data;
        size_t n = which ? r->scale_feeds.len : r->normalize.len;
        for (size_t i = 0; i < n; i++) {
            bool found = false;
            for (size_t k = 0; k < r->feeds.len; k++) found |= strcmp(r->feeds.data[k].feed, names[i]) == 0;
            if (!found) {
                fl_ev_error(c, sp, "%s names '%s', which is not one of the reader's feeds", which ? "scale" : "normalize",
                            names[i]);
                return false;
            }
        }
    }
    return true;
}

/* train(reader=, ...): fluid.train's arguments (stdlib/fluid/_train.fl), checked and recorded as
 * the bundle's run spec (its readers, epochs, batch size, seed and fetches, which flrun's options
 * and the report read); returns the spec's record (trains: whether it has a reader, and so a
 * loop; epochs, batch_size, seed; fetch: the fetched vars' names; test: whether it has a test
 * reader; driver: the driver Program the loop is written into, made here). */
static FlValue *c_train(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("train", "reader= test_reader= batch_size= epochs= fetch= seed= main_program= startup_program=", 8);
    FlRunSpec *rs = &c->bundle->run;
    if (rs->present) return fl_ev_error(c, a->span, "train() was already called; a program has one run spec");
    if (c->bundle->driver) /* docs/driver.md, "Status" */
        return fl_ev_error(c, a->span, "the program both calls fluid.train(...) and runs programs itself (exe.run): a "
                                       "bundle holds one driver, fluid.train's loop or the script's own; use one or "
                                       "the other");
    if (v[6] || v[7]) {
        if (!v[6] || v[6]->kind != VK_PROGRAM || (v[7] && v[7]->kind != VK_PROGRAM))
            return fl_ev_error(c, a->span, "main_program and startup_program must be Programs");
        for (size_t i = 0; i < c->bundle->programs.len; i++)
            if (c->bundle->programs.data[i].program == v[6]->prog || (v[7] && c->bundle->programs.data[i].program == v[7]->prog))
                return fl_ev_error(c, a->span, "train(): the program is run by exe.run already; use one or the other");
        /* the programs given replace the bundle's; what the compile builds into goes with them
         * (the driver made below may reuse a freed program's address) */
        if (v[6]->prog != c->bundle->main) {
            FlProgram *old = c->bundle->main;
            c->bundle->main = v[6]->prog;
            if (c->b.main == old) {
                c->b.main = c->bundle->main;
                c->b.block = c->home = fl_ir_block(c->b.main, 0);
            }
            fl_ir_program_free(old);
        }
        if (v[7] && v[7]->prog != c->bundle->startup) {
            FlProgram *old = c->bundle->startup;
            c->bundle->startup = v[7]->prog;
            if (c->b.startup == old) c->b.startup = c->bundle->startup;
            fl_ir_program_free(old);
        }
        for (size_t i = 0; i < c->programs.len; i++)
            if (c->programs.data[i] == v[6]->prog || (v[7] && c->programs.data[i] == v[7]->prog))
                c->programs.data[i] = NULL; /* adopted by the bundle */
    }
    rs->present = true;
    rs->batch_size = 32;
    rs->epochs = 1;
    for (int k = 0; k < 2; k++) {
        FlValue *r = v[k];
        if (!r) continue;
        if (r->kind != VK_READER) return fl_ev_error(c, a->span, "%s must be a reader from io.csv() or io.split(), found %s", k ? "test_reader" : "reader", fl_v_type_name(r));
        if (!check_reader(c, r->reader, a->span)) return c->error;
        if (k) rs->test_reader = fl_ir_reader_clone(r->reader);
        else rs->reader = fl_ir_reader_clone(r->reader);
    }
    if (v[2] && (!fl_ev_want_int(c, v[2], "batch_size", a->span, &rs->batch_size))) return c->error;
    if (rs->batch_size < 1) return fl_ev_error(c, a->span, "batch_size must be at least 1, found %lld", (long long)rs->batch_size);
    if (v[3] && !fl_ev_want_int(c, v[3], "epochs", a->span, &rs->epochs)) return c->error;
    if (rs->epochs < 0) return fl_ev_error(c, a->span, "epochs cannot be negative");
    if (v[5] && !fl_ev_want_int(c, v[5], "seed", a->span, &rs->seed)) return c->error;
    if (v[4]) {
        if (v[4]->kind != VK_DICT) return fl_ev_error(c, a->span, "fetch must be a dict of name to Var, found %s", fl_v_type_name(v[4]));
        for (size_t i = 0; i < v[4]->dict.len; i++) {
            FlValue *k = v[4]->dict.keys[i], *x = v[4]->dict.vals[i];
            if (k->kind != VK_STR || k->str.n == 0) return fl_ev_error(c, a->span, "fetch keys must be names, found %s", k->kind == VK_STR ? "''" : fl_v_type_name(k));
            if (x->kind != VK_VAR) return fl_ev_error(c, a->span, "fetch['%s'] must be a Var, found %s", k->str.s, fl_v_type_name(x));
            if (!fl_ir_var_find(fl_ir_block(c->bundle->main, 0), x->var.name))
                return fl_ev_error(c, a->span, "fetch['%s']: var '%s' is not in the main program's global block", k->str.s, x->var.name);
            FL_VEC_PUSH(&rs->fetch_names, fl_xstrdup(k->str.s));
            FL_VEC_PUSH(&rs->fetch_vars, fl_xstrdup(x->var.name));
        }
    }
    FlValue *spec = fl_v_record(c, "train_spec");
    fl_v_rec_set(c, spec, "trains", fl_v_bool(c, fl_ir_bundle_trains(c->bundle)));
    fl_v_rec_set(c, spec, "epochs", fl_v_int(c, rs->epochs));
    fl_v_rec_set(c, spec, "batch_size", fl_v_int(c, rs->batch_size));
    fl_v_rec_set(c, spec, "seed", fl_v_int(c, rs->seed));
    FlValue *fetches = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < rs->fetch_vars.len; i++) fl_v_list_push(c, fetches, fl_v_cstr(c, rs->fetch_vars.data[i]));
    fl_v_rec_set(c, spec, "fetch", fetches);
    fl_v_rec_set(c, spec, "test", fl_v_bool(c, rs->test_reader != NULL));
    if (!fl_ir_bundle_trains(c->bundle)) {
        fl_v_rec_set(c, spec, "driver", c->none);
        return spec;
    }
    FlValue *drv = fl_v_new(c, VK_PROGRAM);
    drv->prog = fl_ev_driver(c);
    fl_v_rec_set(c, spec, "driver", drv);
    c->train_driver = c->bundle->driver;
    return spec;
}

/* The driver's primitives that fluid.train's loop (stdlib/fluid/_train.fl) is written with, inside
 * `with program_guard(spec.driver)`: each declares vars in, or appends an op to, the current block
 * of the driver as compiler/ir/train_driver.c's builder does (docs/driver.md, "fluid.train over the
 * driver"). Internal, as the rest of _core. */
static bool want_train_driver(Ctx *c, const char *fname, FlSpan sp) {
    if (c->train_driver && c->b.main == c->train_driver && c->bundle->driver == c->train_driver) return true;
    fl_ev_error(c, sp, "%s() builds fluid.train's loop: call it inside `with program_guard(spec.driver):` after "
                       "_core.train(...)", fname);
    return false;
}

static FlValue *names_to_vars(Ctx *c, const FlTrainNames *names) {
    FlValue *l = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < names->len; i++) fl_v_list_push(c, l, fl_v_var(c, names->data[i]));
    return l;
}

/* driver_var(name, kind): an int64 or bool [1] var of the driver ('int64', 'bool') or the report
 * handle ('report'), declared in the current block. */
static FlValue *c_driver_var(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("driver_var", "name kind", 2);
    if (!want_train_driver(c, "driver_var", a->span)) return c->error;
    if (!fl_ev_want_str(c, v[0], "name", a->span) || !fl_ev_want_str(c, v[1], "kind", a->span)) return c->error;
    if (fl_ir_var_lookup(c->b.main, c->b.block, v[0]->str.s))
        return fl_ev_error(c, a->span, "driver_var(): the driver declares '%s' already", v[0]->str.s);
    FlVarDesc *d;
    if (strcmp(v[1]->str.s, "int64") == 0) d = fl_ir_train_var(c->b.block, v[0]->str.s, FL_DT_INT64);
    else if (strcmp(v[1]->str.s, "bool") == 0) d = fl_ir_train_var(c->b.block, v[0]->str.s, FL_DT_BOOL);
    else if (strcmp(v[1]->str.s, "report") == 0) d = fl_ir_train_report_var(c->b.block, v[0]->str.s);
    else return fl_ev_error(c, a->span, "driver_var() kind must be 'int64', 'bool' or 'report', found '%s'", v[1]->str.s);
    d->loc = fl_ev_loc(c, a->span);
    return fl_v_var(c, d->name);
}

/* Marks the vars block b declared from index `from` on with the call's location. */
static void locate_vars(Ctx *c, FlBlock *b, size_t from, FlSpan sp) {
    FlLoc at = fl_ev_loc(c, sp);
    for (size_t i = from; i < b->vars.len; i++) b->vars.data[i]->loc = at;
}

/* train_feeds(test): the feeds of the run spec's reader (test=True: its test reader), declared in
 * the current block when not yet (fl_ir_train_feeds); a list of Vars, offset vars included. */
static FlValue *c_train_feeds(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("train_feeds", "test", 1);
    if (!want_train_driver(c, "train_feeds", a->span)) return c->error;
    if (v[0]->kind != VK_BOOL) return fl_ev_error(c, a->span, "train_feeds() test must be a bool, found %s", fl_v_type_name(v[0]));
    FlTrainNames names = {0};
    FlErr e;
    size_t from = c->b.block->vars.len;
    FlStatus st = fl_ir_train_feeds(c->bundle, c->b.block, v[0]->b, &names, &e);
    locate_vars(c, c->b.block, from, a->span);
    FlValue *r = st == FL_OK ? names_to_vars(c, &names) : fl_ev_error(c, a->span, "fluid.train: %s", e.msg);
    FL_VEC_FREE(&names);
    return r;
}

/* train_figures(prefix): the figure vars prefix_0, ... of the run spec's fetches, declared in the
 * current block (fl_ir_train_figures); a list of Vars. */
static FlValue *c_train_figures(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("train_figures", "prefix", 1);
    if (!want_train_driver(c, "train_figures", a->span)) return c->error;
    if (!fl_ev_want_str(c, v[0], "prefix", a->span)) return c->error;
    FlTrainNames names = {0};
    FlErr e;
    size_t from = c->b.block->vars.len;
    FlStatus st = fl_ir_train_figures(c->bundle, c->b.block, v[0]->str.s, &names, &e);
    locate_vars(c, c->b.block, from, a->span);
    FlValue *r = st == FL_OK ? names_to_vars(c, &names) : fl_ev_error(c, a->span, "fluid.train: %s", e.msg);
    FL_VEC_FREE(&names);
    return r;
}

/* driver_op(type, **slots_and_attrs): appends the op as spelled (fl_ev_op_exact). */
static FlValue *c_driver_op(Ctx *c, FlValue *self, CallArgs *a) {
    if (a->npos != 1 || a->pos[0]->kind != VK_STR) return fl_ev_error(c, a->span, "driver_op() takes the op type, then keyword arguments");
    if (!want_train_driver(c, "driver_op", a->span)) return c->error;
    CallArgs oa = *a;
    oa.npos = 0;
    return fl_ev_op_exact(c, a->pos[0]->str.s, &oa, a->span);
}

/* ------------------------------------------------------------------ _core: the profiler */

/* fluid.profiler (stdlib/fluid/profiler.fl): the script runs at compile time and fluid.train(...)
 * records the whole training at once, so a region from start_profiler to stop_profiler profiles
 * the training when the fluid.train call is inside it: stop_profiler then records the run spec's
 * profile, which flrun follows. A region without that call, one never stopped, a stop without a
 * start, a reset that would clear the training's records, and any state or sorted_key flrun could
 * not honour are errors at the user's line. */

/* Checks stop_profiler's arguments: sorted_key None or a name of the IR's sort keys, profile_path
 * None or a non-empty str. */
static bool profile_args(Ctx *c, FlValue *key, FlValue *path, FlSpan sp) {
    bool key_ok = key->kind == VK_NONE || (key->kind == VK_STR && fl_ir_profile_sort_key(key->str.s) > 0);
    if (!key_ok) {
        fl_ev_error(c, sp, "sorted_key must be None, 'calls', 'total', 'max', 'min' or 'ave', found %s%s%s",
                    key->kind == VK_STR ? "'" : "", key->kind == VK_STR ? key->str.s : fl_v_type_name(key),
                    key->kind == VK_STR ? "'" : "");
        return false;
    }
    if (path->kind != VK_NONE && (path->kind != VK_STR || !path->str.n)) {
        fl_ev_error(c, sp, "profile_path must be None or a file name, found %s",
                    path->kind == VK_STR ? "''" : fl_v_type_name(path));
        return false;
    }
    return true;
}

/* Checks the profiler's state: 'CPU'; Fluid's 'GPU' and 'All' are refused with why. */
static bool profile_state(Ctx *c, FlValue *state, FlSpan sp) {
    if (!fl_ev_want_str(c, state, "state", sp)) return false;
    const char *st = state->str.s;
    if (!strcmp(st, "GPU") || !strcmp(st, "All"))
        fl_ev_error(c, sp, "profiler state '%s' times CUDA kernels on a GPU, and fluidc runs on the CPU only (it "
                    "has no GPU kernels to time): use 'CPU'", st);
    else if (strcmp(st, "CPU") != 0)
        fl_ev_error(c, sp, "the profiler state must be 'CPU', 'GPU' or 'All', found '%s'", st);
    return !strcmp(st, "CPU");
}

/* profiler(state, sorted_key, profile_path)'s arguments, checked where it is called. */
static FlValue *c_profile_args(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("profiler", "state sorted_key profile_path", 3);
    return profile_state(c, v[0], a->span) && profile_args(c, v[1], v[2], a->span) ? c->none : c->error;
}

static FlValue *c_profile_start(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("start_profiler", "state", 1);
    if (!profile_state(c, v[0], a->span)) return c->error;
    if (c->prof.on) {
        fl_ev_error(c, a->span, "the profiler is already on (a region inside another)");
        fl_diag_note(&c->diag, c->prof.start, "it was started here");
        return c->error;
    }
    c->prof.on = true;
    c->prof.start = fl_ev_user_span(c, a->span);
    c->prof.train_before = c->bundle->run.present;
    c->prof.errors = c->diag.nerrors;
    return c->none;
}

static FlValue *c_profile_stop(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("stop_profiler", "sorted_key profile_path", 2);
    if (!profile_args(c, v[0], v[1], a->span)) return c->error;
    if (!c->prof.on)
        return fl_ev_error(c, a->span, "stop_profiler() but the profiler is not on (start it with "
                           "fluid.profiler.start_profiler('CPU') before fluid.train(...))");
    c->prof.on = false;
    FlRunSpec *rs = &c->bundle->run;
    if (c->diag.nerrors > c->prof.errors) return c->none; /* the region's body failed: said already */
    if (!rs->present || c->prof.train_before) {
        FlSpan here = fl_ev_user_span(c, a->span);
        fl_ev_error(c, a->span, "the profiler region holds no fluid.train(...): the training is what runs, and it "
                    "runs where fluid.train records it, so put that call inside the region (or profile the whole "
                    "run with flrun --profile)");
        if (here.file != c->prof.start.file || here.start != c->prof.start.start)
            fl_diag_note(&c->diag, c->prof.start, "the region starts here");
        return c->error;
    }
    rs->profile.present = true;
    rs->profile.state = fl_xstrdup("CPU");
    rs->profile.sorted_key = v[0]->kind == VK_STR ? fl_xstrdup(v[0]->str.s) : NULL;
    rs->profile.path = v[1]->kind == VK_STR ? fl_xstrdup(v[1]->str.s) : NULL;
    return c->none;
}

static FlValue *c_profile_reset(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("reset_profiler", "", 0);
    (void)v;
    if (c->prof.on && c->bundle->run.present && !c->prof.train_before)
        return fl_ev_error(c, a->span, "reset_profiler() after fluid.train(...) would clear the records of the whole "
                           "training, which fluid.train runs at once: call it before fluid.train(...), where nothing "
                           "is recorded yet");
    return c->none; /* before the training: nothing recorded to clear */
}

/* At the end of a compilation: a region never stopped. */
void fl_ev_profile_end(Ctx *c) {
    if (!c->prof.on) return;
    fl_diag_error(&c->diag, c->prof.start, "the profiler started here is never stopped: end the region with "
                  "fluid.profiler.stop_profiler() after fluid.train(...), or use `with fluid.profiler.profiler(...):`");
}

static FlValue *c_flag(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("flag", "name default=", 2);
    if (!fl_ev_want_str(c, v[0], "name", a->span)) return c->error;
    const char *name = v[0]->str.s;
    FlValue *d = v[1] ? v[1] : c->none;
    size_t nl = strlen(name);
    bool asked = false;
    for (size_t i = 0; i < c->flags_asked.len && !asked; i++) asked = strcmp(c->flags_asked.data[i], name) == 0;
    if (!asked) FL_VEC_PUSH(&c->flags_asked, fl_intern_str(&c->in, name));
    for (size_t i = 0; i < c->opt->ndefines; i++)
        if (strncmp(c->opt->defines[i], name, nl) == 0 && c->opt->defines[i][nl] == '=') c->define_read[i] = true;
    for (size_t i = c->opt->ndefines; i-- > 0;) {
        const char *def = c->opt->defines[i];
        if (strncmp(def, name, nl) != 0 || def[nl] != '=') continue;
        const char *val = def + nl + 1;
        char *end;
        switch (d->kind) {
        case VK_INT: {
            errno = 0;
            long long x = strtoll(val, &end, 0);
            if (errno || end == val || *end) return fl_ev_error(c, a->span, "-D %s=%s: expected an int", name, val);
            return fl_v_int(c, x);
        }
        case VK_FLOAT: {
            double x = strtod(val, &end);
            if (end == val || *end) return fl_ev_error(c, a->span, "-D %s=%s: expected a number", name, val);
            return fl_v_float(c, x);
        }
        case VK_BOOL:
            if (!strcmp(val, "1") || !strcmp(val, "true") || !strcmp(val, "True")) return c->vtrue;
            if (!strcmp(val, "0") || !strcmp(val, "false") || !strcmp(val, "False")) return c->vfalse;
            return fl_ev_error(c, a->span, "-D %s=%s: expected true or false", name, val);
        case VK_NONE: case VK_STR: case VK_LIST: case VK_TUPLE: case VK_DICT: case VK_FUNC:
        case VK_BUILTIN: case VK_MODULE: case VK_VAR: case VK_RECORD: case VK_GUARD:
        case VK_PROGRAM: case VK_READER: case VK_ERROR: case VK_CLASS: case VK_SET: case VK_COUNT: break;
        }
        return fl_v_cstr(c, val);
    }
    return d;
}
/* ------------------------------------------------------------------ the module */

static const NativeFn core_fns[] = {
    {"op", c_op},
    {"data", c_data},
    {"create_parameter", c_create_parameter},
    {"global_var", c_global_var},
    {"create_var", fl_ev_core_create_var},
    {"Variable", c_variable},
    {"create_array", c_create_array},
    {"array_lod", c_array_lod},
    {"lod", c_lod},
    {"set_lod", c_set_lod},
    {"find_var", c_find_var},
    {"parameters", c_parameters},
    {"unique_name", c_unique_name},
    {"unique_name_guard", c_unique_guard},
    {"unique_name_switch", c_unique_switch},
    {"param_hook", c_param_hook},
    {"append_backward", c_append_backward},
    {"minimize_backward", c_minimize_backward},
    {"error", c_error},
    {"record", c_record},
    {"export", c_export},
    {"is_var", c_is_var},
    {"is_list", c_is_list},
    {"is_int", c_is_int},
    {"whole_int", c_whole_int},
    {"type_name", c_type_name},
    {"in_server_block", c_in_server_block},
    {"Program", c_program},
    {"default_main_program", c_default_main},
    {"default_startup_program", c_default_startup},
    {"program_guard", c_program_guard},
    {"guard", c_guard},
    {"name_scope", c_name_scope},
    {"go", c_go},
    {"parallel_for", c_parallel_for},
    {"rnn_block", c_rnn_block},
    {"while_block", c_while_block},
    {"cond_block", c_cond_block},
    {"block_index", c_block_index},
    {"block_guard", c_block_guard},
    {"block_io", c_block_io},
    {"listen_and_serv", c_listen_and_serv},
    {"make_chan", c_make_chan},
    {"nil_chan", c_nil_chan},
    {"dist_split", c_dist_split},
    {"send", c_send},
    {"recv", c_recv},
    {"split_to_chan", c_split_to_chan},
    {"concat", c_concat},
    {"io_csv", c_io_csv},
    {"io_split", c_io_split},
    {"io_sequence", c_io_sequence},
    {"train", c_train},
    {"driver_var", c_driver_var},
    {"train_feeds", c_train_feeds},
    {"train_figures", c_train_figures},
    {"driver_op", c_driver_op},
    {"profile_args", c_profile_args},
    {"profile_start", c_profile_start},
    {"profile_stop", c_profile_stop},
    {"profile_reset", c_profile_reset},
    {"flag", c_flag},
};

Module *fl_ev_native_module(Ctx *c, const char *name) {
    Module *m = fl_ev_module_of_fns(c, name, core_fns, FL_ARRAY_LEN(core_fns));
    fl_env_set(m->globals, fl_intern_str(&c->in, "stdlib_dir"), fl_v_cstr(c, c->stdlib_dir));
    return m;
}
