# SPDX-License-Identifier: MIT
# Included from lib/CMakeLists.txt.
#
# The gate over Google Benchmark's JSON (benchmark_gate.h) is part of
# heapgate::core: it reads JSON only, so `heapgate bench compare` works
# without Google Benchmark installed.
target_sources(heapgate_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src/benchmark/gate.cpp)

# heapgate::benchmark (MemoryManager, Scope; benchmark.h) and
# heapgate::benchmark_main, built whenever Google Benchmark is found. A parent
# project that vendors Google Benchmark (add_subdirectory) has
# benchmark::benchmark before heapgate is added, and that one is used.
# HEAPGATE_BUILD_BENCHMARK (heapgate's own bench/, ON at top level) makes it required.
if(NOT TARGET benchmark::benchmark)
  find_package(benchmark QUIET)
endif()
if(NOT TARGET benchmark::benchmark)
  if(HEAPGATE_BUILD_BENCHMARK)
    message(FATAL_ERROR "heapgate: Google Benchmark not found; fix: apt-get install libbenchmark-dev "
      "(or run scripts/setup.sh), or configure with -DHEAPGATE_BUILD_BENCHMARK=OFF")
  endif()
  message(STATUS "heapgate: Google Benchmark not found; heapgate::benchmark is not built")
  return()
endif()

# Google Benchmark 1.7 calls MemoryManager::Stop(Result*) (pure virtual
# there); 1.8 removed it. There is no version macro, so ask the compiler.
include(CheckCXXSourceCompiles)
include(CMakePushCheckState)
cmake_push_check_state(RESET)
set(CMAKE_REQUIRED_LIBRARIES benchmark::benchmark)
set(CMAKE_REQUIRED_QUIET ON)
check_cxx_source_compiles([[
#include <benchmark/benchmark.h>
struct M : benchmark::MemoryManager {
  void Start() override {}
  void Stop(Result* result) override { (void)result; }
};
int main() { M m; m.Start(); return 0; }
]] HEAPGATE_BENCHMARK_HAS_STOP_POINTER)
cmake_pop_check_state()

heapgate_library(benchmark
  INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/include
  PRIVATE_INCLUDE_DIRS ${CMAKE_CURRENT_LIST_DIR}/src
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/src/benchmark/options.cpp
    ${CMAKE_CURRENT_LIST_DIR}/src/benchmark/memory_manager.cpp
    ${CMAKE_CURRENT_LIST_DIR}/src/benchmark/scope.cpp)
target_link_libraries(heapgate_benchmark PUBLIC heapgate::core benchmark::benchmark)
if(HEAPGATE_BENCHMARK_HAS_STOP_POINTER)
  target_compile_definitions(heapgate_benchmark PRIVATE HEAPGATE_BENCHMARK_HAS_STOP_POINTER=1)
endif()

heapgate_library(benchmark_main SOURCES ${CMAKE_CURRENT_LIST_DIR}/src/benchmark/benchmark_main.cpp)
target_link_libraries(heapgate_benchmark_main PUBLIC heapgate::benchmark)
