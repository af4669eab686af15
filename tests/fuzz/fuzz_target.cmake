# fl_fuzz_target(NAME LABEL SOURCE LIBS lib... [INCLUDES dir...]): a fuzz target in its two builds.
#   Always: fl_fuzz_NAME_corpus (SOURCE with fuzz_driver.c), the test fuzz_NAME_corpus (label
#   LABEL) replaying the seed corpus tests/fuzz/corpus/NAME and every saved crasher
#   tests/fuzz/crashes/NAME, from the repository root.
#   With FL_FUZZ (clang): the libFuzzer binary fuzz_NAME.
include_guard(GLOBAL)
function(fl_fuzz_target name label source)
  cmake_parse_arguments(F "" "" "LIBS;INCLUDES" ${ARGN})
  set(dir ${PROJECT_SOURCE_DIR}/tests/fuzz)
  add_executable(fl_fuzz_${name}_corpus ${dir}/${source} ${dir}/fuzz_driver.c)
  set(bins fl_fuzz_${name}_corpus)
  if(FL_FUZZ)
    add_executable(fuzz_${name} ${dir}/${source})
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    list(APPEND bins fuzz_${name})
  endif()
  foreach(bin ${bins})
    fl_target(${bin})
    if(F_INCLUDES)
      target_include_directories(${bin} PRIVATE ${F_INCLUDES})
    endif()
    target_link_libraries(${bin} PRIVATE ${F_LIBS})
  endforeach()
  add_test(NAME fuzz_${name}_corpus
           COMMAND fl_fuzz_${name}_corpus tests/fuzz/corpus/${name} tests/fuzz/crashes/${name}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(fuzz_${name}_corpus PROPERTIES LABELS ${label} TIMEOUT 300)
endfunction()
