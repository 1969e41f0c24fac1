// SPDX-License-Identifier: MIT
// Mesos durations (heapgate/mesos_duration.h). Properties: no crash; what
// format_mesos_duration() prints parses back to the same duration, for every
// parsed duration and for any count of nanoseconds the input spells, up to
// the 15 significant digits stout prints (and one nanosecond of truncation).
#include <chrono>
#include <cmath>
#include <cstring>

#include "fuzz_check.h"
#include "heapgate/mesos_duration.h"

namespace {

void check_round_trip(std::chrono::nanoseconds duration) {
  if (duration.count() < 0) return;  // the grammar has no sign
  auto again = heapgate::detail::parse_mesos_duration(heapgate::detail::format_mesos_duration(duration));
  HEAPGATE_FUZZ_CHECK(again.has_value());
  const long double error = std::fabs(static_cast<long double>(again->count()) - duration.count());
  HEAPGATE_FUZZ_CHECK(error <= 1 + static_cast<long double>(duration.count()) * 1e-14L);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = heapgate::fuzz::text_of(data, size);
  if (auto parsed = heapgate::detail::parse_mesos_duration(text)) check_round_trip(*parsed);
  if (auto parsed = heapgate::detail::parse_duration_with_short_units(text)) check_round_trip(*parsed);
  if (size >= sizeof(std::int64_t)) {
    std::int64_t count = 0;
    std::memcpy(&count, data, sizeof count);
    check_round_trip(std::chrono::nanoseconds(count));
  }
  return 0;
}
