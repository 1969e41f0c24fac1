// SPDX-License-Identifier: MIT
// The numbers a gate compares: Metrics and MetricName, parse_size(), Tolerance(s), CallSite,
// ThreadShare, Measurement, NoiseBand, scheduling_allowance(), MetricDelta and compare_metric().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/allocator.h"
#include "heapgate/error.h"
#include "heapgate/vocabulary.h"

namespace heapgate {

struct ScopeResult;

/// The five numbers a gate compares for one test. Counts are allocations;
/// bytes are usable sizes (requests rounded up to jemalloc's size classes, see
/// ScopeResult). Plain data; compare with `==`.
struct Metrics {
  /// Allocations made during the test, by any thread.
  std::uint64_t allocations = 0;
  /// Bytes of those allocations.
  std::uint64_t allocated_bytes = 0;
  /// Allocations made during the test and still live at its end (leaks).
  std::uint64_t live_allocations = 0;
  /// Bytes of those.
  std::uint64_t live_bytes = 0;
  /// The highest live_bytes reached at any moment during the test.
  std::uint64_t peak_bytes = 0;
};

/// Field-by-field equality.
bool operator==(const Metrics& a, const Metrics& b) noexcept;
bool operator!=(const Metrics& a, const Metrics& b) noexcept;

/// Names one field of Metrics. Closed list, spelled as in JSON, flags and
/// the `heapgate.<name>` JUnit/gtest properties; the values are 0..4 in this
/// order, so `static_cast<MetricName>(i)` walks them:
/// - `allocations`: Metrics::allocations.
/// - `allocated_bytes`: Metrics::allocated_bytes.
/// - `live_allocations`: Metrics::live_allocations.
/// - `live_bytes`: Metrics::live_bytes.
/// - `peak_bytes`: Metrics::peak_bytes.
enum class MetricName { allocations, allocated_bytes, live_allocations, live_bytes, peak_bytes };

/// Every MetricName with its name, in declaration order (the order of
/// reports and tables, and of the "expected one of" lists).
inline constexpr Vocabulary<MetricName, 5> kMetricNameWords = {{
    {MetricName::allocations, "allocations"},
    {MetricName::allocated_bytes, "allocated_bytes"},
    {MetricName::live_allocations, "live_allocations"},
    {MetricName::live_bytes, "live_bytes"},
    {MetricName::peak_bytes, "peak_bytes"},
}};

/// Every MetricName, in declaration order.
inline constexpr std::array<MetricName, 5> kMetricNames = values_of(kMetricNameWords);

/// How much a test allocates in its window, as opposed to what it leaves live:
/// the metrics timing and a test's own variation may move; live counts are
/// judged exactly (a leak is a change however it came about).
inline constexpr std::array<MetricName, 3> kVolumeMetrics = {MetricName::allocations, MetricName::allocated_bytes,
                                                             MetricName::peak_bytes};

/// The metric's name as written in JSON ("live_bytes").
std::string_view to_string(MetricName metric) noexcept;
/// Parses a metric name. Errors: `invalid_argument` naming the value and
/// listing the valid names (callers that parse a file re-code it as they need).
Result<MetricName> parse_metric_name(std::string_view text);

/// The value of `metric` in `metrics`.
std::uint64_t get(const Metrics& metrics, MetricName metric) noexcept;
/// A reference to the field `metric` of `metrics`, for setting it.
std::uint64_t& get(Metrics& metrics, MetricName metric) noexcept;

/// A byte count as people write budgets: a whole or decimal number and an
/// optional unit, case-insensitive, with or without a space: "4096", "512 B",
/// "512 KB" / "24 MB" / "1 GB" (powers of 1000), "512 KiB" / "24 MiB" /
/// "1.5 GiB" (powers of 1024), "TB"/"TiB" too. Rounded down to whole bytes.
/// Errors: `parse_error` naming the text and the units.
Result<std::uint64_t> parse_size(std::string_view text);

/// The five metrics of a finished ProfileScope, copied field by field. A
/// `bytes_only` fallback scope gives zero counts and peak (see ScopeResult):
/// not_measured_by() names them.
Metrics from_scope(const ScopeResult& scope) noexcept;

/// The metrics a scope could not measure, in kMetricNames order: for a
/// `bytes_only` scope (HEAPGATE_HOOKS=off, or no usable allocation hooks:
/// the calling thread's bytes only) allocations, live_allocations and
/// peak_bytes; none otherwise. A report leaves them out and says so, a
/// comparison skips them.
std::vector<MetricName> not_measured_by(const ScopeResult& scope);
/// `metric` is not in `not_measured`.
bool is_measured(const std::vector<MetricName>& not_measured, MetricName metric) noexcept;
/// "allocations, live_allocations and peak_bytes were not measured (bytes of
/// the calling thread only: no allocation hooks)", "" for none.
std::string describe_not_measured(const std::vector<MetricName>& not_measured);

/// The standard errors of a sampled scope's metrics (ScopeResult::sampling_errors),
/// rounded up; peak_bytes, counted by the hooks and not estimated, gets 0.
/// nullopt for exact counts.
std::optional<Metrics> standard_errors_of(const ScopeResult& scope);

/// The interval a sampled estimate lies in: `value` ± kSamplingConfidenceZ
/// standard errors, floored at 0, as "900–1500". "" when `standard_error` is 0.
std::string estimate_interval(std::uint64_t value, std::uint64_t standard_error);

/// How far one metric may move from its baseline and still pass: a change
/// is within tolerance when |delta| <= max(absolute, relative * baseline).
struct Tolerance {
  /// Allowed change in the metric's unit (allocations or bytes).
  std::uint64_t absolute = 0;
  /// Allowed change as a fraction of the baseline value (0.1 = 10%); >= 0.
  double relative = 0;
};

/// Field-by-field equality (doubles compare exactly: JSON round trips are exact).
bool operator==(const Tolerance& a, const Tolerance& b) noexcept;
bool operator!=(const Tolerance& a, const Tolerance& b) noexcept;

/// `x` as a count of allocations or bytes: rounded down, 0 when negative or
/// NaN, the largest count at or beyond 2^64.
std::uint64_t saturating_count(double x) noexcept;

/// The largest change of a metric whose baseline is `baseline` that stays
/// within `tolerance`: max(absolute, floor(relative * baseline)), saturating.
std::uint64_t allowed_change(const Tolerance& tolerance, std::uint64_t baseline) noexcept;

/// One Tolerance per MetricName.
struct Tolerances {
  /// Indexed by MetricName (see kMetricNames); all zero (strict) by default.
  std::array<Tolerance, kMetricNames.size()> per_metric{};

