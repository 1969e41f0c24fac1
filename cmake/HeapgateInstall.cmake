# SPDX-License-Identifier: MIT
# Install and export rules (HEAPGATE_INSTALL, ON when heapgate is the top-level
# project). Produces the `heapgate` CMake package: heapgateTargets.cmake
# (namespace heapgate::), heapgateConfig.cmake, heapgateConfigVersion.cmake and
# HeapgateHelpers.cmake, installed and, for the build tree, in PROJECT_BINARY_DIR.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Everything heapgate may install, one entry per target:
#   "<internal target name> [PUBLIC <package>...] [STATIC <package>...]"
# PUBLIC: the CMake packages heapgateConfig.cmake must find_dependency() for
# the target's PUBLIC dependencies. STATIC: the packages of its PRIVATE link
# dependencies, found only when the target is a static library (an archive
# leaves them to the consumer's link line). libdw is handled below. A target
# whose option is OFF does not exist and is skipped; its exported name is its
# EXPORT_NAME, and its public headers are the BUILD_INTERFACE include
# directories it declares inside this project.
set(HEAPGATE_INSTALL_TARGETS
  "heapgate_core PUBLIC tl-expected STATIC Threads pugixml"
  "heapgate_gtest PUBLIC GTest"
  heapgate_gtest_main
  "heapgate_benchmark PUBLIC benchmark"
  heapgate_benchmark_main
  "heapgate_http STATIC Threads"
  heapgate_cli)

set(HEAPGATE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/heapgate" CACHE STRING
  "Where heapgate's CMake package files are installed, relative to the prefix")
mark_as_advanced(HEAPGATE_INSTALL_CMAKEDIR)

