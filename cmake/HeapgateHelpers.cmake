# SPDX-License-Identifier: MIT
# CMake helpers for projects that use heapgate. find_package(heapgate) puts this
# file's directory on CMAKE_MODULE_PATH; then `include(HeapgateHelpers)`.
include_guard(GLOBAL)

# heapgate_jemalloc_link_option(<out_var>)
#
# Sets <out_var> to the link option that links the system jemalloc (pkg-config
# module `jemalloc`; Debian package libjemalloc-dev) and keeps it, as one
# `LINKER:--push-state,--no-as-needed,<library>,--pop-state` item. Debian links
# with --as-needed, which drops a library that nothing references by name, and
# nothing does: heapgate's allocation entry points define malloc and operator
# new themselves (docs/design.md §3). One item, because CMake may move an
# imported target's files away from separate --no-as-needed/--as-needed flags.
# Stops configuration with the package to install if jemalloc is missing.
function(heapgate_jemalloc_link_option out_var)
  get_property(files GLOBAL PROPERTY HEAPGATE_JEMALLOC_LIBRARY_FILES)
  if(NOT files)
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      pkg_check_modules(_HEAPGATE_JEMALLOC QUIET jemalloc)
    endif()
    if(NOT _HEAPGATE_JEMALLOC_FOUND OR NOT _HEAPGATE_JEMALLOC_LINK_LIBRARIES)
      message(FATAL_ERROR "heapgate: jemalloc not found through pkg-config; fix: apt-get install pkg-config libjemalloc-dev")
    endif()
    list(JOIN _HEAPGATE_JEMALLOC_LINK_LIBRARIES "," files)
    set_property(GLOBAL PROPERTY HEAPGATE_JEMALLOC_LIBRARY_FILES "${files}")
  endif()
  set(${out_var} "LINKER:--push-state,--no-as-needed,${files},--pop-state" PARENT_SCOPE)
endfunction()

# heapgate_link_jemalloc(<target>)
#
# Links the system jemalloc into the executable <target>, so that heapgate can
# measure without LD_PRELOAD or MALLOC_CONF. heapgate::core itself never links
# jemalloc: it finds mallctl at run time. A link option, so it works whichever
# target_link_libraries() signature the project uses.
function(heapgate_link_jemalloc target)
  heapgate_jemalloc_link_option(option)
  target_link_options(${target} PRIVATE "${option}")
endfunction()
