// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The allocation-heavy workload every bench that compares allocators or
// tools runs: a std::map<int, std::string> of `entries` 40-byte strings, built
// and then destroyed. Each entry is two allocations (the map node and the
// string, too long for the small-string buffer), so `entries` entries make
// 2 x entries allocations and as many frees. Header-only and free of heapgate,
// so the same code can be compiled into a plain program (bench/anchor_workload.cpp),
// a sanitizer build and a GoogleTest test (bench/trivial_suite.cpp,
// bench/anchor_suite.cpp).
#ifndef HEAPGATE_BENCH_MAP_WORKLOAD_H
#define HEAPGATE_BENCH_MAP_WORKLOAD_H

#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

namespace heapgate::bench {

/// Keeps the compiler from proving `p`'s memory unused and removing the work.
inline void escape(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

/// Builds and destroys the map of `entries` strings: 2 x entries allocations
/// and 2 x entries frees, with up to 2 x entries blocks live at the peak.
inline void map_of_strings(int entries) {
  std::map<int, std::string> m;
  for (int i = 0; i < entries; ++i) m.emplace(i, std::string(40, static_cast<char>('a' + i % 26)));
  escape(&m);
}

/// The anchors' workload size: HEAPGATE_ANCHOR_ENTRIES if set, else
/// kAnchorEntries; nothing when the variable is not a whole number in
/// [1, 100000000] (the caller reports it; bad input never crashes a bench).
inline constexpr int kAnchorEntries = 500000;
/// What a bad HEAPGATE_ANCHOR_ENTRIES is told, after the program's name.
inline constexpr const char* kAnchorEntriesError =
    "HEAPGATE_ANCHOR_ENTRIES: expected a whole number from 1 to 100000000; fix: unset it or write e.g. 500000";
/// A workload's size from the environment variable `name`: `fallback` when
/// unset or empty, nothing when not a whole number in [1, 100000000].
inline std::optional<int> entries_from_env(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 1 || value > 100000000) return std::nullopt;
  return static_cast<int>(value);
}
inline std::optional<int> anchor_entries() { return entries_from_env("HEAPGATE_ANCHOR_ENTRIES", kAnchorEntries); }

}  // namespace heapgate::bench

#endif  // HEAPGATE_BENCH_MAP_WORKLOAD_H
