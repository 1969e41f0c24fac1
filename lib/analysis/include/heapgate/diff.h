// SPDX-License-Identifier: MIT
// The symbolic diff of two normalized heap profiles: ProfileMetric, StackDelta, ProfileDiff,
// diff_profiles(), render_diff_text() and top_stacks().
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/error.h"
#include "heapgate/frame_name.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/stack_sample.h"

namespace heapgate {

/// One of the four numbers a heap profile records per stack. Closed list,
/// spelled as in flags and JSON:
/// - `live_objects`: allocations not yet freed when the profile was taken.
/// - `live_bytes`: their bytes (usable sizes).
/// - `accum_objects`: all allocations made while profiling (needs `prof_accum`).
/// - `accum_bytes`: their bytes.
enum class ProfileMetric { live_objects, live_bytes, accum_objects, accum_bytes };

/// The metric's name as written in flags and JSON ("live_bytes").
std::string_view to_string(ProfileMetric metric) noexcept;
/// Parses a metric name; the error (`parse_error`) names the value and lists the valid ones.
Result<ProfileMetric> parse_profile_metric(std::string_view text);
/// The value of `metric` in `counts`.
double profile_metric_value(const ScaledCounts& counts, ProfileMetric metric) noexcept;

/// How one stack changed between two profiles.
struct StackDelta {
  /// The stack's key, innermost first (NormalizedStack::frames).
  std::vector<FrameName> frames;
  /// Counts in the base profile; zero when the stack is new.
  ScaledCounts base;
  /// Counts in the current profile; zero when the stack disappeared.
  ScaledCounts current;
  /// `current - base`, per metric.
  ScaledCounts delta;
};

/// The symbolic difference of two normalized profiles.
struct ProfileDiff {
  /// NormalizedProfile::scaled_totals of each side, and their difference.
  ScaledCounts base_totals;
  ScaledCounts current_totals;
  ScaledCounts delta_totals;
  /// Stacks whose counts changed (any metric), largest impact first: by
  /// |delta.live_bytes| descending, then |delta.accum_bytes| descending, then
  /// by key, so the order is deterministic.
  std::vector<StackDelta> entries;
  /// Stacks present on both sides with equal counts (not in `entries`).
  std::size_t unchanged_stacks = 0;
  /// True when either side was sampled: the numbers are estimates.
  bool estimated = false;
};

/// diff_profiles()' rule for a stack whose counts did not change: every
/// difference current - base is zero (compared as differences of doubles).
bool counts_unchanged(const ScaledCounts& base, const ScaledCounts& current) noexcept;

/// Compares two normalized profiles stack by stack (by key: equal frame
/// lists). Works across processes and builds, since keys are symbolic. Pure;
/// linear in the number of stacks when both are sorted by key, as
/// normalize_profile() leaves them (otherwise sorts copies of the indices).
ProfileDiff diff_profiles(const NormalizedProfile& base, const NormalizedProfile& current);

/// A readable report: a header with the totals of both sides and their delta,
/// then up to `max_stacks` entries, each with the signed deltas of live and
/// accumulated objects and bytes (base -> current in parentheses) and its
/// frames innermost first, one per indented line; then how many entries were
/// left out. Whole numbers are printed without decimals unless `estimated`.
/// Ends in "\n". Pure.
std::string render_diff_text(const ProfileDiff& diff, std::size_t max_stacks = 20);

/// The stacks that explain a diff, as StackSample with the change as counts:
/// the first `limit` entries by live bytes (the diff's order), then the first
/// `limit` by allocations (accum_objects descending, stable), each stack once.
/// The gate picks from both per verdict (gate.h explaining_stacks). Pure.
std::vector<StackSample> top_stacks(const ProfileDiff& diff, std::size_t limit);

/// The same for one profile: its stacks as a change from nothing.
std::vector<StackSample> top_stacks(const NormalizedProfile& profile, std::size_t limit);

}  // namespace heapgate
