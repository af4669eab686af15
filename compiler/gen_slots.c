/* gen_slots: writes compiler/op_slots.h (into the build tree) from the op table, so that code
 * binding an op's slots by position names them instead:
 *
 *   FL_IN_<op>_<slot>   the index of input slot <slot> of op <op> (forward and gradient ops;
 *   FL_OUT_<op>_<slot>  '@' in a slot name becomes '_': FL_IN_mul_grad_Out_GRAD)
 *
 * Usage: gen_slots OUT.h. The header is written only when its text changed, so a rebuild of the
 * op table does not recompile everything that includes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops.h"

static void put_name(FlBuf *b, const char *s) {
    for (; *s; s++) fl_buf_putc(b, *s == '@' ? '_' : *s);
}

static void put_slots(FlBuf *b, const char *kind, const FlOpInfo *o, const FlSlotInfo *slots, int n) {
    for (int k = 0; k < n; k++) {
        fl_buf_printf(b, "#define FL_%s_%s_", kind, o->name);
        put_name(b, slots[k].name);
        fl_buf_printf(b, " %d\n", k);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_slots OUT.h\n");
        return 2;
    }
    FlBuf b = {0};
    fl_buf_puts(&b, "/* op_slots.h: generated from compiler/ops.def by compiler/gen_slots.c; do not edit.\n"
                    " * FL_IN_<op>_<slot> / FL_OUT_<op>_<slot>: the slot's index in the op table. */\n"
                    "#ifndef FL_OP_SLOTS_H\n#define FL_OP_SLOTS_H\n");
    for (size_t i = 0; i < fl_ops_count(); i++) {
        const FlOpInfo *o = fl_ops_at(i);
        put_slots(&b, "IN", o, o->ins, o->nins);
        put_slots(&b, "OUT", o, o->outs, o->nouts);
    }
    fl_buf_puts(&b, "#endif\n");
    FlErr e;
    size_t len = 0;
    char *old = fl_read_file(argv[1], &len, NULL);
    int rc = 0;
    if (!old || len != b.len || memcmp(old, b.data, len) != 0) {
        if (fl_write_file(argv[1], b.data, b.len, &e) != FL_OK) {
            fprintf(stderr, "gen_slots: %s\n", e.msg);
            rc = 1;
        }
    }
    free(old);
    fl_buf_free(&b);
    return rc;
}
