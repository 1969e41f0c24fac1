// SPDX-License-Identifier: MIT
// How far a sampled profile's un-sampled counts may be from the truth.
// docs/design.md §6b derives the formula and the gate's use of it.
#pragma once

#include <cstdint>

#include "heapgate/profile.h"

namespace heapgate {

/// Standard errors of the four counts un-sampled from a heap profile
/// (unsample()), in their own units (objects or bytes). All zero for a
/// profile that recorded every allocation.
struct SamplingErrors {
  double allocations = 0;
  double allocated_bytes = 0;
  double live_allocations = 0;
  double live_bytes = 0;
};

/// How many standard errors separate an estimate from the edge of its
/// interval, and a sampled baseline from a regression: 3, i.e. a one-sided
/// 99.87% confidence per metric under the normal approximation.
inline constexpr double kSamplingConfidenceZ = 3.0;

/// The estimated variances of unsample(counts, sample_period), as a
/// ScaledCounts of variances. jemalloc samples the bytes a thread allocates
/// as a Poisson process of mean interval `sample_period`, so each allocation
/// of size s is sampled independently with p = 1 - exp(-s / period), and an
/// estimate n / p has the Horvitz-Thompson variance n (1 - p) / p^2 (objects)
/// and n s^2 (1 - p) / p^2 (bytes), with s the stack's mean size. Zero for a
/// period of 0 or 1 and for empty counts. Pure.
ScaledCounts unsampling_variance(const Counts& counts, std::uint64_t sample_period);

/// The standard errors of a profile's totals un-sampled stack by stack (the
/// square root of the summed unsampling_variance(): stacks are sampled
/// independently). Zero for an unsampled profile. Pure.
SamplingErrors sampling_errors(const Profile& profile);

}  // namespace heapgate
