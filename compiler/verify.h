/* verify.h: static checks of a compiled program that need no runtime.
 *
 * fl_verify_program checks a main program together with its startup program:
 *   - every op is known and fl_ops_check-clean;
 *   - every input var is declared in the op's block or an ancestor and written before use: by
 *     an earlier op (in program order, sub-blocks where their op stands; a var written inside a
 *     sub-block counts as written after that op), by the startup program, or fed (a var marked
 *     fed, and a var with stop_gradient set and no writer in main, are data vars, whatever a
 *     program sets their stop_gradient to later; a persistable var is initialised by startup). Inside listen_and_serv's blocks a var no op writes is received from trainers;
 *     parallel_for's index_var and select's receive-case vars are written by their op;
 *   - every BLOCK / BLOCKS attribute (and listen_and_serv's lr_block) names an existing
 *     sub-block whose parent is the op's block, each sub-block is used by exactly one op;
 *   - no var (other than a channel) is written by two `go` blocks, or by a go block and its
 *     parent block after the go op, with no channel operation in the parent between the two
 *     (a control op whose blocks use a channel counts as one); two goroutines that both use
 *     channels may synchronise and are not reported. A var declared inside a go block is the
 *     goroutine's own.
 * Each problem is one issue with the loc of the op concerned (FL_LOC_NONE for an unused block)
 * and a message in the diagnostic style ("mul: var 'h' (input X) is used before it is
 * written").
 *
 * Ownership: out (zero-initialised by the caller) owns its messages; fl_verify_issues_fini frees
 * them. The programs are only read.
 */
#ifndef FL_VERIFY_H
#define FL_VERIFY_H

#include "base/base.h"
#include "compiler/ir/ir.h"

typedef struct FlVerifyIssue {
    FlLoc loc;
    char *msg;
} FlVerifyIssue;

typedef struct FlVerifyIssues {
    FL_VEC(FlVerifyIssue) items;
} FlVerifyIssues;

/* Appends the issues found to out and returns their number (0: the program is clean). startup
 * may be NULL (nothing initialised). */
int fl_verify_program(const FlProgram *main, const FlProgram *startup, FlVerifyIssues *out);
void fl_verify_issues_fini(FlVerifyIssues *v);
/* A bundle's driver (docs/driver.md): fl_verify_program's checks of it alone, and each
 * run_program's against the program it runs: the program is the bundle's, every feed name is a
 * var of its global block, every fetch name one too, and the driver var a fetch goes to has the
 * fetched var's dtype. 0 when the bundle has no driver. */
int fl_verify_driver(const FlBundle *b, FlVerifyIssues *out);

#endif
