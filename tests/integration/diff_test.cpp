// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The symbolic diff across processes (heap_workload runs at different ASLR
// addresses), and its ordering and renderers on hand-built profiles.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/diff.h"
#include "heapgate/folded.h"
#include "heapgate/normalize.h"
#include "heapgate/symbolizer.h"
#include "test_support.h"
#include "workload_runner.h"

namespace heapgate {
namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

const StackDelta* find_entry(const ProfileDiff& diff, std::string_view function) {
  for (const auto& e : diff.entries) {
    if (!e.frames.empty() && contains(e.frames.front(), function)) return &e;
  }
  return nullptr;
}

// Parses folded lines back: "a;b;c VALUE" -> {"a;b;c": VALUE}.
std::map<std::string, long long> folded_values(const std::string& text) {
  std::map<std::string, long long> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    EXPECT_NE(end, std::string::npos) << "every line ends in a newline";
    if (end == std::string::npos) break;
    std::string line = text.substr(pos, end - pos);
    std::size_t space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    if (space == std::string::npos) break;
    out[line.substr(0, space)] += std::stoll(line.substr(space + 1));
    pos = end + 1;
  }
  return out;
}

class CrossProcessDiff : public ::testing::Test {
 protected:
  void SetUp() override { HEAPGATE_REQUIRE_PROFILING(); }
};

TEST_F(CrossProcessDiff, FindsExactlyTheInjectedStacks) {
  const std::string dir = testing::make_temp_dir();
  const Profile base = testing::run_heap_workload(dir, "base.heap", 0, 0);
  const Profile current = testing::run_heap_workload(dir, "current.heap", 7, 3);
  ASSERT_FALSE(base.stacks.empty());
  ASSERT_FALSE(current.stacks.empty());

  Symbolizer symbolizer;
  const NormalizedProfile b = normalize_profile(base, symbolizer);
  const NormalizedProfile c = normalize_profile(current, symbolizer);
  const ProfileDiff diff = diff_profiles(b, c);
  EXPECT_FALSE(diff.estimated);
  ASSERT_EQ(diff.entries.size(), 2u) << render_diff_text(diff);

  // Largest live-bytes change first.
  const StackDelta& leak = diff.entries[0];
  EXPECT_EQ(leak.frames, (std::vector<FrameName>{"(anonymous namespace)::injected_leak(int)", "main"}));
  EXPECT_EQ(leak.delta.live_objects, 3.0);
  EXPECT_EQ(leak.delta.live_bytes, 288.0);
  EXPECT_EQ(leak.delta.accum_objects, 3.0);
  EXPECT_EQ(leak.delta.accum_bytes, 288.0);
  EXPECT_EQ(leak.base.accum_objects, 0.0);  // the stack is new

  const StackDelta& extra = diff.entries[1];
  EXPECT_EQ(extra.frames, (std::vector<FrameName>{"(anonymous namespace)::injected_extra(int)", "main"}));
  EXPECT_EQ(extra.delta.live_objects, 0.0);
  EXPECT_EQ(extra.delta.live_bytes, 0.0);
  EXPECT_EQ(extra.delta.accum_objects, 7.0);
  EXPECT_EQ(extra.delta.accum_bytes, 336.0);

  // steady_work is in both and cancels although its addresses differ.
  EXPECT_EQ(find_entry(diff, "steady_work"), nullptr);
  EXPECT_EQ(diff.unchanged_stacks, 1u);
  EXPECT_EQ(diff.delta_totals.live_bytes, 288.0);
  EXPECT_EQ(diff.delta_totals.accum_bytes, 624.0);

  const std::string text = render_diff_text(diff);
  EXPECT_TRUE(contains(text, "injected_leak(int)")) << text;
  EXPECT_TRUE(contains(text, "injected_extra(int)")) << text;
  EXPECT_TRUE(contains(text, "+288 B (0 -> 288)")) << text;
  EXPECT_TRUE(contains(text, "+7 objects (0 -> 7)")) << text;
  EXPECT_FALSE(contains(text, "steady_work")) << text;
  EXPECT_FALSE(contains(text, ".0")) << "exact counts print no decimals:\n" << text;

  const auto live = folded_values(render_folded(diff, ProfileMetric::live_bytes));
  EXPECT_EQ(live, (std::map<std::string, long long>{{"main;(anonymous namespace)::injected_leak(int)", 288}}));
  const auto accum = folded_values(render_folded(diff, ProfileMetric::accum_objects));
  EXPECT_EQ(accum, (std::map<std::string, long long>{{"main;(anonymous namespace)::injected_leak(int)", 3},
                                                     {"main;(anonymous namespace)::injected_extra(int)", 7}}));
  const auto whole = folded_values(render_folded(c, ProfileMetric::accum_bytes));
  long long sum = 0;
  for (const auto& [stack, value] : whole) sum += value;
  EXPECT_EQ(sum, static_cast<long long>(c.scaled_totals.accum_bytes));
  EXPECT_EQ(whole.at("main;(anonymous namespace)::injected_extra(int)"), 336);
}

