/* plan_verify.h: the consistency checks of a distributed plan (`flc verify`, and flrun before it
 * starts any work on a plan).
 *
 * A plan's roles only work together when what one role sends, another expects, and when the
 * servers' blocks add up to the parameters the trainers train. fl_plan_verify checks, with no
 * runtime, each of these rules (docs/distributed.md, "Checking a plan"):
 *   RANKS     the rank map is a permutation of the roles, and the roles are trainers 0..T-1 then
 *             pservers 0..P-1;
 *   IR        every role's startup and main program passes fl_verify_program;
 *   MODE      sync and async roles are not mixed: a sync plan's sends are sync (sync=true) and
 *             its servers sync_mode=true, an async plan has neither barriers nor sync sends, an
 *             allreduce plan has no send, recv, barrier or listen_and_serv and every trainer
 *             has an allreduce, a pserver plan no allreduce; each pserver has one
 *             listen_and_serv in block 0, and trainers have none;
 *   SEND      every trainer's send of a var X to pserver p (its epmap) is expected there:
 *             listen_and_serv's X holds "X.trainer_t" (sync) or X (async) and grad_to_block maps
 *             X to one of its optimize blocks; no trainer sends one var twice;
 *   EXPECT    every gradient a pserver expects (grad_to_block) is sent to it by each trainer,
 *             and every X it receives belongs to such a gradient;
 *   RECV      every recv of a var from pserver p is answered: p's optimize blocks update it
 *             (it is the Param of one of their optimizer ops);
 *   FETCH     every block a pserver updates is received from it by each trainer;
 *   FANIN     listen_and_serv's fanin is the trainer count, and in a sync plan each trainer
 *             passes one send_barrier after its sends and one fetch_barrier after its recvs;
 *   ROWS      the blocks of every parameter cover its rows exactly once: each trainer's concat
 *             of W lists W.block0, W.block1, ... in order, each block (and each parameter kept
 *             whole) is updated by one pserver with W's dtype and other dims, the blocks' rows
 *             add up to W's, and each trainer's split of the gradient (W@GRAD, or the regularized
 *             sum the trainers send) writes the gradient blocks those pservers expect, in order,
 *             with the blocks' rows as its sections;
 *   STATE     the optimizer state is sliced like its parameter: on a block W.blockK every state
 *             input is named "S.blockK", has the local S's dtype (trainer 0's startup declares
 *             the local S), the block's shape when the local S has the parameter's, else the
 *             local S's shape; no state var is updated for two blocks of one server;
 *   INIT      every pserver starts from the local values: each persistable var of its main block 0
 *             is written by its startup program; a startup var under a local var's name (trainer
 *             0's startup declares it) has that var's dtype and shape; a startup `split` of X
 *             into blocks writes "X.blockK" as its output K, with the rows the main program
 *             declares for it, the sections adding up to X's rows;
 *   ALLREDUCE every trainer's allreduce ops list the same vars in the same order (and the same
 *             loss_sum), and sum the gradient of every parameter trainer 0 updates.
 * Each issue names its rule, the var and the roles; its message ends in "(rule: ...)", e.g.
 *   send of 'fc_0.w_0@GRAD.block1' from trainer 0 to pserver 1: pserver 1 has no block for it
 *   (rule: every send has a receiver)
 * The checks read trainer 0 for the parameters and their blocks and compare every other role
 * with it, so one wrong role is reported once, not once per peer.
 *
 * Ownership: out (zero-initialised by the caller) owns its messages; fl_plan_verify_issues_fini
 * frees them. The plan is only read (the op table's cache in each op aside, see ops.h).
 */
#ifndef FL_PLAN_VERIFY_H
#define FL_PLAN_VERIFY_H

#include "base/base.h"
#include "compiler/ir/ir.h"

/* How many issues flc verify and flrun print; the rest are counted. */
#define FL_PLAN_VERIFY_SHOWN 20

typedef enum FlPlanRule {
    FL_PLAN_RULE_RANKS = 0,
    FL_PLAN_RULE_IR,
    FL_PLAN_RULE_MODE,
    FL_PLAN_RULE_SEND,
    FL_PLAN_RULE_EXPECT,
    FL_PLAN_RULE_RECV,
    FL_PLAN_RULE_FETCH,
    FL_PLAN_RULE_FANIN,
    FL_PLAN_RULE_ROWS,
    FL_PLAN_RULE_STATE,
    FL_PLAN_RULE_INIT,
    FL_PLAN_RULE_ALLREDUCE,
    FL_PLAN_RULE_COUNT
} FlPlanRule;

typedef struct FlPlanIssue {
    FlPlanRule rule;
    char *msg; /* "...: ... (rule: <fl_plan_verify_rule_name(rule)>)" */
} FlPlanIssue;

typedef struct FlPlanIssues {
    FL_VEC(FlPlanIssue) items;
} FlPlanIssues;

/* Appends the issues found to out and returns their number (0: the plan is consistent). */
int fl_plan_verify(const FlPlan *plan, FlPlanIssues *out);
void fl_plan_verify_issues_fini(FlPlanIssues *v);
/* The rule as the messages name it ("every send has a receiver"). */
const char *fl_plan_verify_rule_name(FlPlanRule r);

#endif
