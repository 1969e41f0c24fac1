// SPDX-License-Identifier: MIT
// parse_mesos_duration(), parse_duration_with_short_units() and format_mesos_duration()
// (heapgate/mesos_duration.h): the `600secs`, `5mins` duration grammar and its printing.
#include "heapgate/mesos_duration.h"

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace heapgate::detail {
namespace {

constexpr std::int64_t kNs = 1;
constexpr std::int64_t kUs = 1000 * kNs;
constexpr std::int64_t kMs = 1000 * kUs;
constexpr std::int64_t kSecs = 1000 * kMs;
constexpr std::int64_t kMins = 60 * kSecs;
constexpr std::int64_t kHrs = 60 * kMins;
constexpr std::int64_t kDays = 24 * kHrs;
constexpr std::int64_t kWeeks = 7 * kDays;

// boost::lexical_cast<double>, as stout's numify: the whole text must be a number.
bool to_double(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(out);
}

std::chrono::nanoseconds scaled(double value, std::int64_t unit) {
  double ns = value * static_cast<double>(unit);
  // Saturate: a duration beyond ~292 years is simply out of range.
  if (ns >= static_cast<double>(std::numeric_limits<std::int64_t>::max())) {
    return std::chrono::nanoseconds(std::numeric_limits<std::int64_t>::max());
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

// stout prints with the stream precision set to digits10 (15).
std::string number(double value, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g%s", value, unit);
  return buf;
}

// Both entry points below; `short_units` adds the client-side aliases.
tl::expected<std::chrono::nanoseconds, std::string> parse(std::string_view text, bool short_units) {
  std::string s(text);
  std::size_t index = 0;
  while (index < s.size() && ((s[index] >= '0' && s[index] <= '9') || s[index] == '.')) ++index;
  if (index == s.size()) {
    double seconds = 0;
    // The extension: "600" is 600secs. Anything else without a unit is stout's error.
    if (to_double(s, seconds)) return scaled(seconds, kSecs);
    return tl::unexpected("Invalid duration '" + s + "'");
  }
  std::string digits = s.substr(0, index);
  double value = 0;
  if (!to_double(digits, value)) return tl::unexpected("Failed to convert '" + digits + "' to number");
  std::string unit = s.substr(index);
  struct UnitName {
    const char* name;
    std::int64_t ns;
  };
  static constexpr UnitName kUnits[] = {{"ns", kNs},     {"us", kUs},   {"ms", kMs},     {"secs", kSecs},
                                        {"mins", kMins}, {"hrs", kHrs}, {"days", kDays}, {"weeks", kWeeks}};
  for (const UnitName& u : kUnits) {
    if (unit == u.name) return scaled(value, u.ns);
  }
  static constexpr UnitName kShortUnits[] = {{"s", kSecs},   {"sec", kSecs}, {"m", kMins},
                                             {"min", kMins}, {"h", kHrs},    {"hr", kHrs}};
  for (const UnitName& u : kShortUnits) {
    if (short_units && unit == u.name) return scaled(value, u.ns);
  }
  return tl::unexpected("Unknown duration unit '" + unit +
                        "'; supported units are 'ns', 'us', 'ms', 'secs', 'mins', 'hrs', 'days', and 'weeks'");
}

}  // namespace

tl::expected<std::chrono::nanoseconds, std::string> parse_mesos_duration(std::string_view text) {
  return parse(text, false);
}

tl::expected<std::chrono::nanoseconds, std::string> parse_duration_with_short_units(std::string_view text) {
  return parse(text, true);
}

std::string format_mesos_duration(std::chrono::nanoseconds duration) {
  std::int64_t ns = duration.count();
  std::string sign;
  if (ns < 0) {
    sign = "-";
    ns = ns == std::numeric_limits<std::int64_t>::min() ? std::numeric_limits<std::int64_t>::max() : -ns;
  }
  auto in = [ns](std::int64_t unit) { return static_cast<double>(ns) / static_cast<double>(unit); };
  // Mirrors stout's operator<<(ostream&, const Duration&) bucket by bucket.
  std::string out;
  if (ns < kUs) {
    out = std::to_string(ns) + "ns";
  } else if (ns < kMs) {
    out = ns % kUs != 0 ? std::to_string(ns) + "ns" : number(in(kUs), "us");
  } else if (ns < kSecs) {
    out = (ns % kMs != 0 && ns % kUs == 0) ? number(in(kUs), "us") : number(in(kMs), "ms");
  } else if (ns < kMins) {
    out = (ns % kSecs != 0 && ns % kMs == 0) ? number(in(kMs), "ms") : number(in(kSecs), "secs");
  } else if (ns < kHrs) {
    out = (ns % kMins != 0 && ns % kSecs == 0) ? number(in(kSecs), "secs") : number(in(kMins), "mins");
  } else if (ns < kDays) {
    out = (ns % kHrs != 0 && ns % kMins == 0) ? number(in(kMins), "mins") : number(in(kHrs), "hrs");
  } else if (ns < kWeeks) {
    out = (ns % kDays != 0 && ns % kHrs == 0) ? number(in(kHrs), "hrs") : number(in(kDays), "days");
  } else {
    out = (ns % kWeeks != 0 && ns % kDays == 0) ? number(in(kDays), "days") : number(in(kWeeks), "weeks");
  }
  return sign + out;
}

}  // namespace heapgate::detail
