# SPDX-License-Identifier: MIT
# The Catch2 and doctest faces end to end: one sample suite per framework,
# built with its drop-in main, run as child processes of framework_faces_test
# (clean, leak, over budget, regressed against a recorded baseline, threaded,
# sections/subcases), each failure named by its line through an exact re-run
# child that selects the test with the framework's own filter.
if(NOT TARGET heapgate::gtest_main)
  return()
endif()

set(_faces_suites "")
set(_faces_definitions "")
if(TARGET heapgate::catch2_main)
  add_executable(sample_catch2 e2e/sample_catch2.cpp)
  target_link_libraries(sample_catch2 PRIVATE heapgate::catch2_main heapgate_warnings)
  target_compile_options(sample_catch2 PRIVATE -g -fno-omit-frame-pointer)
  list(APPEND _faces_suites sample_catch2)
  list(APPEND _faces_definitions HEAPGATE_TEST_CATCH2=1)
endif()
if(TARGET heapgate::doctest_main)
  add_executable(sample_doctest e2e/sample_doctest.cpp)
  target_link_libraries(sample_doctest PRIVATE heapgate::doctest_main heapgate_warnings)
  target_compile_options(sample_doctest PRIVATE -g -fno-omit-frame-pointer)
  list(APPEND _faces_suites sample_doctest)
  list(APPEND _faces_definitions HEAPGATE_TEST_DOCTEST=1)
endif()
# `heapgate run` on them, when the command line is built.
if(TARGET heapgate_cli)
  list(APPEND _faces_definitions "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
endif()
if(_faces_suites)
  heapgate_add_test(framework_faces_test JEMALLOC SOURCES e2e/framework_faces_test.cpp
    DEFINITIONS ${_faces_definitions} LABELS e2e framework_faces)
  add_dependencies(framework_faces_test ${_faces_suites})
  if(TARGET heapgate_cli)
    add_dependencies(framework_faces_test heapgate_cli)
  endif()
endif()
unset(_faces_suites)
unset(_faces_definitions)
