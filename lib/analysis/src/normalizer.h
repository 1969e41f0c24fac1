// SPDX-License-Identifier: MIT
// Private: the stack-key builder behind normalize_profile() and
// diff_profile_files(), shared so both apply one set of dropping rules.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "heapgate/frame_name.h"
#include "heapgate/normalize.h"
#include "heapgate/symbolizer.h"
#include "frame_class.h"

namespace heapgate::detail {

/// Builds stack keys as lists of interned name ids. Ids are shared by every
/// stack (of any profile) keyed through one Normalizer: equal ids mean equal
/// names. Not thread-safe; references `options` and `symbolizer`.
class Normalizer {
 public:
  /// One frame of an expanded stack: its name id and its role.
  struct Entry {
    std::uint32_t id = 0;
    FrameClass cls = FrameClass::user;
  };
  /// A Location's frames: entries()[begin, begin + count).
  struct Span {
    std::uint32_t begin = 0;
    std::uint32_t count = 0;
  };

  Normalizer(const NormalizeOptions& options, Symbolizer& symbolizer);

  /// The frames `loc` expands to (inlined functions first); cached per Location.
  Span expand(const Location& loc);
  const std::vector<Entry>& entries() const { return entries_; }
  /// Applies normalize_profile()'s dropping rules to one expanded stack.
  void key_of(const std::vector<Entry>& frames, std::vector<std::uint32_t>& key) const;

  /// The name of id `id`.
  const FrameName& name(std::uint32_t id) const { return names_[id]; }
  /// Each id's rank in the order of the names' text: comparing ranks
  /// compares names.
  std::vector<std::uint32_t> ranks() const;

  /// normalize_profile() itself.
  NormalizedProfile run(const Profile& profile);

 private:
  std::uint32_t intern(std::string_view name);
  bool matches_drop_pattern(std::string_view name) const;

  const NormalizeOptions& options_;
  Symbolizer& symbolizer_;
  std::vector<FrameName> names_;
  std::unordered_map<std::string_view, std::uint32_t> ids_;
  std::uint32_t allocator_only_ = 0;
  std::uint32_t framework_only_ = 0;
  std::vector<Entry> entries_;
  // Locations live as long as the Symbolizer (it never drops one), so a
  // Normalizer kept across profiles keeps their spans.
  std::unordered_map<const Location*, Span> spans_;
  std::vector<std::uint32_t> rank_scratch_;  // run()'s ranks, reused
};

}  // namespace heapgate::detail
