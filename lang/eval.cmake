# The compile-time evaluator on top of the parser: library fl_lang. Its files share
# lang/eval_impl.h; eval.c is the driver behind lang/eval.h.
set(FL_LANG_DIR ${CMAKE_CURRENT_SOURCE_DIR})
add_library(fl_lang STATIC
  ${FL_LANG_DIR}/value.c ${FL_LANG_DIR}/build.c ${FL_LANG_DIR}/arith.c ${FL_LANG_DIR}/expr.c
  ${FL_LANG_DIR}/stmt.c ${FL_LANG_DIR}/lower.c ${FL_LANG_DIR}/eval.c ${FL_LANG_DIR}/builtins.c
  ${FL_LANG_DIR}/core.c ${FL_LANG_DIR}/module.c ${FL_LANG_DIR}/pyclass.c ${FL_LANG_DIR}/pylib.c
  ${FL_LANG_DIR}/driver.c ${FL_LANG_DIR}/driver_data.c
  ${FL_LANG_DIR}/driver_values.c ${FL_LANG_DIR}/pyset.c
  ${FL_LANG_DIR}/driver_loop.c ${FL_LANG_DIR}/program.c ${FL_LANG_DIR}/driver_io.c
  ${FL_LANG_DIR}/driver_random.c
  ${FL_LANG_DIR}/driver_pyfunc.c
  ${FL_LANG_DIR}/driver_pyreader.c
  ${FL_LANG_DIR}/driver_metrics.c
  ${FL_LANG_DIR}/driver_dist.c ${FL_LANG_DIR}/driver_batch.c
  ${FL_LANG_DIR}/driver_lod.c ${FL_LANG_DIR}/driver_file.c)
# Fluid's Dataset API over MultiSlot files
target_sources(fl_lang PRIVATE ${FL_LANG_DIR}/driver_dataset.c)
# numpy.fromfile and a scope's tensors' set() on the driver
target_sources(fl_lang PRIVATE ${FL_LANG_DIR}/driver_tensorfile.c)
# fluid.contrib's programs with distributed lookup tables
target_sources(fl_lang PRIVATE ${FL_LANG_DIR}/driver_contrib.c)
# str() and print of fetched values in containers and of objects with __str__
target_sources(fl_lang PRIVATE ${FL_LANG_DIR}/driver_print.c)
fl_target(fl_lang)
target_compile_definitions(fl_lang PRIVATE FL_STDLIB_DIR="${PROJECT_SOURCE_DIR}/stdlib")
target_link_libraries(fl_lang PUBLIC fl_parse fl_passes fl_ops fl_ir fl_dataset fl_base m)
