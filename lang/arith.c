/* arith.c: operators on compile-time values, as Python defines them.
 *
 * Binary arithmetic on ints, floats and bools (checked for int64 overflow: an overflow is a
 * diagnostic, never a wrap-around), on strings and lists (`+`, `*` repetition, `%` formatting),
 * unary operators, comparisons (equality, ordering, `in`, `is`) and truthiness. An operation
 * with a Var operand is handed to the op builder (fl_ev_binop_var in build.c).
 *
 * Invariants: an ERROR operand gives ERROR without a new message; ints stay ints except for
 * `/` and a negative `**`, as in Python 3; `//` and `%` round towards negative infinity.
 */
#define _GNU_SOURCE /* memmem */
#include "lang/eval_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ compile-time arithmetic */

static FlValue *num_binop(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    bool ints = (l->kind == VK_INT || l->kind == VK_BOOL) && (r->kind == VK_INT || r->kind == VK_BOOL);
    if (ints) {
        int64_t a = l->kind == VK_INT ? l->i : l->b, b = r->kind == VK_INT ? r->i : r->b, v = 0;
        switch ((FlBinOp)op) {
        case FL_OP_ADD:
            if (__builtin_add_overflow(a, b, &v)) goto ovf;
            return fl_v_int(c, v);
        case FL_OP_SUB:
            if (__builtin_sub_overflow(a, b, &v)) goto ovf;
            return fl_v_int(c, v);
        case FL_OP_MUL:
            if (__builtin_mul_overflow(a, b, &v)) goto ovf;
            return fl_v_int(c, v);
        case FL_OP_DIV:
            if (b == 0) return fl_ev_error(c, sp, "division by zero");
            return fl_v_float(c, (double)a / (double)b);
        case FL_OP_FLOORDIV:
        case FL_OP_MOD: {
            if (b == 0) return fl_ev_error(c, sp, op == FL_OP_MOD ? "modulo by zero" : "division by zero");
            if (a == INT64_MIN && b == -1) goto ovf;
            int64_t q = a / b, m = a % b;
            if (m != 0 && ((m < 0) != (b < 0))) {
                q--;
                m += b;
            }
            return fl_v_int(c, op == FL_OP_MOD ? m : q);
        }
        case FL_OP_POW: {
            if (b < 0) return fl_v_float(c, pow((double)a, (double)b));
            int64_t res = 1;
            for (int64_t i = 0; i < b; i++)
                if (__builtin_mul_overflow(res, a, &res)) goto ovf;
            return fl_v_int(c, res);
        }
        case FL_OP_MATMUL:
        case FL_BINOP_COUNT: break;
        }
        return fl_ev_error(c, sp, "'@' needs Vars, found two numbers");
    ovf:
        return fl_ev_error(c, sp, "integer overflow in a compile-time expression");
    }
    double a = fl_v_num(l), b = fl_v_num(r);
    switch ((FlBinOp)op) {
    case FL_OP_ADD: return fl_v_float(c, a + b);
    case FL_OP_SUB: return fl_v_float(c, a - b);
    case FL_OP_MUL: return fl_v_float(c, a * b);
    case FL_OP_DIV:
        if (b == 0) return fl_ev_error(c, sp, "division by zero");
        return fl_v_float(c, a / b);
    case FL_OP_FLOORDIV:
        if (b == 0) return fl_ev_error(c, sp, "division by zero");
        return fl_v_float(c, floor(a / b));
    case FL_OP_MOD:
        if (b == 0) return fl_ev_error(c, sp, "modulo by zero");
        return fl_v_float(c, a - floor(a / b) * b);
    case FL_OP_POW: return fl_v_float(c, pow(a, b));
    case FL_OP_MATMUL:
    case FL_BINOP_COUNT: break;
    }
    return fl_ev_error(c, sp, "'@' needs Vars, found two numbers");
}

static const char *binop_sym(int op) {
    static const char *s[] = {"+", "-", "*", "/", "//", "%", "@", "**"};
    return op >= 0 && op < FL_BINOP_COUNT ? s[op] : "?";
}

