# The io.sequence reader's fuzz target (fuzz_sequence.c: runtime/data): fuzz_sequence_corpus
# (label runtime) replays tests/fuzz/corpus/sequence and tests/fuzz/crashes/sequence. With
# -DFL_FUZZ=ON (clang), from the repository root:
#   mkdir -p build-fuzz/corpus-sequence
#   build-fuzz/tests/fuzz/fuzz_sequence build-fuzz/corpus-sequence tests/fuzz/corpus/sequence \
#       -max_total_time=600 -timeout=10 -artifact_prefix=tests/fuzz/crashes/sequence/
# (libFuzzer adds new inputs to the FIRST folder: keep that one out of git).
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
fl_fuzz_target(sequence runtime fuzz_sequence.c LIBS fl_data ${ZLIB_LIB} INCLUDES ${ZLIB_INC})
