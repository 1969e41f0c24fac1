# SPDX-License-Identifier: MIT
# The `heapgate` executable end to end.
if(NOT TARGET heapgate_cli)
  return()
endif()
heapgate_add_test(runner_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES e2e/runner_test.cpp LABELS e2e runner
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
add_dependencies(runner_test heapgate_cli heap_workload)
if(TARGET sample_suite)
  add_dependencies(runner_test sample_suite)
endif()

# Sharded CI: shard reports from separate processes merge into one run's verdicts and baseline.
heapgate_add_test(shard_merge_test JEMALLOC
  SOURCES e2e/shard_merge_test.cpp LABELS e2e runner
  DEFINITIONS "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
add_dependencies(shard_merge_test heapgate_cli)
if(TARGET sample_suite)
  add_dependencies(shard_merge_test sample_suite)
endif()
