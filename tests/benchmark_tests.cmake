# SPDX-License-Identifier: MIT
# heapgate::benchmark: the gate's reading of Google Benchmark JSON, and end to
# end, sample benchmark suites run as child processes of benchmark_test, their
# --benchmark_out JSON, and `heapgate bench compare` on it.
heapgate_add_test(benchmark_gate_test SOURCES benchmark/benchmark_gate_test.cpp LIBRARIES heapgate::benchmark_gate LABELS benchmark)

if(NOT TARGET heapgate::benchmark_main)
  return()
endif()

# Frame pointers and debug info keep the stacks of its region profiles whole.
add_executable(sample_bench benchmark/sample_bench.cpp)
target_link_libraries(sample_bench PRIVATE heapgate::benchmark_main heapgate_warnings)
heapgate_link_jemalloc(sample_bench)
target_compile_options(sample_bench PRIVATE -g -fno-omit-frame-pointer)

# The same suite without jemalloc: heapgate must say `unavailable`, not measure zeros.
add_executable(sample_bench_nojemalloc benchmark/sample_bench.cpp ${PROJECT_SOURCE_DIR}/lib/benchmark/src/benchmark_main.cpp)
target_link_libraries(sample_bench_nojemalloc PRIVATE heapgate::benchmark heapgate_warnings)
set_target_properties(sample_bench_nojemalloc PROPERTIES HEAPGATE_NO_JEMALLOC ON)

set(_heapgate_bench_cli "")
if(TARGET heapgate_cli)
  set(_heapgate_bench_cli "HEAPGATE_CLI_PATH=\"$<TARGET_FILE:heapgate_cli>\"")
endif()
# MALLOC_CONF is this test process' (so HEAPGATE_REQUIRE_PROFILING can tell
# whether exact mode works here); the samples are started without it.
heapgate_add_test(benchmark_test JEMALLOC MALLOC_CONF "${HEAPGATE_EXACT_MALLOC_CONF}"
  SOURCES benchmark/benchmark_test.cpp LABELS e2e benchmark
  LIBRARIES nlohmann_json::nlohmann_json
  DEFINITIONS ${_heapgate_bench_cli})
add_dependencies(benchmark_test sample_bench sample_bench_nojemalloc)
if(TARGET heapgate_cli)
  add_dependencies(benchmark_test heapgate_cli)
endif()
unset(_heapgate_bench_cli)
