# SPDX-License-Identifier: MIT
# Install and export rules (HEAPGATE_INSTALL, ON when heapgate is the top-level
# project): the `heapgate` CMake package, heapgateTargets.cmake (namespace
# heapgate::), heapgateConfig.cmake, heapgateConfigVersion.cmake and
# HeapgateHelpers.cmake, installed and, for the build tree, in PROJECT_BINARY_DIR.
# Every library made by heapgate_library() is installed with its public
# headers; each links its dependencies by target, so install(EXPORT) carries
# the whole link interface and heapgateConfig.cmake finds those packages.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(HEAPGATE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/heapgate" CACHE STRING
  "Where heapgate's CMake package files are installed, relative to the prefix")
mark_as_advanced(HEAPGATE_INSTALL_CMAKEDIR)

get_property(_heapgate_targets GLOBAL PROPERTY HEAPGATE_LIBRARIES)
get_property(_heapgate_include_dirs GLOBAL PROPERTY HEAPGATE_PUBLIC_INCLUDE_DIRS)
if(TARGET heapgate_cli)
  list(APPEND _heapgate_targets heapgate_cli)
endif()
list(REMOVE_DUPLICATES _heapgate_include_dirs)

install(TARGETS ${_heapgate_targets}
  EXPORT heapgateTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_dir IN LISTS _heapgate_include_dirs)
  install(DIRECTORY "${_dir}/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
endforeach()
install(EXPORT heapgateTargets
  FILE heapgateTargets.cmake
  NAMESPACE heapgate::
  DESTINATION ${HEAPGATE_INSTALL_CMAKEDIR})
# The build tree is a package too: find_package(heapgate) with heapgate_DIR
# set to this build directory (fmt does the same).
export(EXPORT heapgateTargets
  FILE ${PROJECT_BINARY_DIR}/heapgateTargets.cmake
  NAMESPACE heapgate::)

# What the config must find: the packages of the exported targets' link
# interfaces (static archives carry their PRIVATE dependencies as LINK_ONLY).
set(HEAPGATE_CONFIG_WITH_GTEST OFF)
if(TARGET heapgate_gtest)
  set(HEAPGATE_CONFIG_WITH_GTEST ON)
endif()
set(HEAPGATE_CONFIG_WITH_CATCH2 OFF)
if(TARGET heapgate_catch2)
  set(HEAPGATE_CONFIG_WITH_CATCH2 ON)
endif()
set(HEAPGATE_CONFIG_WITH_DOCTEST OFF)
if(TARGET heapgate_doctest)
  set(HEAPGATE_CONFIG_WITH_DOCTEST ON)
endif()
set(HEAPGATE_CONFIG_WITH_HISTORY OFF)
if(TARGET heapgate_history)
  set(HEAPGATE_CONFIG_WITH_HISTORY ON)
endif()
if(NOT HEAPGATE_HISTORY_POSTGRESQL)
  set(HEAPGATE_HISTORY_POSTGRESQL OFF)
endif()
set(HEAPGATE_CONFIG_WITH_BENCHMARK OFF)
if(TARGET heapgate_benchmark)
  set(HEAPGATE_CONFIG_WITH_BENCHMARK ON)
endif()
# cpp-httplib: a CMake package where it has one, else pkg-config (Debian 12).
set(HEAPGATE_CONFIG_HTTPLIB "")
set(HEAPGATE_CONFIG_WITH_HTTP OFF)
if(TARGET heapgate_http)
  set(HEAPGATE_CONFIG_WITH_HTTP ON)
  get_target_property(_httplib heapgate::httplib ALIASED_TARGET)
  if(_httplib STREQUAL "httplib::httplib")
    set(HEAPGATE_CONFIG_HTTPLIB "package")
  else()
    set(HEAPGATE_CONFIG_HTTPLIB "pkgconfig")
  endif()
endif()

# One template, two configs. The installed one finds HeapgateHelpers.cmake
# next to itself; the build tree's gets a copy in a directory of its own, so
# only that file lands on the consumer's CMAKE_MODULE_PATH.
set(HEAPGATE_CONFIG_HELPERS_DIR "\${CMAKE_CURRENT_LIST_DIR}")
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/heapgateConfig.cmake.in
  ${PROJECT_BINARY_DIR}/install-config/heapgateConfig.cmake
  INSTALL_DESTINATION ${HEAPGATE_INSTALL_CMAKEDIR})
set(HEAPGATE_CONFIG_HELPERS_DIR "${PROJECT_BINARY_DIR}/heapgate-helpers")
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/heapgateConfig.cmake.in
  ${PROJECT_BINARY_DIR}/heapgateConfig.cmake
  INSTALL_DESTINATION .
  INSTALL_PREFIX ${PROJECT_BINARY_DIR})
configure_file(${CMAKE_CURRENT_LIST_DIR}/HeapgateHelpers.cmake
  ${PROJECT_BINARY_DIR}/heapgate-helpers/HeapgateHelpers.cmake COPYONLY)
# 0.x: SameMajorVersion treats every 0.y as compatible; revisit at 1.0.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/heapgateConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)

install(FILES
  ${PROJECT_BINARY_DIR}/install-config/heapgateConfig.cmake
  ${PROJECT_BINARY_DIR}/heapgateConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/HeapgateHelpers.cmake
  DESTINATION ${HEAPGATE_INSTALL_CMAKEDIR})

unset(_heapgate_targets)
unset(_heapgate_include_dirs)
unset(_httplib)
unset(_dir)
