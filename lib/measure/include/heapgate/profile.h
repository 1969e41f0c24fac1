// SPDX-License-Identifier: MIT
// jemalloc heap_v2 profiles in memory: Counts, ScaledCounts, StackRecord, Mapping, Profile;
// parse_profile(), read_profile(), write_profile(), parse_mappings() and unsample().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
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
    return a.live_objects == b.live_objects && a.live_bytes == b.live_bytes && a.accum_objects == b.accum_objects &&
           a.accum_bytes == b.accum_bytes;
  }
  friend bool operator!=(const Counts& a, const Counts& b) { return !(a == b); }
  Counts& operator+=(const Counts& more) {
    live_objects += more.live_objects;
    live_bytes += more.live_bytes;
    accum_objects += more.accum_objects;
    accum_bytes += more.accum_bytes;
    return *this;
  }
};

/// Counts after un-sampling, as jeprof computes them (`AdjustSamples`). For a
/// profile with period 1 (every allocation sampled) these equal the raw counts.
struct ScaledCounts {
  double live_objects = 0;
  double live_bytes = 0;
  double accum_objects = 0;
  double accum_bytes = 0;

  ScaledCounts& operator+=(const ScaledCounts& more) {
    live_objects += more.live_objects;
    live_bytes += more.live_bytes;
    accum_objects += more.accum_objects;
    accum_bytes += more.accum_bytes;
    return *this;
  }

  /// Exact comparison: sums of the same records compare equal. Spelled with
  /// std::equal_to so a consumer's -Wfloat-equal does not flag the intent.
  friend bool operator==(const ScaledCounts& a, const ScaledCounts& b) {
    const std::equal_to<double> same;
    return same(a.live_objects, b.live_objects) && same(a.live_bytes, b.live_bytes) &&
           same(a.accum_objects, b.accum_objects) && same(a.accum_bytes, b.accum_bytes);
  }
  friend bool operator!=(const ScaledCounts& a, const ScaledCounts& b) { return !(a == b); }
};

/// A `tN:` line: one thread's share.
struct ThreadCounts {
  std::uint64_t thread_uid = 0;
  Counts counts;
  /// The thread's name (`thread.prof.name`), as jemalloc wrote it after the
  /// counts. Set only on header lines, and only when jemalloc knew a name; an
  /// empty name (written as a trailing space) is kept apart from no name so
  /// the line round-trips byte for byte.
  std::optional<std::string> name;

  friend bool operator==(const ThreadCounts& a, const ThreadCounts& b) {
    return a.thread_uid == b.thread_uid && a.counts == b.counts && a.name == b.name;
  }
  friend bool operator!=(const ThreadCounts& a, const ThreadCounts& b) { return !(a == b); }
};

/// One `@` record: a backtrace (innermost frame first, raw return addresses as
/// jemalloc recorded them) with its totals and per-thread split.
struct StackRecord {
  std::vector<std::uint64_t> frames;
  Counts counts;
  std::vector<ThreadCounts> threads;

  friend bool operator==(const StackRecord& a, const StackRecord& b) {
    return a.frames == b.frames && a.counts == b.counts && a.threads == b.threads;
  }
  friend bool operator!=(const StackRecord& a, const StackRecord& b) { return !(a == b); }
};

/// The most frames parse_profile accepts in one `@` record. jemalloc 5.3.0
/// records at most 128 (PROF_BT_MAX), 5.3.1 at most 256 (`opt.prof_bt_max`);
/// the margin allows patched builds while bounding what a corrupt file costs.
inline constexpr std::size_t kMaxProfileFrames = 1024;

/// One line of the `MAPPED_LIBRARIES:` section (the process' /proc/PID/maps).
struct Mapping {
  std::uint64_t start = 0;   ///< first address, inclusive
  std::uint64_t end = 0;     ///< last address, exclusive
  std::string permissions;   ///< e.g. "r-xp"
  std::uint64_t offset = 0;  ///< file offset of `start`
  std::string device;        ///< "fe:00"
  std::uint64_t inode = 0;
  /// File path, "[heap]", "[vdso]", or empty for anonymous maps. Kept as the
  /// kernel printed it, so a file deleted (or replaced) after it was mapped
  /// still ends in " (deleted)".
  std::string path;

  bool executable() const { return permissions.size() > 2 && permissions[2] == 'x'; }
  bool contains(std::uint64_t address) const { return address >= start && address < end; }
  /// True for mappings of a regular file (not anonymous, not `[heap]`/`[vdso]`-style pseudo names).
  bool file_backed() const { return !path.empty() && path[0] != '[' && inode != 0; }
  /// True when the kernel marked the file as deleted since it was mapped.
  bool deleted() const;

