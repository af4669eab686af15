# The whole front end's libFuzzer target (scan, parse, evaluate with the stdlib, verify, encode).
# Always: fl_fuzz_eval_corpus, an ordinary test (label lang) replaying the seed corpus and every
# saved crasher. With -DFL_FUZZ=ON (clang; the whole tree is then instrumented):
#   mkdir -p build-fuzz/corpus-eval
#   build-fuzz/tests/fuzz/fuzz_eval build-fuzz/corpus-eval tests/fuzz/corpus/eval \
#       -dict=tests/fuzz/parse.dict -max_total_time=300 -timeout=10 -rss_limit_mb=4096 \
#       -artifact_prefix=tests/fuzz/crashes/eval/
# Run it from the repository root (stdlib and examples/ are found from there).
add_executable(fl_fuzz_eval_corpus ${CMAKE_CURRENT_LIST_DIR}/fuzz_eval.c ${CMAKE_CURRENT_LIST_DIR}/fuzz_driver.c)
fl_target(fl_fuzz_eval_corpus)
target_link_libraries(fl_fuzz_eval_corpus PRIVATE fl_lang)
add_test(NAME fuzz_eval_corpus
         COMMAND fl_fuzz_eval_corpus tests/fuzz/corpus/eval tests/fuzz/crashes/eval
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(fuzz_eval_corpus PROPERTIES LABELS lang TIMEOUT 600)
if(FL_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_eval ${CMAKE_CURRENT_LIST_DIR}/fuzz_eval.c)
  fl_target(fuzz_eval)
  target_link_options(fuzz_eval PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_eval PRIVATE fl_lang)
endif()
