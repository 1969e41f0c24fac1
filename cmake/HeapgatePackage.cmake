# SPDX-License-Identifier: MIT
# `cpack -G DEB` in a build directory makes heapgate_<version>_<arch>.deb: the
# libraries, headers and CMake package under /usr, and the `heapgate` command
# line in /usr/bin — the way to put heapgate on a CI image. A development
# package: it depends on the -dev packages the CMake config finds for a
# consumer (find_dependency), and dpkg-shlibdeps adds the CLI's shared libraries.
include_guard(GLOBAL)

set(CPACK_PACKAGE_NAME heapgate)
set(CPACK_PACKAGE_VENDOR heapgate)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
  "GoogleTest and Google Benchmark integration, baselines, reports and the heapgate command line.")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "heapgate maintainers <heapgate@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES OFF)  # keep debug info: heapgate names its own frames in stacks

set(_heapgate_deb_depends
  libjemalloc-dev libjemalloc2 libdw-dev libelf-dev libexpected-dev nlohmann-json3-dev libpugixml-dev pkg-config
  graphviz perl binutils)
if(TARGET heapgate_gtest)
  list(APPEND _heapgate_deb_depends libgtest-dev libgmock-dev)
endif()
if(TARGET heapgate_catch2)
  list(APPEND _heapgate_deb_depends catch2)
endif()
if(TARGET heapgate_doctest)
  list(APPEND _heapgate_deb_depends doctest-dev)
endif()
if(TARGET heapgate_benchmark)
  list(APPEND _heapgate_deb_depends libbenchmark-dev)
endif()
if(TARGET heapgate_http)
  list(APPEND _heapgate_deb_depends libcpp-httplib-dev libmicrohttpd-dev)
endif()
# heapgate::history's config finds SQLite and, when it was built with it, libpq.
if(TARGET heapgate_history)
  list(APPEND _heapgate_deb_depends libsqlite3-dev)
  if(HEAPGATE_HISTORY_POSTGRESQL)
    list(APPEND _heapgate_deb_depends libpq-dev)
  endif()
endif()
list(JOIN _heapgate_deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
include(CPack)
