# The IR reader's libFuzzer target. Include it from tests/fuzz/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/ir.cmake)
# It only does something when FL_FUZZ is on (configure with CC=clang -DFL_FUZZ=ON). Run:
#   mkdir -p build-fuzz/corpus-ir
#   build-fuzz/tests/fuzz/fuzz_ir build-fuzz/corpus-ir tests/fuzz/corpus/ir -max_total_time=300 \
#       -artifact_prefix=tests/fuzz/crashes/ir/
# (libFuzzer adds new inputs to the FIRST folder: keep that one out of git). A crasher lands in
# tests/fuzz/crashes/ir/; keep it there once fixed (test_fuzz_ir_corpus replays both folders).
# With FL_FUZZ the whole tree carries the fuzzer's coverage instrumentation.
if(FL_FUZZ)
  add_executable(fuzz_ir ${CMAKE_CURRENT_LIST_DIR}/fuzz_ir.c)
  fl_target(fuzz_ir)
  target_link_options(fuzz_ir PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_ir PRIVATE fl_ir)
endif()
