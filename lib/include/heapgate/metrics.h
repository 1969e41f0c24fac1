// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "heapgate/error.h"

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

/// Every MetricName, in declaration order (the order of reports and tables).
inline constexpr std::array<MetricName, 5> kMetricNames = {MetricName::allocations, MetricName::allocated_bytes,
                                                           MetricName::live_allocations, MetricName::live_bytes,
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

/// The five metrics of a finished ProfileScope, copied field by field. A
/// `bytes_only` fallback scope gives zero counts and peak (see ScopeResult).
Metrics from_scope(const ScopeResult& scope) noexcept;

}  // namespace heapgate
