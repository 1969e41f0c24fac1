// SPDX-License-Identifier: MIT
// diff_profiles(): matches two normalized profiles' stacks by key and orders the changes by live
// and accumulated bytes; render_diff_text(), top_stacks() and the ProfileMetric names.
#include "heapgate/diff.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "heapgate/vocabulary.h"

namespace heapgate {
namespace {

constexpr Vocabulary<ProfileMetric, 4> kProfileMetricWords = {{
    {ProfileMetric::live_objects, "live_objects"},
    {ProfileMetric::live_bytes, "live_bytes"},
    {ProfileMetric::accum_objects, "accum_objects"},
    {ProfileMetric::accum_bytes, "accum_bytes"},
}};

ScaledCounts minus(const ScaledCounts& a, const ScaledCounts& b) {
  return ScaledCounts{a.live_objects - b.live_objects, a.live_bytes - b.live_bytes, a.accum_objects - b.accum_objects,
                      a.accum_bytes - b.accum_bytes};
}

using Frames = std::vector<FrameName>;

// Stack indices in key order, with equal keys adjacent.
std::vector<std::size_t> key_order(const std::vector<NormalizedStack>& stacks) {
  std::vector<std::size_t> order(stacks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto less = [&](std::size_t a, std::size_t b) { return stacks[a].frames < stacks[b].frames; };
  if (!std::is_sorted(order.begin(), order.end(), less)) std::stable_sort(order.begin(), order.end(), less);
  return order;
}

// Sums of adjacent equal keys (hand-built profiles may repeat a key).
struct Group {
  const Frames* frames = nullptr;
  ScaledCounts counts;
};

std::vector<Group> groups(const std::vector<NormalizedStack>& stacks) {
  std::vector<Group> out;
  out.reserve(stacks.size());
  for (std::size_t i : key_order(stacks)) {
    if (out.empty() || *out.back().frames != stacks[i].frames) out.push_back(Group{&stacks[i].frames, {}});
    out.back().counts += stacks[i].scaled;
  }
  return out;
}

std::string format_number(double value, bool estimated, bool with_sign) {
  char buf[64];
  if (estimated) {
    std::snprintf(buf, sizeof buf, with_sign ? "%+.1f" : "%.1f", value);
  } else {
    std::snprintf(buf, sizeof buf, with_sign ? "%+.0f" : "%.0f", value);
  }
  std::string s = buf;
  if (s == "-0" || s == "-0.0") s.erase(0, 1);
  if (s == "0" && with_sign) s = "+0";
  if (s == "0.0" && with_sign) s = "+0.0";
  return s;
}

void append_change(std::string& out, const char* unit, double base, double current, double delta, bool estimated) {
  out += format_number(delta, estimated, true);
  out += unit;
  out += " (";
  out += format_number(base, estimated, false);
  out += " -> ";
  out += format_number(current, estimated, false);
  out += ')';
}

}  // namespace

bool counts_unchanged(const ScaledCounts& base, const ScaledCounts& current) noexcept {
  const ScaledCounts d = minus(current, base);
  return d.live_objects == 0 && d.live_bytes == 0 && d.accum_objects == 0 && d.accum_bytes == 0;
}

std::string_view to_string(ProfileMetric metric) noexcept { return word_of(kProfileMetricWords, metric, ""); }

Result<ProfileMetric> parse_profile_metric(std::string_view text) {
  return parse_word(kProfileMetricWords, text, "metric", "metric", "live_bytes");
}

double profile_metric_value(const ScaledCounts& counts, ProfileMetric metric) noexcept {
  switch (metric) {
    case ProfileMetric::live_objects:
      return counts.live_objects;
    case ProfileMetric::live_bytes:
      return counts.live_bytes;
    case ProfileMetric::accum_objects:
      return counts.accum_objects;
    case ProfileMetric::accum_bytes:
      return counts.accum_bytes;
  }
  return 0;
}

ProfileDiff diff_profiles(const NormalizedProfile& base, const NormalizedProfile& current) {
  ProfileDiff diff;
  diff.estimated = base.sampled() || current.sampled();
  diff.base_totals = base.scaled_totals;
  diff.current_totals = current.scaled_totals;
  diff.delta_totals = minus(current.scaled_totals, base.scaled_totals);

  // Both sides in key order: one merge pass.
  const std::vector<Group> b = groups(base.stacks);
  const std::vector<Group> c = groups(current.stacks);
  std::size_t i = 0;
  std::size_t j = 0;
  auto emit = [&](const Frames& frames, const ScaledCounts& before, const ScaledCounts& after) {
    if (counts_unchanged(before, after)) {
      ++diff.unchanged_stacks;
      return;
    }
    diff.entries.push_back(StackDelta{frames, before, after, minus(after, before)});
  };
  while (i < b.size() || j < c.size()) {
    if (j == c.size() || (i < b.size() && *b[i].frames < *c[j].frames)) {
      emit(*b[i].frames, b[i].counts, ScaledCounts{});
      ++i;
    } else if (i == b.size() || *c[j].frames < *b[i].frames) {
      emit(*c[j].frames, ScaledCounts{}, c[j].counts);
      ++j;
    } else {
      emit(*b[i].frames, b[i].counts, c[j].counts);
      ++i;
      ++j;
    }
  }
  // Entries are in key order now; a stable sort keeps it as the last tie-break.
  std::stable_sort(diff.entries.begin(), diff.entries.end(), [](const StackDelta& x, const StackDelta& y) {
    const double lx = std::fabs(x.delta.live_bytes), ly = std::fabs(y.delta.live_bytes);
    if (lx != ly) return lx > ly;
    return std::fabs(x.delta.accum_bytes) > std::fabs(y.delta.accum_bytes);
  });
  return diff;
}

std::string render_diff_text(const ProfileDiff& diff, std::size_t max_stacks) {
  const bool est = diff.estimated;
  std::string out;
  out += "heap profile diff: ";
  out += std::to_string(diff.entries.size());
  out += diff.entries.size() == 1 ? " stack changed, " : " stacks changed, ";
  out += std::to_string(diff.unchanged_stacks);
  out += " unchanged";
  out += est ? " (estimated from sampled profiles)\n" : " (exact counts)\n";
  out += "  total live:        ";
  append_change(out, " objects", diff.base_totals.live_objects, diff.current_totals.live_objects,
                diff.delta_totals.live_objects, est);
  out += ", ";
  append_change(out, " B", diff.base_totals.live_bytes, diff.current_totals.live_bytes, diff.delta_totals.live_bytes,
                est);
  out += "\n  total accumulated: ";
  append_change(out, " objects", diff.base_totals.accum_objects, diff.current_totals.accum_objects,
                diff.delta_totals.accum_objects, est);
  out += ", ";
  append_change(out, " B", diff.base_totals.accum_bytes, diff.current_totals.accum_bytes, diff.delta_totals.accum_bytes,
                est);
  out += '\n';
  const std::size_t shown = std::min(max_stacks, diff.entries.size());
  for (std::size_t k = 0; k < shown; ++k) {
    const StackDelta& e = diff.entries[k];
    out += "\n#";
    out += std::to_string(k + 1);
    out += "  live ";
    append_change(out, " objects", e.base.live_objects, e.current.live_objects, e.delta.live_objects, est);
    out += ", ";
    append_change(out, " B", e.base.live_bytes, e.current.live_bytes, e.delta.live_bytes, est);
    out += "\n    accumulated ";
    append_change(out, " objects", e.base.accum_objects, e.current.accum_objects, e.delta.accum_objects, est);
    out += ", ";
    append_change(out, " B", e.base.accum_bytes, e.current.accum_bytes, e.delta.accum_bytes, est);
    out += '\n';
    for (const FrameName& frame : e.frames) {
      out += "      ";
      out += frame.str();
      out += '\n';
    }
  }
  if (shown < diff.entries.size()) {
    out += "\n... ";
    out += std::to_string(diff.entries.size() - shown);
    out += " more changed stacks not shown\n";
  }
  return out;
}

std::vector<StackSample> top_stacks(const ProfileDiff& diff, std::size_t limit) {
  std::vector<const StackDelta*> by_count;
  by_count.reserve(diff.entries.size());
  for (const StackDelta& e : diff.entries) by_count.push_back(&e);
  std::stable_sort(by_count.begin(), by_count.end(), [](const StackDelta* a, const StackDelta* b) {
    return a->delta.accum_objects > b->delta.accum_objects;
  });
  std::vector<const StackDelta*> chosen;
  // By index, not by searching `chosen`: with no limit (every call site of a
  // test) a search made this quadratic in the stacks, minutes for 100,000.
  std::vector<bool> taken(diff.entries.size(), false);
  auto take = [&](const StackDelta* e) {
    const auto i = static_cast<std::size_t>(e - diff.entries.data());
    if (!taken[i]) {
      taken[i] = true;
      chosen.push_back(e);
    }
  };
  for (std::size_t i = 0; i < diff.entries.size() && i < limit; ++i) take(&diff.entries[i]);
  for (std::size_t i = 0; i < by_count.size() && i < limit; ++i) take(by_count[i]);
  std::vector<StackSample> out;
  out.reserve(chosen.size());
  for (const StackDelta* e : chosen) {
    StackSample sample;
    sample.frames.reserve(e->frames.size());
    for (const FrameName& f : e->frames) sample.frames.push_back(f.str());
    sample.counts = e->delta;
    out.push_back(std::move(sample));
  }
  return out;
}

std::vector<StackSample> top_stacks(const NormalizedProfile& profile, std::size_t limit) {
  return top_stacks(diff_profiles(NormalizedProfile{}, profile), limit);
}

}  // namespace heapgate