FlValue *fl_ev_binop(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    if (l->kind == VK_ERROR || r->kind == VK_ERROR) return c->error;
    if (l->kind == VK_VAR || r->kind == VK_VAR) return fl_ev_binop_var(c, op, l, r, sp);
    if (fl_v_is_num(l) && fl_v_is_num(r)) return num_binop(c, op, l, r, sp);
    if (op == FL_OP_ADD && l->kind == VK_STR && r->kind == VK_STR) {
        FlBuf b = {0};
        fl_buf_append(&b, l->str.s, l->str.n);
        fl_buf_append(&b, r->str.s, r->str.n);
        FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
        fl_buf_free(&b);
        return v;
    }
    if (op == FL_OP_ADD && fl_v_is_seq(l) && l->kind == r->kind) {
        FlValue *v = fl_v_list(c, l->kind);
        for (size_t i = 0; i < l->list.len; i++) fl_v_list_push(c, v, l->list.items[i]);
        for (size_t i = 0; i < r->list.len; i++) fl_v_list_push(c, v, r->list.items[i]);
        return v;
    }
    if (op == FL_OP_MUL && (fl_v_is_seq(l) || l->kind == VK_STR) && r->kind == VK_INT) {
        if (r->i > 1000000) return fl_ev_error(c, sp, "repetition count %lld is too large", (long long)r->i);
        if (l->kind == VK_STR) {
            FlBuf b = {0};
            for (int64_t i = 0; i < r->i; i++) fl_buf_append(&b, l->str.s, l->str.n);
            FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
            fl_buf_free(&b);
            return v;
        }
        FlValue *v = fl_v_list(c, l->kind);
        for (int64_t k = 0; k < r->i; k++)
            for (size_t i = 0; i < l->list.len; i++) fl_v_list_push(c, v, l->list.items[i]);
        return v;
    }
    if (op == FL_OP_MOD && l->kind == VK_STR) {
        /* "%s" % x and "%d/%s" % (a, b): %s, %d, %f, %g, %r and %% */
        FlValue *args = fl_v_is_seq(r) ? r : NULL;
        size_t ai = 0;
        FlBuf b = {0};
        for (size_t i = 0; i < l->str.n; i++) {
            char ch = l->str.s[i];
            if (ch != '%' || i + 1 >= l->str.n) {
                fl_buf_putc(&b, ch);
                continue;
            }
            char f = l->str.s[++i];
            if (f == '%') {
                fl_buf_putc(&b, '%');
                continue;
            }
            FlValue *x = args ? (ai < args->list.len ? args->list.items[ai++] : NULL) : (ai++ == 0 ? r : NULL);
            if (!x) {
                fl_buf_free(&b);
                return fl_ev_error(c, sp, "not enough arguments for format string");
            }
            if (f == 'd' && fl_v_is_num(x)) fl_buf_printf(&b, "%lld", (long long)fl_v_num(x));
            else if ((f == 'f' || f == 'g') && fl_v_is_num(x)) fl_buf_printf(&b, f == 'f' ? "%f" : "%g", fl_v_num(x));
            else fl_v_repr(c, x, &b);
        }
        FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
        fl_buf_free(&b);
        return v;
    }
    return fl_ev_error(c, sp, "unsupported operand types for %s: %s and %s", binop_sym(op),
                       fl_v_type_name(l), fl_v_type_name(r));
}

/* A unary operator (an FlUnOp): `not` of a Var is a logical_not op, `-` of a Var a scale op. */
FlValue *fl_ev_unop(Ctx *c, int op, FlValue *v, FlSpan sp) {
    if (v->kind == VK_ERROR) return c->error;
    if (op == FL_UN_NOT) {
        if (v->kind == VK_VAR) return fl_ev_op2(c, "logical_not", v, NULL, sp);
        bool ok;
        bool t = fl_v_truthy(c, v, sp, &ok);
        return ok ? fl_v_bool(c, !t) : c->error;
    }
    if (v->kind == VK_VAR) return op == FL_UN_NEG ? fl_ev_scale(c, v, -1, 0, sp) : v;
    if (v->kind == VK_INT || v->kind == VK_BOOL) {
        int64_t x = v->kind == VK_INT ? v->i : v->b;
        if (op == FL_UN_NEG && x == INT64_MIN) return fl_ev_error(c, sp, "integer overflow in a compile-time expression");
        return fl_v_int(c, op == FL_UN_NEG ? -x : x);
    }
    if (v->kind == VK_FLOAT) return fl_v_float(c, op == FL_UN_NEG ? -v->f : v->f);
    return fl_ev_error(c, sp, "bad operand type for unary %s: %s", op == FL_UN_NEG ? "-" : "+", fl_v_type_name(v));
}