  friend bool operator==(const Mapping& a, const Mapping& b) {
    return a.start == b.start && a.end == b.end && a.permissions == b.permissions && a.offset == b.offset &&
           a.device == b.device && a.inode == b.inode && a.path == b.path;
  }
  friend bool operator!=(const Mapping& a, const Mapping& b) { return !(a == b); }
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
  /// The mapping that contains `address`, or nullptr. Binary search: relies on
  /// `mappings` being sorted by `start` and not overlapping, as /proc prints
  /// them and parse_profile checks. O(log n); thread-safe (const).
  const Mapping* find_mapping(std::uint64_t address) const;

  /// Field-for-field equality (what the round-trip tests compare).
  friend bool operator==(const Profile& a, const Profile& b) {
    return a.sample_period == b.sample_period && a.totals == b.totals && a.threads == b.threads &&
           a.stacks == b.stacks && a.mappings == b.mappings && a.maps_text == b.maps_text;
  }
  friend bool operator!=(const Profile& a, const Profile& b) { return !(a == b); }
};

/// Position of a parse failure, like pugixml's xml_parse_result.
struct ParsePosition {
  std::size_t line = 0;    ///< 1-based line number
  std::size_t offset = 0;  ///< byte offset of the line's start
};

/// Parses heap_v2 text. `source` names the input in errors (a path, or "<memory>").
/// Never crashes or aborts on malformed input: errors name `source:line`, what
/// was found and what was expected. Accepts a missing MAPPED_LIBRARIES section.
///
/// Strict about what jemalloc writes (docs/platform-facts.md §6): every line ends in
/// "\n"; counts are unsigned 64-bit decimals (overflow is an error, never
/// wrapped); the period is >= 1; every `@` record has 1..kMaxProfileFrames
/// frames and is followed by its `t*:` line; maps lines must parse as
/// /proc/PID/maps lines, in ascending address order, and a MAPPED_LIBRARIES
/// section that is present has at least one (an empty one is a dump cut
/// short). A truncation error's line is the one after the last complete
/// line. Rejected with a specific
/// message: the pre-4.0 gperftools `heap profile:` format, other `heap_vN`
/// versions, and CR LF line endings (jemalloc never writes them; a CR LF file
/// was converted by a tool such as git's autocrlf; fix: dos2unix).
/// Errors: `parse_error`, with `where` = "source:LINE". Memory use is bounded
/// by a small multiple of `text.size()`. Thread-safe (no shared state).
Result<Profile> parse_profile(std::string_view text, std::string_view source = "<memory>");

/// Parses /proc/PID/maps lines as parse_profile() parses a MAPPED_LIBRARIES
/// section (Profile::mappings), with the same checks.
Result<std::vector<Mapping>> parse_mappings(std::string_view maps_text, std::string_view source = "/proc/self/maps");

/// Reads and parses the file at `path`; errors are `io_error` (cannot read) or
/// those of parse_profile, with `where` = "path:LINE".
Result<Profile> read_profile(const std::string& path);

/// Renders `profile` as heap_v2 text that jemalloc could have written and jeprof
/// reads. `parse_profile(write_profile(p)) == p` for every parsed profile, and
/// `write_profile(parse_profile(t)) == t` byte for byte for every file jemalloc
/// wrote. Addresses are printed as jemalloc does (`%#` PRIxPTR: "0x7f53...", and
/// "0" for zero). The MAPPED_LIBRARIES section is `maps_text` verbatim; when
/// `maps_text` is empty but `mappings` is not, the mappings are rendered as
/// /proc maps lines. No section when both are empty.
std::string write_profile(const Profile& profile);

/// Un-samples one counts group with jeprof's formula (sampling algorithm 2):
/// for each (n, s) pair, `scale = 1 / (1 - exp(-(s/n)/period))`. A period of 1
/// means every allocation was recorded, so the counts are returned unscaled
/// (jeprof would inflate tiny objects by up to 0.03%; heapgate keeps them exact).
/// A pair with n == 0 scales to n = 0 and keeps s unscaled, exactly as jeprof
/// does (jemalloc's prof_unbias can write e.g. "0: 400"; both are 0 otherwise).
/// A pair with n > 0 and s == 0 (no real allocation has size 0; jeprof would
/// die dividing by zero) is returned unscaled rather than as infinity/NaN.
/// A period of 0 (never parsed) is treated like 1. Pure; thread-safe.
ScaledCounts unsample(const Counts& counts, std::uint64_t sample_period);

}  // namespace heapgate
