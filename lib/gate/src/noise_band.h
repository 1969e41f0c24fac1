// SPDX-License-Identifier: MIT
// The noise band: how far a count that varied when recorded may stray and
// still pass (widened_limits(), noise_band_limits()); used by
// compare_to_baseline() in comparison.cpp. Implemented in noise_band.cpp.
#pragma once

#include <cstdint>

#include "heapgate/baseline.h"
#include "heapgate/metrics.h"

namespace heapgate::detail {

struct NoiseBandLimits {
  std::uint64_t lower = 0;
  std::uint64_t upper = 0;
};

/// `low`..`high` widened on each side by its width, by at least
/// kNoisyMinimumWidening of `floor_of` when it is shown to vary, plus the
/// tolerance and `allowance`.
NoiseBandLimits widened_limits(std::uint64_t low, std::uint64_t high, bool varies, std::uint64_t floor_of,
                               const Tolerance& tolerance, std::uint64_t allowance = 0);

/// The values a calibrated test may take in metric `m` and still pass: its
/// band widened by widened_limits(), shown to vary.
NoiseBandLimits noise_band_limits(const NoiseBand& band, MetricName m, std::uint64_t median,
                                  const Tolerance& tolerance);

}  // namespace heapgate::detail
