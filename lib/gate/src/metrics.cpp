// SPDX-License-Identifier: MIT
// Metric helpers (heapgate/metrics.h): names and parse_size(), Metrics from a ScopeResult, sampled
// intervals, thread parts and scheduling_allowance(), Tolerances::for_mode(), compare_metric().
#include "heapgate/metrics.h"

#include <algorithm>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "heapgate/profile_scope.h"
#include "heapgate/sampling.h"

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

bool operator==(const Metrics& a, const Metrics& b) noexcept {
  return a.allocations == b.allocations && a.allocated_bytes == b.allocated_bytes &&
         a.live_allocations == b.live_allocations && a.live_bytes == b.live_bytes && a.peak_bytes == b.peak_bytes;
}

bool operator!=(const Metrics& a, const Metrics& b) noexcept { return !(a == b); }

std::string_view to_string(MetricName metric) noexcept { return word_of(kMetricNameWords, metric, "allocations"); }

Result<MetricName> parse_metric_name(std::string_view text) {
  return parse_word(kMetricNameWords, text, "metric", "metric", "allocations");
}

Result<std::uint64_t> parse_size(std::string_view text) {
  auto bad = [&] {
    return fail(make_error(ErrorCode::parse_error, "size",
                           "\"" + std::string(text) + "\" is not a size; expected a number and an optional unit",
                           "write e.g. 4096, 512 KB, 24 MiB or 1.5 GB (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"));
  };
  std::size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  std::uint64_t whole = 0;
  std::size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (whole > (UINT64_MAX - digit) / 10) return bad();
    whole = whole * 10 + digit;
  }
  double fraction = 0;
  if (i < text.size() && text[i] == '.') {
    double scale = 0.1;
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits, scale /= 10) {
      fraction += scale * (text[i] - '0');
    }
  }
  if (digits == 0) return bad();
  while (i < text.size() && text[i] == ' ') ++i;
  std::string unit;
  for (; i < text.size() && text[i] != ' '; ++i) {
    const char c = text[i];
    unit += c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  while (i < text.size() && text[i] == ' ') ++i;
  if (i != text.size()) return bad();
  if ((unit.empty() || unit == "b") && fraction == 0) return whole;  // exact beyond 2^53 too
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},      {"b", 1},        {"kb", 1e3},        {"mb", 1e6},           {"gb", 1e9},
      {"tb", 1e12}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    const double bytes = (static_cast<double>(whole) + fraction) * factor;
    if (!(bytes < 18446744073709551615.0)) return bad();
    return static_cast<std::uint64_t>(bytes);
  }
  return bad();
}

std::uint64_t get(const Metrics& metrics, MetricName metric) noexcept {
  return get(const_cast<Metrics&>(metrics), metric);  // the non-const overload only reads here
}

std::uint64_t& get(Metrics& metrics, MetricName metric) noexcept {
  switch (metric) {
    case MetricName::allocations:
      return metrics.allocations;
    case MetricName::allocated_bytes:
      return metrics.allocated_bytes;
    case MetricName::live_allocations:
      return metrics.live_allocations;
    case MetricName::live_bytes:
      return metrics.live_bytes;
    case MetricName::peak_bytes:
      return metrics.peak_bytes;
  }
  return metrics.allocations;
}

Metrics from_scope(const ScopeResult& scope) noexcept {
  Metrics m;
  m.allocations = scope.allocations;
  m.allocated_bytes = scope.allocated_bytes;
  m.live_allocations = scope.live_allocations;
  m.live_bytes = scope.live_bytes;
  m.peak_bytes = scope.peak_bytes;
  return m;
}

std::vector<MetricName> not_measured_by(const ScopeResult& scope) {
  if (!scope.bytes_only) return {};
  return {MetricName::allocations, MetricName::live_allocations, MetricName::peak_bytes};
}

bool is_measured(const std::vector<MetricName>& not_measured, MetricName metric) noexcept {
  return std::find(not_measured.begin(), not_measured.end(), metric) == not_measured.end();
}

