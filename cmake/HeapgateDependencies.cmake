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

# cpp-httplib for heapgate::http's client (`heapgate fetch`, profiler_client.cpp),
# through its public client API only. Debian's libcpp-httplib-dev ships a
# compiled library with pkg-config only (no CMake package); its Cflags select
# the ABI the library was built with (OpenSSL, zlib, brotli), so they must be
# used as given. Tested with 0.11.4 (Debian 12); older releases lack the
# client calls profiler_client.cpp makes.
set(HEAPGATE_HTTPLIB_MINIMUM 0.11)
if(HEAPGATE_BUILD_HTTP AND NOT TARGET heapgate::httplib)
  find_package(httplib CONFIG QUIET)
  if(TARGET httplib::httplib)
    set(_heapgate_httplib_version "${httplib_VERSION}")
    add_library(heapgate::httplib ALIAS httplib::httplib)
  else()
    pkg_check_modules(HEAPGATE_HTTPLIB QUIET IMPORTED_TARGET GLOBAL cpp-httplib)
    if(NOT HEAPGATE_HTTPLIB_FOUND)
      message(FATAL_ERROR "heapgate: cpp-httplib not found; fix: apt-get install libcpp-httplib-dev "
        "(or run scripts/setup.sh), or configure with -DHEAPGATE_BUILD_HTTP=OFF")
    endif()
    set(_heapgate_httplib_version "${HEAPGATE_HTTPLIB_VERSION}")
    add_library(heapgate::httplib ALIAS PkgConfig::HEAPGATE_HTTPLIB)
  endif()
  if(_heapgate_httplib_version VERSION_LESS HEAPGATE_HTTPLIB_MINIMUM)
    message(FATAL_ERROR "heapgate: cpp-httplib ${_heapgate_httplib_version} found, heapgate's HTTP client needs "
      ">= ${HEAPGATE_HTTPLIB_MINIMUM} (tested with 0.11.4); fix: apt-get install libcpp-httplib-dev from Debian 12 "
      "or later, put a newer cpp-httplib first on CMAKE_PREFIX_PATH, or configure with -DHEAPGATE_BUILD_HTTP=OFF")
  endif()
  unset(_heapgate_httplib_version)
endif()

# GNU libmicrohttpd for heapgate::http's server: it alone reads and parses
# requests (lib/http/src/front_end.cpp). 0.9.75 is what Debian 12 ships and
# what the HTTP tests pin (its error answers, its header checks under
# MHD_OPTION_STRICT_FOR_CLIENT -1).
set(HEAPGATE_MICROHTTPD_MINIMUM 0.9.75)
if(HEAPGATE_BUILD_HTTP AND NOT TARGET heapgate::microhttpd)
  pkg_check_modules(HEAPGATE_MICROHTTPD QUIET IMPORTED_TARGET GLOBAL libmicrohttpd)
  if(NOT HEAPGATE_MICROHTTPD_FOUND)
    message(FATAL_ERROR "heapgate: libmicrohttpd not found; fix: apt-get install libmicrohttpd-dev "
      "(or run scripts/setup.sh), or configure with -DHEAPGATE_BUILD_HTTP=OFF")
  endif()
  if(HEAPGATE_MICROHTTPD_VERSION VERSION_LESS HEAPGATE_MICROHTTPD_MINIMUM)
    message(FATAL_ERROR "heapgate: libmicrohttpd ${HEAPGATE_MICROHTTPD_VERSION} found, heapgate's HTTP server "
      "needs >= ${HEAPGATE_MICROHTTPD_MINIMUM}; fix: apt-get install libmicrohttpd-dev from Debian 12 or later, "
      "or configure with -DHEAPGATE_BUILD_HTTP=OFF")
  endif()
  add_library(heapgate::microhttpd ALIAS PkgConfig::HEAPGATE_MICROHTTPD)
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
