// SPDX-License-Identifier: MIT
// Mesos durations (heapgate/mesos_duration.h). Properties: no crash; what
// format_mesos_duration() prints parses back to the same duration, for every
// parsed duration and for any count of nanoseconds the input spells.
#include <chrono>
#include <cstring>

#include "fuzz_check.h"
#include "heapgate/mesos_duration.h"

namespace {

void check_round_trip(std::chrono::nanoseconds duration) {
  if (duration.count() < 0) return;  // the grammar has no sign
  auto again = heapgate::detail::parse_mesos_duration(heapgate::detail::format_mesos_duration(duration));
  HEAPGATE_FUZZ_CHECK(again.has_value());
  HEAPGATE_FUZZ_CHECK(*again == duration);
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
