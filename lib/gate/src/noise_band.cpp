// SPDX-License-Identifier: MIT
#include "noise_band.h"

#include <algorithm>
#include <cmath>

namespace heapgate::detail {

// The noise band of a calibrated test, for one metric: the values it may
// take and still pass. A calibrated test passes anywhere within its band
// (the lowest and highest of its calibration runs) widened by its own spread
// (and the tolerance) on each side: N runs rarely see a test's extremes, and
// a change that matters moves it by more than it strays. A few runs can also
// miss a second state altogether (a background compaction done or not by
// the time the test writes moved tests by 8-10% between runs that saw none
// of it; bench/real_suites/README.md, "The cases behind the rules"), so a
// test shown to vary is widened by at least kNoisyMinimumWidening of its
// median.
NoiseBandLimits widened_limits(std::uint64_t low, std::uint64_t high, bool varies, std::uint64_t floor_of,
                               const Tolerance& tolerance, std::uint64_t allowance) {
  std::uint64_t width = high - low;
  if (varies) {
    width = std::max(width, saturating_count(std::ceil(kNoisyMinimumWidening * static_cast<double>(floor_of))));
  }
  const std::uint64_t upper = high + width + allowed_change(tolerance, high) + allowance;
  const std::uint64_t slack = width + allowed_change(tolerance, low) + allowance;
  return {low > slack ? low - slack : 0, upper};
}

NoiseBandLimits noise_band_limits(const NoiseBand& band, MetricName m, std::uint64_t median,
                                  const Tolerance& tolerance) {
  return widened_limits(get(band.low, m), get(band.high, m), true, median, tolerance);
}

}  // namespace heapgate::detail
