// SPDX-License-Identifier: MIT
// heapgate::bench::Scope: a region's allocations as per-iteration counters.
#include <unistd.h>

#include <new>
#include <string>

#include "heapgate/benchmark.h"
#include "heapgate/integration.h"
#include "runtime.h"

namespace heapgate::bench {
namespace {

// The mode Scopes measure in: what register_memory_manager() decided, or,
// when it was never called (an own main without heapgate's init), counters
// if they work here.
Mode scope_mode() {
  detail::BenchRuntime& rt = detail::bench_runtime();
  if (rt.configured) return rt.scope_mode;
  const AllocatorStatus& status = allocator_status();
  return status.hooks_available && status.check(Mode::counters) ? Mode::counters : Mode::off;
}

// Says, in the run's list of problems, why a Scope measured nothing. Called
// after an exception, typically out of memory: if the note cannot be
// allocated either, the run still reads the benchmark as unmeasured.
void note_problem(const char* what, const std::exception& e) noexcept {
  try {
    detail::add_bench_problem(what + std::string(e.what()));
  } catch (const std::bad_alloc&) {
  }
}

}  // namespace

Scope::Scope(::benchmark::State& state, const char* region, const char* profile_name) noexcept
    : state_(state), region_(region), profile_name_(profile_name) {
  detail::BenchRuntime& rt = detail::bench_runtime();
  if (state.thread_index() != 0 || rt.in_memory_run.load()) return;
  const Mode mode = scope_mode();
  if (mode == Mode::off) return;
  // heapgate's own allocations (names, paths) stay out of every window.
  detail::HookSuppressor suppress;
  try {
    std::string name = profile_name_ != nullptr ? profile_name_ : region_ != nullptr ? region_ : "benchmark";
    ScopeOptions options{mode};
    if (mode == Mode::exact) {
      // One file per name, overwritten by each run: what is left is the last run's.
      std::string dir = rt.options.profiles_dir.empty() ? detail::bench_scratch_dir() : rt.options.profiles_dir;
      if (dir.empty()) return;
      options.profile_path = dir + "/" + detail::bench_file_stem(name) + ".heap";
    }
    scope_.emplace(std::move(name), std::move(options));
  } catch (const std::exception& e) {
    // Measure nothing rather than throw from a benchmark; the report says why.
    scope_.reset();
    note_problem("a scope was not started: ", e);
  }
}

Scope::~Scope() { finish(); }

void Scope::finish() noexcept {
  if (finished_) return;
  finished_ = true;
  if (!scope_) return;
  auto measured = scope_->finish();
  detail::HookSuppressor suppress;
  try {
    detail::BenchRuntime& rt = detail::bench_runtime();
    if (!measured) {
      detail::add_bench_problem(scope_->name() + ": " + measured.error().message());
      scope_.reset();
      return;
    }
    scope_.reset();
    ScopeResult& r = *measured;
    if (!r.profile_path.empty()) {
      if (rt.options.profiles_dir.empty()) {
        ::unlink(r.profile_path.c_str());
      } else {
        std::lock_guard<std::mutex> lock(rt.mutex);
        rt.kept_profiles[r.profile_path] = r.profile_path;
      }
    }
    const auto iterations = static_cast<double>(state_.iterations());
    if (iterations <= 0 || state_.error_occurred()) {
      result_ = std::move(r);
      return;
    }
    const std::string prefix = region_ != nullptr ? std::string(region_) + "." : std::string();
    auto set = [&](std::string_view counter, double value) {
      // kDefaults: the value is already per iteration; Google Benchmark sums
      // counters over threads, and only thread 0 sets them.
      state_.counters[prefix + std::string(counter)] = ::benchmark::Counter(value);
    };
    set(kAllocsCounter, static_cast<double>(r.allocations) / iterations);
    set(kBytesCounter, static_cast<double>(r.allocated_bytes) / iterations);
    set(kLiveAllocsCounter, static_cast<double>(r.live_allocations) / iterations);
    set(kLiveBytesCounter, static_cast<double>(r.live_bytes) / iterations);
    set(kPeakBytesCounter, static_cast<double>(r.peak_bytes));
    result_ = std::move(r);
  } catch (const std::exception& e) {
    // The counters stay unset, which the gate reads as unmeasured.
    note_problem("a scope's counts were not published: ", e);
  }
}

}  // namespace heapgate::bench
