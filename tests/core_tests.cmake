# SPDX-License-Identifier: MIT
# Core: errors, allocator detection, ProfileScope in every allocator setup.
heapgate_add_test(error_test GATED SOURCES unit/error_test.cpp)

# The same scope tests under each allocator configuration (docs/platform-facts.md §4).
heapgate_add_test(scope_counters_test JEMALLOC
  SOURCES integration/scope_test.cpp
  DEFINITIONS HEAPGATE_TEST_MODES=counters)
heapgate_add_test(scope_exact_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES integration/scope_test.cpp integration/scope_exact_test.cpp integration/unwinder_test.cpp
  DEFINITIONS HEAPGATE_TEST_MODES=counters,exact)
heapgate_add_test(scope_sampled_test JEMALLOC MALLOC_CONF "prof:true,prof_active:false,prof_accum:true,prof_unbias:false"
  SOURCES integration/scope_sampled_test.cpp)
# Profiling started by MALLOC_CONF: heapgate refuses to interfere (as Mesos does).
heapgate_add_test(scope_external_test JEMALLOC MALLOC_CONF "prof:true,prof_active:true"
  SOURCES integration/scope_external_test.cpp)
# The hooks' block stamps on their own, at made-up addresses.
heapgate_add_test(block_stamps_test SOURCES unit/block_stamps_test.cpp LABELS scope)
target_include_directories(block_stamps_test PRIVATE ${PROJECT_SOURCE_DIR}/lib/measure/src)
# `exact` mode's own stack walk against libunwind's.
heapgate_add_test(frame_walker_test SOURCES unit/frame_walker_test.cpp LABELS scope)
target_include_directories(frame_walker_test PRIVATE ${PROJECT_SOURCE_DIR}/lib/measure/src)
# The hooks' rounding of a request to a usable size, against jemalloc's own.
heapgate_add_test(size_classes_test JEMALLOC SOURCES unit/size_classes_test.cpp LABELS scope)
target_include_directories(size_classes_test PRIVATE ${PROJECT_SOURCE_DIR}/lib/measure/src)
# No memory for the hooks' block stamps: the locked pointer table counts instead.
heapgate_add_test(scope_unstamped_test JEMALLOC
  SOURCES integration/scope_unstamped_test.cpp
  LABELS scope)
# No jemalloc at all: mode off, with the reason.
heapgate_add_test(no_jemalloc_test SOURCES integration/no_jemalloc_test.cpp)
# jemalloc arriving through LD_PRELOAD into a binary that does not link it.
find_file(HEAPGATE_LIBJEMALLOC_SO NAMES libjemalloc.so.2 PATHS /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib NO_DEFAULT_PATH)
heapgate_add_test(scope_preload_test
  SOURCES integration/scope_test.cpp
  DEFINITIONS HEAPGATE_TEST_MODES=counters HEAPGATE_TEST_PRELOADED=1
  ENVIRONMENT "LD_PRELOAD=${HEAPGATE_LIBJEMALLOC_SO}")
# No usable allocation hooks (forced): the documented thread-counter fallback.
heapgate_add_test(scope_fallback_test JEMALLOC
  SOURCES integration/scope_fallback_test.cpp
  ENVIRONMENT HEAPGATE_HOOKS=off)
# The OS seam on hostile files: FIFOs, devices, size limits, stale temp files.
# Not GATED: its allocations depend on the paths of the temp directories.
heapgate_add_test(sys_test SOURCES unit/sys_test.cpp LABELS sys)

# The two feeds of the counting (docs/design.md §3): heapgate's allocation
# entry points and jemalloc's hooks give the same numbers, in child processes.
add_executable(counting_workload helpers/counting_workload.cpp)
target_link_libraries(counting_workload PRIVATE heapgate::core heapgate_warnings)
heapgate_link_jemalloc(counting_workload)
heapgate_add_test(counting_sources_test JEMALLOC SOURCES integration/counting_sources_test.cpp LABELS scope)
add_dependencies(counting_sources_test counting_workload)
# The scope tests again, counted through jemalloc's hooks (the fallback).
heapgate_add_test(scope_hooks_test JEMALLOC
  SOURCES integration/scope_test.cpp integration/scope_threads_test.cpp
  DEFINITIONS HEAPGATE_TEST_MODES=counters
  ENVIRONMENT HEAPGATE_COUNT_WITH=hooks
  LABELS scope)
target_include_directories(scope_hooks_test PRIVATE ${PROJECT_SOURCE_DIR}/lib/measure/src)
heapgate_add_test(symbol_index_test SOURCES unit/symbol_index_test.cpp LIBRARIES heapgate::analysis heapgate::libdw
  LABELS unit)
target_include_directories(symbol_index_test PRIVATE ${PROJECT_SOURCE_DIR}/lib/analysis/src)
