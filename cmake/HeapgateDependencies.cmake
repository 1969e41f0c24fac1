# SPDX-License-Identifier: MIT
# Every dependency comes from a Debian package; nothing is downloaded. A missing
# one stops configuration with the package to install.
include_guard(GLOBAL)

macro(heapgate_require_package name debian_package)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR "heapgate: ${name} not found; fix: apt-get install ${debian_package} (or run scripts/setup.sh)")
  endif()
endmacro()

find_package(Threads REQUIRED)
heapgate_require_package(tl-expected libexpected-dev)
heapgate_require_package(PkgConfig pkg-config)
heapgate_require_package(nlohmann_json nlohmann-json3-dev)
heapgate_require_package(pugixml libpugixml-dev)

# elfutils has no CMake config; wrap its pkg-config module in an IMPORTED target.
if(NOT TARGET heapgate::libdw)
  pkg_check_modules(HEAPGATE_LIBDW QUIET IMPORTED_TARGET GLOBAL libdw)
  if(NOT HEAPGATE_LIBDW_FOUND)
    message(FATAL_ERROR "heapgate: libdw (elfutils) not found; fix: apt-get install libdw-dev (or run scripts/setup.sh)")
  endif()
  add_library(heapgate::libdw ALIAS PkgConfig::HEAPGATE_LIBDW)
endif()

# cpp-httplib for heapgate::http. Debian's libcpp-httplib-dev ships a compiled
# library with pkg-config only (no CMake package); its Cflags select the ABI the
# library was built with (OpenSSL, zlib, brotli), so they must be used as given.
if(HEAPGATE_BUILD_HTTP AND NOT TARGET heapgate::httplib)
  find_package(httplib CONFIG QUIET)
  if(TARGET httplib::httplib)
    add_library(heapgate::httplib ALIAS httplib::httplib)
  else()
    pkg_check_modules(HEAPGATE_HTTPLIB QUIET IMPORTED_TARGET GLOBAL cpp-httplib)
    if(NOT HEAPGATE_HTTPLIB_FOUND)
      message(FATAL_ERROR "heapgate: cpp-httplib not found; fix: apt-get install libcpp-httplib-dev "
        "(or run scripts/setup.sh), or configure with -DHEAPGATE_BUILD_HTTP=OFF")
    endif()
    add_library(heapgate::httplib ALIAS PkgConfig::HEAPGATE_HTTPLIB)
  endif()
endif()

# jemalloc, for the drop-in mains (HEAPGATE_LINK_JEMALLOC). The libraries
# themselves find mallctl at run time and never link it. heapgate::jemalloc is
# installed and exported with the libraries: it is only a link option
# (heapgate_jemalloc_link_option() in HeapgateHelpers.cmake).
if(HEAPGATE_LINK_JEMALLOC AND NOT TARGET heapgate::jemalloc)
  heapgate_jemalloc_link_option(_heapgate_jemalloc_option)
  add_library(heapgate_jemalloc INTERFACE)
  target_link_options(heapgate_jemalloc INTERFACE "${_heapgate_jemalloc_option}")
  set_target_properties(heapgate_jemalloc PROPERTIES EXPORT_NAME jemalloc)
  add_library(heapgate::jemalloc ALIAS heapgate_jemalloc)
  set_property(GLOBAL APPEND PROPERTY HEAPGATE_LIBRARIES heapgate_jemalloc)
endif()

# heapgate_link_jemalloc_interface(<target>): consumers of <target> link
# jemalloc, unless the consumer sets the target property HEAPGATE_NO_JEMALLOC
# (it preloads or links a jemalloc of its own; heapgate's own tests of a suite
# without jemalloc).
function(heapgate_link_jemalloc_interface target)
  if(HEAPGATE_LINK_JEMALLOC)
    target_link_libraries(${target} INTERFACE
      "$<$<NOT:$<BOOL:$<TARGET_PROPERTY:HEAPGATE_NO_JEMALLOC>>>:heapgate::jemalloc>")
  endif()
endfunction()
