// SPDX-License-Identifier: MIT
// Change points of one test's metric over commits: where it left its band
// and stayed out (docs/design.md §13, "Change points").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heapgate {

/// One value of a series, in commit order, with the noise band's width
/// (high - low) the test had there; 0 for a deterministic test.
struct SeriesValue {
  std::uint64_t value = 0;
  std::uint64_t spread = 0;
};

/// A step: from `index` on, the series stayed out of the band it was in.
struct ChangePoint {
  /// The first value of the new level.
  std::size_t index = 0;
  /// The level before (the value that began the old level) and after (the
  /// median of the values that confirmed the step).
  std::uint64_t before = 0;
  std::uint64_t after = 0;
  /// How many values after `index` stayed at the new level (up to the next
  /// change point or the end).
  std::size_t stable_for = 0;
};

/// Options of find_change_points().
struct ChangePointOptions {
  /// A step needs this many values in a row out of the band, on the same
  /// side: fewer that come back are outliers.
  std::size_t confirm = 3;
};

/// The change points of `series`. A level's band is its first value widened
/// by its spread on each side (the gate's rule for a noise band: a value
/// passes within the band widened by its own spread). A value inside the
/// band stays at the level; `options.confirm` values in a row outside it on
/// one side make a step at the first of them, and the new level begins
/// there. Fewer values out that come back are skipped; a series that ends
/// before a step is confirmed has none there. Pure.
std::vector<ChangePoint> find_change_points(const std::vector<SeriesValue>& series,
                                            const ChangePointOptions& options = {});

}  // namespace heapgate
