// SPDX-License-Identifier: MIT
// The gate over Google Benchmark JSON output: the per-iteration counter names,
// parse_benchmark_json() and read_benchmark_json() into a Report, and judge() against a Baseline.
#pragma once

#include <string>
#include <string_view>

#include "heapgate/baseline.h"
#include "heapgate/error.h"
#include "heapgate/report.h"
#include "heapgate/gate.h"

/// The gate over Google Benchmark results: reads the JSON a benchmark binary
/// writes with `--benchmark_out=FILE` and judges each benchmark's allocations
/// *per iteration* against a stored Baseline, with the verdict logic of tests
/// (verdict.h). Part of heapgate::core: it reads JSON only and needs no
/// Google Benchmark. `heapgate bench compare` is its command line; the
/// measuring side is heapgate/benchmark.h (heapgate::benchmark).
namespace heapgate::bench {

/// The user counters a heapgate::bench::Scope sets, per region. An unnamed
/// region writes these names; a region named R writes "R.allocs/iter" etc.
/// Values are per iteration of the benchmark loop, except peak_bytes, which is
/// the region's high-water mark (a level, not a sum, so it is not divided).
inline constexpr std::string_view kAllocsCounter = "allocs/iter";
inline constexpr std::string_view kBytesCounter = "bytes/iter";
inline constexpr std::string_view kLiveAllocsCounter = "live_allocs/iter";
inline constexpr std::string_view kLiveBytesCounter = "live_bytes/iter";
inline constexpr std::string_view kPeakBytesCounter = "peak_bytes";

/// The keys heapgate adds to Google Benchmark's "context" object:
/// the mode that measured ("counters", "exact", or "off"), jemalloc's
/// version, and, when nothing could be measured, why and what to do.
inline constexpr std::string_view kContextMode = "heapgate.mode";
inline constexpr std::string_view kContextJemallocVersion = "heapgate.jemalloc_version";
inline constexpr std::string_view kContextUnavailable = "heapgate.unavailable_reason";

/// Parses Google Benchmark's JSON output (format of 1.7 and later; `source`
/// names it in errors) into a Report with one TestRecord per benchmark run
/// name, verdicts not yet decided (see judge()).
///
/// - run: `binary` is the base name of context.executable (else `source`'s
///   stem); `mode`, `jemalloc_version`, `unavailable_reason` come from the
///   heapgate.* context keys; `host` and `started_at` from host_name and date.
/// - records: name = run_name ("BM_Parse/64"), suite = the family (the part
///   before the first '/'), test = run_name. Metrics are per iteration,
///   rounded to whole numbers (live counts round up, so any leak shows):
///   1. heapgate's region counters (kAllocsCounter...) when present: exact
///      over the region and the reported run, whatever its iteration count;
///   2. else a MemoryManager's fields: allocations = allocs_per_iter,
///      allocated_bytes = total_allocated_bytes / memory iterations,
///      live_bytes = net_heap_growth / memory iterations (0 if negative),
///      peak_bytes = max_bytes_used, live_allocations = 0 (not reported).
///      Memory iterations are "memory_iterations" when the file has it, else
///      Google Benchmark's rule min(16, iterations).
///   A named region R adds a record "run_name[R]" from its own counters.
/// - repetitions: the last one (highest repetition_index) is used; Google
///   Benchmark 1.7 keeps the memory results of earlier repetitions through a
///   dangling pointer, so only the last one's are trustworthy. A file with
///   only aggregates (--benchmark_report_aggregates_only) uses the median's
///   (else the mean's) region counters.
/// - a benchmark that reported an error ("error_occurred") is `unavailable`
///   with `gtest_failed` set (it failed on its own); one skipped on purpose
///   ("skipped") gets no record; one with no measurement at all is
///   `unavailable` with the reason from the context, or with what to link.
///   Negative MemoryManager counts (heapgate's "could not measure" marker)
///   are `unavailable` too, never zeros.
///
/// Errors: `parse_error` at `source:line:column` for bad JSON, or at
/// `source: /json/pointer` for a wrong shape (no "benchmarks" array, a
/// benchmark without a name or iterations, a counter that is not a finite
/// number >= 0, a heapgate region missing one of its five counters). Pure.
Result<Report> parse_benchmark_json(std::string_view text, std::string_view source);

/// Reads and parses a `--benchmark_out` file. Errors: `io_error` naming the
/// path when it cannot be read; otherwise as parse_benchmark_json().
Result<Report> read_benchmark_json(const std::string& path);

/// How judge() decides.
struct JudgeOptions {
  /// Memory allocated in a benchmark's measured region and still live at its
  /// end (live_allocations or live_bytes > 0: a per-iteration leak) is a
  /// `leaked` failure. Off: live bytes are only compared with the baseline,
  /// for benchmarks that grow a container across iterations on purpose.
  bool check_leaks = true;
  /// The run's numbers are being accepted into the baseline: growths and
  /// shrinks become `pass`, benchmarks without an entry `new` (leaks and
  /// benchmark errors still fail).
  bool update = false;
};

/// Decides each measured record's verdict against `baseline` with the test
/// gate's logic: a leak (see JudgeOptions::check_leaks) is `leaked`;
/// otherwise compare_to_baseline() with Tolerances::for_mode of the record's
/// mode or the entry's own tolerance gives pass, regressed, improved or new.
/// `deltas`, `baseline` and `message` are filled. Then every baseline entry
/// without a record is added as `missing` (not a failure) and the records
/// are sorted by name. `unavailable` records are left as they are. Pure.
void judge(Report& report, const Baseline& baseline, const JudgeOptions& options = {});

}  // namespace heapgate::bench