bool fl_v_truthy(Ctx *c, FlValue *v, FlSpan sp, bool *ok) {
    *ok = true;
    switch (v->kind) {
    case VK_NONE: return false;
    case VK_BOOL: return v->b;
    case VK_INT: return v->i != 0;
    case VK_FLOAT: return v->f != 0;
    case VK_STR: return v->str.n != 0;
    case VK_LIST:
    case VK_TUPLE: return v->list.len != 0;
    case VK_DICT: return v->dict.len != 0;
    case VK_ERROR: *ok = false; return false;
    case VK_VAR:
        fl_ev_error(c, sp, "the truth value of a Var is only known at run time; use it in an "
                           "'if' or 'while' statement");
        *ok = false;
        return false;
    case VK_FUNC: case VK_BUILTIN: case VK_MODULE: case VK_RECORD: case VK_GUARD: case VK_PROGRAM:
    case VK_READER: case VK_COUNT: break;
    }
    return true;
}

FlValue *fl_ev_compare(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    if (l->kind == VK_ERROR || r->kind == VK_ERROR) return c->error;
    if ((l->kind == VK_VAR || r->kind == VK_VAR) && op != FL_CMP_IS && op != FL_CMP_IS_NOT &&
        op != FL_CMP_IN && op != FL_CMP_NOT_IN)
        return fl_ev_binop_var(c, 100 + op, l, r, sp);
    switch ((FlCmpOp)op) {
    case FL_CMP_EQ: return fl_v_bool(c, fl_v_equal(l, r));
    case FL_CMP_NE: return fl_v_bool(c, !fl_v_equal(l, r));
    case FL_CMP_IS: return fl_v_bool(c, l == r || (l->kind == VK_NONE && r->kind == VK_NONE) || (l->kind == VK_BOOL && r->kind == VK_BOOL && l->b == r->b));
    case FL_CMP_IS_NOT: return fl_v_bool(c, !(l == r || (l->kind == VK_NONE && r->kind == VK_NONE) || (l->kind == VK_BOOL && r->kind == VK_BOOL && l->b == r->b)));
    case FL_CMP_IN:
    case FL_CMP_NOT_IN: {
        bool found = false;
        if (fl_v_is_seq(r)) {
            for (size_t i = 0; i < r->list.len && !found; i++) found = fl_v_equal(l, r->list.items[i]);
        } else if (r->kind == VK_DICT) {
            found = fl_v_dict_get(r, l) != NULL;
        } else if (r->kind == VK_STR && l->kind == VK_STR) {
            found = l->str.n == 0 || (memmem(r->str.s, r->str.n, l->str.s, l->str.n) != NULL);
        } else {
            return fl_ev_error(c, sp, "'in' needs a list, tuple, dict or str on its right, found %s",
                               fl_v_type_name(r));
        }
        return fl_v_bool(c, op == FL_CMP_IN ? found : !found);
    }
    case FL_CMP_LT:
    case FL_CMP_LE:
    case FL_CMP_GT:
    case FL_CMP_GE:
    case FL_CMP_COUNT: break;
    }
    if (fl_v_is_num(l) && fl_v_is_num(r)) {
        double a = fl_v_num(l), b = fl_v_num(r);
        bool res = op == FL_CMP_LT ? a < b : op == FL_CMP_LE ? a <= b : op == FL_CMP_GT ? a > b : a >= b;
        return fl_v_bool(c, res);
    }
    if (l->kind == VK_STR && r->kind == VK_STR) {
        size_t n = l->str.n < r->str.n ? l->str.n : r->str.n;
        int k = memcmp(l->str.s, r->str.s, n);
        if (k == 0) k = l->str.n < r->str.n ? -1 : l->str.n > r->str.n;
        bool res = op == FL_CMP_LT ? k < 0 : op == FL_CMP_LE ? k <= 0 : op == FL_CMP_GT ? k > 0 : k >= 0;
        return fl_v_bool(c, res);
    }
    return fl_ev_error(c, sp, "cannot order %s and %s", fl_v_type_name(l), fl_v_type_name(r));
}
