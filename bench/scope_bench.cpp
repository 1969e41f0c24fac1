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
// The `threads:8` variants run the same pairs on 8 threads inside one scope
// (opened by thread 0), against the same 8 threads without a scope: the ratio
// shows whether the hooks' bookkeeping serialises threads. `many_live` keeps
// 100,000 blocks live at once, so the live-block table is megabytes large.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "heapgate/allocator.h"
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

// One scope around all threads' timed loops: thread 0 opens it before the
// start barrier of the loop and finishes it after the end barrier.
std::unique_ptr<heapgate::ProfileScope> g_shared_scope;

void BM_MallocFreeThreads(benchmark::State& state, bool in_scope) {
  if (in_scope && state.thread_index() == 0) {
    g_shared_scope = std::make_unique<heapgate::ProfileScope>("threads", heapgate::Mode::counters);
  }
  malloc_free_pairs(state);
  if (in_scope && state.thread_index() == 0) {
    auto r = g_shared_scope->finish();
    g_shared_scope.reset();
    if (!r) state.SkipWithError(r.error().message().c_str());
  }
}

// Per iteration: 100,000 blocks of 64 B allocated, then freed in the same
// order; time per block (items), as a std::map of 100k entries does.
void BM_ManyLive(benchmark::State& state, bool in_scope) {
  constexpr std::size_t kBlocks = 100000;
  std::vector<void*> blocks(kBlocks);
  std::unique_ptr<heapgate::ProfileScope> scope;
  if (in_scope) scope = std::make_unique<heapgate::ProfileScope>("many_live", heapgate::Mode::counters);
  for (auto _ : state) {
    for (auto& b : blocks) b = std::malloc(64);
    benchmark::DoNotOptimize(blocks.data());
    for (void* b : blocks) std::free(b);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBlocks));
  if (scope) {
    auto r = scope->finish();
    if (!r) state.SkipWithError(r.error().message().c_str());
  }
}

// jemalloc's own share of the `counters` cost: hooks that do nothing, installed
// the way lib/measure/src/alloc_hooks.cpp installs heapgate's (the same
// private hooks_t layout, declared there too).
extern "C" {
struct BenchHooks {
  void (*alloc)(void*, int, void*, std::uintptr_t, std::uintptr_t*);
  void (*dalloc)(void*, int, void*, std::uintptr_t*);
  void (*expand)(void*, int, void*, std::size_t, std::size_t, std::uintptr_t, std::uintptr_t*);
  void* extra;
};
}
void empty_alloc_hook(void*, int, void*, std::uintptr_t, std::uintptr_t*) {}
void empty_dalloc_hook(void*, int, void*, std::uintptr_t*) {}
void empty_expand_hook(void*, int, void*, std::size_t, std::size_t, std::uintptr_t, std::uintptr_t*) {}

void BM_MallocFreeEmptyHooks(benchmark::State& state) {
  static BenchHooks hooks{empty_alloc_hook, empty_dalloc_hook, empty_expand_hook, nullptr};
  auto mallctl = heapgate::detail::mallctl_fn();
  void* handle = nullptr;
  std::size_t handle_len = sizeof handle;
  BenchHooks* to_install = &hooks;
  if (mallctl == nullptr || !heapgate::allocator_status().hooks_available ||
      mallctl("experimental.hooks.install", &handle, &handle_len, to_install, sizeof hooks) != 0) {
    state.SkipWithError("jemalloc's hooks are unavailable");
    return;
  }
  malloc_free_pairs(state);
  mallctl("experimental.hooks.remove", nullptr, nullptr, &handle, sizeof handle);
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
BENCHMARK(BM_MallocFreeEmptyHooks);
BENCHMARK_CAPTURE(BM_MallocFreeThreads, plain, false)->Threads(1)->Threads(8);
BENCHMARK_CAPTURE(BM_MallocFreeThreads, counters, true)->Threads(1)->Threads(8);
BENCHMARK_CAPTURE(BM_ManyLive, plain, false);
BENCHMARK_CAPTURE(BM_ManyLive, counters, true);
BENCHMARK_CAPTURE(BM_MallocFreeInScope, exact, heapgate::Mode::exact);
BENCHMARK_CAPTURE(BM_EmptyScope, counters, heapgate::Mode::counters);
BENCHMARK_CAPTURE(BM_EmptyScope, exact, heapgate::Mode::exact);

BENCHMARK_MAIN();
