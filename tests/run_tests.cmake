# SPDX-License-Identifier: MIT
# `heapgate run`, `compare` and `accept` end to end, on the sample suite.
if(NOT TARGET heapgate_cli OR NOT TARGET sample_suite)
  return()
endif()
heapgate_add_test(run_test JEMALLOC
  SOURCES e2e/run_test.cpp LABELS e2e runner
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
# A suite with a test whose counts vary from run to run (calibration).
add_executable(noisy_suite e2e/noisy_suite.cpp)
target_link_libraries(noisy_suite PRIVATE heapgate::gtest_main heapgate_warnings)
add_dependencies(run_test heapgate_cli sample_suite sample_suite_nojemalloc heap_workload noisy_suite)
# One verdict: heapgate compare of a run's own report, against the baselines
# the run judged it by, gives the run's verdicts and exit code (label rejudge).
heapgate_add_test(rejudge_test JEMALLOC
  SOURCES e2e/rejudge_test.cpp LABELS e2e runner rejudge
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
add_dependencies(rejudge_test heapgate_cli sample_suite noisy_suite)
# The spread a recorded baseline learns, on a suite whose tests start threads.
add_executable(threaded_suite e2e/threaded_suite.cpp)
target_link_libraries(threaded_suite PRIVATE heapgate::gtest_main heapgate_warnings)
heapgate_add_test(learned_spread_test JEMALLOC
  SOURCES e2e/learned_spread_test.cpp LABELS e2e runner
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
add_dependencies(learned_spread_test heapgate_cli threaded_suite)
# What suites heapgate was never tuned on do: libc's kept memory, detached
# threads, a test that varies from process to process (docs/design.md §6a),
add_executable(untuned_suite e2e/untuned_suite.cpp)
target_link_libraries(untuned_suite PRIVATE heapgate::gtest_main heapgate_warnings)
target_compile_options(untuned_suite PRIVATE -g -fno-omit-frame-pointer)
heapgate_add_test(untuned_test JEMALLOC
  SOURCES e2e/untuned_test.cpp LABELS e2e runner
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
# and a suite whose first test builds a static that later tests reuse.
add_executable(lazy_static_suite e2e/lazy_static_suite.cpp)
target_link_libraries(lazy_static_suite PRIVATE heapgate::gtest_main heapgate_warnings)
target_compile_options(lazy_static_suite PRIVATE -g -fno-omit-frame-pointer)
add_dependencies(untuned_test heapgate_cli untuned_suite lazy_static_suite)
# What other threads allocate is gated: a handler planted with one more block
# per request fails on a pool per test, a shared pool, a detached thread and
# an executor (label threads; docs/design.md §6a).
add_executable(worker_suite e2e/worker_suite.cpp)
target_link_libraries(worker_suite PRIVATE heapgate::gtest_main heapgate_warnings)
target_compile_options(worker_suite PRIVATE -g -fno-omit-frame-pointer)
heapgate_add_test(worker_test JEMALLOC
  SOURCES e2e/worker_test.cpp LABELS e2e runner threads
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\""
              "WORKER_SUITE_SOURCE=\"${CMAKE_CURRENT_SOURCE_DIR}/e2e/worker_suite.cpp\"")
add_dependencies(worker_test heapgate_cli worker_suite)