std::string describe_not_measured(const std::vector<MetricName>& not_measured) {
  if (not_measured.empty()) return {};
  std::string names;
  for (std::size_t i = 0; i < not_measured.size(); ++i) {
    if (i > 0) names += i + 1 == not_measured.size() ? " and " : ", ";
    names += to_string(not_measured[i]);
  }
  return names + (not_measured.size() == 1 ? " was" : " were") +
         " not measured (bytes of the calling thread only: no allocation hooks, e.g. HEAPGATE_HOOKS=off)";
}

std::optional<Metrics> standard_errors_of(const ScopeResult& scope) {
  if (!scope.estimated) return std::nullopt;
  auto up = [](double e) { return saturating_count(std::ceil(e)); };
  Metrics m;
  m.allocations = up(scope.sampling_errors.allocations);
  m.allocated_bytes = up(scope.sampling_errors.allocated_bytes);
  m.live_allocations = up(scope.sampling_errors.live_allocations);
  m.live_bytes = up(scope.sampling_errors.live_bytes);
  return m;
}

std::string estimate_interval(std::uint64_t value, std::uint64_t standard_error) {
  if (standard_error == 0) return {};
  const double half = std::ceil(kSamplingConfidenceZ * static_cast<double>(standard_error));
  const double v = static_cast<double>(value);
  return std::to_string(saturating_count(v - half)) + "\xE2\x80\x93" +  // en dash
         std::to_string(saturating_count(v + half));
}

bool operator==(const ThreadShare& a, const ThreadShare& b) noexcept {
  return a.allocations == b.allocations && a.bytes == b.bytes && a.switches == b.switches && a.own_waits == b.own_waits;
}
bool operator!=(const ThreadShare& a, const ThreadShare& b) noexcept { return !(a == b); }

ThreadShare allocated_part(const ThreadShare& share) noexcept {
  ThreadShare out;
  out.allocations = share.allocations;
  out.bytes = share.bytes;
  return out;
}

void keep_most(ThreadShare& most, const ThreadShare& seen) noexcept {
  most.allocations = std::max(most.allocations, seen.allocations);
  most.bytes = std::max(most.bytes, seen.bytes);
  most.switches = std::max(most.switches, seen.switches);
  most.own_waits = std::max(most.own_waits, seen.own_waits);
}

bool operator==(const Measurement& a, const Measurement& b) noexcept {
  return a.metrics == b.metrics && a.other_threads == b.other_threads;
}
bool operator!=(const Measurement& a, const Measurement& b) noexcept { return !(a == b); }

bool operator==(const AllocationCount& a, const AllocationCount& b) noexcept {
  return a.allocations == b.allocations && a.bytes == b.bytes;
}
bool operator!=(const AllocationCount& a, const AllocationCount& b) noexcept { return !(a == b); }

bool operator==(const ThreadPartBand& a, const ThreadPartBand& b) noexcept {
  return a.low == b.low && a.high == b.high;
}
bool operator!=(const ThreadPartBand& a, const ThreadPartBand& b) noexcept { return !(a == b); }

void widen(ThreadPartBand& band, const AllocationCount& part) noexcept {
  band.low.allocations = std::min(band.low.allocations, part.allocations);
  band.low.bytes = std::min(band.low.bytes, part.bytes);
  band.high.allocations = std::max(band.high.allocations, part.allocations);
  band.high.bytes = std::max(band.high.bytes, part.bytes);
}

void widen(ThreadPartBand& band, const ThreadPartBand& other) noexcept {
  widen(band, other.low);
  widen(band, other.high);
}

AllocationCount own_thread_part(const Metrics& metrics, const ThreadShare& other_threads) noexcept {
  auto less = [](std::uint64_t total, std::uint64_t part) { return total - std::min(total, part); };
  return {less(metrics.allocations, other_threads.allocations), less(metrics.allocated_bytes, other_threads.bytes)};
}

