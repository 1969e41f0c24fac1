// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// heapgate::benchmark end to end: the sample suites (sample_bench.cpp, with
// and without jemalloc) run as child processes with --benchmark_out, their
// JSON as Google Benchmark wrote it, and `heapgate bench compare` on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heapgate/baseline.h"
#include "heapgate/report.h"
#include "profile_test_support.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

using json = nlohmann::json;

struct SampleRun {
  sys::ProcessResult process;
  std::string out_path;
  json out;  // the --benchmark_out file
};

// Runs a sample suite the way a user's CI would: without the allocator or
// heapgate settings of this test process in its environment.
SampleRun run_sample(const std::string& binary, std::vector<std::string> args, double min_time = 0.01,
                     std::vector<std::string> env = {}) {
  SampleRun run;
  run.out_path = testing::make_temp_dir() + "/results.json";
  std::ostringstream min_time_text;
  min_time_text << min_time;
  // Google Benchmark 1.7 takes --benchmark_min_time in plain seconds.
  std::vector<std::string> argv = {testing::helper_binary(binary), "--benchmark_out=" + run.out_path,
                                   "--benchmark_min_time=" + min_time_text.str()};
  argv.insert(argv.end(), args.begin(), args.end());
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF",       "LD_PRELOAD",      "HEAPGATE_MODE",
                       "HEAPGATE_PROFILES", "HEAPGATE_STRICT", "SAMPLE_BENCH_EXTRA_ALLOCATION"};
  options.extra_env = std::move(env);
  options.timeout = std::chrono::minutes(2);
  auto ran = sys::run_process(argv, options);
  EXPECT_TRUE(ran) << ran.error().message();
  if (!ran) return run;
  run.process = *ran;
  if (auto text = sys::read_file(run.out_path)) {
    // The cv aggregate of an all-zero counter is written as NaN, which JSON lacks.
    for (std::size_t at = text->find(": NaN"); at != std::string::npos; at = text->find(": NaN", at)) {
      text->replace(at, 5, ": null");
    }
    run.out = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  }
  return run;
}

