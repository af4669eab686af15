# The compile-time evaluator on top of the parser: library fl_lang.
add_library(fl_lang STATIC ${CMAKE_CURRENT_SOURCE_DIR}/eval.c ${CMAKE_CURRENT_SOURCE_DIR}/builtins.c)
fl_target(fl_lang)
target_compile_definitions(fl_lang PRIVATE FL_STDLIB_DIR="${PROJECT_SOURCE_DIR}/stdlib")
target_link_libraries(fl_lang PUBLIC fl_parse fl_passes fl_ops fl_ir fl_base m)
