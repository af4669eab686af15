# flc simulate's inputs' fuzz target (fuzz_cluster.c: the cluster spec and calibration parsers
# and the step model, compiler/simulate.c): fuzz_cluster_corpus (label compiler) replays
# tests/fuzz/corpus/cluster and tests/fuzz/crashes/cluster. With -DFL_FUZZ=ON (clang), from the
# repository root:
#   mkdir -p build-fuzz/corpus-cluster
#   build-fuzz/tests/fuzz/fuzz_cluster build-fuzz/corpus-cluster tests/fuzz/corpus/cluster \
#       -dict=tests/fuzz/cluster.dict -max_total_time=600 -timeout=10 \
#       -artifact_prefix=tests/fuzz/crashes/cluster/
# (libFuzzer adds new inputs to the FIRST folder: keep that one out of git).
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
fl_fuzz_target(cluster compiler fuzz_cluster.c LIBS fl_lang fl_passes)
