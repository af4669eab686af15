/* tool.h: what the command-line tools (flc, flrun) share: their version line and where they find
 * the stdlib.
 *
 * The version is the CMake project version (project(fluidc VERSION ...) in the top-level
 * CMakeLists), passed to tool.c alone as the compile definition FL_VERSION, so it has one home;
 * the IR format is FL_IR_FORMAT_VERSION (compiler/ir/ir.h).
 *
 * The stdlib: $FLUIDC_STDLIB when set; else, for an installed tool, the installed stdlib at
 * FL_STDLIB_FROM_BIN (the install layout of cmake/install_dirs.cmake: ../share/fluidc/stdlib)
 * relative to the executable's own directory; else (a tool run from its build tree) the source
 * tree's stdlib/ that the compiler was built with (lang/eval.h). Nothing outside tools/ includes
 * this.
 */
#ifndef FL_TOOL_H
#define FL_TOOL_H

/* Prints "<tool> (fluidc) <version>, IR format <n>\n" on stdout. */
void fl_tool_print_version(const char *tool);

/* The stdlib directory to put in FlCompileOptions.stdlib_dir: NULL when $FLUIDC_STDLIB is set
 * and not empty (the compiler reads it) or when no installed stdlib (a directory holding
 * fluid/__init__.fl) sits at FL_STDLIB_FROM_BIN from the executable (the compiler then uses the
 * build's stdlib/); otherwise that directory, resolved (no '..', no symlinks), which the caller
 * frees. */
char *fl_tool_stdlib_dir(void);

#endif
