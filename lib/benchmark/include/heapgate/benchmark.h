// SPDX-License-Identifier: MIT
// heapgate's Google Benchmark face: options, the MemoryManager, profiling
// scopes in a benchmark. Implemented in lib/benchmark/src/:
// benchmark_options.cpp (parse_options(), init()), memory_manager.cpp
// (register_memory_manager(), finish()), scope.cpp (Scope).
#pragma once

#include <optional>
#include <string>

#include <benchmark/benchmark.h>

#include "heapgate/allocator.h"
#include "heapgate/benchmark_gate.h"
#include "heapgate/error.h"
#include "heapgate/profile_scope.h"

/// heapgate::benchmark: Google Benchmark (1.7 and later) measured by heapgate.
/// Timings are noisy in CI; allocation counts in `counters` and `exact` mode
/// are not, so these are what a benchmark suite is gated on:
///
/// - a `benchmark::MemoryManager` that fills num_allocs, max_bytes_used,
///   total_allocated_bytes and net_heap_growth exactly (register_memory_manager(),
///   or link heapgate::benchmark_main, which also reads the flags below);
/// - Scope / HEAPGATE_BENCHMARK_SCOPE(state): a region's allocations per
///   iteration as user counters, plus, on request, its heap profile;
/// - `heapgate bench compare` (benchmark_gate.h) gates the `--benchmark_out`
///   JSON against `baselines/<binary>.json`.
///
/// The namespace is heapgate::bench, not heapgate::benchmark, so that
/// `benchmark::State` keeps meaning Google Benchmark's inside `namespace heapgate`.
namespace heapgate::bench {

/// How heapgate measures a benchmark binary. Every field has a
/// `--heapgate_<name>` flag and a `HEAPGATE_<NAME>` environment twin; a flag
/// wins over the environment (the GoogleTest and Google Benchmark convention).
struct Options {
  /// `--heapgate_mode=off|counters|exact` (default counters). `counters`:
  /// counted in heapgate's own allocation entry points (jemalloc's hooks are
  /// the fallback, docs/design.md §3), exact counts, no stacks. `exact`: every
  /// allocation in a measured window is profiled with its stack (~3 µs each),
  /// so timings of benchmarks with scopes suffer; the counts are the same.
  /// `sampled` is refused: benchmarks are gated on exact counts.
  Mode mode = Mode::counters;
  /// `--heapgate_profiles=DIR`: keep the heap profile of each Scope's region
  /// from the benchmark's last timed run: `DIR/<name>.heap` (heap_v2),
  /// `DIR/<name>.folded` (allocated bytes per stack, for flamegraph.pl or
  /// speedscope) and `DIR/<name>.svg` (jeprof --svg, when jeprof and dot are
  /// installed), written by finish(). Implies `exact` for scopes.
  std::string profiles_dir;
  /// `--heapgate_strict`: measuring being unavailable (no jemalloc) fails the
  /// binary (init() exits with status 1) instead of running unmeasured.
  bool strict = false;
};

/// Reads the `--heapgate_*` flags out of argv (removing them, so Google
/// Benchmark never sees them) and the `HEAPGATE_*` environment. Errors:
/// `invalid_argument` naming the flag or variable, the bad value and the
/// valid ones; an unknown `--heapgate_` flag is an error too, so a typo never
/// silently turns measuring off.
Result<Options> parse_options(int* argc, char** argv);

/// Makes `options` current for every Scope and, when the mode is usable,
/// registers heapgate's MemoryManager with Google Benchmark. Either way it
/// adds heapgate's keys to Google Benchmark's JSON "context" (kContextMode,
/// kContextJemallocVersion, and kContextUnavailable when nothing can be
/// measured), so `heapgate bench compare` can tell "unavailable" from zeros.
/// Call it once, before benchmark::RunSpecifiedBenchmarks(); the manager
/// lives until the process exits.
///
/// Errors: `unavailable` (or `conflict`) from allocator_status().check():
/// no jemalloc, jemalloc without usable hooks, or `exact` without profiling
/// enabled at start (use init(), which restarts the program with the settings).
/// The manager is then not registered: Google Benchmark writes no memory
/// fields, rather than zeros that would look like success. `invalid_argument`
/// for `sampled`.
Result<void> register_memory_manager(const Options& options = {});

/// What heapgate::benchmark_main does before benchmark::Initialize; call it
/// first in an own main(). Parses the options (exits with status 2 and a
/// message on bad flags); when `exact` (or profiles) needs jemalloc profiling
/// that this process did not start with, re-executes the program once with
/// MALLOC_CONF extended by heapgate::kExactMallocConf (jemalloc reads its
/// settings only at start-up); then register_memory_manager(). If measuring
/// is unavailable it prints why on stderr and carries on unmeasured, or,
/// with `strict`, exits with status 1. Not thread-safe: call it from main
/// before any thread starts.
Options init(int* argc, char** argv);

/// After benchmark::RunSpecifiedBenchmarks(): writes the `.folded` and
/// `.svg` of every region profile kept under Options::profiles_dir, and
/// prints one stderr line per problem (a MemoryManager run that failed, an
/// SVG that jeprof could not draw). Returns 0, or 1 when a measurement failed.
int finish();

/// Measures the allocations of a region of a benchmark function and
/// publishes them as user counters, per iteration of the benchmark loop:
///
/// ```
/// static void BM_Parse(benchmark::State& state) {
///   std::string text = make_input();             // not measured
///   HEAPGATE_BENCHMARK_SCOPE(state);               // from here...
///   for (auto _ : state) benchmark::DoNotOptimize(parse(text));
/// }                                                // ...to here
/// ```
///
/// Counters (benchmark_gate.h): kAllocsCounter, kBytesCounter,
/// kLiveAllocsCounter, kLiveBytesCounter (made in the region and still live
/// at its end, divided by the iterations: a per-iteration leak) and
/// kPeakBytesCounter (the region's high-water mark, not divided). Exact in
/// `counters` and `exact` mode whatever the iteration count; they count every
/// thread's allocations, and only thread 0's Scope measures (in a
/// multi-threaded benchmark, others do nothing). One-time initialisation
/// done inside the reported run counts too: warm it up before the Scope.
///
/// Nothing is measured, and no counter set, when measuring is unavailable,
/// and inside heapgate's own MemoryManager run (Google Benchmark discards
/// that run's counters, and setting them would allocate inside the manager's
/// window). Timing: starting and finishing cost ~0.5 µs in `counters` mode,
/// outside the timed loop when the Scope encloses it.
///
/// Not copyable or movable. Creating one never allocates inside a window.
class Scope {
 public:
  /// Starts measuring. `region`: null for the benchmark's own counters
  /// (what the gate judges as the benchmark), or a name R for counters named
  /// "R.allocs/iter"... (judged as "<benchmark>[R]"). `profile_name`: the
  /// file name of the kept profile (Options::profiles_dir); default `region`,
  /// else "benchmark". Instances of one function with different arguments
  /// should pass distinct names, or the last instance's profile is kept.
  /// Both pointers must outlive the Scope (string literals, __func__).
  explicit Scope(::benchmark::State& state, const char* region = nullptr, const char* profile_name = nullptr) noexcept;
  /// Finishes an unfinished scope.
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  /// Stops measuring and sets the counters; later calls do nothing.
  void finish() noexcept;
  /// What was measured, once finished; nullopt when nothing was (see above).
  const std::optional<ScopeResult>& result() const noexcept { return result_; }

 private:
  ::benchmark::State& state_;
  const char* region_;
  const char* profile_name_;
  std::optional<ProfileScope> scope_;
  std::optional<ScopeResult> result_;
  bool finished_ = false;
};

}  // namespace heapgate::bench

#define HEAPGATE_BENCHMARK_CONCAT_INNER(a, b) a##b
#define HEAPGATE_BENCHMARK_CONCAT(a, b) HEAPGATE_BENCHMARK_CONCAT_INNER(a, b)
/// Measures from here to the end of the enclosing block as the benchmark's
/// own region (see heapgate::bench::Scope); its profile, if kept, is named
/// after the enclosing function (in a BENCHMARK_F body that is always
/// "BenchmarkCase": construct a Scope with a profile_name there).
#define HEAPGATE_BENCHMARK_SCOPE(state) \
  ::heapgate::bench::Scope HEAPGATE_BENCHMARK_CONCAT(heapgate_benchmark_scope_, __LINE__)((state), nullptr, __func__)
