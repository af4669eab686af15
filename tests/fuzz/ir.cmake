# The IR reader's libFuzzer target. Include it from tests/fuzz/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/ir.cmake)
# It only does something when FL_FUZZ is on (configure with CC=clang -DFL_FUZZ=ON). Run:
#   mkdir -p build-fuzz/corpus-ir
#   build-fuzz/tests/fuzz/fuzz_ir build-fuzz/corpus-ir tests/fuzz/corpus/ir -max_total_time=300 \
#       -artifact_prefix=tests/fuzz/crashes/ir/
# (libFuzzer adds new inputs to the FIRST folder: keep that one out of git). A crasher lands in
# tests/fuzz/crashes/ir/; keep it there once fixed (test_fuzz_ir_corpus replays both folders).
# The IR module and base are compiled into the target from their sources, so that they carry
# the fuzzer's coverage instrumentation (the ordinary fl_ir library does not).
if(FL_FUZZ)
  set(_ir_gen ${PROJECT_BINARY_DIR}/compiler/ir/fluid.pb-c.c)
  fl_relax(${_ir_gen})
  add_executable(fuzz_ir
    ${CMAKE_CURRENT_LIST_DIR}/fuzz_ir.c
    ${PROJECT_SOURCE_DIR}/compiler/ir/ir.c
    ${PROJECT_SOURCE_DIR}/compiler/ir/ir_file.c
    ${PROJECT_SOURCE_DIR}/compiler/ir/ir_show.c
    ${PROJECT_SOURCE_DIR}/base/base.c
    ${_ir_gen})
  add_dependencies(fuzz_ir fl_ir) # generates fluid.pb-c.c
  fl_target(fuzz_ir)
  target_compile_options(fuzz_ir PRIVATE -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer)
  target_link_options(fuzz_ir PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_ir PRIVATE fl_protobuf_c)
endif()
