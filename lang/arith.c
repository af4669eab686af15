/* arith.c: operators on compile-time values, as Python defines them.
 *
 * Binary arithmetic on ints, floats and bools (checked for int64 overflow: an overflow is a
 * diagnostic, never a wrap-around), on strings and lists (`+`, `*` repetition, `%` formatting with
 * Python's conversions and errors), unary operators, comparisons (equality, ordering, `in`,
 * `is`) and truthiness. An operation with a Var operand is handed to the op builder
 * (fl_ev_binop_var in build.c).
 *
 * Invariants: an ERROR operand gives ERROR without a new message; ints stay ints except for
 * `/` and a negative `**`, as in Python 3; `//` and `%` round towards negative infinity.
 */
#define _GNU_SOURCE /* memmem */
#include "lang/eval_impl.h"

#include <math.h>
#include <stdio.h>
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
            if (b == -1) { /* INT64_MIN / -1 traps in C */
                if (op == FL_OP_MOD) return fl_v_int(c, 0);
                if (a == INT64_MIN) goto ovf;
            }
            int64_t q = a / b, m = a % b;
            if (m != 0 && ((m < 0) != (b < 0))) {
                q--;
                m += b;
            }
            return fl_v_int(c, op == FL_OP_MOD ? m : q);
        }
        case FL_OP_POW: {
            if (b < 0) {
                if (a == 0) return fl_ev_error(c, sp, "0 cannot be raised to a negative power");
                return fl_v_float(c, pow((double)a, (double)b));
            }
            int64_t res = 1, base = a; /* by squaring: b may be huge when a is 0, 1 or -1 */
            for (int64_t e = b; e > 0; e >>= 1) {
                if ((e & 1) && __builtin_mul_overflow(res, base, &res)) goto ovf;
                if (e > 1 && __builtin_mul_overflow(base, base, &base)) goto ovf;
            }
            return fl_v_int(c, res);
        }
        case FL_OP_MATMUL:
        case FL_BINOP_COUNT: break;
        }
        return fl_ev_error(c, sp, "'@' needs Vars, found two numbers");
    ovf:
        return fl_ev_error(c, sp, "integer overflow in a compile-time expression (ints are 64-bit)");
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
    case FL_OP_POW:
        if (a == 0 && b < 0) return fl_ev_error(c, sp, "0.0 cannot be raised to a negative power");
        return fl_v_float(c, pow(a, b));
    case FL_OP_MATMUL:
    case FL_BINOP_COUNT: break;
    }
    return fl_ev_error(c, sp, "'@' needs Vars, found two numbers");
}

/* ------------------------------------------------------------------ "..." % args */

/* A conversion's flags, width and precision (-1: none). */
typedef struct Conv {
    bool left, plus, space, alt, zero;
    int width, prec;
    char conv;
} Conv;

/* text padded to the conversion's width: after the sign and prefix with zeros (flag 0, numbers
 * only), else with spaces on the left (or on the right with flag -). */
static void pad(FlBuf *b, const Conv *cv, const char *prefix, const char *text, size_t tlen, bool numeric) {
    size_t len = strlen(prefix) + tlen;
    int fill = (size_t)cv->width > len ? cv->width - (int)len : 0;
    bool zeros = numeric && cv->zero && !cv->left;
    for (int k = 0; !cv->left && !zeros && k < fill; k++) fl_buf_putc(b, ' ');
    fl_buf_puts(b, prefix);
    for (int k = 0; zeros && k < fill; k++) fl_buf_putc(b, '0');
    fl_buf_append(b, text, tlen);
    for (int k = 0; cv->left && k < fill; k++) fl_buf_putc(b, ' ');
}

