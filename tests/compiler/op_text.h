/* op_text.h: ops written as text in the compiler's tests: "X=a Y=b,c" slots. */
#ifndef FL_TESTS_OP_TEXT_H
#define FL_TESTS_OP_TEXT_H

#include <stdio.h>
#include <string.h>

#include "compiler/ir/ir.h"

/* An op of `type` appended to b with the input and output slots of ins and outs; each var it
 * names is declared in `declare` (when not NULL and not there yet). */
static inline FlOpDesc *fl_test_op(FlBlock *b, const char *type, const char *ins, const char *outs, FlBlock *declare) {
    FlOpDesc *op = fl_ir_op_append(b, type);
    for (int pass = 0; pass < 2; pass++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", pass ? outs : ins);
        char *s1 = NULL;
        for (char *tok = strtok_r(buf, " ", &s1); tok; tok = strtok_r(NULL, " ", &s1)) {
            char *eq = strchr(tok, '=');
            *eq = 0;
            char *s2 = NULL;
            for (char *a = strtok_r(eq + 1, ",", &s2); a; a = strtok_r(NULL, ",", &s2)) {
                (pass ? fl_ir_op_add_output : fl_ir_op_add_input)(op, tok, a);
                if (declare && !fl_ir_var_find(declare, a)) fl_ir_var_add(declare, a);
            }
        }
    }
    return op;
}

#endif
