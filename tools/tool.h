/* tool.h: what the command-line tools (flc, flrun) share: their version line.
 *
 * The version is the CMake project version (project(fluidc VERSION ...) in the top-level
 * CMakeLists), passed to tool.c alone as the compile definition FL_VERSION, so it has one home;
 * the IR format is FL_IR_FORMAT_VERSION (compiler/ir/ir.h). Nothing outside tools/ includes this.
 */
#ifndef FL_TOOL_H
#define FL_TOOL_H

/* Prints "<tool> (fluidc) <version>, IR format <n>\n" on stdout. */
void fl_tool_print_version(const char *tool);

#endif
