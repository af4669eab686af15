/* ops_saveload.c: the adapters of the driver's save_vars and load_vars (compiler/ops/driver.def;
 * docs/driver.md, "Saving and serving"): Fluid's fluid.io.save_* and load_* when the driver runs,
 * on the checkpoint format and the rules of runtime/params.h (a save goes to a new path or
 * replaces an earlier checkpoint, atomically; a load checks every var before it sets any).
 *
 *   save_vars  Scope? : the vars `names` of the scope (else the root) written to `dir` in Fluid's
 *              layout (fl_params_write_begin_fluid: a file per var, or with `file` all of them
 *              in that one file, sorted by name: a combined checkpoint), a LoD var's offsets
 *              (the program's lod vars, when the scope holds them) with it;
 *              with `model`, the program `program` too, as an inference model (feeds, targets)
 *              in that file of dir: fluid.io.save_inference_model
 *   load_vars  Scope? : the vars `names` of the program `program` (a program of the bundle) read from
 *              `dir` (with `file`: which must be a combined checkpoint in that file, fluidc's or
 *              Paddle's), each checked against its declaration, then all set in the scope with
 *              their LoD
 *   save_program the program `program` as a bundle of its own at `path` (Fluid's
 *              open(path, 'wb').write(program.desc.serialize_to_string()))
 *
 * The compiler chose the names (parameters, persistables, a user's list or predicate); the
 * program's declarations give a load the dtype and shape each saved tensor must have.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/core/driver.h"
#include "runtime/core/exec_impl.h"
#include "runtime/params.h"

static FlStatus prep_save_load(ExecOp *op, FlErr *e) {
    if (!fl_exec_attr_string(op, "program")[0]) return fl_err(e, "program is empty");
    if (!fl_exec_attr_string(op, "dir")[0]) return fl_err(e, "dir is empty");
    return FL_OK;
}

/* What both ops read: the driver's host, the op's scope (its Scope input's, else the root the
 * programs run on; a new reference), its directory and its names (NULL: none). */
typedef struct SaveLoad {
    const FlDriverHost *h;
    FlScope *scope;
    const char *dir;
    const char *file; /* a combined checkpoint's file; "": a file per var */
    const FlAttr *names;
} SaveLoad;

static FlStatus save_load_args(RunCtx *rc, const ExecOp *op, FlScope *s, int slot, SaveLoad *out) {
    if (!(out->h = fl_driver_need_host(rc, op, s))) return FL_ERROR;
    bool has = fl_exec_nin(op, slot) > 0;
    out->dir = fl_exec_attr_string(op, "dir");
    out->file = fl_exec_attr_string(op, "file");
    out->names = fl_ir_op_attr(op->desc, "names");
    return fl_driver_arg_scope(rc, op, s, has ? fl_exec_in_args(op, slot) : NULL, out->h->root, &out->scope);
}

/* A new bundle whose main program is a copy of ex's, with the running bundle's source table (the
 * ops' locations point into it). */
static FlBundle *program_bundle(const FlDriverHost *h, const FlExec *ex) {
    FlBundle *b = fl_ir_bundle_new();
    fl_ir_program_free(b->main);
    b->main = fl_ir_program_clone(ex->prog);
    for (size_t i = 0; i < h->bundle->source_paths.len; i++)
        FL_VEC_PUSH(&b->source_paths, fl_xstrdup(h->bundle->source_paths.data[i]));
    return b;
}

/* With the op's model attribute: the program it saves the vars of, as an inference model (a bundle
 * whose main program it is, with the feeds and targets) in that file of the new checkpoint s
 * (fl_params_write_abandon(s) on failure, by the caller). Without it: nothing. */
