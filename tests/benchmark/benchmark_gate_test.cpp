// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The gate's reading of Google Benchmark JSON (benchmark_gate.h) on
// hand-written files shaped as Google Benchmark 1.7.1 writes them:
// repetitions, aggregates, errors, NaN, and the verdicts judge() gives.
#include <gtest/gtest.h>

#include <string>

#include "heapgate/benchmark_gate.h"

namespace heapgate {
namespace {

// One "benchmarks" entry; `extra` is appended inside the object.
std::string entry(const std::string& name, int repetition, long iterations, const std::string& extra) {
  return "{\"name\": \"" + name + "\", \"run_name\": \"" + name +
         "\", \"run_type\": \"iteration\", \"repetitions\": 2, \"repetition_index\": " + std::to_string(repetition) +
         ", \"threads\": 1, \"iterations\": " + std::to_string(iterations) +
         ", \"real_time\": 2.0e+03, \"cpu_time\": 1.0e+03, \"time_unit\": \"ns\"" + extra + "}";
}

std::string file(const std::string& benchmarks, const std::string& context_extra = "") {
  return "{\"context\": {\"date\": \"2026-11-23T18:11:21+00:00\", \"host_name\": \"vm\", \"executable\": "
         "\"./build/micro_bench\"" +
         context_extra + "},\n\"benchmarks\": [" + benchmarks + "]}";
}

const std::string kRegion =
    ", \"allocs/iter\": 3.0, \"bytes/iter\": 336.0, \"live_allocs/iter\": 0.0, "
    "\"live_bytes/iter\": 0.0, \"peak_bytes\": 112.0";

const TestRecord* find(const Report& report, const std::string& name) {
  for (const auto& t : report.tests) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST(BenchmarkGateParse, UsesTheLastRepetitionsMemoryResults) {
  // 1.7.1 prints earlier repetitions' memory results through a dangling pointer.
  std::string text = file(entry("BM_A", 0, 1000,
                                ", \"allocs_per_iter\": 3.0, \"max_bytes_used\": 8317623083609519209, "
                                "\"total_allocated_bytes\": 9691572231929890, \"net_heap_growth\": 120") +
                          "," +
                          entry("BM_A", 1, 1000,
                                ", \"allocs_per_iter\": 3.0, \"max_bytes_used\": 112, \"total_allocated_bytes\": 5376, "
                                "\"net_heap_growth\": 0"));
  auto report = bench::parse_benchmark_json(text, "a.json");
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->run.binary, "micro_bench");
  ASSERT_EQ(report->tests.size(), 1u);
  const Metrics& m = report->tests[0].metrics;
  EXPECT_EQ(m.allocations, 3u);
  EXPECT_EQ(m.allocated_bytes, 336u);  // 5376 bytes over min(16, 1000) memory iterations
  EXPECT_EQ(m.live_bytes, 0u);
  EXPECT_EQ(m.peak_bytes, 112u);
  EXPECT_EQ(report->tests[0].suite, "BM_A");
}

TEST(BenchmarkGateParse, RegionCountersWinAndNamedRegionsGetTheirOwnRecord) {
  std::string named =
      ", \"parse.allocs/iter\": 2.0, \"parse.bytes/iter\": 64.0, \"parse.live_allocs/iter\": "
      "0.0625, \"parse.live_bytes/iter\": 2.0, \"parse.peak_bytes\": 64.0";
  std::string text = file(entry("BM_B/8", 0, 5, ", \"allocs_per_iter\": 9.0, \"max_bytes_used\": 1" + kRegion + named));
  auto report = bench::parse_benchmark_json(text, "b.json");
  ASSERT_TRUE(report) << report.error().message();
  const TestRecord* own = find(*report, "BM_B/8");
  const TestRecord* region = find(*report, "BM_B/8[parse]");
  ASSERT_NE(own, nullptr);
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(own->metrics.allocations, 3u);
  EXPECT_EQ(own->suite, "BM_B");
  EXPECT_DOUBLE_EQ(own->duration_ms, 0.01);  // 2 µs per iteration, 5 iterations
  EXPECT_EQ(region->metrics.allocations, 2u);
  EXPECT_EQ(region->metrics.live_allocations, 1u);  // one block in 16 iterations still shows
}

TEST(BenchmarkGateParse, AggregatesOnlyAndNaNStatistics) {
  // --benchmark_report_aggregates_only, and a cv of an all-zero counter (0/0).
  auto aggregate = [](const std::string& stat, const std::string& counters) {
    return "{\"name\": \"BM_C_" + stat +
           "\", \"run_name\": \"BM_C\", \"run_type\": \"aggregate\", \"repetitions\": 3, "
           "\"threads\": 1, \"aggregate_name\": \"" +
           stat +
           "\", \"iterations\": 3, \"real_time\": 1.0, "
           "\"cpu_time\": 1.0, \"time_unit\": \"ns\"" +
           counters + "}";
  };
  std::string cv =
      ", \"allocs/iter\": NaN, \"bytes/iter\": -NaN, \"live_allocs/iter\": NaN, "
      "\"live_bytes/iter\": Infinity, \"peak_bytes\": NaN";
  std::string text = file(aggregate("mean", kRegion) + "," + aggregate("median", kRegion) + "," + aggregate("cv", cv));
  auto report = bench::parse_benchmark_json(text, "c.json");
  ASSERT_TRUE(report) << report.error().message();
  ASSERT_EQ(report->tests.size(), 1u);
  EXPECT_EQ(report->tests[0].metrics.allocations, 3u);
  EXPECT_EQ(report->tests[0].metrics.allocated_bytes, 336u);
  EXPECT_NE(report->tests[0].verdict, Verdict::unavailable);
}

TEST(BenchmarkGateParse, AnErrorIsAFailureAndNoMeasurementIsUnavailable) {
  std::string text = file(
      "{\"name\": \"BM_Err\", \"run_name\": \"BM_Err\", \"run_type\": \"iteration\", \"repetitions\": 1, "
      "\"repetition_index\": 0, \"threads\": 1, \"error_occurred\": true, \"error_message\": \"boom\", "
      "\"iterations\": 1, \"real_time\": 0.0, \"cpu_time\": 0.0, \"time_unit\": \"ns\"}," +
      entry("BM_Plain", 0, 10, ""));
  auto report = bench::parse_benchmark_json(text, "d.json");
  ASSERT_TRUE(report) << report.error().message();
  const TestRecord* error = find(*report, "BM_Err");
  const TestRecord* plain = find(*report, "BM_Plain");
  ASSERT_NE(error, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(error->verdict, Verdict::unavailable);
  EXPECT_TRUE(error->gtest_failed);
  EXPECT_NE(error->message.find("boom"), std::string::npos);
  EXPECT_EQ(plain->verdict, Verdict::unavailable);
  EXPECT_NE(plain->message.find("heapgate::benchmark_main"), std::string::npos) << plain->message;
}

TEST(BenchmarkGateJudge, GrowthRegressesLeaksFailAndAbsentEntriesAreMissing) {
  std::string text = file(entry("BM_A", 0, 100, kRegion) + "," +
                              entry("BM_Leak", 0, 100,
                                    ", \"allocs_per_iter\": 1.0, \"max_bytes_used\": 1792, "
                                    "\"total_allocated_bytes\": 1792, \"net_heap_growth\": 1792"),
                          ", \"heapgate.mode\": \"exact\"");
  auto report = bench::parse_benchmark_json(text, "e.json");
  ASSERT_TRUE(report) << report.error().message();
  Baseline baseline;
  baseline.tests["BM_A"].metrics = {2, 224, 0, 0, 112};
  baseline.tests["BM_Gone"].metrics = {1, 16, 0, 0, 16};
  bench::judge(*report, baseline);
  ASSERT_EQ(report->tests.size(), 3u);
  EXPECT_EQ(find(*report, "BM_A")->verdict, Verdict::regressed);
  EXPECT_EQ(find(*report, "BM_A")->mode, Mode::exact);
  EXPECT_NE(find(*report, "BM_A")->message.find("allocations 2 → 3"), std::string::npos)
      << find(*report, "BM_A")->message;
  EXPECT_EQ(find(*report, "BM_Leak")->verdict, Verdict::leaked);
  EXPECT_EQ(find(*report, "BM_Leak")->metrics.live_bytes, 112u);
  EXPECT_EQ(find(*report, "BM_Gone")->verdict, Verdict::missing);

  bench::JudgeOptions accept;
  accept.update = true;
  accept.check_leaks = false;
  auto again = bench::parse_benchmark_json(text, "e.json");
  ASSERT_TRUE(again);
  bench::judge(*again, baseline, accept);
  EXPECT_EQ(find(*again, "BM_A")->verdict, Verdict::pass);
  EXPECT_EQ(find(*again, "BM_Leak")->verdict, Verdict::new_test);
}

TEST(BenchmarkGateParse, BadInputNamesTheFileAndTheField) {
  auto syntax = bench::parse_benchmark_json("{\"benchmarks\": [\n  {\"name\": }\n]}", "bad.json");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().code, ErrorCode::parse_error);
  EXPECT_EQ(syntax.error().where, "bad.json:2:12");  // the stray }
  auto not_benchmark = bench::parse_benchmark_json("{\"schema\": \"heapgate.report/1\", \"tests\": []}", "r.json");
  ASSERT_FALSE(not_benchmark);
  EXPECT_NE(not_benchmark.error().message().find("/benchmarks"), std::string::npos);
  EXPECT_NE(not_benchmark.error().fix.find("--benchmark_out"), std::string::npos);
  auto negative =
      bench::parse_benchmark_json(file(entry("BM_A", 0, 1,
                                             ", \"allocs/iter\": -1.0, \"bytes/iter\": 0.0, \"live_allocs/iter\": 0.0, "
                                             "\"live_bytes/iter\": 0.0, \"peak_bytes\": 0.0")),
                                  "n.json");
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().where.find("/benchmarks/0/allocs~1iter"), std::string::npos) << negative.error().message();
  auto partial = bench::parse_benchmark_json(file(entry("BM_A", 0, 1, ", \"allocs/iter\": 1.0")), "p.json");
  ASSERT_FALSE(partial);
  EXPECT_NE(partial.error().message().find("bytes/iter"), std::string::npos) << partial.error().message();
}

}  // namespace
}  // namespace heapgate
