# Installation: `cmake --install build --prefix P` installs the tools, the stdlib, the public
# headers, the C API's libraries as one archive (libfluidc.a), a CMake package
# (find_package(fluidc) -> target fluidc::fluidc) and a pkg-config file (fluidc.pc); the layout
# is cmake/install_dirs.cmake. Included at the end of the top-level CMakeLists, when every target
# exists.
#
# How: the public headers are the #include "..." closure of FL_PUBLIC_HEADERS, computed here, so
# a header that api.h starts to include is installed without a list to update. libfluidc.a holds
# the objects of every static fl_* library that FL_PUBLIC_LIBS link, transitively; what they
# link from outside (OpenBLAS, protobuf-c, MPI, zlib, Snappy, threads, m) becomes the link interface of
# fluidc::fluidc and the Libs of fluidc.pc, as the build found it. The build's own link options
# (the sanitizers of FL_SANITIZE / FL_FUZZ) go with them: instrumented objects need their runtime.
# Invariant: nothing installed names the build or source tree or an absolute install prefix.
include(${PROJECT_SOURCE_DIR}/cmake/install_dirs.cmake)
include(CMakePackageConfigHelpers)

set(FL_PUBLIC_HEADERS runtime/api.h runtime/train/train.h)
set(FL_PUBLIC_LIBS fl_train fl_runtime)

install(TARGETS flc flrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/stdlib/ DESTINATION ${FL_INSTALL_STDLIBDIR}
        FILES_MATCHING PATTERN "*.fl")

# ---- headers: the closure of FL_PUBLIC_HEADERS over #include "..." (paths from the source root)
set(_todo ${FL_PUBLIC_HEADERS})
set(_headers "")
while(_todo)
  list(POP_FRONT _todo _h)
  if(_h IN_LIST _headers)
    continue()
  endif()
  if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${_h})
    message(FATAL_ERROR "public header ${_h} (included by the public headers) is not in the source tree")
  endif()
  list(APPEND _headers ${_h})
  file(STRINGS ${PROJECT_SOURCE_DIR}/${_h} _incs REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
  foreach(_i ${_incs})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" _i "${_i}")
    list(APPEND _todo ${_i})
  endforeach()
endwhile()
foreach(_h ${_headers})
  get_filename_component(_d ${_h} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${_h} DESTINATION ${FL_INSTALL_INCLUDEDIR}/${_d})
endforeach()

# ---- libraries: the static fl_* libraries FL_PUBLIC_LIBS link, and what they link from outside
set(_todo ${FL_PUBLIC_LIBS})
set(_libs "")
set(_ext "")
while(_todo)
  list(POP_FRONT _todo _t)
  string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _t "${_t}")
  if(_t IN_LIST _libs OR _t IN_LIST _ext)
    continue()
  endif()
  if(TARGET ${_t} AND _t MATCHES "^fl_")
    get_target_property(_type ${_t} TYPE)
    if(_type STREQUAL "STATIC_LIBRARY")
      list(APPEND _libs ${_t})
      get_target_property(_deps ${_t} LINK_LIBRARIES)
    elseif(_type STREQUAL "INTERFACE_LIBRARY") # fl_blas, fl_protobuf_c: a found library
      list(APPEND _libs ${_t})
      get_target_property(_deps ${_t} INTERFACE_LINK_LIBRARIES)
    else()
      message(FATAL_ERROR "libfluidc: ${_t} is a ${_type}, not a static library")
    endif()
    if(_deps)
      list(APPEND _todo ${_deps})
    endif()
  else()
    list(APPEND _ext ${_t}) # a found library's path, an imported target (MPI::MPI_C), or "m"
  endif()
endwhile()
set(_objs "")
set(_static "")
foreach(_t ${_libs})
  get_target_property(_type ${_t} TYPE)
  if(_type STREQUAL "STATIC_LIBRARY")
    list(APPEND _objs $<TARGET_OBJECTS:${_t}>)
    list(APPEND _static ${_t})
  endif()
endforeach()
get_directory_property(_link_opts DIRECTORY ${PROJECT_SOURCE_DIR} LINK_OPTIONS)

add_library(fluidc STATIC ${_objs})
add_dependencies(fluidc ${_static})
set_target_properties(fluidc PROPERTIES LINKER_LANGUAGE C)
target_link_libraries(fluidc INTERFACE ${_ext})
target_link_options(fluidc INTERFACE ${_link_opts})
target_include_directories(fluidc INTERFACE $<INSTALL_INTERFACE:${FL_INSTALL_INCLUDEDIR}>)
install(TARGETS fluidc EXPORT fluidcTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# ---- the CMake package
install(EXPORT fluidcTargets NAMESPACE fluidc:: DESTINATION ${FL_INSTALL_CMAKEDIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/fluidcConfig.cmake.in
               ${PROJECT_BINARY_DIR}/fluidcConfig.cmake @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fluidcConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fluidcConfig.cmake ${PROJECT_BINARY_DIR}/fluidcConfigVersion.cmake
        DESTINATION ${FL_INSTALL_CMAKEDIR})

# ---- pkg-config: the same link line, as flags. An imported target gives its own link items
# and options (MPI::MPI_C: libmpi's path; Threads::Threads: -pthread or nothing).
set(_pc_libs "")
set(_todo ${_ext})
while(_todo)
  list(POP_FRONT _todo _e)
  if(TARGET ${_e})
    get_target_property(_l ${_e} INTERFACE_LINK_LIBRARIES)
    get_target_property(_o ${_e} INTERFACE_LINK_OPTIONS)
    foreach(_x _o _l)
      if(${_x})
        list(APPEND _todo ${${_x}})
      endif()
    endforeach()
  elseif(_e MATCHES "^-" OR IS_ABSOLUTE "${_e}")
    list(APPEND _pc_libs "${_e}")
  else()
    list(APPEND _pc_libs "-l${_e}")
  endif()
endwhile()
list(REMOVE_DUPLICATES _pc_libs)
list(APPEND _pc_libs ${_link_opts})
list(JOIN _pc_libs " " FL_PC_LIBS)
file(RELATIVE_PATH FL_PC_PREFIX /p/${FL_INSTALL_PKGCONFIGDIR} /p)
string(REGEX REPLACE "/$" "" FL_PC_PREFIX "${FL_PC_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/fluidc.pc.in ${PROJECT_BINARY_DIR}/fluidc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fluidc.pc DESTINATION ${FL_INSTALL_PKGCONFIGDIR})
