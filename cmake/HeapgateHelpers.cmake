# SPDX-License-Identifier: MIT
# CMake helpers for projects that use heapgate. find_package(heapgate) puts this
# file's directory on CMAKE_MODULE_PATH; then `include(HeapgateHelpers)`.
include_guard(GLOBAL)

# heapgate_link_jemalloc(<target>)
#
# Links the system jemalloc (pkg-config module `jemalloc`; Debian package
# libjemalloc-dev) into the executable <target>, so that its malloc and
# operator new are jemalloc's and heapgate can measure without LD_PRELOAD or
# MALLOC_CONF. heapgate::core itself never links jemalloc: it finds mallctl at
# run time. The library is wrapped in -Wl,--no-as-needed because Debian links
# with --as-needed, which drops a library that nothing references by name (a C
# program's malloc would then stay glibc's). Uses the keyword signature
# (PRIVATE). Stops configuration with the package to install if jemalloc is missing.
function(heapgate_link_jemalloc target)
  if(NOT TARGET PkgConfig::HEAPGATE_HELPERS_JEMALLOC)
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      # GLOBAL: one target for every directory that calls this function.
      pkg_check_modules(HEAPGATE_HELPERS_JEMALLOC QUIET IMPORTED_TARGET GLOBAL jemalloc)
    endif()
    if(NOT TARGET PkgConfig::HEAPGATE_HELPERS_JEMALLOC)
      message(FATAL_ERROR "heapgate_link_jemalloc(${target}): jemalloc not found through pkg-config; "
        "fix: apt-get install pkg-config libjemalloc-dev")
    endif()
  endif()
  target_link_libraries(${target} PRIVATE
    -Wl,--no-as-needed PkgConfig::HEAPGATE_HELPERS_JEMALLOC -Wl,--as-needed)
endfunction()
