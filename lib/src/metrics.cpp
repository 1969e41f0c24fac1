// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "heapgate/metrics.h"

#include <string>

#include "heapgate/profile_scope.h"

namespace heapgate {

bool operator==(const Metrics& a, const Metrics& b) noexcept {
  return a.allocations == b.allocations && a.allocated_bytes == b.allocated_bytes &&
         a.live_allocations == b.live_allocations && a.live_bytes == b.live_bytes && a.peak_bytes == b.peak_bytes;
}

bool operator!=(const Metrics& a, const Metrics& b) noexcept { return !(a == b); }

std::string_view to_string(MetricName metric) noexcept {
  switch (metric) {
    case MetricName::allocations: return "allocations";
    case MetricName::allocated_bytes: return "allocated_bytes";
    case MetricName::live_allocations: return "live_allocations";
    case MetricName::live_bytes: return "live_bytes";
    case MetricName::peak_bytes: return "peak_bytes";
  }
  return "allocations";
}

Result<MetricName> parse_metric_name(std::string_view text) {
  for (MetricName m : kMetricNames) {
    if (text == to_string(m)) return m;
  }
  return fail(make_error(ErrorCode::invalid_argument, "metric", "unknown metric \"" + std::string(text) + "\"",
                         "use one of allocations, allocated_bytes, live_allocations, live_bytes, peak_bytes"));
}

std::uint64_t get(const Metrics& metrics, MetricName metric) noexcept {
  return get(const_cast<Metrics&>(metrics), metric);  // the non-const overload only reads here
}

std::uint64_t& get(Metrics& metrics, MetricName metric) noexcept {
  switch (metric) {
    case MetricName::allocations: return metrics.allocations;
    case MetricName::allocated_bytes: return metrics.allocated_bytes;
    case MetricName::live_allocations: return metrics.live_allocations;
    case MetricName::live_bytes: return metrics.live_bytes;
    case MetricName::peak_bytes: return metrics.peak_bytes;
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

}  // namespace heapgate
