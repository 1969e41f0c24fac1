// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
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
#include "heapgate/metrics.h"

namespace heapgate {

struct BaselineEntry;

/// The outcome of gating one test. Closed list, spelled as in JSON and
/// Markdown (`new_test` is written "new", since `new` is a C++ keyword):
/// - `pass`: measured, and every metric within tolerance of the baseline.
/// - `regressed`: some metric grew beyond its tolerance. A failure.
/// - `improved`: some metric shrank beyond its tolerance and none grew beyond
///   it; reported so the baseline can be ratcheted down. Not a failure.
/// - `leaked`: allocations made by the test were still live at its end and
///   leaks are checked. A failure.
/// - `over_budget`: a `HEAPGATE_LIMIT_*` budget in the test was exceeded. A failure.
/// - `new_test` ("new"): measured, but the baseline has no entry for the test.
/// - `missing`: the baseline has an entry, but the test did not run.
/// - `unavailable`: nothing could be measured (no jemalloc, no profiling); a
///   failure only in strict mode.
enum class Verdict { pass, regressed, improved, leaked, over_budget, new_test, missing, unavailable };

/// Every Verdict, in declaration order.
inline constexpr std::array<Verdict, 8> kVerdicts = {Verdict::pass,        Verdict::regressed, Verdict::improved,
                                                     Verdict::leaked,      Verdict::over_budget, Verdict::new_test,
                                                     Verdict::missing,     Verdict::unavailable};

/// The verdict's name as written in JSON ("over_budget"; "new" for new_test).
std::string_view to_string(Verdict verdict) noexcept;
/// Parses a verdict name. Errors: `invalid_argument` naming the value and
/// listing the valid names.
Result<Verdict> parse_verdict(std::string_view text);

/// True for the verdicts that fail a gate: regressed, leaked, over_budget,
/// and unavailable when `strict` (nothing measured must not pass silently).
bool is_failure(Verdict verdict, bool strict = false) noexcept;

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

/// The largest change of a metric whose baseline is `baseline` that stays
/// within `tolerance`: max(absolute, floor(relative * baseline)), saturating.
std::uint64_t allowed_change(const Tolerance& tolerance, std::uint64_t baseline) noexcept;

/// One Tolerance per MetricName.
struct Tolerances {
  /// Indexed by MetricName (see kMetricNames); all zero (strict) by default.
  std::array<Tolerance, kMetricNames.size()> per_metric{};

  Tolerance& operator[](MetricName metric) noexcept { return per_metric[static_cast<std::size_t>(metric)]; }
  const Tolerance& operator[](MetricName metric) const noexcept {
    return per_metric[static_cast<std::size_t>(metric)];
  }

  /// Every metric exact: any change beyond 0 counts.
  static Tolerances strict() noexcept { return {}; }
  /// The defaults for a mode:
  /// - `off`, `counters`, `exact`: strict. These counts are deterministic for
  ///   deterministic code, so any change is a real change.
  /// - `sampled`: 10% relative on every metric, plus an absolute allowance of
  ///   kSampledAbsoluteBytes on the three byte metrics. Sampled counts are
  ///   estimates whose error is about one sample period (jemalloc's default
  ///   lg_prof_sample:19 = 512 KiB) however small the test, so small tests
  ///   need the absolute part. A starting point: override per test in the
  ///   baseline where a test is noisier.
  static Tolerances for_mode(Mode mode) noexcept;
};

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

/// The outcome of comparing a test's metrics with its baseline entry.
struct Comparison {
  /// pass, regressed, improved or new_test.
  Verdict verdict = Verdict::pass;
  /// One entry per metric, in kMetricNames order; empty for new_test.
  std::vector<MetricDelta> deltas;
  /// One readable paragraph, e.g. "regressed: allocations 120 → 180 (+60,
  /// +50.0%), limit +0." Names every metric beyond tolerance, growths first.
  std::string explanation;
};

/// Compares `current` with `baseline` (a null baseline: the test is new).
/// The tolerances are the entry's own override (BaselineEntry::tolerance) if
/// it has one, else `tolerances` (typically Tolerances::for_mode of the run).
/// Any metric that grew beyond tolerance → regressed; otherwise any that
/// shrank beyond it → improved; otherwise pass. When `current_mode` is given
/// and exactly one of it and the baseline's mode is `sampled`, the explanation
/// says the two are measured differently. Leaks and budgets are the caller's
/// to decide (see explain_leak, explain_over_budget). Pure; thread-safe.
Comparison compare_to_baseline(const Metrics& current, const BaselineEntry* baseline, const Tolerances& tolerances,
                               std::optional<Mode> current_mode = std::nullopt);

/// "leaked 3 allocations (96 bytes) still live at the end of the test", or ""
/// when nothing is live.
std::string explain_leak(const Metrics& metrics);

/// "allocations 180 over the budget of 150 (+30)", or "" when within it.
std::string explain_over_budget(MetricName metric, std::uint64_t limit, const Metrics& metrics);

}  // namespace heapgate
