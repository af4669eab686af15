# Tests of the op table and the passes (compiler/ops.c, infer.c, backward.c, verify.c).
# Included from tests/compiler/CMakeLists.txt; paths are relative to this file.
fl_test(test_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ops.c LIBS fl_ops LABELS compiler)
fl_test(test_infer SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_infer.c LIBS fl_passes LABELS compiler)
fl_test(test_backward SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_backward.c LIBS fl_passes
        LABELS compiler)
fl_test(test_verify SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_verify.c LIBS fl_passes
        LABELS compiler)
fl_test(test_prune SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_prune.c LIBS fl_passes LABELS compiler)
