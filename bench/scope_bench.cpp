// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What a scope costs: start+finish with an empty body, and the added cost of
// one malloc+free pair while a scope of each mode is open.
//
// Built twice: bench_scope starts ready for exact mode (profiling enabled,
// inactive), bench_scope_noprof starts with jemalloc's defaults, to show what
// merely enabling profiling costs every allocation.
// Benchmarks run in registration order: `plain` measures malloc+free before
// any scope ran, `after_scopes` the same once scopes have opened and closed
// (the hooks are installed only while a scope counts, so the two should match).
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "heapgate/malloc_conf.h"
#include "heapgate/profile_scope.h"

#ifndef HEAPGATE_BENCH_NO_PROF
HEAPGATE_ENABLE_EXACT_MODE();
#endif

namespace {

void malloc_free_pairs(benchmark::State& state) {
  for (auto _ : state) {
    void* p = std::malloc(64);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}

void BM_MallocFreePlain(benchmark::State& state) { malloc_free_pairs(state); }

void BM_MallocFreeInScope(benchmark::State& state, heapgate::Mode mode) {
  heapgate::ProfileScope scope{"bench", mode};
  if (scope.mode() != mode) {
    state.SkipWithError("mode unavailable in this process");
    return;
  }
  malloc_free_pairs(state);
  auto r = scope.finish();
  if (!r) state.SkipWithError(r.error().message().c_str());
}

void BM_MallocFreeAfterScopes(benchmark::State& state) {
  for (int i = 0; i < 3; ++i) {
    heapgate::ProfileScope scope{"before", heapgate::Mode::counters};
    benchmark::DoNotOptimize(std::malloc(16));  // a block left live across the boundary
    (void)scope.finish();
  }
  malloc_free_pairs(state);
}

void BM_EmptyScope(benchmark::State& state, heapgate::Mode mode) {
  for (auto _ : state) {
    heapgate::ProfileScope scope{"empty", mode};
    auto r = scope.finish();
    if (!r) {
      state.SkipWithError(r.error().message().c_str());
      break;
    }
    benchmark::DoNotOptimize(r->allocations);
  }
}

}  // namespace

BENCHMARK(BM_MallocFreePlain);
BENCHMARK_CAPTURE(BM_MallocFreeInScope, counters, heapgate::Mode::counters);
BENCHMARK(BM_MallocFreeAfterScopes);
BENCHMARK_CAPTURE(BM_MallocFreeInScope, exact, heapgate::Mode::exact);
BENCHMARK_CAPTURE(BM_EmptyScope, counters, heapgate::Mode::counters);
BENCHMARK_CAPTURE(BM_EmptyScope, exact, heapgate::Mode::exact);

BENCHMARK_MAIN();
