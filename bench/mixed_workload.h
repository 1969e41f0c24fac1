// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// An allocation-heavy workload with mixed size classes, for
// scripts/bench_paired.sh: a std::map<int, Mixed> whose values hold a
// std::string of 16 to 511 characters and a std::vector<std::uint32_t> of 1 to
// 256 elements, sizes drawn from the entry's number by a fixed hash. Entries
// are inserted in order and, once `live` of them are in the map, the oldest
// is erased for each new one, so the allocator recycles blocks of every class
// while up to 3 x live blocks stay live. Each entry is exactly three
// allocations (the map node of 96 bytes, the string, too long for the
// small-string buffer, and the vector, reserved once) and three frees:
// `entries` entries make 3 x entries allocations, from the 16-byte class up to
// 1 KiB. Header-only and free of heapgate, like map_workload.h (whose
// entries_from_env() it shares), so the same
// code is a plain program (bench/mixed_workload.cpp), a sanitizer build and a
// GoogleTest test (bench/mixed_suite.cpp).
#ifndef HEAPGATE_BENCH_MIXED_WORKLOAD_H
#define HEAPGATE_BENCH_MIXED_WORKLOAD_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "map_workload.h"

namespace heapgate::bench {

struct Mixed {
  std::string text;
  std::vector<std::uint32_t> numbers;
};

/// A fixed, well-mixed hash of an entry's number (murmur3's finalizer).
inline std::uint32_t mixed_hash(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bU;
  x ^= x >> 13;
  x *= 0xc2b2ae35U;
  x ^= x >> 16;
  return x;
}

/// Inserts entries first .. first + entries - 1 into a map, keeping at most
/// `live` of them (the oldest erased first), then destroys the map:
/// 3 x entries allocations and as many frees.
inline void mixed_churn(int first, int entries, int live) {
  std::map<int, Mixed> m;
  for (int i = first; i < first + entries; ++i) {
    const std::uint32_t h = mixed_hash(static_cast<std::uint32_t>(i));
    Mixed value;
    value.text.assign(16 + (h & 0x1ff) % 496, static_cast<char>('a' + i % 26));  // 16..511 characters
    value.numbers.reserve(1 + ((h >> 9) & 0xff));                                // 4..1024 bytes
    value.numbers.resize(value.numbers.capacity(), h);
    m.emplace(i, std::move(value));
    if (static_cast<int>(m.size()) > live) m.erase(m.begin());
  }
  asm volatile("" : : "g"(&m) : "memory");  // keep the work
}

/// The workload's size: HEAPGATE_MIXED_ENTRIES if set, else kMixedEntries
/// (900,000 entries = 2.7M allocations); nothing when the variable is not a
/// whole number in [1, 100000000] (the caller reports it).
inline constexpr int kMixedEntries = 900000;
/// Entries kept live at most (3 blocks each): ~58 MB of heap at the default sizes.
inline constexpr int kMixedLive = 65536;
inline constexpr const char* kMixedEntriesError =
    "HEAPGATE_MIXED_ENTRIES: expected a whole number from 1 to 100000000; fix: unset it or write e.g. 900000";
inline std::optional<int> mixed_entries() { return entries_from_env("HEAPGATE_MIXED_ENTRIES", kMixedEntries); }

}  // namespace heapgate::bench

#endif  // HEAPGATE_BENCH_MIXED_WORKLOAD_H
