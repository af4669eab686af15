/* rules: the naming and slicing rules that the evaluator, the passes and the runtime all apply.
 *
 * One home per rule (STYLE.md): how a parameter is cut into blocks for the parameter servers, how
 * a block's and a trainer's copy of a var are named, the marker of an argument slot that holds no
 * value, and the gradient suffix. lang/ (split, split_to_chan in `_core`), compiler/transpile.c
 * and runtime/ (split_to_chan, chan_concat, the MPI pservers) read them from here, so a plan, a
 * hand-written distributed program and the runtime always agree.
 *
 * The block rule (Fluid's DistributeTranspiler): a var with `numel` elements and `dim0` rows is cut
 * along dim 0 into min(pservers, numel / min_block_size, dim0) blocks, at least one, of whole rows,
 * as even as possible, earlier blocks taking the extra row. There is no other cap.
 *
 * Every function is pure and thread-safe; returned strings come from the caller's arena or buffer.
 */
#ifndef FL_IR_RULES_H
#define FL_IR_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define FL_RULE_EMPTY "@EMPTY@"       /* an argument slot position that holds no value */
#define FL_RULE_GRAD_SUFFIX "@GRAD"   /* W -> W@GRAD */
#define FL_RULE_BLOCK_INFIX ".block"  /* W -> W.block3 */
#define FL_RULE_TRAINER_INFIX ".trainer_" /* W@GRAD.block0 -> W@GRAD.block0.trainer_1 */
#define FL_RULE_MIN_BLOCK_SIZE 8192   /* Fluid's default min_block_size, in elements */
/* The largest piece a tensor travels in between ranks (flrun --piece, a multiple of 8 bytes; the
 * step model of flc simulate takes the same pieces) */
#define FL_RULE_PIECE_MAX (1u << 30)

/* "" or FL_RULE_EMPTY: the slot position holds no value. */
bool fl_rule_is_empty(const char *name);
/* name ends with FL_RULE_GRAD_SUFFIX (and has something before it). */
bool fl_rule_is_grad(const char *name);
/* name holds FL_RULE_GRAD_SUFFIX anywhere ("W@GRAD", "W@GRAD.block0", "W@GRAD@RENAME@1"). */
bool fl_rule_has_grad(const char *name);
/* "W" -> "W@GRAD", from a. */
const char *fl_rule_grad_name(FlArena *a, const char *var);

/* How many blocks a var of dim0 rows and numel elements is cut into for `pservers` servers
 * (min_block_size <= 0 means FL_RULE_MIN_BLOCK_SIZE; pservers < 1 counts as 1). */
int64_t fl_rule_block_count(int64_t dim0, int64_t numel, int64_t pservers, int64_t min_block_size);
/* Rows of block k of `count` blocks over dim0 rows, and the first row of block k. */
int64_t fl_rule_block_rows(int64_t dim0, int64_t count, int64_t k);
int64_t fl_rule_block_row0(int64_t dim0, int64_t count, int64_t k);

/* "W" -> "W.blockK", from a; appended to b. */
const char *fl_rule_block_name(FlArena *a, const char *base, int64_t k);
void fl_rule_put_block_name(FlBuf *b, const char *base, int64_t k);
/* When name ends in ".blockK" (K decimal digits): the length of its base, K in *k (may be NULL).
 * Else 0. */
size_t fl_rule_block_base_len(const char *name, int64_t *k);

/* "G" -> "G.trainer_T", from a; appended to b. */
const char *fl_rule_trainer_name(FlArena *a, const char *grad, int64_t t);
void fl_rule_put_trainer_name(FlBuf *b, const char *grad, int64_t t);
/* name is grad's copy of some trainer ("G.trainer_T", T decimal digits). */
bool fl_rule_is_trainer_copy(const char *name, const char *grad);

#endif
