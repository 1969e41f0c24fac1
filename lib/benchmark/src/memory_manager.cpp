// SPDX-License-Identifier: MIT
// heapgate's benchmark::MemoryManager, its registration, and finish().
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <vector>
#include <optional>
#include <string>

#include "heapgate/benchmark.h"
#include "heapgate/diff.h"
#include "heapgate/folded.h"
#include "heapgate/jeprof.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/symbolizer.h"
#include "heapgate/integration.h"
#include "runtime.h"
#include "heapgate/sys.h"

namespace heapgate {
namespace detail {

BenchRuntime& bench_runtime() {
  static auto* runtime = new BenchRuntime;
  return *runtime;
}

void add_bench_problem(std::string problem) {
  HookSuppressor suppress;
  BenchRuntime& rt = bench_runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  ++rt.problem_count;
  if (rt.problems.size() < 5) rt.problems.push_back(std::move(problem));
}

std::string bench_file_stem(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 120)) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out.empty() || out[0] == '.' ? "benchmark" + out : out;
}

std::string bench_scratch_dir() {
  BenchRuntime& rt = bench_runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (rt.scratch_dir.empty()) {
    if (auto made = sys::make_private_dir("heapgate-bench."); made) {
      rt.scratch_dir = *made;
      // Scratch only: what is kept goes to --heapgate_profiles.
      sys::remove_at_exit(rt.scratch_dir);
    }
  }
  return rt.scratch_dir;
}

}  // namespace detail

namespace bench {
namespace {

// One counting window around each of Google Benchmark's memory runs: Start()
// and Stop() bracket min(16, iterations) iterations of the benchmark, after
// its timed runs (so one-time initialisation has happened already).
class MemoryManager final : public ::benchmark::MemoryManager {
 public:
  MemoryManager(Mode mode, std::string dump_path) : mode_(mode), dump_path_(std::move(dump_path)) {}

  void Start() override {
    detail::HookSuppressor suppress;
    detail::bench_runtime().in_memory_run.store(true);
    scope_.emplace("benchmark memory run", ScopeOptions{mode_, dump_path_});
    // Google Benchmark's next step is `new internal::ThreadManager` for this
    // run (1.5 to 1.9 alike): its allocation, not the benchmark's.
    detail::skip_next_allocation();
  }

#ifdef HEAPGATE_BENCHMARK_HAS_STOP_POINTER
  // Google Benchmark 1.7 calls this overload (pure there, absent from 1.8 on).
  void Stop(Result* result) override { Stop(*result); }
#endif

  void Stop(Result& result) override {
    detail::HookSuppressor suppress;
    // finish() first: in exact mode it stops profiling, and anything
    // allocated before that would land in the benchmark's numbers.
    std::optional<heapgate::Result<ScopeResult>> finished;
    if (scope_) finished.emplace(scope_->finish());
    heapgate::Result<ScopeResult> measured = finished
                                                 ? std::move(*finished)
                                                 : fail(make_error(ErrorCode::internal, "MemoryManager::Stop",
                                                                   "Stop() without Start()", "report this as a bug"));
    scope_.reset();
    const std::uint64_t skipped_bytes = detail::take_skipped_bytes();
    detail::bench_runtime().in_memory_run.store(false);
    if (!measured) {
      // Negative counts cannot be mistaken for a clean benchmark; the gate
      // reads them as "not measured" (benchmark_gate.h).
      result.num_allocs = -1;
      result.max_bytes_used = -1;
      detail::add_bench_problem("memory run: " + measured.error().message());
      return;
    }
    ScopeResult& r = *measured;
    if (!r.profile_path.empty()) {
      // The hooks skipped the ThreadManager; the heap profile recorded it.
      if (skipped_bytes > 0 && r.allocations > 0) {
        r.allocations -= 1;
        r.allocated_bytes -= std::min(r.allocated_bytes, skipped_bytes);
      }
      ::unlink(r.profile_path.c_str());
    }
    result.num_allocs = static_cast<std::int64_t>(r.allocations);
    result.max_bytes_used = static_cast<std::int64_t>(r.peak_bytes);
    result.total_allocated_bytes = static_cast<std::int64_t>(r.allocated_bytes);
    // live_bytes, not allocated minus deallocated: freeing memory allocated
    // before the run (a fixture's buffer) must not hide the run's own leak.
    result.net_heap_growth = static_cast<std::int64_t>(r.live_bytes);
  }