static FlStatus write_model(const FlDriverHost *h, const ExecOp *op, FlParamsSaving *s, FlErr *e) {
    const char *model = fl_exec_attr_string(op, "model");
    if (!model[0]) return FL_OK;
    const char *pname = fl_exec_attr_string(op, "program");
    FlExec *ex = fl_driver_program(h, pname);
    if (!ex) return fl_err(e, "program '%s' is not a program of the bundle", pname);
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/%s", fl_params_saving_dir(s), model);
    struct stat sb;
    FlStatus st = FL_ERROR;
    if (lstat(fl_buf_str(&path), &sb) == 0) {
        fl_err(e, "the model file '%s' would be the file of a saved var of the same name: name the model file "
               "otherwise (model_filename=)", model);
        goto done;
    }
    FlBundle *b = program_bundle(h, ex);
    b->inference = fl_xcalloc(1, sizeof *b->inference);
    const FlAttr *fa = fl_ir_op_attr(op->desc, "feeds"), *ta = fl_ir_op_attr(op->desc, "targets");
    for (size_t i = 0; fa && i < fa->n; i++) FL_VEC_PUSH(&b->inference->feeds, fl_xstrdup(fa->strs[i]));
    for (size_t i = 0; ta && i < ta->n; i++) FL_VEC_PUSH(&b->inference->targets, fl_xstrdup(ta->strs[i]));
    FlErr e2;
    if (fl_ir_validate_bundle(b, &e2) != FL_OK) fl_err(e, "the inference model '%s': %s", model, e2.msg);
    else st = fl_ir_bundle_write(b, fl_buf_str(&path), e);
    fl_ir_bundle_free(b);
done:
    fl_buf_free(&path);
    return st;
}

static FlStatus run_save_vars(RunCtx *rc, const ExecOp *op, FlScope *s) {
    SaveLoad a;
    if (save_load_args(rc, op, s, FL_IN_save_vars_Scope, &a)) return FL_ERROR;
    FlNamedTensors v = {0};
    FlStatus st = FL_OK;
    FlErr e;
    const char *pname = fl_exec_attr_string(op, "program");
    FlExec *ex = fl_driver_program(a.h, pname);
    const FlBlock *g = ex ? fl_ir_block(ex->prog, 0) : NULL;
    for (size_t i = 0; a.names && i < a.names->n && st == FL_OK; i++) {
        FlNamedTensor nt = {.name = a.names->strs[i], .t = FL_TENSOR_INIT};
        if (fl_scope_get_tensor(a.scope, nt.name, &nt.t, &e) != FL_OK)
            st = fl_exec_op_error(rc, op, "saving '%s': %s (run the startup program before saving)", a.dir, e.msg);
        /* a LoD var's offsets, which Fluid's file keeps with it (when the scope has them all) */
        const FlVarDesc *d = g ? fl_ir_var_find(g, nt.name) : NULL;
        for (int l = 0; st == FL_OK && d && l < d->lod_level && l < FL_LODSTREAM_MAX_LEVELS; l++) {
            if (fl_scope_get_tensor(a.scope, d->lod[l], &nt.lod[l], &e) != FL_OK) {
                for (int k = 0; k < l; k++) fl_tensor_fini(&nt.lod[k]);
                nt.nlevels = 0;
                break;
            }
            nt.nlevels = l + 1;
        }
        FL_VEC_PUSH(&v, nt);
    }
    FlParamsSaving *sv = NULL;
    if (st == FL_OK && fl_params_write_begin_fluid(a.dir, a.file[0] ? a.file : NULL, &v, &sv, &e) != FL_OK)
        st = fl_exec_op_error(rc, op, "saving '%s': %s", a.dir, fl_params_msg(e.msg));
    else if (st == FL_OK && write_model(a.h, op, sv, &e) != FL_OK) {
        fl_params_write_abandon(sv);
        st = fl_exec_op_error(rc, op, "saving '%s': %s", a.dir, fl_params_msg(e.msg));
    } else if (st == FL_OK && fl_params_write_end(sv, &e) != FL_OK) /* frees sv either way */
        st = fl_exec_op_error(rc, op, "saving '%s': %s", a.dir, fl_params_msg(e.msg));
    fl_params_free(&v);
    fl_scope_release(a.scope);
    return st;
}
FL_CONTROL_ADAPTER(save_vars, prep_save_load, run_save_vars);

