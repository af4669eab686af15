/* flc: the fluidc compiler's command line.
 *
 *   flc build FILE.fl [-o OUT.flp] [-D name=value]...   compile to a bundle
 *   flc check FILE.fl [-D name=value]...                diagnostics only
 *   flc show  FILE.{fl,flp,plan} [-D name=value]...     readable listing of every block, var, op
 *   flc dot   FILE.{fl,flp,plan} [-D name=value]...     Graphviz DOT on stdout
 *   flc ops                                             the op reference (Markdown)
 *
 * Exit codes: 0 success, 1 a user error (bad program, unreadable file), 2 bad usage.
 * The tool sits on top of every layer (lang, compiler); nothing includes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "compiler/ops.h"
#include "lang/eval.h"

#define FLC_VERSION "0.1.0"

static const char *usage_text =
    "usage: flc COMMAND [ARGS]\n"
    "\n"
    "Compile .fl programs to fluidc IR and inspect them.\n"
    "\n"
    "commands:\n"
    "  build FILE.fl [-o OUT.flp] [-D name=value]...   compile (default OUT: FILE.flp)\n"
    "  check FILE.fl [-D name=value]...                report diagnostics only\n"
    "  show  FILE.{fl,flp,plan} [-D name=value]...     readable listing of every block, var and op\n"
    "  dot   FILE.{fl,flp,plan} [-D name=value]...     Graphviz DOT on stdout (dot -Tsvg)\n"
    "  ops                                             the op reference, as Markdown\n"
    "\n"
    "options:\n"
    "  -o FILE          output file (build)\n"
    "  -D name=value    set the compile-time flag read by fluid.flag(name, default)\n"
    "  -h, --help       show this help\n"
    "  --version        show the version\n"
    "\n"
    "exit status: 0 success, 1 error in the program or its files, 2 bad usage\n"
    "environment: FLUIDC_STDLIB overrides the stdlib directory\n";

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "flc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'flc --help'.\n");
    return 2;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

typedef struct Args {
    const char *cmd, *file, *out;
    FL_VEC(const char *) defines;
} Args;

/* Loads FILE as a bundle or plan: .fl files are compiled. Returns 0, or the exit code. */
static int load(const Args *a, FlBundle **bundle, FlPlan **plan) {
    *bundle = NULL;
    *plan = NULL;
    if (ends_with(a->file, ".fl")) {
        FlCompileOptions opt = {.defines = a->defines.data, .ndefines = a->defines.len};
        FlBuf diag = {0};
        int nerr = fl_compile_file(a->file, &opt, bundle, &diag);
        fputs(fl_buf_str(&diag), stderr);
        fl_buf_free(&diag);
        if (nerr) return 1;
        return 0;
    }
    FlErr e;
    if (fl_ir_read(a->file, bundle, plan, &e) != FL_OK) {
        fprintf(stderr, "flc: error: %s\n", e.msg);
        return 1;
    }
    return 0;
}

static char *default_out(const char *file) {
    size_t n = strlen(file);
    char *o = malloc(n + 2);
    if (!o) return NULL;
    memcpy(o, file, n + 1);
    if (ends_with(o, ".fl")) strcpy(o + n - 3, ".flp");
    else strcat(o, ".flp");
    return o;
}

int main(int argc, char **argv) {
    Args a = {0};
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help") || !strcmp(s, "help")) {
            fputs(usage_text, stdout);
            goto done;
        } else if (!strcmp(s, "--version")) {
            printf("flc (fluidc) %s, IR format %d\n", FLC_VERSION, FL_IR_FORMAT_VERSION);
            goto done;
        } else if (!strcmp(s, "-o")) {
            if (++i >= argc) {
                rc = usage_error("%s needs a file name", "-o");
                goto done;
            }
            a.out = argv[i];
        } else if (!strncmp(s, "-D", 2)) {
            const char *d = s[2] ? s + 2 : (++i < argc ? argv[i] : NULL);
            if (!d || !strchr(d, '=') || d[0] == '=') {
                rc = usage_error("-D needs name=value, found '%s'", d ? d : "");
                goto done;
            }
            FL_VEC_PUSH(&a.defines, d);
        } else if (s[0] == '-' && s[1]) {
            rc = usage_error("unknown option '%s'", s);
            goto done;
        } else if (!a.cmd) {
            a.cmd = s;
        } else if (!a.file) {
            a.file = s;
        } else {
            rc = usage_error("unexpected argument '%s'", s);
            goto done;
        }
    }
    if (!a.cmd) {
        fputs(usage_text, stderr);
        rc = 2;
        goto done;
    }
    if (!strcmp(a.cmd, "ops")) {
        FlBuf b = {0};
        fl_ops_markdown(&b);
        fputs(fl_buf_str(&b), stdout);
        fl_buf_free(&b);
        goto done;
    }
    bool known = !strcmp(a.cmd, "build") || !strcmp(a.cmd, "check") || !strcmp(a.cmd, "show") || !strcmp(a.cmd, "dot");
    if (!known) {
        rc = usage_error("unknown command '%s'", a.cmd);
        goto done;
    }
    if (!a.file) {
        rc = usage_error("'%s' needs a file", a.cmd);
        goto done;
    }
    if ((!strcmp(a.cmd, "build") || !strcmp(a.cmd, "check")) && !ends_with(a.file, ".fl")) {
        rc = usage_error("'%s' compiles .fl files; use show or dot for a .flp or .plan", a.cmd);
        goto done;
    }
    if (a.out && strcmp(a.cmd, "build") != 0) {
        rc = usage_error("-o is only for build (%s writes to stdout)", a.cmd);
        goto done;
    }
    FlBundle *bundle;
    FlPlan *plan;
    rc = load(&a, &bundle, &plan);
    if (rc) goto done;
    if (!strcmp(a.cmd, "build")) {
        char *out = a.out ? NULL : default_out(a.file);
        FlErr e;
        if (fl_ir_bundle_write(bundle, a.out ? a.out : out, &e) != FL_OK) {
            fprintf(stderr, "flc: error: %s\n", e.msg);
            rc = 1;
        }
        free(out);
    } else if (!strcmp(a.cmd, "show") || !strcmp(a.cmd, "dot")) {
        FlBuf b = {0};
        bool show = !strcmp(a.cmd, "show");
        if (plan) show ? fl_ir_show_plan(plan, &b) : fl_ir_dot_plan(plan, &b);
        else show ? fl_ir_show_bundle(bundle, &b) : fl_ir_dot_bundle(bundle, &b);
        fputs(fl_buf_str(&b), stdout);
        fl_buf_free(&b);
    }
    fl_ir_bundle_free(bundle);
    fl_ir_plan_free(plan);
done:
    FL_VEC_FREE(&a.defines);
    return rc;
}
