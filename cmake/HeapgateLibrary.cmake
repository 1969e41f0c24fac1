# SPDX-License-Identifier: MIT
# heapgate_library(<name> SOURCES ... [INCLUDE_DIR dir] [INTERNAL_INCLUDE_DIR dir] [PRIVATE_INCLUDE_DIRS dir...]):
# every heapgate library the same way: target heapgate_<name>, ALIAS
# heapgate::<name>, exported and named as such, C++17, position-independent
# (static archives end up in consumers' shared objects), heapgate's warnings.
# INCLUDE_DIR holds its public headers (installed to include/).
# INTERNAL_INCLUDE_DIR holds headers heapgate's own targets share across layers
# (the OS seam, the faces' integration calls, the markup escaper): they reach
# every target that links this one inside a build, never an installed
# package, so nothing a consumer could include from them becomes an API. The warnings
# are compile options of the target itself, not a linked INTERFACE target, so
# nothing of heapgate's build settings reaches the exported link interface.
include_guard(GLOBAL)

function(heapgate_library name)
  cmake_parse_arguments(L "" "INCLUDE_DIR;INTERNAL_INCLUDE_DIR" "SOURCES;PRIVATE_INCLUDE_DIRS" ${ARGN})
  add_library(heapgate_${name} ${L_SOURCES})
  add_library(heapgate::${name} ALIAS heapgate_${name})
  set_target_properties(heapgate_${name} PROPERTIES
    EXPORT_NAME ${name}
    OUTPUT_NAME heapgate_${name}
    POSITION_INDEPENDENT_CODE ON)
  target_compile_features(heapgate_${name} PUBLIC cxx_std_17)
  if(L_INCLUDE_DIR)
    target_include_directories(heapgate_${name} PUBLIC
      $<BUILD_INTERFACE:${L_INCLUDE_DIR}>
      $<INSTALL_INTERFACE:include>)
    set_property(GLOBAL APPEND PROPERTY HEAPGATE_PUBLIC_INCLUDE_DIRS ${L_INCLUDE_DIR})
  endif()
  if(L_INTERNAL_INCLUDE_DIR)
    target_include_directories(heapgate_${name} PUBLIC $<BUILD_INTERFACE:${L_INTERNAL_INCLUDE_DIR}>)
  endif()
  if(L_PRIVATE_INCLUDE_DIRS)
    target_include_directories(heapgate_${name} PRIVATE ${L_PRIVATE_INCLUDE_DIRS})
  endif()
  target_compile_options(heapgate_${name} PRIVATE ${HEAPGATE_WARNING_FLAGS})
  # heapgate's own sources catch exceptions (the standard library's,
  # nlohmann_json's). A parent project that turns them off for its own code in
  # CMAKE_CXX_FLAGS (LevelDB does) must not turn them off here; target options
  # come after CMAKE_CXX_FLAGS, so this wins. RTTI is left as the parent has
  # it: the GoogleTest plugin's classes derive from the parent's GoogleTest,
  # whose type information exists only if RTTI is on for both.
  target_compile_options(heapgate_${name} PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:-fexceptions>)
  set_property(GLOBAL APPEND PROPERTY HEAPGATE_LIBRARIES heapgate_${name})
endfunction()
