// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "heapgate/verdict.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

#include "heapgate/baseline.h"

namespace heapgate {
namespace {

std::string percent(double ratio) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.1f%%", ratio * 100.0);
  return buf;
}

std::string signed_number(std::int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+" PRId64, v);
  return buf;
}

}  // namespace

std::string_view to_string(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::pass: return "pass";
    case Verdict::regressed: return "regressed";
    case Verdict::improved: return "improved";
    case Verdict::leaked: return "leaked";
    case Verdict::over_budget: return "over_budget";
    case Verdict::new_test: return "new";
    case Verdict::missing: return "missing";
    case Verdict::unavailable: return "unavailable";
  }
  return "unavailable";
}

Result<Verdict> parse_verdict(std::string_view text) {
  for (Verdict v : kVerdicts) {
    if (text == to_string(v)) return v;
  }
  return fail(make_error(ErrorCode::invalid_argument, "verdict", "unknown verdict \"" + std::string(text) + "\"",
                         "use one of pass, regressed, improved, leaked, over_budget, new, missing, unavailable"));
}

bool is_failure(Verdict verdict, bool strict) noexcept {
  switch (verdict) {
    case Verdict::regressed:
    case Verdict::leaked:
    case Verdict::over_budget: return true;
    case Verdict::unavailable: return strict;
    case Verdict::pass:
    case Verdict::improved:
    case Verdict::new_test:
    case Verdict::missing: return false;
  }
  return false;
}

bool operator==(const Tolerance& a, const Tolerance& b) noexcept {
  return a.absolute == b.absolute && a.relative == b.relative;
}
bool operator!=(const Tolerance& a, const Tolerance& b) noexcept { return !(a == b); }

std::uint64_t allowed_change(const Tolerance& tolerance, std::uint64_t baseline) noexcept {
  double rel = tolerance.relative * static_cast<double>(baseline);
  std::uint64_t relative = 0;
  if (!(rel >= 0)) {
    relative = 0;  // negative or NaN relative tolerances allow nothing
  } else if (rel >= 18446744073709551615.0) {
    relative = std::numeric_limits<std::uint64_t>::max();
  } else {
    relative = static_cast<std::uint64_t>(std::floor(rel));
  }
  return relative > tolerance.absolute ? relative : tolerance.absolute;
}

Tolerances Tolerances::for_mode(Mode mode) noexcept {
  Tolerances t;
  if (mode != Mode::sampled) return t;
  for (MetricName m : kMetricNames) {
    t[m].relative = 0.10;
    bool bytes = m == MetricName::allocated_bytes || m == MetricName::live_bytes || m == MetricName::peak_bytes;
    t[m].absolute = bytes ? kSampledAbsoluteBytes : 0;
  }
  return t;
}

bool operator==(const Tolerances& a, const Tolerances& b) noexcept { return a.per_metric == b.per_metric; }
bool operator!=(const Tolerances& a, const Tolerances& b) noexcept { return !(a == b); }

bool operator==(const MetricDelta& a, const MetricDelta& b) noexcept {
  return a.metric == b.metric && a.baseline == b.baseline && a.current == b.current && a.delta == b.delta &&
         a.ratio == b.ratio && a.beyond_tolerance == b.beyond_tolerance && a.limit == b.limit;
}
bool operator!=(const MetricDelta& a, const MetricDelta& b) noexcept { return !(a == b); }

MetricDelta compare_metric(MetricName metric, std::uint64_t baseline, std::uint64_t current,
                           const Tolerance& tolerance) noexcept {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  MetricDelta d;
  d.metric = metric;
  d.baseline = baseline;
  d.current = current;
  std::uint64_t magnitude = current >= baseline ? current - baseline : baseline - current;
  std::int64_t signed_magnitude = static_cast<std::int64_t>(magnitude > kMax ? kMax : magnitude);
  d.delta = current >= baseline ? signed_magnitude : -signed_magnitude;
  d.ratio = baseline == 0 ? 0.0 : static_cast<double>(d.delta) / static_cast<double>(baseline);
  d.limit = allowed_change(tolerance, baseline);
  d.beyond_tolerance = magnitude > d.limit;
  return d;
}

std::string describe(const MetricDelta& delta) {
  std::string out(to_string(delta.metric));
  out += ' ';
  out += std::to_string(delta.baseline);
  out += " \xE2\x86\x92 ";  // →
  out += std::to_string(delta.current);
  out += " (";
  out += signed_number(delta.delta);
  if (delta.baseline != 0) {
    out += ", ";
    out += percent(delta.ratio);
  }
  out += ')';
  return out;
}

Comparison compare_to_baseline(const Metrics& current, const BaselineEntry* baseline, const Tolerances& tolerances,
                               std::optional<Mode> current_mode) {
  Comparison c;
  if (baseline == nullptr) {
    c.verdict = Verdict::new_test;
    c.explanation = "new: the baseline has no entry for this test; accept this run to record one.";
    return c;
  }
  const Tolerances& used = baseline->tolerance ? *baseline->tolerance : tolerances;
  std::string grew;
  std::string shrank;
  for (MetricName m : kMetricNames) {
    MetricDelta d = compare_metric(m, get(baseline->metrics, m), get(current, m), used[m]);
    if (d.beyond_tolerance) {
      std::string& list = d.delta > 0 ? grew : shrank;
      if (!list.empty()) list += "; ";
      list += describe(d);
      list += d.delta > 0 ? ", limit +" : ", limit -";
      list += std::to_string(d.limit);
    }
    c.deltas.push_back(d);
  }
  if (!grew.empty()) {
    c.verdict = Verdict::regressed;
    c.explanation = "regressed: " + grew + ".";
    if (!shrank.empty()) c.explanation += " Also improved: " + shrank + ".";
  } else if (!shrank.empty()) {
    c.verdict = Verdict::improved;
    c.explanation = "improved: " + shrank + "; accept this run to ratchet the baseline down.";
  } else {
    c.verdict = Verdict::pass;
    c.explanation = "pass: every metric is within tolerance of the baseline.";
  }
  if (baseline->tolerance) c.explanation += " (This test's own tolerances from the baseline were used.)";
  if (current_mode && (*current_mode == Mode::sampled) != (baseline->mode == Mode::sampled)) {
    c.explanation += " Note: the baseline was measured in " + std::string(to_string(baseline->mode)) +
                     " mode and this run in " + std::string(to_string(*current_mode)) +
                     " mode; sampled counts are estimates, so record the baseline in the mode the gate runs in.";
  }
  return c;
}

std::string explain_leak(const Metrics& metrics) {
  if (metrics.live_allocations == 0 && metrics.live_bytes == 0) return {};
  return "leaked " + std::to_string(metrics.live_allocations) +
         (metrics.live_allocations == 1 ? " allocation (" : " allocations (") + std::to_string(metrics.live_bytes) +
         " bytes) still live at the end of the test";
}

std::string explain_over_budget(MetricName metric, std::uint64_t limit, const Metrics& metrics) {
  std::uint64_t value = get(metrics, metric);
  if (value <= limit) return {};
  return std::string(to_string(metric)) + " " + std::to_string(value) + " over the budget of " +
         std::to_string(limit) + " (+" + std::to_string(value - limit) + ")";
}

}  // namespace heapgate
