/* rules: see rules.h. Plain string and integer arithmetic, no state. */
#include "compiler/ir/rules.h"

#include <stdio.h>
#include <string.h>

bool fl_rule_is_empty(const char *name) { return !name || !*name || strcmp(name, FL_RULE_EMPTY) == 0; }

bool fl_rule_is_grad(const char *name) {
    size_t n = strlen(name), s = sizeof FL_RULE_GRAD_SUFFIX - 1;
    return n > s && memcmp(name + n - s, FL_RULE_GRAD_SUFFIX, s) == 0;
}

bool fl_rule_has_grad(const char *name) { return strstr(name, FL_RULE_GRAD_SUFFIX) != NULL; }

const char *fl_rule_grad_name(FlArena *a, const char *var) {
    return fl_arena_printf(a, "%s" FL_RULE_GRAD_SUFFIX, var);
}

int64_t fl_rule_block_count(int64_t dim0, int64_t numel, int64_t pservers, int64_t min_block_size) {
    if (min_block_size <= 0) min_block_size = FL_RULE_MIN_BLOCK_SIZE;
    int64_t pieces = numel / min_block_size;
    if (pieces > pservers) pieces = pservers;
    if (pieces > dim0) pieces = dim0;
    return pieces < 1 ? 1 : pieces;
}

int64_t fl_rule_block_rows(int64_t dim0, int64_t count, int64_t k) {
    return dim0 / count + (k < dim0 % count ? 1 : 0);
}

int64_t fl_rule_block_row0(int64_t dim0, int64_t count, int64_t k) {
    int64_t extra = dim0 % count;
    return k * (dim0 / count) + (k < extra ? k : extra);
}

const char *fl_rule_block_name(FlArena *a, const char *base, int64_t k) {
    return fl_arena_printf(a, "%s" FL_RULE_BLOCK_INFIX "%lld", base, (long long)k);
}

void fl_rule_put_block_name(FlBuf *b, const char *base, int64_t k) {
    fl_buf_printf(b, "%s" FL_RULE_BLOCK_INFIX "%lld", base, (long long)k);
}

/* s is one or more decimal digits and nothing else; its value in *v (saturated). */
static bool all_digits(const char *s, int64_t *v) {
    if (!*s) return false;
    int64_t x = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        if (x < INT64_MAX / 10) x = x * 10 + (*s - '0');
    }
    if (v) *v = x;
    return true;
}

size_t fl_rule_block_base_len(const char *name, int64_t *k) {
    const size_t il = sizeof FL_RULE_BLOCK_INFIX - 1;
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name || strncmp(dot, FL_RULE_BLOCK_INFIX, il) != 0) return 0;
    return all_digits(dot + il, k) ? (size_t)(dot - name) : 0;
}

const char *fl_rule_trainer_name(FlArena *a, const char *grad, int64_t t) {
    return fl_arena_printf(a, "%s" FL_RULE_TRAINER_INFIX "%lld", grad, (long long)t);
}

void fl_rule_put_trainer_name(FlBuf *b, const char *grad, int64_t t) {
    fl_buf_printf(b, "%s" FL_RULE_TRAINER_INFIX "%lld", grad, (long long)t);
}

bool fl_rule_is_trainer_copy(const char *name, const char *grad) {
    size_t gl = strlen(grad), il = sizeof FL_RULE_TRAINER_INFIX - 1;
    return strncmp(name, grad, gl) == 0 && strncmp(name + gl, FL_RULE_TRAINER_INFIX, il) == 0 &&
           all_digits(name + gl + il, NULL);
}
