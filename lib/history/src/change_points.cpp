// SPDX-License-Identifier: MIT
// find_change_points() (heapgate/change_points.h): walks a test's series over commits and marks a
// step where `confirm` values in a row leave the current level's band on one side.
#include "heapgate/change_points.h"

#include <algorithm>
#include <limits>

namespace heapgate {
namespace {

struct Band {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
};

Band band_around(const SeriesValue& v) {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  return {v.value > v.spread ? v.value - v.spread : 0, v.value > max - v.spread ? max : v.value + v.spread};
}

// -1 below the band, 0 inside, +1 above.
int side(const Band& band, std::uint64_t value) { return value < band.low ? -1 : (value > band.high ? 1 : 0); }

std::uint64_t median(std::vector<std::uint64_t> values) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

}  // namespace

std::vector<ChangePoint> find_change_points(const std::vector<SeriesValue>& series, const ChangePointOptions& options) {
  std::vector<ChangePoint> found;
  if (series.empty()) return found;
  const std::size_t confirm = std::max<std::size_t>(options.confirm, 1);
  std::uint64_t level = series[0].value;
  Band band = band_around(series[0]);
  std::size_t i = 1;
  while (i < series.size()) {
    const int out = side(band, series[i].value);
    if (out == 0) {
      ++i;
      continue;
    }
    std::size_t run = 1;
    while (run < confirm && i + run < series.size() && side(band, series[i + run].value) == out) ++run;
    if (run < confirm) {
      // An outlier that came back, or a series too short to tell yet.
      ++i;
      continue;
    }
    std::vector<std::uint64_t> confirming;
    for (std::size_t k = i; k < i + confirm; ++k) confirming.push_back(series[k].value);
    found.push_back(ChangePoint{i, level, median(confirming), 0});
    level = series[i].value;
    band = band_around(series[i]);
    ++i;
  }
  for (std::size_t k = 0; k < found.size(); ++k) {
    const std::size_t end = k + 1 < found.size() ? found[k + 1].index : series.size();
    found[k].stable_for = end - found[k].index - 1;
  }
  return found;
}

}  // namespace heapgate