static FlStatus run_load_vars(RunCtx *rc, const ExecOp *op, FlScope *s) {
    SaveLoad a;
    if (save_load_args(rc, op, s, FL_IN_load_vars_Scope, &a)) return FL_ERROR;
    size_t n = a.names ? a.names->n : 0;
    const char *pname = fl_exec_attr_string(op, "program");
    FlExec *ex = fl_driver_program(a.h, pname);
    if (!ex) {
        fl_scope_release(a.scope);
        return fl_exec_op_error(rc, op, "program '%s' is not a program of the bundle", pname);
    }
    const FlBlock *g = fl_ir_block(ex->prog, 0);
    FlLodTensor *t = fl_xcalloc(n + 1, sizeof *t);
    const FlVarDesc **d = fl_xcalloc(n + 1, sizeof *d);
    for (size_t i = 0; i < n; i++) fl_lodtensor_init(&t[i]);
    FlStatus st = FL_OK;
    FlErr e;
    struct stat sb;
    bool fluid = false; /* Fluid's combined file */
    if (stat(a.dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        st = fl_exec_op_error(rc, op, "loading '%s': it is not a directory of saved vars", a.dir);
    else if (a.file[0] && fl_params_check_combined(a.dir, a.file, &fluid, &e) != FL_OK)
        st = fl_exec_op_error(rc, op, "loading '%s': %s", a.dir, fl_params_msg(e.msg));
    for (size_t i = 0; st == FL_OK && i < n; i++)
        if (!(d[i] = fl_ir_var_find(g, a.names->strs[i])))
            st = fl_exec_op_error(rc, op, "loading '%s': '%s' is not a var of the %s program", a.dir, a.names->strs[i],
                                  pname);
    if (st == FL_OK && fluid) {
        if (fl_params_read_fluid_combined(a.dir, a.file, d, n, t, &e) != FL_OK)
            st = fl_exec_op_error(rc, op, "loading '%s': %s", a.dir, fl_params_msg(e.msg));
    } else
        for (size_t i = 0; st == FL_OK && i < n; i++)
            if (fl_params_read_lod(a.dir, d[i], &t[i], &e) != FL_OK)
                st = fl_exec_op_error(rc, op, "loading '%s': %s", a.dir, fl_params_msg(e.msg));
    for (size_t i = 0; st == FL_OK && i < n; i++) fl_params_set_value(a.scope, d[i], &t[i]); /* all checked */
    for (size_t i = 0; i < n; i++) fl_lodtensor_fini(&t[i]);
    free(t);
    free(d);
    fl_scope_release(a.scope);
    return st;
}
FL_CONTROL_ADAPTER(load_vars, prep_save_load, run_load_vars);

/* save_program: the program as a bundle of its own at path (format dot: its Graphviz DOT), written atomically (a directory or
 * another non-regular file there is left as it is, and the op fails). */
static FlStatus prep_save_program(ExecOp *op, FlErr *e) {
    if (!fl_exec_attr_string(op, "program")[0]) return fl_err(e, "program is empty");
    if (!fl_exec_attr_string(op, "path")[0]) return fl_err(e, "path is empty");
    const char *fmt = fl_exec_attr_string(op, "format");
    if (strcmp(fmt, "flp") != 0 && strcmp(fmt, "dot") != 0) return fl_err(e, "format '%s' (flp or dot)", fmt);
    op->a.b[0] = strcmp(fmt, "dot") == 0;
    return FL_OK;
}

static FlStatus run_save_program(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlDriverHost *h = fl_driver_need_host(rc, op, s);
    if (!h) return FL_ERROR;
    const char *pname = fl_exec_attr_string(op, "program"), *path = fl_exec_attr_string(op, "path");
    FlExec *ex = fl_driver_program(h, pname);
    if (!ex) return fl_exec_op_error(rc, op, "program '%s' is not a program of the bundle", pname);
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return fl_exec_op_error(rc, op, "writing the %s program to '%s': it is not a regular file (left as it is)",
                                pname, path);
    FlBundle *b = program_bundle(h, ex);
    FlErr e;
    FlStatus st;
    if (op->a.b[0]) { /* Graphviz DOT, as flc dot draws it */
        FlBuf dot = {0};
        fl_ir_dot_bundle(b, &dot);
        st = fl_write_file(path, dot.data ? dot.data : "", dot.len, &e);
        fl_buf_free(&dot);
    } else {
        st = fl_ir_bundle_write(b, path, &e);
    }
    fl_ir_bundle_free(b);
    return st == FL_OK ? FL_OK : fl_exec_op_error(rc, op, "writing the %s program to '%s': %s", pname, path, e.msg);
}
FL_CONTROL_ADAPTER(save_program, prep_save_program, run_save_program);