TEST_F(CrossProcessDiff, IdenticalRunsOfTwoProcessesDoNotDiffer) {
  const std::string dir = testing::make_temp_dir();
  const Profile first = testing::run_heap_workload(dir, "first.heap", 0, 0);
  const Profile second = testing::run_heap_workload(dir, "second.heap", 0, 0);
  ASSERT_FALSE(first.stacks.empty());
  Symbolizer symbolizer;
  const NormalizedProfile a = normalize_profile(first, symbolizer);
  const NormalizedProfile b = normalize_profile(second, symbolizer);
  const ProfileDiff across = diff_profiles(a, b);
  EXPECT_TRUE(across.entries.empty()) << render_diff_text(across);
  EXPECT_EQ(across.unchanged_stacks, a.stacks.size());
  const ProfileDiff self = diff_profiles(b, b);
  EXPECT_TRUE(self.entries.empty());
  EXPECT_EQ(render_folded(self, ProfileMetric::live_bytes), "");
  EXPECT_TRUE(contains(render_diff_text(self), "0 stacks changed")) << render_diff_text(self);
}

// Hand-built profiles for ordering and rendering.
NormalizedStack stack(std::vector<FrameName> frames, double live_objects, double live_bytes, double accum_objects,
                      double accum_bytes) {
  NormalizedStack s;
  s.frames = std::move(frames);
  s.scaled = ScaledCounts{live_objects, live_bytes, accum_objects, accum_bytes};
  s.counts = Counts{static_cast<std::uint64_t>(live_objects), static_cast<std::uint64_t>(live_bytes),
                    static_cast<std::uint64_t>(accum_objects), static_cast<std::uint64_t>(accum_bytes)};
  return s;
}

NormalizedProfile profile_of(std::vector<NormalizedStack> stacks, std::uint64_t period = 1) {
  NormalizedProfile p;
  p.sample_period = period;
  std::sort(stacks.begin(), stacks.end(),
            [](const NormalizedStack& a, const NormalizedStack& b) { return a.frames < b.frames; });
  for (const auto& s : stacks) {
    p.scaled_totals.live_objects += s.scaled.live_objects;
    p.scaled_totals.live_bytes += s.scaled.live_bytes;
    p.scaled_totals.accum_objects += s.scaled.accum_objects;
    p.scaled_totals.accum_bytes += s.scaled.accum_bytes;
  }
  p.stacks = std::move(stacks);
  return p;
}

TEST(Diff, OrdersByLiveBytesThenAccumulatedBytesThenKey) {
  const NormalizedProfile base = profile_of({
      stack({"shrinks", "main"}, 2, 100, 2, 100),
      stack({"same", "main"}, 1, 10, 1, 10),
      stack({"gone", "main"}, 0, 0, 4, 40),
  });
  const NormalizedProfile current = profile_of({
      stack({"shrinks", "main"}, 1, 50, 2, 100),
      stack({"same", "main"}, 1, 10, 1, 10),
      stack({"new_b", "main"}, 0, 0, 3, 300),
      stack({"new_a", "main"}, 0, 0, 3, 300),
      stack({"grows", "main"}, 4, 400, 4, 400),
  });
  const ProfileDiff diff = diff_profiles(base, current);
  std::vector<FrameName> order;
  for (const auto& e : diff.entries) order.push_back(e.frames.front());
  EXPECT_EQ(order, (std::vector<FrameName>{"grows", "shrinks", "new_a", "new_b", "gone"}));
  EXPECT_EQ(diff.unchanged_stacks, 1u);
  EXPECT_EQ(diff.entries[1].delta.live_bytes, -50.0);
  EXPECT_EQ(diff.entries[4].delta.accum_objects, -4.0);
  EXPECT_EQ(diff.entries[4].current.accum_objects, 0.0);
  EXPECT_FALSE(diff.estimated);

  // Unsorted input (hand-built) diffs the same.
  NormalizedProfile shuffled = current;
  std::reverse(shuffled.stacks.begin(), shuffled.stacks.end());
  const ProfileDiff again = diff_profiles(base, shuffled);
  ASSERT_EQ(again.entries.size(), diff.entries.size());
  for (std::size_t i = 0; i < again.entries.size(); ++i) EXPECT_EQ(again.entries[i].frames, diff.entries[i].frames);

  const std::string text = render_diff_text(diff, 2);
  EXPECT_TRUE(contains(text, "#1  live +4 objects (0 -> 4), +400 B (0 -> 400)")) << text;
  EXPECT_TRUE(contains(text, "-50 B (100 -> 50)")) << text;
  EXPECT_TRUE(contains(text, "\n      grows\n      main\n")) << text;
  EXPECT_FALSE(contains(text, "new_a")) << text;
  EXPECT_TRUE(contains(text, "3 more changed stacks not shown")) << text;

  const auto folded = folded_values(render_folded(diff, ProfileMetric::live_bytes));
  EXPECT_EQ(folded, (std::map<std::string, long long>{{"main;grows", 400}, {"main;shrinks", -50}}));
}

