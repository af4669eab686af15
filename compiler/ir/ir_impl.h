/* ir_impl.h: helpers shared by the files of compiler/ir/ (ir.c, ir_file.c, ir_show.c); never
 * included from outside the folder. */
#ifndef FL_IR_IMPL_H
#define FL_IR_IMPL_H

#include "compiler/ir/ir.h"

/* The allocated length of a slot's args array holding n args (a power of two, at least 1):
 * every args array is allocated with this capacity so that appends can grow it in place. */
size_t fl_ir_args_cap(size_t n);
/* Frees an attribute's strings and arrays and zeroes it. */
void fl_ir_attr_fini(FlAttr *a);
/* A program with no blocks (the decoder adds them); fl_ir_block_push appends a block with any
 * parent (not checked: the validator does). */
FlProgram *fl_ir_program_empty(void);
FlBlock *fl_ir_block_push(FlProgram *p, int parent);
/* Frees what a run spec owns and zeroes it. */
void fl_ir_run_fini(FlRunSpec *r);

#endif
