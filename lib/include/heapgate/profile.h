// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/error.h"

namespace heapgate {

/// One `cnts` group of a heap_v2 line: `live_objs: live_bytes [accum_objs: accum_bytes]`.
/// Values are as written in the file (sampled counts when the period is > 1).
struct Counts {
  std::uint64_t live_objects = 0;
  std::uint64_t live_bytes = 0;
  /// Zero unless the process ran with `prof_accum:true`.
  std::uint64_t accum_objects = 0;
  std::uint64_t accum_bytes = 0;

  friend bool operator==(const Counts& a, const Counts& b) {
    return a.live_objects == b.live_objects && a.live_bytes == b.live_bytes &&
           a.accum_objects == b.accum_objects && a.accum_bytes == b.accum_bytes;
  }
  friend bool operator!=(const Counts& a, const Counts& b) { return !(a == b); }
};

/// Counts after un-sampling, as jeprof computes them (`AdjustSamples`). For a
/// profile with period 1 (every allocation sampled) these equal the raw counts.
struct ScaledCounts {
  double live_objects = 0;
  double live_bytes = 0;
  double accum_objects = 0;
  double accum_bytes = 0;
};

/// A `tN:` line: one thread's share. `name` is set only on header lines, and
/// only when jemalloc knew the thread's name.
struct ThreadCounts {
  std::uint64_t thread_uid = 0;
  Counts counts;
  std::string name;
};

/// One `@` record: a backtrace (innermost frame first, raw return addresses as
/// jemalloc recorded them) with its totals and per-thread split.
struct StackRecord {
  std::vector<std::uint64_t> frames;
  Counts counts;
  std::vector<ThreadCounts> threads;
};

/// One line of the `MAPPED_LIBRARIES:` section (the process' /proc/PID/maps).
struct Mapping {
  std::uint64_t start = 0;  ///< first address, inclusive
  std::uint64_t end = 0;    ///< last address, exclusive
  std::string permissions;  ///< e.g. "r-xp"
  std::uint64_t offset = 0; ///< file offset of `start`
  std::string device;       ///< "fe:00"
  std::uint64_t inode = 0;
  std::string path;         ///< file path, "[heap]", "[vdso]", or empty for anonymous maps

  bool executable() const { return permissions.size() > 2 && permissions[2] == 'x'; }
  bool contains(std::uint64_t address) const { return address >= start && address < end; }
};

/// A parsed jemalloc `heap_v2` heap profile.
struct Profile {
  /// The `heap_v2/<period>` value: mean bytes between samples (2^lg_prof_sample); 1 = every allocation.
  std::uint64_t sample_period = 1;
  /// The header's `t*:` line: process-wide totals.
  Counts totals;
  /// The header's `tN:` lines.
  std::vector<ThreadCounts> threads;
  /// The `@` records, in file order (jemalloc's internal order: do not rely on it).
  std::vector<StackRecord> stacks;
  /// The parsed `MAPPED_LIBRARIES:` section; empty when the file has none.
  std::vector<Mapping> mappings;
  /// The `MAPPED_LIBRARIES:` section verbatim, so a written profile round-trips byte for byte.
  std::string maps_text;

  /// True when counts are estimates (period > 1).
  bool sampled() const { return sample_period > 1; }
  /// The mapping that contains `address`, or nullptr.
  const Mapping* find_mapping(std::uint64_t address) const;
};

/// Position of a parse failure, like pugixml's xml_parse_result.
struct ParsePosition {
  std::size_t line = 0;    ///< 1-based line number
  std::size_t offset = 0;  ///< byte offset of the line's start
};

/// Parses heap_v2 text. `source` names the input in errors (a path, or "<memory>").
/// Never crashes or aborts on malformed input: errors name `source:line`, what
/// was found and what was expected. Accepts a missing MAPPED_LIBRARIES section.
Result<Profile> parse_profile(std::string_view text, std::string_view source = "<memory>");

/// Reads and parses the file at `path`.
Result<Profile> read_profile(const std::string& path);

/// Renders `profile` as heap_v2 text that jemalloc could have written and jeprof
/// reads. `parse_profile(write_profile(p)) == p` for every parsed profile.
std::string write_profile(const Profile& profile);

/// Un-samples one counts group with jeprof's formula (sampling algorithm 2):
/// for each (n, s) pair, `scale = 1 / (1 - exp(-(s/n)/period))`. A period of 1
/// means every allocation was recorded, so the counts are returned unscaled
/// (jeprof would inflate tiny objects by up to 0.03%; heapgate keeps them exact).
ScaledCounts unsample(const Counts& counts, std::uint64_t sample_period);

}  // namespace heapgate