/* One conversion of printf-style formatting with its argument x, as Python shows it. */
static bool format_one(Ctx *c, FlBuf *b, const Conv *cv, FlValue *x, FlSpan sp) {
    char conv = cv->conv;
    FlBuf t = {0}; /* the text before padding */
    bool ok = true;
    switch (conv) {
    case 'd': case 'i': case 'u': case 'o': case 'x': case 'X': {
        bool int_only = conv == 'o' || conv == 'x' || conv == 'X';
        if (!fl_v_is_num(x) || (int_only && x->kind == VK_FLOAT)) {
            fl_ev_error(c, sp, "%%%c format: %s is required, found %s", conv,
                        int_only ? "an int" : "a number", fl_v_type_name(x));
            return false;
        }
        int64_t i;
        if (x->kind == VK_FLOAT) {
            if (!isfinite(x->f) || fabs(x->f) >= 9223372036854775808.0) {
                fl_ev_error(c, sp, "%%%c format: cannot convert the float %g to an int", conv, x->f);
                return false;
            }
            i = (int64_t)x->f;
        } else {
            i = x->kind == VK_INT ? x->i : x->b;
        }
        unsigned long long mag = i < 0 ? 0ULL - (unsigned long long)i : (unsigned long long)i;
        const char *f = conv == 'o' ? "%.*llo" : conv == 'x' ? "%.*llx" : conv == 'X' ? "%.*llX" : "%.*llu";
        fl_buf_printf(&t, f, cv->prec < 0 ? 1 : cv->prec, mag);
        char prefix[8] = "";
        strcat(prefix, i < 0 ? "-" : cv->plus ? "+" : cv->space ? " " : "");
        if (cv->alt && int_only) strcat(prefix, conv == 'o' ? "0o" : conv == 'x' ? "0x" : "0X");
        pad(b, cv, prefix, fl_buf_str(&t), t.len, true);
        break;
    }
    case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
        if (!fl_v_is_num(x)) {
            fl_ev_error(c, sp, "%%%c format: a number is required, found %s", conv, fl_v_type_name(x));
            return false;
        }
        char f[16];
        snprintf(f, sizeof f, "%%%s%s.*%c", cv->plus ? "+" : cv->space ? " " : "", cv->alt ? "#" : "", conv);
        fl_buf_printf(&t, f, cv->prec < 0 ? 6 : cv->prec, fl_v_num(x));
        const char *txt = fl_buf_str(&t);
        bool sign = txt[0] == '-' || txt[0] == '+' || txt[0] == ' ';
        char prefix[2] = {sign ? txt[0] : 0, 0};
        pad(b, cv, prefix, txt + sign, t.len - sign, isfinite(fl_v_num(x)));
        break;
    }
    case 'c': {
        char ch[2] = {0, 0};
        if (x->kind == VK_STR && x->str.n == 1) ch[0] = x->str.s[0];
        else if (x->kind == VK_INT && x->i > 0 && x->i < 128) ch[0] = (char)x->i;
        else {
            fl_ev_error(c, sp, "%%c format: a single character or an int from 1 to 127 is required, found %s",
                        x->kind == VK_STR ? "a str of another length" : x->kind == VK_INT ? "an int out of range" : fl_v_type_name(x));
            return false;
        }
        pad(b, cv, "", ch, 1, false);
        break;
    }
    case 's': case 'r': {
        bool quote = conv == 'r' && x->kind == VK_STR;
        if (quote) fl_buf_putc(&t, '\'');
        ok = fl_v_repr_at(c, x, &t, sp);
        if (quote) fl_buf_putc(&t, '\'');
        size_t len = ok && cv->prec >= 0 && (size_t)cv->prec < t.len ? (size_t)cv->prec : t.len;
        if (ok) pad(b, cv, "", fl_buf_str(&t), len, false);
        break;
    }
    default:
        fl_ev_error(c, sp, "unsupported format character '%c' (expected one of d i o x X e f g c s r %%)", conv);
        ok = false;
        break;
    }
    fl_buf_free(&t);
    return ok;
}

/* A width or precision: digits, at most 9999 (a wider field is surely a mistake). */
static bool conv_number(Ctx *c, const char *s, size_t n, size_t *i, int *out, FlSpan sp) {
    int64_t v = 0;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
        v = v * 10 + (s[(*i)++] - '0');
        if (v > 9999) {
            fl_ev_error(c, sp, "a format width or precision must be at most 9999");
            return false;
        }
    }
    *out = (int)v;
    return true;
}

/* Python's printf-style formatting: `fmt % args`, args a tuple of the arguments or a single
 * value (a list or dict is a single value, as in Python). Conversions d i u o x X e E f F g G c
 * s r and %%, with flags (- + space # 0), a width and a precision; a conversion given a value it
 * cannot show, too few arguments and too many are errors. */
