/* tool.c: the version line of flc and flrun and the installed stdlib's place (tool.h).
 * FL_VERSION and FL_STDLIB_FROM_BIN come from tools/CMakeLists.txt (the project version, the
 * install layout); a build without them is a configuration bug, so it does not compile. */
#define _GNU_SOURCE
#include "tools/tool.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/ir/ir.h"

#if !defined(FL_VERSION) || !defined(FL_STDLIB_FROM_BIN)
#error "FL_VERSION and FL_STDLIB_FROM_BIN must be defined by the build (tools/CMakeLists.txt)"
#endif

void fl_tool_print_version(const char *tool) {
    printf("%s (fluidc) %s, IR format %d\n", tool, FL_VERSION, FL_IR_FORMAT_VERSION);
}

char *fl_tool_stdlib_dir(void) {
    const char *env = getenv("FLUIDC_STDLIB");
    if (env && *env) return NULL;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = 0;
    char cand[2 * PATH_MAX];
    snprintf(cand, sizeof cand, "%s/%s", exe, FL_STDLIB_FROM_BIN);
    char *dir = realpath(cand, NULL);
    if (!dir) return NULL;
    snprintf(cand, sizeof cand, "%s/fluid/__init__.fl", dir);
    if (access(cand, R_OK) != 0) {
        free(dir);
        return NULL;
    }
    return dir;
}