bool operator==(const PartJudged& a, const PartJudged& b) noexcept {
  return a.now == b.now && a.recorded == b.recorded && a.limit == b.limit && a.banded == b.banded;
}
bool operator!=(const PartJudged& a, const PartJudged& b) noexcept { return !(a == b); }
bool operator==(const ThreadPartsJudged& a, const ThreadPartsJudged& b) noexcept {
  return a.own_thread == b.own_thread && a.other_threads == b.other_threads;
}
bool operator!=(const ThreadPartsJudged& a, const ThreadPartsJudged& b) noexcept { return !(a == b); }

AllocationCount other_threads_part(const ThreadShare& share) noexcept { return {share.allocations, share.bytes}; }

std::uint64_t mean_block_bytes(std::uint64_t bytes, std::uint64_t blocks) noexcept {
  return blocks == 0 ? 0 : bytes / blocks + (bytes % blocks != 0);
}

std::uint64_t scheduling_allowance(MetricName metric, const ThreadShare& other_threads, const Metrics& own,
                                   std::uint64_t largest_block) noexcept {
  if (other_threads.empty()) return 0;
  const bool bytes =
      metric == MetricName::allocated_bytes || metric == MetricName::live_bytes || metric == MetricName::peak_bytes;
  const std::uint64_t volume = bytes ? other_threads.bytes : other_threads.allocations;
  const std::uint64_t block_bytes = other_threads.allocations > 0
                                        ? mean_block_bytes(other_threads.bytes, other_threads.allocations)
                                        : mean_block_bytes(own.allocated_bytes, own.allocations);
  std::uint64_t blocks = bytes ? kSchedulingBlocks * block_bytes : kSchedulingBlocks;
  if (metric == MetricName::allocated_bytes && largest_block > block_bytes) {
    blocks = largest_block + (kSchedulingBlocks - 1) * block_bytes;
  }
  const std::uint64_t slack = saturating_count(std::ceil(kOtherThreadsSlack * static_cast<double>(volume)));
  std::uint64_t allowance = std::max(slack, blocks);
  if (metric == MetricName::allocated_bytes && other_threads.allocations > 0 && allowance < kOtherThreadsBytesFloor) {
    allowance = kOtherThreadsBytesFloor;
  }
  // The peak is the most bytes live at once, all threads together: the test's
  // own thread repeats its part exactly, but whether the other threads' blocks
  // are live at that moment is scheduling. Up to all of them may be.
  if (metric == MetricName::peak_bytes && other_threads.bytes > allowance) return other_threads.bytes;
  return allowance;
}

bool operator==(const CallSite& a, const CallSite& b) noexcept {
  return a.function == b.function && a.location == b.location && a.allocations == b.allocations && a.bytes == b.bytes;
}
bool operator!=(const CallSite& a, const CallSite& b) noexcept { return !(a == b); }

bool operator==(const Tolerance& a, const Tolerance& b) noexcept {
  return a.absolute == b.absolute && a.relative == b.relative;
}
bool operator!=(const Tolerance& a, const Tolerance& b) noexcept { return !(a == b); }

std::uint64_t saturating_count(double x) noexcept {
  if (!(x > 0)) return 0;
  if (x >= 18446744073709551615.0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(x);
}

std::uint64_t allowed_change(const Tolerance& tolerance, std::uint64_t baseline) noexcept {
  // Negative or NaN relative tolerances allow nothing.
  const std::uint64_t relative = saturating_count(tolerance.relative * static_cast<double>(baseline));
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

bool operator==(const NoiseBand& a, const NoiseBand& b) noexcept {
  return a.runs == b.runs && a.low == b.low && a.high == b.high;
}
bool operator!=(const NoiseBand& a, const NoiseBand& b) noexcept { return !(a == b); }

bool operator==(const MetricDelta& a, const MetricDelta& b) noexcept {
  return a.metric == b.metric && a.baseline == b.baseline && a.current == b.current && a.delta == b.delta &&
         a.ratio == b.ratio && a.beyond_tolerance == b.beyond_tolerance && a.grew == b.grew && a.limit == b.limit;
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
  d.grew = d.beyond_tolerance && d.delta > 0;
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

}  // namespace heapgate
