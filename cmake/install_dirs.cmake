# The install layout, in one place (included, idempotently, by tools/ for the stdlib's place and by
# cmake/install.cmake for the rules). Paths are relative to the install prefix, which
# `cmake --install build --prefix P` may choose after configuration, so nothing here or in the
# installed files holds an absolute prefix:
#   bin/flc, bin/flrun
#   share/fluidc/stdlib/fluid/*.fl       (found by the tools from their own place, tools/tool.h)
#   include/fluidc/runtime/api.h, ...    (the public headers with their relative layout)
#   lib/libfluidc.a                      (every library of the C API, in one archive)
#   lib/cmake/fluidc/                    (find_package(fluidc): target fluidc::fluidc)
#   lib/pkgconfig/fluidc.pc              (pkg-config fluidc)
#   lib/python3/dist-packages/fluidc/    (the Python package; Debian's python3 finds it under /usr)
include(GNUInstallDirs)
set(FL_INSTALL_STDLIBDIR ${CMAKE_INSTALL_DATADIR}/fluidc/stdlib)
set(FL_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/fluidc)
set(FL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/fluidc)
set(FL_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
set(FL_INSTALL_PYTHONDIR lib/python3/dist-packages)
# The stdlib as seen from bin/ (../share/fluidc/stdlib).
file(RELATIVE_PATH FL_STDLIB_FROM_BIN /p/${CMAKE_INSTALL_BINDIR} /p/${FL_INSTALL_STDLIBDIR})