 private:
  Mode mode_;
  std::string dump_path_;
  std::optional<ProfileScope> scope_;
};

Result<void> usable(Mode mode) {
  const AllocatorStatus& status = allocator_status();
  if (auto ok = status.check(mode); !ok) return ok;
  if (!status.hooks_available) {
    // The counters fallback has no allocation counts: num_allocs would read 0.
    return fail(make_error(
        ErrorCode::unavailable, "heapgate mode " + std::string(to_string(mode)),
        status.hooks_disabled_by_env ? "HEAPGATE_HOOKS=off leaves only byte counts, and benchmarks are gated on counts"
                                     : "jemalloc " + status.version + " has no allocation-hook ABI heapgate knows",
        status.hooks_disabled_by_env ? "unset HEAPGATE_HOOKS"
                                     : "use jemalloc 5.1 to 5.3 (Debian 12's libjemalloc2 is 5.3.0)"));
  }
  return {};
}

}  // namespace

Result<void> register_memory_manager(const Options& options) {
  detail::BenchRuntime& rt = detail::bench_runtime();
  if (rt.configured) {
    return fail(make_error(ErrorCode::conflict, "heapgate::bench::register_memory_manager", "called a second time",
                           "call it once, before benchmark::RunSpecifiedBenchmarks()"));
  }
  rt.configured = true;
  rt.options = options;
  const AllocatorStatus& status = allocator_status();
  if (!status.version.empty()) ::benchmark::AddCustomContext(std::string(kContextJemallocVersion), status.version);

  Result<void> measurable = {};
  if (options.mode == Mode::off) {
    measurable = fail(make_error(ErrorCode::unavailable, "--heapgate_mode", "heapgate is switched off (mode off)",
                                 "use --heapgate_mode=counters to measure"));
  } else if (options.mode == Mode::sampled) {
    measurable = fail(make_error(ErrorCode::invalid_argument, "--heapgate_mode", "sampled counts are estimates",
                                 "gate benchmarks with counters or exact"));
  } else {
    measurable = usable(options.mode);
  }
  if (!measurable) {
    rt.scope_mode = Mode::off;
    ::benchmark::AddCustomContext(std::string(kContextMode), "off");
    ::benchmark::AddCustomContext(std::string(kContextUnavailable), measurable.error().message());
    return measurable;
  }
  rt.scope_mode = options.mode;
  if (!options.profiles_dir.empty()) {
    if (auto exact = usable(Mode::exact); !exact) {
      // Counting still works; only the stacks are missing. Said once, here.
      std::fprintf(stderr, "heapgate: region profiles are not kept: %s\n", exact.error().message().c_str());
    } else {
      std::error_code ec;
      std::filesystem::create_directories(options.profiles_dir, ec);
      if (!std::filesystem::is_directory(options.profiles_dir, ec)) {
        std::fprintf(stderr,
                     "heapgate: region profiles are not kept: cannot create %s; fix: pass a writable "
                     "--heapgate_profiles directory\n",
                     options.profiles_dir.c_str());
      } else {
        rt.scope_mode = Mode::exact;
      }
    }
  }
  ::benchmark::AddCustomContext(std::string(kContextMode), std::string(to_string(options.mode)));
  std::string dump_path;
  if (options.mode == Mode::exact) {
    std::string dir = detail::bench_scratch_dir();
    if (dir.empty()) {
      return fail(make_error(ErrorCode::io_error, sys::temp_root(), "cannot create a private directory for dumps",
                             "set TMPDIR to a writable directory"));
    }
    dump_path = dir + "/memory-run.heap";
  }
  // Lives until the process exits: Google Benchmark keeps the pointer.
  static MemoryManager* manager = new MemoryManager(options.mode, dump_path);
  ::benchmark::RegisterMemoryManager(manager);
  return {};
}

int finish() {
  detail::BenchRuntime& rt = detail::bench_runtime();
  std::map<std::string, std::string> kept;
  std::vector<std::string> problems;
  std::size_t problem_count = 0;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    kept = rt.kept_profiles;
    problems = rt.problems;
    problem_count = rt.problem_count;
  }
  if (!kept.empty()) {
    Symbolizer symbols;
    auto exe = sys::self_exe_path();
    for (const auto& [stem, heap] : kept) {
      const std::string base = heap.substr(0, heap.size() - 5);  // drop ".heap"
      auto profile = read_profile(heap);
      if (!profile) {
        std::fprintf(stderr, "heapgate: %s\n", profile.error().message().c_str());
        continue;
      }
      NormalizedProfile normalized = normalize_profile(*profile, symbols);
      if (auto written =
              sys::write_file_atomic(base + ".folded", render_folded(normalized, ProfileMetric::accum_bytes));
          !written) {
        std::fprintf(stderr, "heapgate: %s\n", written.error().message().c_str());
      }
      if (!exe) continue;
      JeprofOptions svg;
      svg.binary = *exe;
      svg.profile = heap;
      svg.format = JeprofFormat::svg;
      svg.extra_args = {"--alloc_space"};
      svg.output_path = base + ".svg";
      if (auto drawn = run_jeprof(svg); !drawn) {
        ::unlink(svg.output_path->c_str());
        std::fprintf(stderr, "heapgate: no %s.svg: %s\n", base.c_str(), drawn.error().message().c_str());
      }
    }
    std::fprintf(stderr, "heapgate: region profiles (.heap, .folded, .svg) in %s\n", rt.options.profiles_dir.c_str());
  }
  for (const auto& problem : problems) std::fprintf(stderr, "heapgate: measurement failed: %s\n", problem.c_str());
  if (problem_count > problems.size()) {
    std::fprintf(stderr, "heapgate: ... and %zu more failed measurements\n", problem_count - problems.size());
  }
  if (!rt.scratch_dir.empty()) (void)::rmdir(rt.scratch_dir.c_str());
  return problem_count > 0 ? 1 : 0;
}

}  // namespace bench
}  // namespace heapgate
