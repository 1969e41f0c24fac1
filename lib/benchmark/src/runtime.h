// SPDX-License-Identifier: MIT
// Private: what heapgate::benchmark's pieces (options, MemoryManager, Scope)
// share in one process.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "heapgate/benchmark.h"

namespace heapgate::detail {

struct BenchRuntime {
  /// Set by register_memory_manager(); Scopes count in `counters` until then.
  bool configured = false;
  bench::Options options;
  /// How Scopes measure: counters, exact (profiles kept or mode exact), or off.
  Mode scope_mode = Mode::counters;
  /// True between heapgate's MemoryManager Start() and Stop(): Scopes stay idle.
  std::atomic<bool> in_memory_run{false};

  std::mutex mutex;  // guards the members below
  /// Region profiles kept under options.profiles_dir (.heap paths, as keys and values).
  std::map<std::string, std::string> kept_profiles;
  /// Measurements that failed, for finish() (at most a few are kept).
  std::vector<std::string> problems;
  std::size_t problem_count = 0;
  /// A private directory for dumps that are read and then removed.
  std::string scratch_dir;
};

/// The process' one BenchRuntime (never destroyed: Scopes may finish late).
BenchRuntime& bench_runtime();

/// Records a failed measurement for finish(); thread-safe.
void add_bench_problem(std::string problem);

/// A file name made of [A-Za-z0-9._-] from `name` ("BM_Parse/64" -> "BM_Parse_64").
std::string bench_file_stem(const std::string& name);

/// The scratch directory (created on first use), or "" if it cannot be made.
std::string bench_scratch_dir();

}  // namespace heapgate::detail
