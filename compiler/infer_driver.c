/* infer_driver.c: shape rules of the driver's ops (compiler/ops/driver.def; docs/driver.md). A
 * run_program's fetches are declared by the compiler as the vars they fetch (the driver does not
 * hold the programs it runs); what is checked here is what the driver alone says. */
#include "compiler/infer_impl.h"

/* Feeds and fetches pair with their names; a Scope is a raw var (a scope_new's). */
FlStatus fl_infer_run_program(Ctx *c) {
    const FlAttr *prog = fl_ir_op_attr(c->op, "program");
    if (!prog || !prog->s || !*prog->s) /* which programs the bundle has: fl_verify_driver */
        return fl_err(c->e, "run_program names no program");
    const FlAttr *fn = fl_ir_op_attr(c->op, "feed_names"), *tn = fl_ir_op_attr(c->op, "fetch_names");
    const FlSlot *feed = fl_ir_op_input(c->op, "Feed"), *fetch = fl_ir_op_output(c->op, "Fetch");
    size_t nfeed = feed ? feed->nargs : 0, nfetch = fetch ? fetch->nargs : 0;
    if ((fn ? fn->n : 0) != nfeed)
        return fl_err(c->e, "run_program: %zu feeds but %zu feed_names", nfeed, fn ? fn->n : 0);
    if ((tn ? tn->n : 0) != nfetch)
        return fl_err(c->e, "run_program: %zu fetches but %zu fetch_names", nfetch, tn ? tn->n : 0);
    FlVarDesc *s;
    if (in_opt(c, "Scope", &s)) return FL_ERROR;
    if (s && s->kind != FL_VAR_RAW) return fl_err(c->e, "run_program: Scope '%s' is not a scope", s->name);
    return FL_OK;
}

/* One text more than values; a spec per value when given. */
FlStatus fl_infer_print_line(Ctx *c) {
    const FlAttr *texts = fl_ir_op_attr(c->op, "texts"), *specs = fl_ir_op_attr(c->op, "specs");
    const FlSlot *x = fl_ir_op_input(c->op, "X");
    size_t n = x ? x->nargs : 0;
    if (!texts || texts->n != n + 1)
        return fl_err(c->e, "print_line: %zu values need %zu texts, found %zu", n, n + 1, texts ? texts->n : 0);
    if (specs && specs->n && specs->n != n)
        return fl_err(c->e, "print_line: %zu values but %zu specs", n, specs->n);
    const FlAttr *st = fl_ir_op_attr(c->op, "stream");
    if (st && strcmp(st->s, "stdout") != 0 && strcmp(st->s, "stderr") != 0)
        return fl_err(c->e, "print_line: stream '%s' (stdout or stderr)", st->s);
    return FL_OK;
}

FlStatus fl_infer_time_now(Ctx *c) {
    Shape scalar = {.nd = 0}; /* a number, as Python's float: it prints as one */
    return set_out(c, "Out", FL_DT_FLOAT64, &scalar);
}

FlStatus fl_infer_scope_new(Ctx *c) {
    FlVarDesc *p, *o;
    if (in_opt(c, "Parent", &p)) return FL_ERROR;
    if (p && p->kind != FL_VAR_RAW) return fl_err(c->e, "scope_new: Parent '%s' is not a scope", p->name);
    const char *out = fl_ir_op_output1(c->op, "Out");
    if (!out) return fl_err(c->e, "scope_new: output Out is missing");
    if (lookup(c, "output", "Out", out, &o)) return FL_ERROR;
    o->kind = FL_VAR_RAW;
    o->stop_gradient = true;
    return FL_OK;
}

/* Out = X's shape without its first dim; an index outside a known first dim is an error. */
FlStatus fl_infer_index(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv), out = {.nd = x.nd - 1};
    if (x.nd < 1) return fl_err(c->e, "index: X '%s' is a number (rank 0): it has no elements to index", xv->name);
    const FlAttr *ia = fl_ir_op_attr(c->op, "i");
    int64_t i = ia ? ia->i : 0;
    if (x.d[0] >= 0 && (i >= x.d[0] || i < -x.d[0]))
        return fl_err(c->e, "index %lld is out of bounds for the first dim of X '%s' %s", (long long)i, xv->name,
                      sstr(c, &x));
    for (int k = 1; k < x.nd; k++) out.d[k - 1] = x.d[k];
    return set_out(c, "Out", xv->dtype, &out);
}