TEST(Diff, SampledProfilesAreMarkedEstimated) {
  const NormalizedProfile base = profile_of({stack({"f"}, 1.25, 100.5, 1.25, 100.5)}, 524288);
  const NormalizedProfile current = profile_of({stack({"f"}, 2.5, 201, 2.5, 201)}, 524288);
  const ProfileDiff diff = diff_profiles(base, current);
  EXPECT_TRUE(diff.estimated);
  ASSERT_EQ(diff.entries.size(), 1u);
  const std::string text = render_diff_text(diff);
  EXPECT_TRUE(contains(text, "+100.5 B (100.5 -> 201.0)")) << text;
  EXPECT_TRUE(contains(text, "estimated")) << text;
  EXPECT_EQ(render_folded(diff, ProfileMetric::live_bytes), "f 101\n");  // rounded half away from zero
}

// One function picks the explaining stacks of a profile or a diff: the top by
// live bytes, then the top by allocations, each stack once.
TEST(TopStacks, TakesTheTopByLiveBytesThenByAllocationsWithoutRepeats) {
  const NormalizedProfile p =
      profile_of({stack({"holds", "main"}, 1, 4096, 1, 4096), stack({"churns", "main"}, 0, 0, 500, 8000),
                  stack({"both", "main"}, 1, 1024, 900, 9000), stack({"small", "main"}, 0, 0, 2, 32)});
  const std::vector<StackSample> top = top_stacks(p, 2);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].frames, (std::vector<std::string>{"holds", "main"}));
  EXPECT_EQ(top[0].counts, (ScaledCounts{1, 4096, 1, 4096}));
  EXPECT_EQ(top[1].frames, (std::vector<std::string>{"both", "main"}));  // 2nd by live bytes, 1st by allocations
  EXPECT_EQ(top[2].frames, (std::vector<std::string>{"churns", "main"}));

  // From a diff, the counts are the change.
  const NormalizedProfile before = profile_of({stack({"holds", "main"}, 1, 1000, 1, 1000)});
  const std::vector<StackSample> changed = top_stacks(diff_profiles(before, p), 1);
  ASSERT_FALSE(changed.empty());
  EXPECT_EQ(changed[0].frames, (std::vector<std::string>{"holds", "main"}));
  EXPECT_EQ(changed[0].counts, (ScaledCounts{0, 3096, 0, 3096}));
  EXPECT_TRUE(top_stacks(p, 0).empty());
}

TEST(Diff, FoldedOutputEscapesSeparators) {
  const NormalizedProfile p = profile_of({stack({"inner;x", "outer\nname"}, 1, 16, 1, 16)});
  EXPECT_EQ(render_folded(p, ProfileMetric::live_bytes), "outer name;inner:x 16\n");
  EXPECT_EQ(render_folded(p, ProfileMetric::accum_objects), "outer name;inner:x 1\n");
  const NormalizedProfile freed = profile_of({stack({"f"}, 0, 0, 1, 16)});
  EXPECT_EQ(render_folded(freed, ProfileMetric::live_bytes), "");  // zero values are left out
}

TEST(Diff, MetricNamesRoundTrip) {
  for (ProfileMetric m : {ProfileMetric::live_objects, ProfileMetric::live_bytes, ProfileMetric::accum_objects,
                          ProfileMetric::accum_bytes}) {
    auto parsed = parse_profile_metric(to_string(m));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_EQ(to_string(ProfileMetric::accum_bytes), "accum_bytes");
  auto bad = parse_profile_metric("live-bytes");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::parse_error);
  EXPECT_TRUE(contains(bad.error().message(), "live-bytes")) << bad.error().message();
  EXPECT_EQ(profile_metric_value(ScaledCounts{1, 2, 3, 4}, ProfileMetric::accum_objects), 3.0);
}

}  // namespace
}  // namespace heapgate
