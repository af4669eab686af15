/* tool.c: the version line of flc and flrun (tool.h). FL_VERSION comes from tools/CMakeLists.txt
 * (the project version); a build without it is a configuration bug, so it does not compile. */
#include "tools/tool.h"

#include <stdio.h>

#include "compiler/ir/ir.h"

#ifndef FL_VERSION
#error "FL_VERSION (the CMake project version) must be defined by the build"
#endif

void fl_tool_print_version(const char *tool) {
    printf("%s (fluidc) %s, IR format %d\n", tool, FL_VERSION, FL_IR_FORMAT_VERSION);
}