/* Out = X's shape with rows not known until the bounds are; Start and End one integer each. */
FlStatus fl_infer_slice_rows(Ctx *c) {
    FlVarDesc *xv, *b[2];
    const char *slot[2] = {"Start", "End"};
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    if (x.nd < 1) return fl_err(c->e, "slice_rows: X '%s' is a number (rank 0): it has no rows", xv->name);
    for (int k = 0; k < 2; k++) {
        if (in1(c, slot[k], &b[k])) return FL_ERROR;
        Shape s = shape_of(b[k]);
        bool one = s.nd == 0 || (s.nd == 1 && s.d[0] == 1);
        if ((b[k]->dtype != FL_DT_INT64 && b[k]->dtype != FL_DT_INT32) || !one)
            return fl_err(c->e, "slice_rows: %s '%s' must be one integer, found %s %s", slot[k], b[k]->name,
                          fl_dtype_name(b[k]->dtype), sstr(c, &s));
    }
    x.d[0] = -1;
    return set_out(c, "Out", xv->dtype, &x);
}

/* Out: a number of dtype; X must be able to hold one element (a known size other than 1 is an
 * error). */
FlStatus fl_infer_item(Ctx *c) {
    FlVarDesc *xv;
    if (in1(c, "X", &xv)) return FL_ERROR;
    Shape x = shape_of(xv);
    int64_t n = 1;
    bool known = true;
    for (int k = 0; k < x.nd; k++) {
        if (x.d[k] < 0) known = false;
        else n *= x.d[k];
    }
    if (known && n != 1)
        return fl_err(c->e, "item: X '%s' %s has %lld elements: only a one-element array converts to a number",
                      xv->name, sstr(c, &x), (long long)n);
    const FlAttr *da = fl_ir_op_attr(c->op, "dtype");
    Shape scalar = {.nd = 0};
    return set_out(c, "Out", da ? (FlDType)da->i : FL_DT_FLOAT32, &scalar);
}

/* An exit status is what a process can return (0..255, as sys.exit's reaches the shell). */
FlStatus fl_infer_exit(Ctx *c) {
    const FlAttr *ca = fl_ir_op_attr(c->op, "code");
    int64_t code = ca ? ca->i : 0;
    if (code < 0 || code > 255) return fl_err(c->e, "exit: code %lld is not an exit status (0 to 255)", (long long)code);
    return FL_OK;
}

/* Out keeps the declaration the compiler gave it (the program var's, as a fetch's); Scope is a
 * scope and the name is not empty. */
FlStatus fl_infer_scope_var(Ctx *c) {
    FlVarDesc *s;
    if (in_opt(c, "Scope", &s)) return FL_ERROR;
    if (s && s->kind != FL_VAR_RAW) return fl_err(c->e, "scope_var: Scope '%s' is not a scope", s->name);
    const FlAttr *na = fl_ir_op_attr(c->op, "name");
    if (!na || !na->s || !*na->s) return fl_err(c->e, "scope_var: the name of the var is empty");
    return FL_OK;
}

/* save_vars, load_vars: a checkpoint directory, the vars of a program it holds, a scope. */
FlStatus fl_infer_save_load_vars(Ctx *c) {
    const char *op = c->op->type;
    const FlAttr *dir = fl_ir_op_attr(c->op, "dir"), *prog = fl_ir_op_attr(c->op, "program");
    if (!dir || !dir->s || !dir->s[0]) return fl_err(c->e, "%s: dir is empty", op);
    if (prog && (!prog->s || !prog->s[0])) /* which programs the bundle has: fl_verify_driver */
        return fl_err(c->e, "%s names no program", op);
    const FlAttr *names = fl_ir_op_attr(c->op, "names");
    for (size_t i = 0; names && i < names->n; i++)
        if (!names->strs[i][0]) return fl_err(c->e, "%s: names[%zu] is empty", op, i);
    FlVarDesc *s;
    if (in_opt(c, "Scope", &s)) return FL_ERROR;
    if (s && s->kind != FL_VAR_RAW) return fl_err(c->e, "%s: Scope '%s' is not a scope", op, s->name);
    return FL_OK;
}

/* save_program: a program (which the bundle has: fl_verify_driver) and a path. */
FlStatus fl_infer_save_program(Ctx *c) {
    const FlAttr *prog = fl_ir_op_attr(c->op, "program"), *path = fl_ir_op_attr(c->op, "path");
    if (!prog || !prog->s || !prog->s[0]) return fl_err(c->e, "save_program names no program");
    if (!path || !path->s || !path->s[0]) return fl_err(c->e, "save_program: path is empty");
    return FL_OK;
}