  Tolerance& operator[](MetricName metric) noexcept { return per_metric[static_cast<std::size_t>(metric)]; }
  const Tolerance& operator[](MetricName metric) const noexcept { return per_metric[static_cast<std::size_t>(metric)]; }

  /// Every metric exact: any change beyond 0 counts.
  static Tolerances strict() noexcept { return {}; }
  /// The defaults for a mode:
  /// - `off`, `counters`, `exact`: strict. These counts are deterministic for
  ///   deterministic code, so any change is a real change.
  /// - `sampled`: 10% relative on every metric, plus an absolute allowance of
  ///   kSampledAbsoluteBytes on the three byte metrics. Sampled counts are
  ///   estimates whose error is about one sample period (jemalloc's default
  ///   lg_prof_sample:19 = 512 KiB) however small the test, so small tests
  ///   need the absolute part. Used only when neither the run nor the
  ///   baseline knows its standard errors (and for peak_bytes); otherwise
  ///   compare_to_baseline() derives the limit from them (docs/design.md §6b).
  static Tolerances for_mode(Mode mode) noexcept;
};

/// What one call site allocated during a test: the innermost frame of the
/// test's own code (library frames such as std:: containers skipped), with
/// its allocations summed over every stack through it. Baselines keep a few
/// per test, so a regression is explained as the change at each site.
struct CallSite {
  /// The function, template arguments abbreviated ("Lru<…>::put(int)").
  std::string function;
  /// The line ("lru.cpp:42"): with the function, the key; "" when the debug
  /// info has no line.
  std::string location;
  std::uint64_t allocations = 0;
  std::uint64_t bytes = 0;
};

bool operator==(const CallSite& a, const CallSite& b) noexcept;
bool operator!=(const CallSite& a, const CallSite& b) noexcept;

/// What threads other than the test's own allocated during it
/// (ScopeResult::other_thread_*): a thread pool's workers, a background
/// compaction. How much of that lands inside a test depends on scheduling.
/// Also how often the test's own thread waited (own_waits): a test that
/// waits on a timer, a socket or another process is exposed to scheduling
/// as much as one other threads ran in.
struct ThreadShare {
  std::uint64_t allocations = 0;
  std::uint64_t bytes = 0;
  /// How often other threads were switched in or out during the test
  /// (their context switches, getrusage()): 0 when none ran, so the test's
  /// own thread was the only one whose timing its counts could depend on.
  /// Other threads that ran without allocating inside the test still
  /// change what the test's own thread allocates (a queue that grows when
  /// its consumer lags), so such a test's counts may vary too.
  std::uint64_t switches = 0;
  /// How often the test's own thread gave up the processor to wait
  /// (voluntary context switches, getrusage()): for a timer, I/O, a lock.
  /// A test that waits on 1,000 timers of 10 ms may, on a busy machine,
  /// make one allocation more.
  std::uint64_t own_waits = 0;
  /// Nothing else ran or allocated during the test, and its own thread never
  /// waited: it repeats exactly.
  bool empty() const noexcept { return allocations == 0 && switches == 0 && own_waits == 0; }
};
bool operator==(const ThreadShare& a, const ThreadShare& b) noexcept;
bool operator!=(const ThreadShare& a, const ThreadShare& b) noexcept;

/// What other threads allocated, without the run's switches and waits: the
/// part of a ThreadShare a baseline keeps.
ThreadShare allocated_part(const ThreadShare& share) noexcept;

/// Raises each field of `most` to `seen`'s where it is larger: the most other
/// threads did over several runs of a test.
void keep_most(ThreadShare& most, const ThreadShare& seen) noexcept;

/// One measurement of a test: its metrics, and the part of its allocations
/// other threads made. A further run that learns a test's spread or
/// confirms a regression is one (TestRecord::samples, ::confirmations), so a
/// threaded test's own thread can be judged apart from its other threads.
struct Measurement {
  Metrics metrics;
  ThreadShare other_threads = {};
};
bool operator==(const Measurement& a, const Measurement& b) noexcept;
bool operator!=(const Measurement& a, const Measurement& b) noexcept;

/// Allocations and their bytes.
struct AllocationCount {
  std::uint64_t allocations = 0;
  std::uint64_t bytes = 0;
};
bool operator==(const AllocationCount& a, const AllocationCount& b) noexcept;
bool operator!=(const AllocationCount& a, const AllocationCount& b) noexcept;

/// What a test's metrics did over several runs of one build (`heapgate run
/// --calibrate N`): the lowest and highest value of each metric. A test whose
/// counts depend on thread timing (a background thread's work) gets one;
/// a deterministic test, whose runs all agree, does not.
struct NoiseBand {
  /// How many runs it was learned from.
  std::uint32_t runs = 0;
  Metrics low;
  Metrics high;
};
bool operator==(const NoiseBand& a, const NoiseBand& b) noexcept;
bool operator!=(const NoiseBand& a, const NoiseBand& b) noexcept;

/// What one part of a threaded test allocated, lowest and highest over the
/// runs that recorded it: its own thread's (its metrics less its other
/// threads' share), or its other threads'.
struct ThreadPartBand {
  AllocationCount low;
  AllocationCount high;
};
bool operator==(const ThreadPartBand& a, const ThreadPartBand& b) noexcept;
bool operator!=(const ThreadPartBand& a, const ThreadPartBand& b) noexcept;

/// How one part of a threaded test was judged: what it made in this run,
/// the band it made when recorded, and the most it may make.
struct PartJudged {
  AllocationCount now;
  ThreadPartBand recorded;
  AllocationCount limit;
  /// Judged within its band widened by its spread (and at least 10%): it
  /// varied when recorded (the own thread's part also when the test's totals
  /// did). Otherwise exact: the recorded count, the tolerance and the
  /// scheduling allowance only.
  bool banded = false;
};
bool operator==(const PartJudged& a, const PartJudged& b) noexcept;
bool operator!=(const PartJudged& a, const PartJudged& b) noexcept;

/// What was gated how in a threaded test judged in parts (compare_to_baseline()).
struct ThreadPartsJudged {
  PartJudged own_thread;
  PartJudged other_threads;
};
bool operator==(const ThreadPartsJudged& a, const ThreadPartsJudged& b) noexcept;
bool operator!=(const ThreadPartsJudged& a, const ThreadPartsJudged& b) noexcept;

/// Widens `band` to hold `part`, or all of `other`.
void widen(ThreadPartBand& band, const AllocationCount& part) noexcept;
void widen(ThreadPartBand& band, const ThreadPartBand& other) noexcept;

/// The test's own thread's part of `metrics`: its allocations and
/// allocated bytes less what other threads made (saturating at 0).
AllocationCount own_thread_part(const Metrics& metrics, const ThreadShare& other_threads) noexcept;

/// The other threads' part of a run: what `share` says they allocated.
AllocationCount other_threads_part(const ThreadShare& share) noexcept;

/// The mean size of `blocks` blocks of `bytes` in all, rounded up; 0 for none.
std::uint64_t mean_block_bytes(std::uint64_t bytes, std::uint64_t blocks) noexcept;

/// The share of other threads' allocations a test may gain or lose by
/// scheduling alone: 1%.
inline constexpr double kOtherThreadsSlack = 0.01;

/// The least a test other threads allocated in may move in allocated_bytes
/// with the same count: a buffer sized by how much a read returned (TCP
/// segments, a pipe) lands in a bigger or smaller size class by timing: one
/// such block moved a test by 384 bytes with 470 other-thread blocks of 48
/// bytes on average.
inline constexpr std::uint64_t kOtherThreadsBytesFloor = 1024;

/// The least scheduling may move a test other threads ran in, in blocks: one
/// more exchange with another thread is often two (a server that reads a
/// request again under load: one 4 KiB socket buffer and one small block, on
/// the test's own thread, while its other threads made 14 allocations).
inline constexpr std::uint64_t kSchedulingBlocks = 2;

/// How far `metric` of a test whose baseline saw `other_threads` (and
/// measured `own`) may move by scheduling: kOtherThreadsSlack of the other
/// threads' allocations (count metrics) or bytes (byte metrics), and at least
/// kSchedulingBlocks blocks: in count metrics that many allocations; in byte
/// metrics that many of the other threads' mean block (or the test's own when
/// only its thread allocated while others ran), where in allocated_bytes one
/// of them may be `largest_block`, the largest kind the test is known to
/// make (its call sites; 0 if unknown), and at least kOtherThreadsBytesFloor
/// when other threads allocated. For peak_bytes, all of the other threads'
/// bytes (whether their blocks are live at the test's peak is scheduling).
/// 0 when no other thread ran: a single-threaded test repeats exactly.
/// docs/design.md §6a.
std::uint64_t scheduling_allowance(MetricName metric, const ThreadShare& other_threads, const Metrics& own,
                                   std::uint64_t largest_block = 0) noexcept;

/// The absolute byte allowance of `sampled` mode: jemalloc's default sample period.
inline constexpr std::uint64_t kSampledAbsoluteBytes = 512 * 1024;

/// Field-by-field equality (doubles compare exactly: JSON round trips are exact).
bool operator==(const Tolerances& a, const Tolerances& b) noexcept;
bool operator!=(const Tolerances& a, const Tolerances& b) noexcept;

/// How one metric compares with its baseline.
struct MetricDelta {
  MetricName metric = MetricName::allocations;
  std::uint64_t baseline = 0;
  std::uint64_t current = 0;
  /// current - baseline, saturated to the int64 range.
  std::int64_t delta = 0;
  /// delta / baseline (0.5 = +50%); 0 when baseline is 0, where the relative
  /// change is undefined (read `delta` instead).
  double ratio = 0;
  /// |delta| is greater than the allowed change of the tolerance used.
  bool beyond_tolerance = false;
  /// Beyond it upward: a regression. Usually delta > 0; a threaded test
  /// judged in parts regresses when its own thread's part grew, which its
  /// total can hide (other threads took less of the work).
  bool grew = false;
  /// The allowed change used (allowed_change() of the tolerance), so a reader
  /// can show the limit without knowing the tolerances.
  std::uint64_t limit = 0;
};

/// Field-by-field equality (doubles compare exactly: JSON round trips are exact).
bool operator==(const MetricDelta& a, const MetricDelta& b) noexcept;
bool operator!=(const MetricDelta& a, const MetricDelta& b) noexcept;

/// Compares one metric; pure.
MetricDelta compare_metric(MetricName metric, std::uint64_t baseline, std::uint64_t current,
                           const Tolerance& tolerance) noexcept;

/// One readable phrase for a delta: "allocations 120 → 180 (+60, +50.0%)".
/// The percentage is left out when the baseline is 0.
std::string describe(const MetricDelta& delta);

}  // namespace heapgate
