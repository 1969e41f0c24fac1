// SPDX-License-Identifier: MIT
// Mesos' (stout's) Duration syntax and printing: the server's
// /memory-profiler/start?duration= and every duration `heapgate fetch` reads.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace heapgate::detail {

/// Parses stout's `^[0-9.]+(ns|us|ms|secs|mins|hrs|days|weeks)$`; the error is
/// stout's text ("Invalid duration '…'", "Unknown duration unit '…'; …",
/// "Failed to convert '…' to number"). heapgate's one extension: a bare number
/// means seconds (Mesos' own example script sends `duration=600`). Values past
/// the int64 nanosecond range saturate, so they fail the range check instead.
tl::expected<std::chrono::nanoseconds, std::string> parse_mesos_duration(std::string_view text);

/// The same grammar, also accepting the short units people type for a wait on
/// the client side (`s`, `sec`, `m`, `min`, `h`, `hr`), e.g. `heapgate fetch
/// --timeout 30s`. Never for `/start?duration=`: Mesos refuses those units.
tl::expected<std::chrono::nanoseconds, std::string> parse_duration_with_short_units(std::string_view text);

/// stout's `stringify(Duration)`: the bucket's unit, or the next smaller one
/// when only that gives a whole number ("0ns", "1secs", "5mins", "25hrs", "1500ms").
std::string format_mesos_duration(std::chrono::nanoseconds duration);

}  // namespace heapgate::detail
