// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A small Google Benchmark suite linked with heapgate::benchmark_main, run as
// a child process by benchmark_test. SAMPLE_BENCH_EXTRA_ALLOCATION=1 makes
// BM_ThreeAllocations allocate once more per iteration: the "changed" benchmark.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "heapgate/benchmark.h"

namespace {

// Read before main, so no benchmark run pays for it.
const int g_allocations = std::getenv("SAMPLE_BENCH_EXTRA_ALLOCATION") != nullptr ? 4 : 3;

void allocate_and_free(int count) {
  for (int i = 0; i < count; ++i) {
    char* p = new char[100];  // 112 bytes: jemalloc's size class
    benchmark::DoNotOptimize(p);
    delete[] p;
  }
}

void BM_ThreeAllocations(benchmark::State& state) {
  HEAPGATE_BENCHMARK_SCOPE(state);
  for (auto _ : state) allocate_and_free(g_allocations);
}
BENCHMARK(BM_ThreeAllocations);
BENCHMARK(BM_ThreeAllocations)->Iterations(1);
BENCHMARK(BM_ThreeAllocations)->Iterations(7);
BENCHMARK(BM_ThreeAllocations)->Iterations(1000);

// The same work without a Scope: only the MemoryManager measures it.
void BM_ThreeAllocationsUnscoped(benchmark::State& state) {
  for (auto _ : state) allocate_and_free(g_allocations);
}
BENCHMARK(BM_ThreeAllocationsUnscoped);
BENCHMARK(BM_ThreeAllocationsUnscoped)->Iterations(5);

// One 100-byte block per iteration is never freed.
void BM_LeakOneBlock(benchmark::State& state) {
  HEAPGATE_BENCHMARK_SCOPE(state);
  for (auto _ : state) {
    char* leaked = new char[100];
    benchmark::DoNotOptimize(leaked);
  }
}
BENCHMARK(BM_LeakOneBlock);
BENCHMARK(BM_LeakOneBlock)->Iterations(3);

void BM_NoAllocation(benchmark::State& state) {
  HEAPGATE_BENCHMARK_SCOPE(state);
  int x = 0;
  for (auto _ : state) benchmark::DoNotOptimize(++x);
}
BENCHMARK(BM_NoAllocation);

void BM_ReportsAnError(benchmark::State& state) {
  state.SkipWithError("the sample failed on purpose");
  for (auto _ : state) {
  }
}
BENCHMARK(BM_ReportsAnError);

}  // namespace
