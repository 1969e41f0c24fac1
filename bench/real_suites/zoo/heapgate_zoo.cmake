# SPDX-License-Identifier: MIT
# Helpers for the zoo's wrapper projects (bench/real_suites/zoo/<suite>/CMakeLists.txt):
# each adds a suite's own CMake project, then heapgate (HEAPGATE_SOURCE_DIR, so
# a rebuild picks up the gate's current code), then puts a test target on
# heapgate's documented path.
set(HEAPGATE_SOURCE_DIR "" CACHE PATH "heapgate's source tree (the checkout under test)")
if(NOT EXISTS "${HEAPGATE_SOURCE_DIR}/CMakeLists.txt")
  message(FATAL_ERROR "set -DHEAPGATE_SOURCE_DIR=<heapgate checkout>")
endif()

macro(heapgate_zoo_add_heapgate)
  add_subdirectory(${HEAPGATE_SOURCE_DIR} heapgate)
endmacro()

# heapgate_zoo_gate(TARGET [OWN_MAIN]): the README's "Gate a GoogleTest suite".
# Without OWN_MAIN: every GoogleTest main on the target's link line
# (gtest_main, gmock_main, GTest::Main, ...) is replaced by heapgate::gtest_main
# (gmock_main by GTest::gmock plus heapgate::gtest_main). With OWN_MAIN: the
# suite's main() calls heapgate::gtest::init/install_listener (its patch), and
# the target links heapgate::gtest.
function(heapgate_zoo_gate target)
  cmake_parse_arguments(Z "OWN_MAIN" "" "" ${ARGN})
  if(Z_OWN_MAIN)
    # set_property, not target_link_libraries: the suite may have used either
    # signature of the latter, and the two cannot be mixed on one target.
    set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES heapgate::gtest)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")  # a main() in a library (fmt's test-main)
      set_property(TARGET ${target} APPEND PROPERTY INTERFACE_LINK_LIBRARIES heapgate::gtest)
    endif()
    return()
  endif()
  get_target_property(libs ${target} LINK_LIBRARIES)
  set(kept)
  set(replaced FALSE)
  foreach(l IN LISTS libs)
    if(l MATCHES "^(GTest::)?(gtest_main|Main|GTest::Main)$")
      set(replaced TRUE)
    elseif(l MATCHES "^(GTest::)?gmock_main$")
      list(APPEND kept GTest::gmock)
      set(replaced TRUE)
    else()
      list(APPEND kept "${l}")
    endif()
  endforeach()
  list(APPEND kept heapgate::gtest_main)
  set_property(TARGET ${target} PROPERTY LINK_LIBRARIES "${kept}")
  if(NOT replaced)
    message(STATUS "heapgate zoo: ${target} had no GoogleTest main on its link line (${libs})")
  endif()
endfunction()
