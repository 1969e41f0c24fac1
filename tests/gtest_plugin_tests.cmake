# SPDX-License-Identifier: MIT
# The GoogleTest plugin end to end: sample suites built with heapgate::gtest_main
# run as child processes of gtest_plugin_test.
if(NOT TARGET heapgate::gtest_main)
  return()
endif()

# Which stacks GoogleTest makes for every test (gtest_plugin/src/gtest_frames.h),
# on made-up stacks: compiled in, the plugin's sources are private.
heapgate_add_test(gtest_frames_test
  SOURCES unit/gtest_frames_test.cpp ${PROJECT_SOURCE_DIR}/gtest_plugin/src/gtest_frames.cpp
          ${PROJECT_SOURCE_DIR}/harness/src/call_site_frames.cpp
  LABELS gtest_plugin)
target_include_directories(gtest_frames_test PRIVATE ${PROJECT_SOURCE_DIR}/gtest_plugin/src
  ${PROJECT_SOURCE_DIR}/harness/src ${PROJECT_SOURCE_DIR}/harness/include)

add_executable(sample_suite e2e/sample_suite.cpp)
target_link_libraries(sample_suite PRIVATE heapgate::gtest_main heapgate_warnings)
heapgate_link_jemalloc(sample_suite)
target_compile_options(sample_suite PRIVATE -g -fno-omit-frame-pointer)

# The same suite without jemalloc: heapgate must say `unavailable`, not measure zeros.
# The drop-in main without the jemalloc heapgate::gtest_main brings: a suite
# that cannot measure (or that `heapgate run` must LD_PRELOAD).
add_executable(sample_suite_nojemalloc e2e/sample_suite.cpp ${PROJECT_SOURCE_DIR}/gtest_plugin/src/gtest_main.cpp)
target_link_libraries(sample_suite_nojemalloc PRIVATE heapgate::gtest heapgate_warnings)
set_target_properties(sample_suite_nojemalloc PROPERTIES HEAPGATE_NO_JEMALLOC ON)

# Budgets with units and scoped budgets.
add_executable(budget_suite e2e/budget_suite.cpp)
target_link_libraries(budget_suite PRIVATE heapgate::gtest_main heapgate_warnings)

heapgate_add_test(gtest_plugin_test JEMALLOC SOURCES e2e/gtest_plugin_test.cpp LABELS e2e gtest_plugin)
add_dependencies(gtest_plugin_test sample_suite sample_suite_nojemalloc budget_suite)

# ci/gate.sh on the sample suite through the heapgate CLI: the gate's exit
# code, reports, HTML page and step summary.
if(TARGET heapgate_cli)
add_test(NAME ci_gate_script
  COMMAND ${CMAKE_COMMAND}
    -DGATE=${PROJECT_SOURCE_DIR}/ci/gate.sh
    -DHEAPGATE=$<TARGET_FILE:heapgate_cli>
    -DSUITE=$<TARGET_FILE:sample_suite>
    -DWORK=${CMAKE_CURRENT_BINARY_DIR}/ci-gate
    -P ${CMAKE_CURRENT_SOURCE_DIR}/e2e/ci_gate_check.cmake)
set_tests_properties(ci_gate_script PROPERTIES LABELS "e2e;gtest_plugin")
endif()

# Per-call-site budgets: allocations moved between two call sites, totals unchanged.
add_executable(call_site_suite e2e/call_site_suite.cpp)
target_link_libraries(call_site_suite PRIVATE heapgate::gtest_main heapgate_warnings)
heapgate_link_jemalloc(call_site_suite)
target_compile_options(call_site_suite PRIVATE -g -fno-omit-frame-pointer)
heapgate_add_test(call_site_gate_test JEMALLOC SOURCES e2e/call_site_gate_test.cpp LABELS e2e gtest_plugin)
add_dependencies(call_site_gate_test call_site_suite)

# A suite whose middle test crashes, aborts, exits or hangs on request
# (HEAPGATE_FAULT), for the fault table (docs/bad-inputs.md).
add_executable(fault_suite e2e/fault_suite.cpp)
target_link_libraries(fault_suite PRIVATE heapgate::gtest_main heapgate_warnings)
target_compile_options(fault_suite PRIVATE -g -fno-omit-frame-pointer)
# The fault table of docs/bad-inputs.md: one test per row (label faults).
heapgate_add_test(faults_test JEMALLOC
  SOURCES e2e/faults_test.cpp
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\""
  LABELS e2e faults)
add_dependencies(faults_test fault_suite heapgate_cli)