static FlValue *format_percent(Ctx *c, FlValue *l, FlValue *r, FlSpan sp) {
    FlValue *args = r->kind == VK_TUPLE ? r : NULL;
    size_t nargs = args ? args->list.len : 1, ai = 0;
    const char *s = l->str.s;
    size_t n = l->str.n;
    FlBuf b = {0};
    FlValue *rt = NULL; /* a run-time string once an argument is a run-time value (driver.c) */
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            fl_buf_putc(&b, s[i]);
            continue;
        }
        size_t start = i++;
        Conv cv = {.prec = -1};
        for (; i < n && strchr("-+ #0", s[i]); i++) {
            cv.left |= s[i] == '-';
            cv.plus |= s[i] == '+';
            cv.space |= s[i] == ' ';
            cv.alt |= s[i] == '#';
            cv.zero |= s[i] == '0';
        }
        bool ok = conv_number(c, s, n, &i, &cv.width, sp);
        if (ok && i < n && s[i] == '.') {
            i++;
            ok = conv_number(c, s, n, &i, &cv.prec, sp);
        }
        if (!ok) {
            fl_buf_free(&b);
            return c->error;
        }
        if (i >= n) {
            fl_buf_free(&b);
            return fl_ev_error(c, sp, "incomplete format: '%s' ends inside a conversion", s + start);
        }
        if (s[i] == '%' && i == start + 1) {
            fl_buf_putc(&b, '%');
            continue;
        }
        if (s[i] == '(' || s[i] == '*') {
            fl_buf_free(&b);
            return fl_ev_error(c, sp, "'%c' in a format conversion is not supported (use a literal width and "
                                      "positional arguments)", s[i]);
        }
        if (ai >= nargs) {
            fl_buf_free(&b);
            return fl_ev_error(c, sp, "not enough arguments for the format string (%zu given)", nargs);
        }
        cv.conv = s[i];
        FlValue *x = args ? args->list.items[ai] : r;
        if (cv.conv == 's' || cv.conv == 'r') x = fl_ev_format_arg(c, x, cv.conv == 'r', sp); /* __str__ */
        if (x->kind == VK_ERROR) {
            fl_buf_free(&b);
            return x;
        }
        if (fl_ev_is_runtime(c, x)) { /* the conversion as written, applied when the driver prints */
            bool plain = (cv.conv == 's' || cv.conv == 'r') && i == start + 1; /* %r: fl_ev_format_arg's repr */
            if (!strchr("dioxXeEfFgGsr", cv.conv) || (fl_ev_is_rtstr(x) && !plain) || (!fl_ev_is_rtstr(x) && cv.conv == 'r')) {
                fl_buf_free(&b);
                return fl_ev_error(c, sp, "the conversion '%.*s' of a run-time value is not one print can apply "
                                          "(%%d, %%i, %%o, %%x, %%e, %%f, %%g, %%s with flags, width and precision)",
                                   (int)(i - start + 1), s + start);
            }
            if (!rt) rt = fl_ev_rtstr_new(c);
            fl_ev_rtstr_text(c, rt, fl_buf_str(&b), b.len);
            b.len = 0;
            if (fl_ev_is_rtstr(x)) rt = fl_ev_rtstr_cat(c, rt, x);
            else fl_ev_rtstr_value(c, rt, x, fl_intern_str(&c->in, fl_arena_printf(&c->arena, "%.*s", (int)(i - start + 1), s + start)));
            ai++;
            continue;
        }
        if (!format_one(c, &b, &cv, x, sp)) {
            fl_buf_free(&b);
            return c->error;
        }
        ai++;
        if (b.len > FL_MAX_LEN) {
            fl_buf_free(&b);
            return fl_ev_error(c, sp, "the formatted string would be longer than %d characters", FL_MAX_LEN);
        }
    }
    if (ai < nargs) {
        fl_buf_free(&b);
        return fl_ev_error(c, sp, "not all arguments converted during string formatting (%zu given, %zu used)",
                           nargs, ai);
    }
    FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
    fl_buf_free(&b);
    return rt ? fl_ev_rtstr_cat(c, rt, v) : v;
}

static const char *binop_sym(int op) {
    static const char *s[] = {"+", "-", "*", "/", "//", "%", "@", "**"};
    return op >= 0 && op < FL_BINOP_COUNT ? s[op] : "?";
}

