// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include <gtest/gtest.h>

#include <limits>

#include "heapgate/baseline.h"
#include "heapgate/metrics.h"
#include "heapgate/verdict.h"
#include "heapgate/gate.h"

namespace heapgate {
namespace {

Metrics metrics(std::uint64_t allocations, std::uint64_t bytes = 1024, std::uint64_t live = 0,
                std::uint64_t live_bytes = 0, std::uint64_t peak = 512) {
  return Metrics{allocations, bytes, live, live_bytes, peak};
}

BaselineEntry entry(const Metrics& m, Mode mode = Mode::exact) {
  BaselineEntry e;
  e.metrics = m;
  e.mode = mode;
  return e;
}

struct Case {
  const char* label;
  Metrics baseline;
  Metrics current;
  Tolerances tolerances;
  Verdict expected;
};

Tolerances absolute_allocations(std::uint64_t n) {
  Tolerances t;
  t[MetricName::allocations].absolute = n;
  return t;
}

Tolerances relative_all(double r) {
  Tolerances t;
  for (MetricName m : kMetricNames) t[m].relative = r;
  return t;
}

TEST(CompareToBaseline, TableOfVerdicts) {
  const Tolerances strict = Tolerances::for_mode(Mode::exact);
  const Tolerances sampled = Tolerances::for_mode(Mode::sampled);
  const Case cases[] = {
      {"exact: equal", metrics(120), metrics(120), strict, Verdict::pass},
      {"exact: +1 allocation", metrics(120), metrics(121), strict, Verdict::regressed},
      {"exact: -1 allocation", metrics(120), metrics(119), strict, Verdict::improved},
      {"exact: +1 byte", metrics(120, 1024), metrics(120, 1025), strict, Verdict::regressed},
      {"exact: +1 peak byte", metrics(120), metrics(120, 1024, 0, 0, 513), strict, Verdict::regressed},
      {"exact: a leak grows live", metrics(120), metrics(120, 1024, 1, 16), strict, Verdict::regressed},
      {"exact: one up one down", metrics(120, 1024), metrics(121, 1000), strict, Verdict::regressed},
      {"absolute 2: +2 is within", metrics(120), metrics(122), absolute_allocations(2), Verdict::pass},
      {"absolute 2: +3 is beyond", metrics(120), metrics(123), absolute_allocations(2), Verdict::regressed},
      {"absolute 2: -2 is within", metrics(120), metrics(118), absolute_allocations(2), Verdict::pass},
      {"absolute 2: -3 is beyond", metrics(120), metrics(117), absolute_allocations(2), Verdict::improved},
      {"relative 10%: +12 of 120 is within", metrics(120, 1000), metrics(132, 1000), relative_all(0.1), Verdict::pass},
      {"relative 10%: +13 of 120 is beyond", metrics(120, 1000), metrics(133, 1000), relative_all(0.1),
       Verdict::regressed},
      {"relative 10%: -13 of 120 is beyond", metrics(120, 1000), metrics(107, 1000), relative_all(0.1),
       Verdict::improved},
      {"relative: baseline 0 allows nothing", metrics(0), metrics(1), relative_all(0.5), Verdict::regressed},
      {"sampled: +10% of allocations", metrics(1000), metrics(1100), sampled, Verdict::pass},
      {"sampled: +11% of allocations", metrics(1000), metrics(1110), sampled, Verdict::regressed},
      {"sampled: +512 KiB on a small test", metrics(10, 1000), metrics(10, 1000 + 512 * 1024), sampled, Verdict::pass},
      {"sampled: +512 KiB + 1", metrics(10, 1000), metrics(10, 1001 + 512 * 1024), sampled, Verdict::regressed},
      {"sampled: 20% fewer bytes of 10 MB", metrics(10, 10'000'000), metrics(10, 8'000'000), sampled,
       Verdict::improved},
  };
  for (const Case& c : cases) {
    BaselineEntry base = entry(c.baseline);
    Comparison result = compare_to_baseline(c.current, &base, c.tolerances);
    EXPECT_EQ(result.verdict, c.expected) << c.label << ": " << result.explanation;
    EXPECT_EQ(result.deltas.size(), kMetricNames.size()) << c.label;
  }
}

TEST(CompareToBaseline, NullBaselineIsNew) {
  Comparison c = compare_to_baseline(metrics(5), nullptr, Tolerances::strict());
  EXPECT_EQ(c.verdict, Verdict::new_test);
  EXPECT_TRUE(c.deltas.empty());
  EXPECT_NE(c.explanation.find("no entry"), std::string::npos) << c.explanation;
}

TEST(CompareToBaseline, ExplanationNamesValuesDeltaPercentAndLimit) {
  BaselineEntry base = entry(metrics(120));
  Comparison c = compare_to_baseline(metrics(180), &base, Tolerances::strict());
  ASSERT_EQ(c.verdict, Verdict::regressed);
  EXPECT_EQ(c.explanation, "regressed: allocations 120 \xE2\x86\x92 180 (+60, +50.0%), limit +0.");
}

TEST(CompareToBaseline, ExplanationOfImprovementSuggestsRatchet) {
  BaselineEntry base = entry(metrics(120));
  Comparison c = compare_to_baseline(metrics(60), &base, Tolerances::strict());
  ASSERT_EQ(c.verdict, Verdict::improved);
  EXPECT_EQ(c.explanation,
            "improved: allocations 120 \xE2\x86\x92 60 (-60, -50.0%), limit -0; accept this run to ratchet the "
            "baseline down.");
}

TEST(CompareToBaseline, DeltasCarryRatioLimitAndFlag) {
  BaselineEntry base = entry(metrics(200));
  Tolerances t = absolute_allocations(10);
  Comparison c = compare_to_baseline(metrics(250), &base, t);
  const MetricDelta& d = c.deltas[static_cast<std::size_t>(MetricName::allocations)];
  EXPECT_EQ(d.metric, MetricName::allocations);
  EXPECT_EQ(d.baseline, 200u);
  EXPECT_EQ(d.current, 250u);
  EXPECT_EQ(d.delta, 50);
  EXPECT_DOUBLE_EQ(d.ratio, 0.25);
  EXPECT_EQ(d.limit, 10u);
  EXPECT_TRUE(d.beyond_tolerance);
  const MetricDelta& bytes = c.deltas[static_cast<std::size_t>(MetricName::allocated_bytes)];
  EXPECT_EQ(bytes.delta, 0);
  EXPECT_FALSE(bytes.beyond_tolerance);
}

TEST(CompareToBaseline, EntryToleranceOverridesTheRunDefault) {
  BaselineEntry base = entry(metrics(100));
  base.tolerance = absolute_allocations(5);
  EXPECT_EQ(compare_to_baseline(metrics(105), &base, Tolerances::strict()).verdict, Verdict::pass);
  EXPECT_EQ(compare_to_baseline(metrics(106), &base, Tolerances::strict()).verdict, Verdict::regressed);
}

TEST(CompareToBaseline, ModeMismatchIsExplained) {
  BaselineEntry base = entry(metrics(100), Mode::exact);
  Comparison c = compare_to_baseline(metrics(100), &base, Tolerances::strict(), Mode::sampled);
  EXPECT_EQ(c.verdict, Verdict::pass);
  EXPECT_NE(c.explanation.find("exact mode"), std::string::npos) << c.explanation;
  Comparison same = compare_to_baseline(metrics(100), &base, Tolerances::strict(), Mode::counters);
  EXPECT_EQ(same.explanation.find("Note"), std::string::npos) << same.explanation;
}

TEST(CompareMetric, SaturatesHugeDeltas) {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  MetricDelta up = compare_metric(MetricName::live_bytes, 0, max, Tolerance{});
  EXPECT_EQ(up.delta, std::numeric_limits<std::int64_t>::max());
  EXPECT_TRUE(up.beyond_tolerance);
  MetricDelta down = compare_metric(MetricName::live_bytes, max, 0, Tolerance{});
  EXPECT_EQ(down.delta, -std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(allowed_change(Tolerance{0, 2.0}, max), max);
}

TEST(Tolerances, ExactAndCountersAreStrictSampledIsLooser) {
  EXPECT_EQ(Tolerances::for_mode(Mode::exact), Tolerances::strict());
  EXPECT_EQ(Tolerances::for_mode(Mode::counters), Tolerances::strict());
  Tolerances s = Tolerances::for_mode(Mode::sampled);
  EXPECT_DOUBLE_EQ(s[MetricName::allocations].relative, 0.10);
  EXPECT_EQ(s[MetricName::allocations].absolute, 0u);
  EXPECT_EQ(s[MetricName::peak_bytes].absolute, kSampledAbsoluteBytes);
}

TEST(Verdict, ParsesEveryNameItPrintsAndNewIsSpelledNew) {
  for (Verdict v : kVerdicts) {
    auto parsed = parse_verdict(to_string(v));
    ASSERT_TRUE(parsed) << to_string(v);
    EXPECT_EQ(*parsed, v);
  }
  EXPECT_EQ(to_string(Verdict::new_test), "new");
  EXPECT_EQ(to_string(Verdict::over_budget), "over_budget");
  auto bad = parse_verdict("new_test");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("over_budget"), std::string::npos);
}

TEST(Verdict, FailuresAndStrictUnavailable) {
  for (Verdict v : kVerdicts) {
    bool failing = v == Verdict::regressed || v == Verdict::leaked || v == Verdict::over_budget;
    EXPECT_EQ(is_failure(v), failing) << to_string(v);
    EXPECT_EQ(is_failure(v, true), failing || v == Verdict::unavailable) << to_string(v);
  }
}

TEST(MetricName, ParsesEveryNameAndIndexesMetrics) {
  Metrics m{1, 2, 3, 4, 5};
  std::uint64_t expected = 1;
  for (MetricName name : kMetricNames) {
    auto parsed = parse_metric_name(to_string(name));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, name);
    EXPECT_EQ(get(m, name), expected++);
  }
  EXPECT_FALSE(parse_metric_name("allocs"));
}

TEST(Size, ParsesNumbersWithSiAndBinaryUnits) {
  const std::pair<const char*, std::uint64_t> good[] = {
      {"4096", 4096},      {"512 B", 512},       {"512 KB", 512000},
      {"24 MB", 24000000}, {"24 MiB", 25165824}, {"1.5GiB", 1610612736},
      {" 2 mb ", 2000000}, {"0.1 KB", 100},      {"18446744073709551615", 18446744073709551615ull}};
  for (const auto& [text, bytes] : good) {
    auto parsed = parse_size(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error().message();
    EXPECT_EQ(*parsed, bytes) << text;
  }
  for (const char* bad : {"", "MB", "12 parsecs", "1..5 MB", "-1", "1 MB x", "99999999999999999999", "1e3"}) {
    auto parsed = parse_size(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::parse_error);
    EXPECT_NE(parsed.error().message().find("is not a size"), std::string::npos);
  }
}

// Every closed vocabulary a file or flag names answers a typo the same way:
// parse_error, the bad value and the list to pick from.
TEST(Vocabulary, EveryNameParserAnswersParseErrorWithTheValidNames) {
  auto metric = parse_metric_name("allocs");
  auto verdict = parse_verdict("passed");
  auto mode = parse_mode("precise");
  ASSERT_FALSE(metric);
  ASSERT_FALSE(verdict);
  ASSERT_FALSE(mode);
  EXPECT_EQ(metric.error().code, ErrorCode::parse_error);
  EXPECT_EQ(verdict.error().code, ErrorCode::parse_error);
  EXPECT_EQ(mode.error().code, ErrorCode::parse_error);
  EXPECT_NE(metric.error().message().find("\"allocs\"; expected one of allocations,"), std::string::npos);
  EXPECT_NE(verdict.error().message().find("\"passed\"; expected one of pass,"), std::string::npos);
  EXPECT_NE(mode.error().message().find("\"precise\"; expected one of off,"), std::string::npos);
}

TEST(Explain, LeakAndBudget) {
  EXPECT_EQ(explain_leak(metrics(10, 100, 3, 96)), "leaked 3 allocations (96 bytes) still live at the end of the test");
  EXPECT_EQ(explain_leak(metrics(10)), "");
  EXPECT_EQ(explain_over_budget(MetricName::allocations, 150, metrics(180)),
            "allocations 180 over the budget of 150 (+30)");
  EXPECT_EQ(explain_over_budget(MetricName::allocations, 180, metrics(180)), "");
}

}  // namespace
}  // namespace heapgate
