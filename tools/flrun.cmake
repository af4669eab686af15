add_executable(flrun ${CMAKE_CURRENT_LIST_DIR}/flrun.c)
fl_target(flrun)
target_link_libraries(flrun PRIVATE fl_train fl_mpi fl_runtime fl_data fl_lang fl_passes fl_ops fl_ir fl_blas fl_base)