set(_heapgate_targets "")
set(_heapgate_include_dirs "")
set(_heapgate_packages "")
foreach(_entry IN LISTS HEAPGATE_INSTALL_TARGETS)
  separate_arguments(_entry UNIX_COMMAND "${_entry}")
  list(POP_FRONT _entry _target)
  if(NOT TARGET ${_target})
    continue()
  endif()
  cmake_parse_arguments(_spec "" "" "PUBLIC;STATIC" ${_entry})
  if(_spec_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "heapgate install: bad HEAPGATE_INSTALL_TARGETS entry for ${_target}: ${_spec_UNPARSED_ARGUMENTS}")
  endif()
  list(APPEND _heapgate_targets ${_target})
  list(APPEND _heapgate_packages ${_spec_PUBLIC})
  get_target_property(_type ${_target} TYPE)
  if(_type STREQUAL "STATIC_LIBRARY")
    list(APPEND _heapgate_packages ${_spec_STATIC})
  endif()
  # A static library lists its PRIVATE dependencies in its interface as
  # $<LINK_ONLY:dep>, for the consumer's link line. For an INTERFACE library
  # with no link items (heapgate_warnings, header-only nlohmann_json) that
  # entry adds nothing, yet the export would demand the target: install(EXPORT)
  # and export() refuse a non-exported one ($<BUILD_INTERFACE:> would not help
  # the build-tree export; CMake 3.26's BUILD_LOCAL_INTERFACE would), and an
  # imported one would need a find_dependency() for a package the consumer
  # never uses. Drop such entries from the interface; heapgate's own build is
  # unchanged (compile usage comes from LINK_LIBRARIES, not from here).
  get_target_property(_links ${_target} INTERFACE_LINK_LIBRARIES)
  if(_links)
    set(_kept "")
    foreach(_link IN LISTS _links)
      set(_dep "")
      if(_link MATCHES "^\\$<LINK_ONLY:([^$<>]+)>$")
        set(_dep "${CMAKE_MATCH_1}")
      endif()
      if(_dep AND TARGET "${_dep}")
        get_target_property(_dep_type ${_dep} TYPE)
        set(_link_items "")
        foreach(_property INTERFACE_LINK_LIBRARIES INTERFACE_LINK_OPTIONS INTERFACE_LINK_DIRECTORIES INTERFACE_LINK_DEPENDS)
          get_target_property(_value ${_dep} ${_property})
          if(_value)
            string(APPEND _link_items "${_value}")
          endif()
        endforeach()
        if(_dep_type STREQUAL "INTERFACE_LIBRARY" AND _link_items STREQUAL "")
          continue()
        endif()
      endif()
      list(APPEND _kept "${_link}")
    endforeach()
    set_property(TARGET ${_target} PROPERTY INTERFACE_LINK_LIBRARIES "${_kept}")
  endif()
  # Public headers: the BUILD_INTERFACE include directories inside this
  # project, installed to include/. A target whose $<INSTALL_INTERFACE:...>
  # is missing or empty (CMAKE_INSTALL_INCLUDEDIR is only defined once
  # GNUInstallDirs has been included, i.e. here, after the targets on a first
  # configure) gets include/ as its installed include directory.
  get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
  if(_dirs)
    set(_kept "")
    set(_public_headers OFF)
    set(_install_dir OFF)
    foreach(_dir IN LISTS _dirs)
      if(_dir STREQUAL "$<INSTALL_INTERFACE:>")
        continue()
      elseif(_dir MATCHES "^\\$<INSTALL_INTERFACE:.+>$")
        set(_install_dir ON)
      elseif(_dir MATCHES "^\\$<BUILD_INTERFACE:(.+)>$")
        set(_path "${CMAKE_MATCH_1}")
        cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${_path}" NORMALIZE _in_source)
        cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${_path}" NORMALIZE _in_binary)
        if(_in_source OR _in_binary)
          list(APPEND _heapgate_include_dirs "${_path}")
          set(_public_headers ON)
        endif()
      endif()
      list(APPEND _kept "${_dir}")
    endforeach()
    if(_public_headers AND NOT _install_dir)
      list(APPEND _kept "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
    endif()
    set_property(TARGET ${_target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _heapgate_include_dirs)
list(REMOVE_DUPLICATES _heapgate_packages)
set(HEAPGATE_CONFIG_FIND_DEPENDENCIES "")
foreach(_package IN LISTS _heapgate_packages)
  string(APPEND HEAPGATE_CONFIG_FIND_DEPENDENCIES "find_dependency(${_package})\n")
endforeach()
install(TARGETS ${_heapgate_targets}
  EXPORT heapgateTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_dir IN LISTS _heapgate_include_dirs)
  install(DIRECTORY "${_dir}/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h")
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

# What heapgateConfig.cmake must recreate for the consumer: a static library
# carries its PRIVATE link dependencies into the consumer's link line as
# $<LINK_ONLY:...>. Those with no CMake package (libdw, and Debian's
# cpp-httplib) are pkg-config IMPORTED_TARGETs, PkgConfig::<prefix>; the
# config recreates exactly those targets with the same pkg_check_modules call,
# resolving them as heapgate's own build did (honouring PKG_CONFIG_PATH), rather
# than baking `-ldw` or the build machine's absolute paths into the export. A
# shared library carries them in its own DT_NEEDED and needs none of this.
set(_pkgconfig_modules "")  # "<prefix> <pkg-config module> <Debian package>"
foreach(_spec IN ITEMS "heapgate::libdw libdw libdw-dev" "heapgate::httplib cpp-httplib libcpp-httplib-dev")
  separate_arguments(_spec UNIX_COMMAND "${_spec}")
  list(GET _spec 0 _alias)
  if(TARGET ${_alias})
    get_target_property(_real ${_alias} ALIASED_TARGET)
    if(_real MATCHES "^PkgConfig::(.+)$")
      list(GET _spec 1 _module)
      list(GET _spec 2 _debian)
      list(APPEND _pkgconfig_modules "${CMAKE_MATCH_1} ${_module} ${_debian}")
    endif()
  endif()
endforeach()
set(HEAPGATE_CONFIG_PKGCONFIG_TARGETS "")
foreach(_target IN LISTS _heapgate_targets)
  get_target_property(_type ${_target} TYPE)
  get_target_property(_links ${_target} INTERFACE_LINK_LIBRARIES)
  if(NOT _type STREQUAL "STATIC_LIBRARY" OR NOT _links)
    continue()
  endif()
  foreach(_link IN LISTS _links)
    if(NOT _link MATCHES "^\\$<LINK_ONLY:([^$<>]+)>$")
      continue()
    endif()
    set(_imported "${CMAKE_MATCH_1}")
    if(NOT TARGET "${_imported}")
      continue()
    endif()
    # Linked through an ALIAS (heapgate::libdw); the export names the real target.
    get_target_property(_real ${_imported} ALIASED_TARGET)
    if(_real)
      set(_imported "${_real}")
    endif()
    if(_imported MATCHES "^PkgConfig::(.+)$")
      set(_prefix "${CMAKE_MATCH_1}")
      set(_found OFF)
      foreach(_module IN LISTS _pkgconfig_modules)
        if(_module MATCHES "^${_prefix} ")
          string(APPEND HEAPGATE_CONFIG_PKGCONFIG_TARGETS "heapgate_recreate_pkgconfig_target(${_module})\n")
          set(_found ON)
        endif()
      endforeach()
      if(NOT _found)
        message(FATAL_ERROR "heapgate install: static ${_target} links ${_imported}, which "
          "heapgateConfig.cmake cannot recreate for a consumer; fix: -DHEAPGATE_INSTALL=OFF, "
          "-DBUILD_SHARED_LIBS=ON, or let heapgate find that dependency itself")
      endif()
    elseif(_imported STREQUAL "httplib::httplib")
      string(APPEND HEAPGATE_CONFIG_PKGCONFIG_TARGETS "find_dependency(httplib)\n")
    endif()
  endforeach()
endforeach()
if(HEAPGATE_CONFIG_PKGCONFIG_TARGETS)
  string(PREPEND HEAPGATE_CONFIG_PKGCONFIG_TARGETS "find_dependency(PkgConfig)\n")
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
unset(_heapgate_packages)
unset(_entry)
unset(_pkgconfig_modules)
unset(_spec)
unset(_alias)
unset(_real)
unset(_module)
unset(_debian)
unset(_found)
unset(_imported)
unset(_prefix)
unset(_links)
unset(_value)
unset(_kept)
unset(_link)
unset(_dep)
unset(_dep_type)
unset(_link_items)
unset(_type)
unset(_dirs)
unset(_dir)
unset(_path)
unset(_public_headers)
unset(_install_dir)
unset(_in_source)
unset(_in_binary)
