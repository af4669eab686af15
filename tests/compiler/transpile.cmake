# Tests of the distribute transpiler (compiler/transpile.c) and `flc transpile`.
# Included from tests/compiler/CMakeLists.txt; paths are relative to this file.
# Goldens: tests/compiler/plans/ (FL_UPDATE_GOLDEN=1 ./test_transpile, from the repo root,
# rewrites them). The test runs flc (its first argument) for the command line's errors.
fl_test(test_transpile SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_transpile.c
        LIBS fl_lang fl_passes LABELS compiler ARGS $<TARGET_FILE:flc>)
add_dependencies(test_transpile flc)