FlValue *fl_ev_binop(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    if (l->kind == VK_ERROR || r->kind == VK_ERROR) return c->error;
    if (op == FL_OP_MOD && l->kind == VK_STR && (r->kind != VK_VAR || fl_ev_is_driver_var(c, r)))
        return format_percent(c, l, r, sp);
    if (op == FL_OP_ADD && (fl_ev_is_rtstr(l) || fl_ev_is_rtstr(r)) && (l->kind == VK_STR || fl_ev_is_rtstr(l)) &&
        (r->kind == VK_STR || fl_ev_is_rtstr(r)))
        return fl_ev_rtstr_cat(c, l, r); /* a run-time string (driver.c) */
    if (l->kind == VK_VAR || r->kind == VK_VAR) return fl_ev_binop_var(c, op, l, r, sp);
    if (fl_v_is_num(l) && fl_v_is_num(r)) return num_binop(c, op, l, r, sp);
    if (op == FL_OP_ADD && l->kind == VK_STR && r->kind == VK_STR) {
        if (!fl_ev_check_len(c, l->str.n, r->str.n, "str", sp)) return c->error;
        FlBuf b = {0};
        fl_buf_append(&b, l->str.s, l->str.n);
        fl_buf_append(&b, r->str.s, r->str.n);
        FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
        fl_buf_free(&b);
        return v;
    }
    if (op == FL_OP_ADD && fl_v_is_seq(l) && l->kind == r->kind) {
        if (!fl_ev_check_len(c, l->list.len, r->list.len, fl_v_type_name(l), sp)) return c->error;
        FlValue *v = fl_v_list(c, l->kind);
        for (size_t i = 0; i < l->list.len; i++) fl_v_list_push(c, v, l->list.items[i]);
        for (size_t i = 0; i < r->list.len; i++) fl_v_list_push(c, v, r->list.items[i]);
        return v;
    }
    if (op == FL_OP_MUL && (fl_v_is_seq(l) || l->kind == VK_STR) && r->kind == VK_INT) {
        size_t len = l->kind == VK_STR ? l->str.n : l->list.len;
        int64_t times = r->i < 0 || len == 0 ? 0 : r->i;
        size_t total;
        if (times > 0 && (__builtin_mul_overflow(len, (uint64_t)times, &total) || total > FL_MAX_LEN))
            return fl_ev_error(c, sp, "a %s * %lld would hold more than %d %s", fl_v_type_name(l), (long long)times,
                               FL_MAX_LEN, l->kind == VK_STR ? "characters" : "elements");
        if (l->kind == VK_STR) {
            FlBuf b = {0};
            for (int64_t i = 0; i < times; i++) fl_buf_append(&b, l->str.s, l->str.n);
            FlValue *v = fl_v_str(c, fl_buf_str(&b), b.len);
            fl_buf_free(&b);
            return v;
        }
        FlValue *v = fl_v_list(c, l->kind);
        for (int64_t k = 0; k < times; k++)
            for (size_t i = 0; i < len; i++) fl_v_list_push(c, v, l->list.items[i]);
        return v;
    }
    if (op == FL_OP_MOD && l->kind == VK_STR) return format_percent(c, l, r, sp);
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
        if (op == FL_UN_NEG && x == INT64_MIN) return fl_ev_error(c, sp, "integer overflow in a compile-time expression (ints are 64-bit)");
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
    case VK_SET:
    case VK_TUPLE: return v->list.len != 0;
    case VK_DICT: return v->dict.len != 0;
    case VK_ERROR: *ok = false; return false;
    case VK_VAR:
        fl_ev_error(c, sp, "the truth value of a Var is only known at run time; use it in an "
                           "'if' or 'while' statement");
        *ok = false;
        return false;
    case VK_FUNC: case VK_BUILTIN: case VK_MODULE: case VK_RECORD: case VK_GUARD: case VK_PROGRAM:
    case VK_READER: case VK_CLASS: case VK_COUNT: break;
    }
    return true;
}

FlValue *fl_ev_compare(Ctx *c, int op, FlValue *l, FlValue *r, FlSpan sp) {
    if (l->kind == VK_ERROR || r->kind == VK_ERROR) return c->error;
    if ((l->kind == VK_VAR || r->kind == VK_VAR) && op != FL_CMP_IS && op != FL_CMP_IS_NOT &&
        op != FL_CMP_IN && op != FL_CMP_NOT_IN)
        return fl_ev_binop_var(c, 100 + op, l, r, sp);
    switch ((FlCmpOp)op) {
    case FL_CMP_EQ:
    case FL_CMP_NE: {
        bool ok, e = fl_v_equal(c, l, r, sp, &ok);
        return ok ? fl_v_bool(c, op == FL_CMP_EQ ? e : !e) : c->error;
    }
    case FL_CMP_IS: return fl_v_bool(c, l == r || (l->kind == VK_NONE && r->kind == VK_NONE) || (l->kind == VK_BOOL && r->kind == VK_BOOL && l->b == r->b));
    case FL_CMP_IS_NOT: return fl_v_bool(c, !(l == r || (l->kind == VK_NONE && r->kind == VK_NONE) || (l->kind == VK_BOOL && r->kind == VK_BOOL && l->b == r->b)));
    case FL_CMP_IN:
    case FL_CMP_NOT_IN: {
        bool found = false;
        if (fl_v_is_seq(r) || r->kind == VK_SET) {
            bool ok = true;
            for (size_t i = 0; i < r->list.len && !found && ok; i++) found = fl_v_equal(c, l, r->list.items[i], sp, &ok);
            if (!ok) return c->error;
        } else if (r->kind == VK_DICT) {
            found = fl_v_dict_get(r, l) != NULL;
        } else if (r->kind == VK_STR && l->kind == VK_STR) {
            found = l->str.n == 0 || (memmem(r->str.s, r->str.n, l->str.s, l->str.n) != NULL);
        } else {
            return fl_ev_error(c, sp, "'in' needs a list, tuple, set, dict or str on its right, found %s",
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
        int k = fl_v_num_cmp(l, r); /* 2: a NaN, and every ordering is false */
        bool res = k != 2 && (op == FL_CMP_LT ? k < 0 : op == FL_CMP_LE ? k <= 0 : op == FL_CMP_GT ? k > 0 : k >= 0);
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
