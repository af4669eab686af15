/* ir_test.h: test hooks of the IR module (tests only: they write files no fluidc would). */
#ifndef FL_IR_TEST_H
#define FL_IR_TEST_H

#include "compiler/ir/ir.h"

/* fl_ir_encode_bundle with another format version in the header. */
uint8_t *fl_ir_encode_bundle_version(const FlBundle *b, uint32_t version, size_t *len);
/* An FlFile with any header: magic (NULL: absent), version (0: absent) and any of a bundle and
 * a plan (both or neither allowed). */
uint8_t *fl_ir_encode_file_raw(const char *magic, uint32_t version, const FlBundle *b,
                               const FlPlan *p, size_t *len);

#endif
