# Tests of the distribute transpiler (compiler/transpile.c) and `flc transpile`.
# Included from tests/compiler/CMakeLists.txt; paths are relative to this file.
# Goldens: tests/compiler/plans/ (FL_UPDATE_GOLDEN=1 ./test_transpile, from the repo root,
# rewrites them). The test runs flc (its first argument) for the command line's errors.
fl_test(test_transpile SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_transpile.c
        LIBS fl_lang fl_passes LABELS compiler ARGS $<TARGET_FILE:flc>)
add_dependencies(test_transpile flc)
# The plan checks (compiler/plan_verify.c), `flc verify` and flrun's refusal of a broken plan
# (flrun starts MPI as a singleton and stops before any work: OpenBLAS and LeakSanitizer as in
# tests/mpi).
fl_test(test_plan_verify SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_plan_verify.c
        LIBS fl_lang fl_passes LABELS compiler ARGS $<TARGET_FILE:flc> $<TARGET_FILE:flrun>)
add_dependencies(test_plan_verify flc flrun)
set_tests_properties(test_plan_verify PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1;ASAN_OPTIONS=detect_leaks=0")
