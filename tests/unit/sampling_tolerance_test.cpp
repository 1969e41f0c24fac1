// SPDX-License-Identifier: MIT
// Sampled estimates carry their standard errors, and the gate's tolerance of
// a sampled metric is the sampling error of the difference (docs/design.md §6b).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "heapgate/baseline.h"
#include "heapgate/baseline_merge.h"
#include "heapgate/gate.h"
#include "heapgate/report.h"
#include "heapgate/sampling.h"

namespace heapgate {
namespace {

constexpr std::uint64_t kPeriod = 512 * 1024;

TEST(UnsamplingVariance, HorvitzThompsonPerStack) {
  Counts c;
  c.accum_objects = 4;
  c.accum_bytes = 4 * 1024;
  c.live_objects = 1;
  c.live_bytes = 256 * 1024;
  ScaledCounts v = unsampling_variance(c, kPeriod);
  const double p = 1 - std::exp(-1024.0 / kPeriod);
  EXPECT_NEAR(v.accum_objects, 4 * (1 - p) / (p * p), 1e-6 * v.accum_objects);
  EXPECT_NEAR(v.accum_bytes, 4 * 1024.0 * 1024.0 * (1 - p) / (p * p), 1e-6 * v.accum_bytes);
  const double q = 1 - std::exp(-0.5);
  EXPECT_NEAR(v.live_objects, (1 - q) / (q * q), 1e-9);
  EXPECT_NEAR(v.live_bytes, 262144.0 * 262144.0 * (1 - q) / (q * q), 1e-3);
  // Small blocks: the bytes' variance is about period x bytes per sampled block.
  EXPECT_NEAR(v.accum_bytes / (4 * kPeriod * 1024.0 / p), 1.0, 0.01);
}

TEST(UnsamplingVariance, NothingToEstimate) {
  Counts c;
  c.accum_objects = 10;
  c.accum_bytes = 640;
  EXPECT_EQ(unsampling_variance(c, 1), ScaledCounts{});
  EXPECT_EQ(unsampling_variance(c, 0), ScaledCounts{});
  EXPECT_EQ(unsampling_variance(Counts{}, kPeriod), ScaledCounts{});
  c.accum_bytes = 0;  // a malformed pair: no size, no estimate
  EXPECT_EQ(unsampling_variance(c, kPeriod), ScaledCounts{});
}

TEST(SamplingErrors, StacksAddVariances) {
  Profile profile;
  profile.sample_period = kPeriod;
  StackRecord a;
  a.counts.accum_objects = 3;
  a.counts.accum_bytes = 3 * 4096;
  StackRecord b = a;
  profile.stacks = {a, b};
  const SamplingErrors e = sampling_errors(profile);
  const double one = unsampling_variance(a.counts, kPeriod).accum_bytes;
  EXPECT_NEAR(e.allocated_bytes, std::sqrt(2 * one), 1e-6 * e.allocated_bytes);
  EXPECT_EQ(e.live_bytes, 0);
  profile.sample_period = 1;
  EXPECT_EQ(sampling_errors(profile).allocated_bytes, 0);
}

TEST(SamplingTolerance, ThreeStandardErrorsOfTheDifference) {
  EXPECT_EQ(sampling_tolerance(3, 4), 15u);
  EXPECT_EQ(sampling_tolerance(100, 100), 425u);  // ceil(3 * 141.42)
  EXPECT_EQ(sampling_tolerance(0, 0), 0u);
  EXPECT_EQ(sampling_tolerance(1e300, 1e300), std::numeric_limits<std::uint64_t>::max());
}

Metrics sampled_metrics(std::uint64_t allocations) {
  Metrics m;
  m.allocations = allocations;
  m.allocated_bytes = allocations * 1024;
  m.peak_bytes = 4096;
  return m;
}

Metrics errors(std::uint64_t allocations) {
  Metrics m;
  m.allocations = allocations;
  m.allocated_bytes = allocations * 1100;  // bytes vary a little more than counts
  return m;
}

BaselineEntry sampled_entry(std::uint64_t allocations, std::optional<Metrics> standard_errors) {
  BaselineEntry e;
  e.mode = Mode::sampled;
  e.metrics = sampled_metrics(allocations);
  e.standard_errors = standard_errors;
  return e;
}

Comparison compare(const BaselineEntry& e, std::uint64_t allocations, std::optional<Metrics> current_errors) {
  return compare_to_baseline(sampled_metrics(allocations), &e, Tolerances::for_mode(Mode::sampled), Mode::sampled,
                             current_errors);
}

TEST(SampledComparison, LimitComesFromBothErrors) {
  const BaselineEntry e = sampled_entry(1000, errors(100));
  // limit ceil(3 * sqrt(100^2 + 100^2)) = 425 allocations.
  EXPECT_EQ(compare(e, 1425, errors(100)).verdict, Verdict::pass);
  const Comparison c = compare(e, 1426 + 0, errors(100));
  EXPECT_EQ(c.verdict, Verdict::regressed) << c.explanation;
  EXPECT_EQ(c.deltas[0].limit, 425u);
  EXPECT_NE(c.explanation.find("standard error \xC2\xB1"
                               "100 in the baseline, \xC2\xB1"
                               "100 in this run"),
            std::string::npos)
      << c.explanation;
  EXPECT_NE(c.explanation.find("3 standard errors of their difference"), std::string::npos) << c.explanation;
  EXPECT_EQ(compare(e, 574, errors(100)).verdict, Verdict::improved);
  // A precise estimate narrows the limit: ceil(3 * sqrt(100^2 + 10^2)) = 302.
  EXPECT_EQ(compare(e, 1303, errors(10)).verdict, Verdict::regressed);
  EXPECT_EQ(compare(e, 1302, errors(10)).verdict, Verdict::pass);
}

TEST(SampledComparison, WhereOnlyOneSideKnowsItsErrorsBothCountAsThat) {
  const BaselineEntry old_entry = sampled_entry(1000, std::nullopt);
  EXPECT_EQ(compare(old_entry, 1425, errors(100)).verdict, Verdict::pass);
  EXPECT_EQ(compare(old_entry, 1426, errors(100)).verdict, Verdict::regressed);
  const BaselineEntry e = sampled_entry(1000, errors(100));
  EXPECT_EQ(compare(e, 1426, std::nullopt).verdict, Verdict::regressed);
}

TEST(SampledComparison, FixedTolerancesWithoutErrorsOrWithTheEntrysOwn) {
  // Neither side knows: the mode's 10%.
  const BaselineEntry old_entry = sampled_entry(1000, std::nullopt);
  EXPECT_EQ(compare(old_entry, 1100, std::nullopt).verdict, Verdict::pass);
  EXPECT_EQ(compare(old_entry, 1101, std::nullopt).verdict, Verdict::regressed);
  // The entry's own tolerances win over the errors.
  BaselineEntry own = sampled_entry(1000, errors(100));
  own.tolerance = Tolerances::strict();
  EXPECT_EQ(compare(own, 1001, errors(100)).verdict, Verdict::regressed);
  // Counted exactly (counters baseline): errors play no part.
  BaselineEntry exact = sampled_entry(1000, errors(100));
  exact.mode = Mode::counters;
  const Comparison c = compare_to_baseline(sampled_metrics(1001), &exact, Tolerances::for_mode(Mode::counters),
                                           Mode::counters, std::nullopt);
  EXPECT_EQ(c.verdict, Verdict::regressed);
}

TEST(SampledComparison, PeakIsCountedNotEstimated) {
  const BaselineEntry e = sampled_entry(1000, errors(100));
  Metrics now = sampled_metrics(1000);
  now.peak_bytes = 4096 + 1024 * 1024;  // beyond 10% + 512 KiB of 4096
  const Comparison c = compare_to_baseline(now, &e, Tolerances::for_mode(Mode::sampled), Mode::sampled, errors(100));
  EXPECT_EQ(c.verdict, Verdict::regressed) << c.explanation;
  EXPECT_NE(c.explanation.find("peak_bytes"), std::string::npos);
}

TEST(SampledComparison, JudgeUsesTheObservationsErrors) {
  const BaselineEntry e = sampled_entry(1000, errors(100));
  Observation o;
  o.mode = Mode::sampled;
  o.metrics = sampled_metrics(1400);
  o.standard_errors = errors(100);
  EXPECT_EQ(judge(o, &e, GatePolicy{}).verdict, Verdict::pass);
  o.standard_errors.reset();  // baseline's errors for both: the same limit
  EXPECT_EQ(judge(o, &e, GatePolicy{}).verdict, Verdict::pass);
  o.metrics = sampled_metrics(1500);
  EXPECT_EQ(judge(o, &e, GatePolicy{}).verdict, Verdict::regressed);
}

TEST(SampledRecords, ErrorsTravelThroughReportsAndBaselines) {
  Report report;
  report.run.binary = "suite";
  TestRecord t;
  t.name = "S.T";
  t.suite = "S";
  t.test = "T";
  t.mode = Mode::sampled;
  t.estimated = true;
  t.metrics = sampled_metrics(1000);
  t.standard_errors = errors(90);
  report.tests.push_back(t);
  auto back = parse_report_json(to_json(report), "r.json");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, report);
  ASSERT_TRUE(back->tests[0].standard_errors);
  EXPECT_EQ(back->tests[0].standard_errors->allocations, 90u);
  // Re-judging the saved record uses them.
  EXPECT_EQ(observation_of(back->tests[0]).standard_errors, t.standard_errors);

  Baseline baseline;
  baseline.binary = "suite";
  merge_run_into(baseline, report, BaselineMergeRules{}).update;
  ASSERT_EQ(baseline.tests.count("S.T"), 1u);
  EXPECT_EQ(baseline.tests["S.T"].standard_errors, t.standard_errors);
  auto reread = parse_baseline_json(to_json(baseline), "b.json");
  ASSERT_TRUE(reread) << reread.error().message();
  EXPECT_EQ(reread->tests["S.T"].standard_errors, t.standard_errors);

  // Exact records keep none.
  report.tests[0].mode = Mode::counters;
  report.tests[0].standard_errors.reset();
  const std::string json = to_json(report);
  EXPECT_EQ(json.find("standard_errors"), std::string::npos);
}

TEST(EstimateInterval, ThreeStandardErrorsEitherSideFlooredAtZero) {
  EXPECT_EQ(estimate_interval(1000, 100),
            "700\xE2\x80\x93"
            "1300");
  EXPECT_EQ(estimate_interval(100, 100),
            "0\xE2\x80\x93"
            "400");
  EXPECT_EQ(estimate_interval(100, 0), "");
}

}  // namespace
}  // namespace heapgate