sys::ProcessResult heapgate_cli(std::vector<std::string> args) {
#ifdef HEAPGATE_CLI_PATH
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
  auto ran = sys::run_process(args, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
#else
  ADD_FAILURE() << "the heapgate command line is not built (HEAPGATE_BUILD_RUNNER=OFF)";
  (void)args;
  return {};
#endif
}

std::uint64_t memory_iterations(const json& benchmark) {
  return std::min<std::uint64_t>(16, benchmark.at("iterations").get<std::uint64_t>());
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

class BenchmarkMemory : public ::testing::TestWithParam<const char*> {};

// k = 3 allocations of 100 bytes (112, jemalloc's size class) per iteration,
// with iteration counts 1, 5, 7, 1000 and whatever min_time makes: the Scope's
// counters and the MemoryManager's fields are exact in every one.
TEST_P(BenchmarkMemory, ReportsExactlyKAllocationsPerIterationWhateverTheIterationCount) {
  const std::string mode = GetParam();
  HEAPGATE_REQUIRE_MODE(mode == "exact" ? Mode::exact : Mode::counters);
  SampleRun run = run_sample("sample_bench", {"--heapgate_mode=" + mode, "--benchmark_filter=BM_ThreeAllocations"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.stderr_text;
  ASSERT_TRUE(run.out.is_object()) << run.process.stdout_text;
  EXPECT_EQ(run.out["context"].value("heapgate.mode", ""), mode);
  std::set<std::uint64_t> iteration_counts;
  int scoped = 0;
  for (const json& b : run.out.at("benchmarks")) {
    const std::string name = b.at("name");
    SCOPED_TRACE(name + " (" + std::to_string(b.at("iterations").get<std::uint64_t>()) + " iterations)");
    iteration_counts.insert(b.at("iterations").get<std::uint64_t>());
    EXPECT_EQ(b.at("allocs_per_iter").get<double>(), 3.0);
    EXPECT_EQ(b.at("total_allocated_bytes").get<std::uint64_t>(), 336 * memory_iterations(b));
    EXPECT_EQ(b.at("max_bytes_used").get<std::uint64_t>(), 112u);
    EXPECT_EQ(b.at("net_heap_growth").get<std::int64_t>(), 0);
    if (starts_with(name, "BM_ThreeAllocationsUnscoped")) {
      EXPECT_FALSE(b.contains("allocs/iter"));
      continue;
    }
    ++scoped;
    EXPECT_EQ(b.at("allocs/iter").get<double>(), 3.0);
    EXPECT_EQ(b.at("bytes/iter").get<double>(), 336.0);
    EXPECT_EQ(b.at("live_allocs/iter").get<double>(), 0.0);
    EXPECT_EQ(b.at("live_bytes/iter").get<double>(), 0.0);
    EXPECT_EQ(b.at("peak_bytes").get<double>(), 112.0);
  }
  EXPECT_EQ(scoped, 4);
  EXPECT_GE(iteration_counts.size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Modes, BenchmarkMemory, ::testing::Values("counters", "exact"),
                         [](const ::testing::TestParamInfo<const char*>& param) { return std::string(param.param); });

TEST(BenchmarkLeak, NetHeapGrowthDetectsAPerIterationLeak) {
  HEAPGATE_REQUIRE_COUNTERS();
  SampleRun run = run_sample("sample_bench", {"--benchmark_filter=BM_LeakOneBlock|BM_NoAllocation"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.stderr_text;
  int leaking = 0;
  for (const json& b : run.out.at("benchmarks")) {
    const std::string name = b.at("name");
    SCOPED_TRACE(name);
    if (starts_with(name, "BM_LeakOneBlock")) {
      ++leaking;
      EXPECT_EQ(b.at("net_heap_growth").get<std::int64_t>(), static_cast<std::int64_t>(112 * memory_iterations(b)));
      EXPECT_EQ(b.at("live_allocs/iter").get<double>(), 1.0);
      EXPECT_EQ(b.at("live_bytes/iter").get<double>(), 112.0);
    } else {
      EXPECT_EQ(b.at("net_heap_growth").get<std::int64_t>(), 0);
      EXPECT_EQ(b.at("live_allocs/iter").get<double>(), 0.0);
    }
  }
  EXPECT_EQ(leaking, 2);
  // The gate fails the leaking benchmarks only.
  const std::string baselines = testing::make_temp_dir();
  auto gate = heapgate_cli({"bench", "compare", "--baselines", baselines, run.out_path});
  EXPECT_EQ(gate.exit_code, 1) << gate.stdout_text << gate.stderr_text;
  EXPECT_NE(gate.stdout_text.find("leaked BM_LeakOneBlock: leaked 1 allocation (112 bytes) still live per iteration"),
            std::string::npos)
      << gate.stdout_text;
  EXPECT_EQ(gate.stdout_text.find("leaked BM_NoAllocation"), std::string::npos) << gate.stdout_text;
}

TEST(BenchmarkGate, FlagsABenchmarkChangedToAllocateMore) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string dir = testing::make_temp_dir();
  const std::string baselines = dir + "/baselines";
  const std::string filter = "--benchmark_filter=BM_ThreeAllocations";

  SampleRun first = run_sample("sample_bench", {filter}, 0.01);
  ASSERT_EQ(first.process.exit_code, 0) << first.process.stderr_text;
  auto created = heapgate_cli({"bench", "compare", "--baselines", baselines, first.out_path});
  EXPECT_EQ(created.exit_code, 0) << created.stdout_text << created.stderr_text;
  auto baseline = read_baseline(baselines + "/sample_bench.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  ASSERT_EQ(baseline->tests.count("BM_ThreeAllocations"), 1u);
  EXPECT_EQ(baseline->tests.at("BM_ThreeAllocations").metrics.allocations, 3u);
  EXPECT_EQ(baseline->tests.at("BM_ThreeAllocations").metrics.allocated_bytes, 336u);

  // Unchanged code, five times the run time and so other iteration counts: still a pass.
  SampleRun longer = run_sample("sample_bench", {filter}, 0.05);
  auto same = heapgate_cli({"bench", "compare", "--baselines", baselines, longer.out_path});
  EXPECT_EQ(same.exit_code, 0) << same.stdout_text;
  EXPECT_NE(same.stdout_text.find("sample_bench: 6 benchmarks, 6 pass"), std::string::npos) << same.stdout_text;

  SampleRun changed = run_sample("sample_bench", {filter}, 0.01, {"SAMPLE_BENCH_EXTRA_ALLOCATION=1"});
  ASSERT_EQ(changed.process.exit_code, 0) << changed.process.stderr_text;
  const std::string report_dir = dir + "/report";
  auto gate = heapgate_cli({"bench", "compare", "--baselines", baselines, "--report", report_dir, changed.out_path});
  EXPECT_EQ(gate.exit_code, 1) << gate.stdout_text << gate.stderr_text;
  EXPECT_NE(gate.stdout_text.find("regressed BM_ThreeAllocations: allocations 3 → 4 (+1, +33.3%)"), std::string::npos)
      << gate.stdout_text;
  auto report = read_report(report_dir + "/sample_bench.json");
  ASSERT_TRUE(report) << report.error().message();
  int regressed = 0;
  for (const auto& t : report->tests) {
    EXPECT_EQ(t.verdict, Verdict::regressed) << t.name;
    EXPECT_EQ(t.metrics.allocations, 4u) << t.name;
    ASSERT_TRUE(t.baseline) << t.name;
    EXPECT_EQ(t.baseline->allocations, 3u) << t.name;
    regressed += t.verdict == Verdict::regressed;
  }
  EXPECT_EQ(regressed, 6);
  auto junit = sys::read_file(report_dir + "/sample_bench.junit.xml");
  ASSERT_TRUE(junit);
  EXPECT_NE(junit->find("type=\"heapgate.regressed\""), std::string::npos);
  auto markdown = sys::read_file(report_dir + "/sample_bench.md");
  ASSERT_TRUE(markdown);
  EXPECT_NE(markdown->find("`BM_ThreeAllocations` | **regressed**"), std::string::npos) << *markdown;

  // Accepting the change makes it the new baseline.
  auto accepted = heapgate_cli({"bench", "compare", "--baselines", baselines, "--update", changed.out_path});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.stdout_text;
  baseline = read_baseline(baselines + "/sample_bench.json");
  ASSERT_TRUE(baseline);
  EXPECT_EQ(baseline->tests.at("BM_ThreeAllocations").metrics.allocations, 4u);
}

TEST(BenchmarkGate, AbsentJemallocIsUnavailableNotZeros) {
  const std::string filter = "--benchmark_filter=BM_ThreeAllocations|BM_LeakOneBlock";
  SampleRun run = run_sample("sample_bench_nojemalloc", {filter});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.stderr_text;
  EXPECT_NE(run.process.stderr_text.find("allocations are not measured"), std::string::npos) << run.process.stderr_text;
  ASSERT_TRUE(run.out.is_object());
  EXPECT_EQ(run.out["context"].value("heapgate.mode", ""), "off");
  EXPECT_NE(run.out["context"].value("heapgate.unavailable_reason", "").find("jemalloc"), std::string::npos)
      << run.out["context"].dump();
  ASSERT_FALSE(run.out.at("benchmarks").empty());
  for (const json& b : run.out.at("benchmarks")) {
    SCOPED_TRACE(b.at("name").get<std::string>());
    EXPECT_FALSE(b.contains("allocs_per_iter"));
    EXPECT_FALSE(b.contains("net_heap_growth"));
    EXPECT_FALSE(b.contains("allocs/iter"));
  }

  const std::string baselines = testing::make_temp_dir() + "/baselines";
  auto gate = heapgate_cli({"bench", "compare", "--baselines", baselines, run.out_path});
  EXPECT_EQ(gate.exit_code, 3) << gate.stdout_text << gate.stderr_text;
  EXPECT_NE(gate.stdout_text.find("unavailable BM_ThreeAllocations: heapgate mode counters: jemalloc is not loaded"),
            std::string::npos)
      << gate.stdout_text;
  EXPECT_EQ(gate.stdout_text.find(" pass"), std::string::npos) << gate.stdout_text;
  EXPECT_FALSE(sys::exists(baselines + "/sample_bench_nojemalloc.json"));

  // --heapgate_strict stops before running anything unmeasured.
  SampleRun strict = run_sample("sample_bench_nojemalloc", {filter, "--heapgate_strict"});
  EXPECT_EQ(strict.process.exit_code, 1);
  EXPECT_NE(strict.process.stderr_text.find("--heapgate_strict"), std::string::npos) << strict.process.stderr_text;
}

TEST(BenchmarkProfiles, KeepsTheRegionProfileOfTheLastRun) {
  HEAPGATE_REQUIRE_PROFILING();
  const std::string dir = testing::make_temp_dir() + "/profiles";
  SampleRun run = run_sample("sample_bench", {"--heapgate_profiles=" + dir, "--benchmark_filter=BM_ThreeAllocations$",
                                              "--benchmark_repetitions=2"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.stderr_text;
  ASSERT_EQ(run.out.at("benchmarks").size(), 2u + 4u);  // two repetitions, four aggregates
  const json& last = run.out.at("benchmarks").at(1);
  ASSERT_EQ(last.at("repetition_index").get<int>(), 1);
  EXPECT_TRUE(sys::exists(dir + "/BM_ThreeAllocations.heap"));
  auto folded = sys::read_file(dir + "/BM_ThreeAllocations.folded");
  ASSERT_TRUE(folded) << run.process.stderr_text;
  // Allocated bytes per stack over the last run: 336 per iteration.
  const std::string site = "(anonymous namespace)::allocate_and_free(int) ";
  std::size_t at = folded->find(site);
  ASSERT_NE(at, std::string::npos) << *folded;
  const std::string value = folded->substr(at + site.size(), folded->find('\n', at) - at - site.size());
  EXPECT_EQ(value, std::to_string(336 * last.at("iterations").get<std::uint64_t>())) << *folded;
  if (testing::program_missing_reason("jeprof").empty() && testing::program_missing_reason("dot").empty()) {
    auto svg = sys::read_file(dir + "/BM_ThreeAllocations.svg");
    ASSERT_TRUE(svg) << run.process.stderr_text;
    EXPECT_NE(svg->find("<svg"), std::string::npos);
  }
}

TEST(BenchmarkGate, BadInputExitsTwoWithOneClearLine) {
  const std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(
      sys::write_file_atomic(dir + "/cut.json", "{\"context\": {}, \"benchmarks\": [\n  {\"name\": \"BM_A\",\n"));
  auto cut = heapgate_cli({"bench", "compare", "--baselines", dir, dir + "/cut.json"});
  EXPECT_EQ(cut.exit_code, 2);
  EXPECT_NE(cut.stderr_text.find(dir + "/cut.json:3:1: not valid JSON"), std::string::npos) << cut.stderr_text;

  ASSERT_TRUE(sys::write_file_atomic(dir + "/report.json", "{\"schema\": \"heapgate.report/1\", \"tests\": []}"));
  auto wrong = heapgate_cli({"bench", "compare", "--baselines", dir, dir + "/report.json"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.stderr_text.find("/benchmarks: required key \"benchmarks\" is missing; fix: pass the file written by "
                                   "--benchmark_out"),
            std::string::npos)
      << wrong.stderr_text;

  // A baseline written by a newer heapgate is refused, not overwritten.
  const std::string results = dir + "/micro.json";
  ASSERT_TRUE(sys::write_file_atomic(
      results,
      "{\"context\": {\"executable\": \"./micro\"}, \"benchmarks\": [{\"name\": \"BM_A\", \"iterations\": 4, "
      "\"allocs_per_iter\": 1.0, \"max_bytes_used\": 16, \"total_allocated_bytes\": 64, "
      "\"net_heap_growth\": 0}]}"));
  const std::string newer = "{\"binary\": \"micro\", \"schema\": \"heapgate.baseline/2\", \"tests\": {}}\n";
  const std::string baselines = dir + "/baselines";
  std::filesystem::create_directories(baselines);
  ASSERT_TRUE(sys::write_file_atomic(baselines + "/micro.json", newer));
  auto refused = heapgate_cli({"bench", "compare", "--baselines", baselines, "--update", results});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.stderr_text.find("heapgate.baseline/2"), std::string::npos) << refused.stderr_text;
  EXPECT_EQ(*sys::read_file(baselines + "/micro.json"), newer);

  auto absent = heapgate_cli({"bench", "compare", "--baselines", baselines, dir + "/nope.json"});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_NE(absent.stderr_text.find("nope.json"), std::string::npos) << absent.stderr_text;
}

}  // namespace
}  // namespace heapgate
