// SPDX-License-Identifier: MIT
// unsampling_variance() and sampling_errors() (heapgate/sampling.h): the standard errors of a
// sampled profile's un-sampled counts, from jemalloc's per-allocation sampling probability.
#include "heapgate/sampling.h"

#include <cmath>

namespace heapgate {
namespace {

// One count pair (objects, bytes): the variances of its un-sampled estimates.
void add_variance(std::uint64_t objects, std::uint64_t bytes, double period, double& objects_var, double& bytes_var) {
  if (objects == 0 || bytes == 0) return;
  const double n = static_cast<double>(objects);
  const double size = static_cast<double>(bytes) / n;
  const double p = -std::expm1(-size / period);  // 1 - exp(-s/R), exact for small s
  if (!(p > 0)) return;
  const double per_object = (1.0 - p) / (p * p);
  objects_var = n * per_object;
  bytes_var = n * size * size * per_object;
}

}  // namespace

ScaledCounts unsampling_variance(const Counts& counts, std::uint64_t sample_period) {
  ScaledCounts v;
  if (sample_period <= 1) return v;
  const auto period = static_cast<double>(sample_period);
  add_variance(counts.live_objects, counts.live_bytes, period, v.live_objects, v.live_bytes);
  add_variance(counts.accum_objects, counts.accum_bytes, period, v.accum_objects, v.accum_bytes);
  return v;
}

SamplingErrors sampling_errors(const Profile& profile) {
  SamplingErrors e;
  if (!profile.sampled()) return e;
  ScaledCounts sum;
  for (const auto& stack : profile.stacks) sum += unsampling_variance(stack.counts, profile.sample_period);
  e.allocations = std::sqrt(sum.accum_objects);
  e.allocated_bytes = std::sqrt(sum.accum_bytes);
  e.live_allocations = std::sqrt(sum.live_objects);
  e.live_bytes = std::sqrt(sum.live_bytes);
  return e;
}

}  // namespace heapgate
