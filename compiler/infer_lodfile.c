/* infer_lodfile.c: the shape rule of compiler/ops/lodfile.def (Fluid's load op). */
#include "compiler/infer_impl.h"

/* Out keeps its declaration (the file is read, and checked against it, when the op runs): a
 * dense tensor, its Lod outputs its LoD vars, one per level, each an int64 vector. */
FlStatus fl_infer_load(Ctx *c) {
    const FlAttr *pa = fl_ir_op_attr(c->op, "file_path");
    if (!pa || !pa->s || !*pa->s) return fl_err(c->e, "load: the file_path is empty");
    const char *name = fl_ir_op_output1(c->op, "Out");
    if (!name) return fl_err(c->e, "load: missing output Out");
    FlVarDesc *out;
    if (lookup(c, "output", "Out", name, &out)) return FL_ERROR;
    if (out->kind != FL_VAR_DENSE) return fl_err(c->e, "load: Out '%s' is not a tensor", out->name);
    if (iattr(c, "load_as_fp16") && out->dtype != FL_DT_FLOAT16)
        return fl_err(c->e, "load: load_as_fp16 makes Out float16, but '%s' is declared %s: declare it float16 "
                      "(fluid.layers.create_tensor(dtype='float16'))", out->name, fl_dtype_name(out->dtype));
    FlSlot *sl = fl_ir_op_output(c->op, "Lod");
    size_t nlod = sl ? sl->nargs : 0;
    if (nlod != (size_t)out->lod_level)
        return fl_err(c->e, "load: Out '%s' has %d LoD levels, but the op writes %zu offset vars", out->name,
                      out->lod_level, nlod);
    for (size_t i = 0; i < nlod; i++)
        if (!out->lod[i] || strcmp(sl->args[i], out->lod[i]) != 0)
            return fl_err(c->e, "load: Lod %zu is '%s', not level %zu of Out '%s'", i, sl->args[i], i, out->name);
    Shape off = shape1(-1);
    return set_out(c, "Lod", FL_DT_INT64, &off);
}
