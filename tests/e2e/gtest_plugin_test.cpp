// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// End to end: sample_suite (GoogleTest + heapgate::gtest_main) runs as a child
// process; the tests read its exit code, its JSON report and its JUnit file.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

namespace fs = std::filesystem;

struct SuiteRun {
  int exit_code = -1;
  std::string output;  // stdout + stderr
  Report report;
  bool has_report = false;
};

// Runs a sample suite binary with `args` and `env` (KEY=VALUE), reports into `report_dir`.
SuiteRun run_suite(const std::string& binary, const std::string& report_dir, std::vector<std::string> args,
                   std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {testing::helper_binary(binary), "--heapgate_report=" + report_dir};
  argv.insert(argv.end(), args.begin(), args.end());
  sys::ProcessOptions options;
  options.extra_env = std::move(env);
  options.unset_env = testing::suite_unset_env();
  options.timeout = std::chrono::minutes(5);
  SuiteRun run;
  auto ran = sys::run_process(argv, options);
  EXPECT_TRUE(ran) << ran.error().message();
  if (!ran) return run;
  run.exit_code = ran->exit_code;
  run.output = ran->stdout_text + ran->stderr_text;
  std::string stem = binary;
  for (const auto& e : options.extra_env) {
    if (e.rfind("GTEST_SHARD_INDEX=", 0) == 0) stem += ".shard-" + e.substr(18);
  }
  for (const auto& e : options.extra_env) {
    if (e.rfind("GTEST_TOTAL_SHARDS=", 0) == 0) stem += "-of-" + e.substr(19);
  }
  auto report = read_report(report_dir + "/" + stem + ".json");
  if (report) {
    run.report = std::move(*report);
    run.has_report = true;
  } else {
    ADD_FAILURE() << report.error().message() << "\n" << run.output;
  }
  return run;
}

using testing::find_record;

bool any_frame_contains(const TestRecord& t, const std::string& text) {
  for (const auto& s : t.stacks) {
    for (const auto& f : s.frames) {
      if (f.find(text) != std::string::npos) return true;
    }
  }
  return false;
}

const char* const kGoodTests =
    "--gtest_filter=Sample.Clean:Sample.Counted:Sample.WithinBudget:Sample.Threads:Sample.AllowedLeak:"
    "Sample.LazyStatic:SampleTyped*:Counts/SampleParam.*";

class GtestPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    dir_ = testing::make_temp_dir();
  }
  std::string dir_;
};

TEST_F(GtestPlugin, CountersModeMeasuresEveryTestExactly) {
  SuiteRun run = run_suite("sample_suite", dir_, {kGoodTests});
  ASSERT_TRUE(run.has_report);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.report.run.mode, Mode::counters);
  const TestRecord* clean = find_record(run.report, "Sample.Clean");
  ASSERT_NE(clean, nullptr) << run.output;
  EXPECT_EQ(clean->verdict, Verdict::pass);
  EXPECT_EQ(clean->metrics.allocations, 10u);
  EXPECT_EQ(clean->metrics.allocated_bytes, 640u);
  EXPECT_EQ(clean->metrics.live_allocations, 0u);
  const TestRecord* counted = find_record(run.report, "Sample.Counted");
  ASSERT_NE(counted, nullptr);
  EXPECT_EQ(counted->metrics.allocations, 7u);
  EXPECT_EQ(counted->metrics.allocated_bytes, 7u * 128);
  EXPECT_EQ(counted->metrics.peak_bytes, 128u);
  const TestRecord* threads = find_record(run.report, "Sample.Threads");
  ASSERT_NE(threads, nullptr);
  // 4 threads x 25 blocks, plus what std::thread and glibc allocate per thread.
  EXPECT_GE(threads->metrics.allocations, 100u);
  // glibc keeps a thread's TLS block with its cached stack for the next thread:
  // live after the test, but only the first time, so not a leak.
  EXPECT_EQ(threads->verdict, Verdict::pass) << threads->message;
  const TestRecord* param = find_record(run.report, "Counts/SampleParam.AllocatesParamTimes/2");
  ASSERT_NE(param, nullptr);
  EXPECT_EQ(param->metrics.allocations, 3u);
  ASSERT_NE(find_record(run.report, "SampleTyped/0.AllocatesOneArray"), nullptr);
  ASSERT_NE(find_record(run.report, "SampleTyped/1.AllocatesOneArray"), nullptr);
  // 100 ints = 400 B, served from jemalloc's 448 B size class.
  EXPECT_EQ(find_record(run.report, "SampleTyped/1.AllocatesOneArray")->metrics.allocated_bytes, 448u);
}

// GoogleTest's own elapsed time counts whole milliseconds, 0 for tests like
// these; the report has each test's time, a fraction of the whole run's.
TEST_F(GtestPlugin, DurationsAreEachTestsOwnTimeNotWholeMilliseconds) {
  const auto started = std::chrono::steady_clock::now();
  SuiteRun run = run_suite("sample_suite", dir_, {kGoodTests});
  const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(run.has_report);
  ASSERT_FALSE(run.report.tests.empty());
  double sum = 0;
  bool fractional = false;
  for (const TestRecord& t : run.report.tests) {
    EXPECT_GT(t.duration_ms, 0.0) << t.name;
    sum += t.duration_ms;
    fractional = fractional || t.duration_ms != std::floor(t.duration_ms);
  }
  EXPECT_TRUE(fractional) << "every duration is a whole number of milliseconds";
  EXPECT_LT(sum, wall.count());
}

TEST_F(GtestPlugin, LazyStaticIsNotALeakButARealLeakIsNamed) {
  SuiteRun run = run_suite("sample_suite", dir_,
                           {"--gtest_filter=Sample.LazyStatic:Sample.ReplacesGlobal:Sample.Leaks:Sample.AllowedLeak"});
  ASSERT_TRUE(run.has_report);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const TestRecord* lazy = find_record(run.report, "Sample.LazyStatic");
  ASSERT_NE(lazy, nullptr);
  EXPECT_EQ(lazy->verdict, Verdict::pass) << lazy->message;
  EXPECT_NE(lazy->message.find("one-time initialization"), std::string::npos) << lazy->message;
  // A replaced global (a string: two blocks) stays live after every run, but
  // never more of it: the rule "what a second run leaves" called this a
  // leak; growth does not.
  const TestRecord* replaced = find_record(run.report, "Sample.ReplacesGlobal");
  ASSERT_NE(replaced, nullptr);
  EXPECT_EQ(replaced->verdict, Verdict::pass) << replaced->message;
  // Two runs tell: the second left no more than the first, so the series
  // cannot grow at every step, and the child stops there.
  EXPECT_EQ(replaced->growth.live_allocations, (std::vector<std::uint64_t>{2, 2})) << replaced->message;
  EXPECT_NE(replaced->message.find("do not grow when the test repeats"), std::string::npos) << replaced->message;
  const TestRecord* leak = find_record(run.report, "Sample.Leaks");
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(leak->verdict, Verdict::leaked);
  EXPECT_EQ(leak->metrics.live_allocations, 3u);
  EXPECT_EQ(leak->metrics.live_bytes, 288u);
  EXPECT_TRUE(any_frame_contains(*leak, "leak_three_blocks")) << leak->message;
  // The line that leaked, not only its function.
  EXPECT_TRUE(any_frame_contains(*leak, "leak_three_blocks() at sample_suite.cpp:30")) << leak->message;
  EXPECT_EQ(leak->message.find("leaked 3 allocations (288 bytes) still live at the end of the test, allocated at "
                               "(anonymous namespace)::leak_three_blocks() (sample_suite.cpp:30)"),
            0u)
      << leak->message;
  EXPECT_EQ(leak->growth.live_allocations, (std::vector<std::uint64_t>{3, 6, 9, 12, 15}));
  ASSERT_FALSE(leak->stacks.empty());
  EXPECT_EQ(leak->stacks[0].counts.live_objects, 3.0);  // per run
  // The exact re-run's raw heap profile is kept and named in the report.
  ASSERT_EQ(leak->profiles.size(), 1u);
  EXPECT_TRUE(fs::exists(leak->profiles[0])) << leak->profiles[0];
  // The failure is the test's own gtest failure, with the stack in it.
  EXPECT_NE(run.output.find("[  FAILED  ] Sample.Leaks"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("leak_three_blocks"), std::string::npos) << run.output;
  EXPECT_EQ(find_record(run.report, "Sample.AllowedLeak")->verdict, Verdict::pass);
}

// Without the allocation hooks only the calling thread's bytes are read: the
// counts and the peak are absent from every report and said to be, never
// shown as zeros, and a baseline recorded so never compares them.
TEST_F(GtestPlugin, MetricsTheHooksOffFallbackCannotMeasureAreAbsentAndSaidSo) {
  const std::string baselines = dir_ + "/baselines";
  SuiteRun run =
      run_suite("sample_suite", dir_ + "/r1", {"--gtest_filter=Sample.Counted", "--heapgate_baselines=" + baselines},
                {"HEAPGATE_HOOKS=off"});
  ASSERT_TRUE(run.has_report);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const TestRecord* counted = find_record(run.report, "Sample.Counted");
  ASSERT_NE(counted, nullptr);
  const std::vector<MetricName> absent{MetricName::allocations, MetricName::live_allocations, MetricName::peak_bytes};
  EXPECT_EQ(counted->not_measured, absent);
  EXPECT_GT(counted->metrics.allocated_bytes, 0u);
  EXPECT_NE(counted->message.find("allocations, live_allocations and peak_bytes were not measured (bytes of the "
                                  "calling thread only"),
            std::string::npos)
      << counted->message;
  const std::string json = sys::read_file(dir_ + "/r1/sample_suite.json").value_or("");
  EXPECT_NE(json.find("\"not_measured\": [\n        \"allocations\",\n        \"live_allocations\",\n        "
                      "\"peak_bytes\"\n      ]"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"metrics\": {\n        \"allocated_bytes\": "), std::string::npos) << json;
  EXPECT_EQ(json.find("\"allocations\": 0"), std::string::npos) << "a count shown as measured: " << json;
  EXPECT_EQ(json.find("\"peak_bytes\": 0"), std::string::npos) << "the peak shown as measured: " << json;
  const std::string markdown = sys::read_file(dir_ + "/r1/sample_suite.md").value_or("");
  EXPECT_NE(markdown.find("not measured"), std::string::npos) << markdown;
  auto baseline = read_baseline(baselines + "/sample_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  EXPECT_EQ(baseline->tests.at("Sample.Counted").not_measured, absent);
  // With the hooks, the next run compares the bytes only: no false verdict
  // from counts the baseline never had.
  SuiteRun hooked =
      run_suite("sample_suite", dir_ + "/r2", {"--gtest_filter=Sample.Counted", "--heapgate_baselines=" + baselines});
  ASSERT_TRUE(hooked.has_report);
  const TestRecord* again = find_record(hooked.report, "Sample.Counted");
  ASSERT_NE(again, nullptr);
  for (const MetricDelta& d : again->deltas) {
    EXPECT_TRUE(is_measured(absent, d.metric)) << to_string(d.metric) << " compared against a count never measured";
  }
}

// A first run judges live blocks after the last test: blocks a later test
// freed were held, and the test is not repeated to tell; a real leak still
// repeats, fails the run and is named with its line.
TEST_F(GtestPlugin, FirstRunTellsHeldBlocksFromLeaksWithoutRepeatingHeldOnes) {
  const std::string baselines = dir_ + "/baselines";
  SuiteRun first = run_suite(
      "sample_suite", dir_ + "/r1",
      {"--gtest_filter=Sample.ReplacesGlobal:Sample.ClearsGlobal:Sample.Leaks", "--heapgate_baselines=" + baselines});
  ASSERT_TRUE(first.has_report);
  EXPECT_NE(first.exit_code, 0) << first.output;
  const TestRecord* held = find_record(first.report, "Sample.ReplacesGlobal");
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->verdict, Verdict::new_test) << held->message;
  EXPECT_TRUE(held->released_later) << held->message;
  EXPECT_TRUE(held->setup_residue);
  EXPECT_TRUE(held->growth.empty()) << "repeated although later tests freed its blocks";
  EXPECT_NE(held->message.find("held, not leaked: 2 blocks"), std::string::npos) << held->message;
  const TestRecord* leak = find_record(first.report, "Sample.Leaks");
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(leak->verdict, Verdict::leaked) << leak->message;
  EXPECT_FALSE(leak->released_later);
  EXPECT_EQ(leak->growth.live_allocations, (std::vector<std::uint64_t>{3, 6, 9, 12, 15}));
  EXPECT_NE(leak->message.find("allocated at (anonymous namespace)::leak_three_blocks() (sample_suite.cpp:30)"),
            std::string::npos)
      << leak->message;
  EXPECT_NE(first.output.find("1 of 2 tests that ended with live blocks had them all freed by later tests"),
            std::string::npos)
      << first.output;
  // Each test once in the report: the pending record was replaced, not added to.
  EXPECT_EQ(first.report.tests.size(), 3u);
  // The baseline keeps the held blocks as setup: the next run judges from it.
  auto baseline = read_baseline(baselines + "/sample_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  ASSERT_EQ(baseline->tests.count("Sample.ReplacesGlobal"), 1u);
  EXPECT_TRUE(baseline->tests.at("Sample.ReplacesGlobal").setup_residue);
}

// The first run records the replaced global as setup in the baseline; the
// next run of the same binary judges it from there instead of repeating it.
TEST_F(GtestPlugin, SetupResidueIsRecordedOnceAndNotRepeatedAfterwards) {
  const std::string baselines = dir_ + "/baselines";
  const std::string filter = "--gtest_filter=Sample.ReplacesGlobal";
  SuiteRun first = run_suite("sample_suite", dir_ + "/r1", {filter, "--heapgate_baselines=" + baselines});
  ASSERT_TRUE(first.has_report);
  EXPECT_EQ(first.exit_code, 0) << first.output;
  auto baseline = read_baseline(baselines + "/sample_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  ASSERT_EQ(baseline->tests.count("Sample.ReplacesGlobal"), 1u);
  EXPECT_TRUE(baseline->tests.at("Sample.ReplacesGlobal").setup_residue);

  SuiteRun second = run_suite("sample_suite", dir_ + "/r2", {filter, "--heapgate_baselines=" + baselines});
  ASSERT_TRUE(second.has_report);
  EXPECT_EQ(second.exit_code, 0) << second.output;
  const TestRecord* replaced = find_record(second.report, "Sample.ReplacesGlobal");
  ASSERT_NE(replaced, nullptr);
  EXPECT_EQ(replaced->verdict, Verdict::pass) << replaced->message;
  EXPECT_TRUE(replaced->growth.empty()) << "not repeated: " << replaced->message;
  EXPECT_NE(replaced->message.find("no more than the baseline records as setup"), std::string::npos)
      << replaced->message;
}

// Budgets as people write them: "1 KiB", and for one block of a test.
TEST_F(GtestPlugin, BudgetsTakeUnitsAndScopedBudgetsJudgeOneBlock) {
  auto one = [&](const std::string& test) {
    return run_suite("budget_suite", dir_ + "/" + test, {"--gtest_filter=Budget." + test});
  };
  SuiteRun within = one("SizeWithUnitsWithin");
  EXPECT_EQ(within.exit_code, 0) << within.output;
  const TestRecord* w = find_record(within.report, "Budget.SizeWithUnitsWithin");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->budgets.at("allocated_bytes"), 1024u);
  EXPECT_EQ(w->budgets.at("allocations"), 3u);

  SuiteRun over = one("SizeWithUnitsOver");
  EXPECT_EQ(over.exit_code, 1) << over.output;
  EXPECT_EQ(find_record(over.report, "Budget.SizeWithUnitsOver")->verdict, Verdict::over_budget);
  EXPECT_NE(over.output.find("allocated_bytes 192 over the budget of 100 (+92)"), std::string::npos) << over.output;

  SuiteRun malformed = one("MalformedSizeFails");
  EXPECT_EQ(malformed.exit_code, 1) << malformed.output;
  EXPECT_NE(malformed.output.find("\"12 parsecs\" is not a size"), std::string::npos) << malformed.output;

  SuiteRun scoped_over = one("ScopedBlockOver");
  EXPECT_EQ(scoped_over.exit_code, 1) << scoped_over.output;
  EXPECT_NE(scoped_over.output.find("budget_suite.cpp:40: Failure"), std::string::npos) << scoped_over.output;
  EXPECT_NE(scoped_over.output.find("heapgate: allocations 3 over the budget of 2 (+1) in this block"),
            std::string::npos)
      << scoped_over.output;

  SuiteRun scoped_within = one("ScopedBlockWithin");
  EXPECT_EQ(scoped_within.exit_code, 0) << scoped_within.output;
}

// A baseline from another environment: said at start and in the regression;
// --heapgate_fingerprint=strict fails the run on the mismatch alone.
TEST_F(GtestPlugin, ABaselineFromAnotherEnvironmentIsNamed) {
  const std::string baselines = dir_ + "/baselines";
  const std::string filter = "--gtest_filter=Sample.Counted";
  SuiteRun first = run_suite("sample_suite", dir_ + "/r1", {filter, "--heapgate_baselines=" + baselines});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto recorded = read_baseline(baselines + "/sample_suite.json");
  ASSERT_TRUE(recorded) << recorded.error().message();
  ASSERT_EQ(recorded->fingerprint.count("compiler"), 1u);
  EXPECT_EQ(recorded->fingerprint, first.report.run.fingerprint);
  const std::string compiler = recorded->fingerprint.at("compiler");
  recorded->fingerprint["compiler"] = "gcc 1.0";
  ASSERT_TRUE(write_baseline(baselines + "/sample_suite.json", *recorded));

  SuiteRun changed =
      run_suite("sample_suite", dir_ + "/r2", {filter, "--heapgate_baselines=" + baselines}, {"SAMPLE_EXTRA=2"});
  EXPECT_EQ(changed.exit_code, 1) << changed.output;
  const std::string said = "the baseline was recorded in another environment: compiler gcc 1.0 → " + compiler;
  EXPECT_NE(changed.output.find(said + " (--heapgate_fingerprint=warn)"), std::string::npos) << changed.output;
  EXPECT_NE(find_record(changed.report, "Sample.Counted")->message.find("note: " + said), std::string::npos)
      << find_record(changed.report, "Sample.Counted")->message;

  SuiteRun warned = run_suite("sample_suite", dir_ + "/r3", {filter, "--heapgate_baselines=" + baselines});
  EXPECT_EQ(warned.exit_code, 0) << warned.output;
  SuiteRun strict = run_suite("sample_suite", dir_ + "/r4",
                              {filter, "--heapgate_baselines=" + baselines, "--heapgate_fingerprint=strict"});
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  EXPECT_NE(strict.output.find("fix: record the baselines in this environment"), std::string::npos) << strict.output;
  SuiteRun ignored = run_suite("sample_suite", dir_ + "/r5",
                               {filter, "--heapgate_baselines=" + baselines, "--heapgate_fingerprint=ignore"});
  EXPECT_EQ(ignored.exit_code, 0) << ignored.output;
  EXPECT_EQ(ignored.output.find("another environment"), std::string::npos) << ignored.output;
}

// Every entry of `dir`, recursively, relative to it.
std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    found.push_back(fs::relative(entry.path(), dir).string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// Failing tests are re-run in child processes, each with its own temporary
// directory: a suite gated every day left hundreds behind in $TMPDIR. What a
// run keeps is what its report names, beside the report.
TEST_F(GtestPlugin, AGatedRunLeavesNothingInTmpdirAndKeepsTheProfilesItsReportNames) {
  for (const char* mode : {"counters", "exact"}) {
    SCOPED_TRACE(mode);
    const std::string tmp = dir_ + "/" + mode + "-tmp";
    const std::string report = dir_ + "/" + mode + "-report";
    fs::create_directories(tmp);
    SuiteRun run = run_suite(
        "sample_suite", report,
        {"--gtest_filter=Sample.Leaks:Sample.OverBudget:Sample.Counted", std::string("--heapgate_mode=") + mode},
        {"TMPDIR=" + tmp});
    ASSERT_TRUE(run.has_report);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_EQ(entries_of(tmp), std::vector<std::string>{}) << run.output;
    const TestRecord* leak = find_record(run.report, "Sample.Leaks");
    const TestRecord* over = find_record(run.report, "Sample.OverBudget");
    ASSERT_NE(leak, nullptr);
    ASSERT_NE(over, nullptr);
    EXPECT_EQ(leak->verdict, Verdict::leaked);
    EXPECT_EQ(over->verdict, Verdict::over_budget);
    ASSERT_FALSE(leak->profiles.empty());
    ASSERT_FALSE(over->profiles.empty());
    std::size_t named = 0;
    for (const auto& t : run.report.tests) {
      for (const auto& profile : t.profiles) {
        ++named;
        EXPECT_EQ(profile.rfind(report + "/profiles/sample_suite/", 0), 0u) << profile;
        EXPECT_TRUE(fs::is_regular_file(profile)) << profile;
        // The re-runs' profiles come with their symbols sidecars. (A test's own
        // exact-mode profile gets one only when it explains a failure itself.)
        if (std::string(mode) == "counters") {
          EXPECT_TRUE(fs::is_regular_file(profile + ".symbols.json")) << profile;
        }
      }
    }
    // In exact mode each test's own profile is kept too.
    if (std::string(mode) == "exact") {
      EXPECT_GE(named, 3u);
    }
    EXPECT_NE(run.output.find("heapgate: kept " + std::to_string(named) + " heap profile"), std::string::npos)
        << run.output;
    // Nothing in the profiles directory that the report does not name.
    std::size_t files = 0;
    for (const auto& entry : entries_of(report + "/profiles/sample_suite")) {
      if (entry.size() > 5 && entry.compare(entry.size() - 5, 5, ".heap") == 0) ++files;
    }
    EXPECT_EQ(files, named);
  }
}

TEST_F(GtestPlugin, WithoutAReportNothingIsKeptAndTmpdirStaysEmpty) {
  const std::string tmp = dir_ + "/tmp";
  fs::create_directories(tmp);
  for (const char* mode : {"counters", "exact"}) {
    sys::ProcessOptions options;
    options.extra_env = {"TMPDIR=" + tmp};
    options.unset_env = testing::suite_unset_env();
    options.unset_env.insert(options.unset_env.end(), {"HEAPGATE_REPORT", "HEAPGATE_PROFILES"});
    auto ran = sys::run_process(
        {testing::helper_binary("sample_suite"), "--gtest_filter=Sample.Leaks", std::string("--heapgate_mode=") + mode},
        options);
    ASSERT_TRUE(ran) << ran.error().message();
    EXPECT_EQ(ran->exit_code, 1) << ran->stdout_text << ran->stderr_text;
    EXPECT_NE(ran->stdout_text.find("leak_three_blocks"), std::string::npos) << ran->stdout_text;
    EXPECT_EQ(entries_of(tmp), std::vector<std::string>{}) << mode;
  }
}

TEST_F(GtestPlugin, ProfilesFlagChoosesWhereTheProfilesAreKept) {
  const std::string kept = dir_ + "/kept";
  SuiteRun run = run_suite("sample_suite", dir_ + "/r", {"--gtest_filter=Sample.Leaks", "--heapgate_profiles=" + kept});
  ASSERT_TRUE(run.has_report);
  ASSERT_EQ(run.report.tests.size(), 1u);
  ASSERT_EQ(run.report.tests[0].profiles.size(), 1u);
  EXPECT_EQ(run.report.tests[0].profiles[0], kept + "/Sample.Leaks.heap");
  EXPECT_TRUE(fs::is_regular_file(kept + "/Sample.Leaks.heap"));
  EXPECT_FALSE(fs::exists(dir_ + "/r/profiles"));
}

TEST_F(GtestPlugin, AFailedAssertionIsNotAlsoALeak) {
  SuiteRun run = run_suite("sample_suite", dir_, {"--gtest_filter=Sample.AssertionFails"});
  ASSERT_TRUE(run.has_report);
  EXPECT_EQ(run.exit_code, 1);
  const TestRecord* failed = find_record(run.report, "Sample.AssertionFails");
  ASSERT_NE(failed, nullptr);
  EXPECT_TRUE(failed->gtest_failed);
  EXPECT_EQ(failed->verdict, Verdict::pass) << failed->message;
  EXPECT_EQ(run.output.find("heapgate: Sample.AssertionFails"), std::string::npos) << run.output;
}

TEST_F(GtestPlugin, BudgetsFailWithValueLimitAndStacks) {
  SuiteRun run = run_suite("sample_suite", dir_, {"--gtest_filter=Sample.OverBudget:Sample.WithinBudget"});
  ASSERT_TRUE(run.has_report);
  EXPECT_EQ(run.exit_code, 1);
  const TestRecord* over = find_record(run.report, "Sample.OverBudget");
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->verdict, Verdict::over_budget);
  EXPECT_EQ(over->budgets.at("allocations"), 5u);
  EXPECT_NE(over->message.find("allocations 10 over the budget of 5 (+5)"), std::string::npos) << over->message;
  EXPECT_TRUE(any_frame_contains(*over, "allocate_and_free")) << over->message;
  EXPECT_EQ(find_record(run.report, "Sample.WithinBudget")->verdict, Verdict::pass);
}

TEST_F(GtestPlugin, ExactModeAgreesWithCounters) {
  SuiteRun counters = run_suite("sample_suite", dir_ + "/c", {kGoodTests});
  SuiteRun exact = run_suite("sample_suite", dir_ + "/e", {kGoodTests, "--heapgate_mode=exact"});
  ASSERT_TRUE(counters.has_report && exact.has_report);
  EXPECT_EQ(exact.report.run.mode, Mode::exact) << exact.output;
  ASSERT_EQ(counters.report.tests.size(), exact.report.tests.size());
  for (const auto& c : counters.report.tests) {
    const TestRecord* e = find_record(exact.report, c.name);
    ASSERT_NE(e, nullptr) << c.name;
    if (c.name == "Sample.Threads") continue;  // thread start-up may differ in glibc's TLS caching
    EXPECT_EQ(c.metrics.allocations, e->metrics.allocations) << c.name;
    EXPECT_EQ(c.metrics.allocated_bytes, e->metrics.allocated_bytes) << c.name;
    EXPECT_EQ(c.metrics.live_allocations, e->metrics.live_allocations) << c.name;
    EXPECT_EQ(c.metrics.live_bytes, e->metrics.live_bytes) << c.name;
  }
}

class GtestPluginRepeatable : public GtestPlugin, public ::testing::WithParamInterface<const char*> {};

// 20 runs of the same suite, in counters and in exact mode: identical numbers.
TEST_P(GtestPluginRepeatable, SameSuiteSameNumbersEveryTime) {
  std::map<std::string, Metrics> first;
  for (int i = 0; i < 20; ++i) {
    SuiteRun run = run_suite("sample_suite", dir_ + "/" + std::to_string(i),
                             {kGoodTests, std::string("--heapgate_mode=") + GetParam()});
    ASSERT_TRUE(run.has_report);
    for (const auto& t : run.report.tests) {
      if (i == 0) {
        first[t.name] = t.metrics;
      } else {
        ASSERT_TRUE(first.count(t.name)) << t.name;
        EXPECT_EQ(first[t.name].allocations, t.metrics.allocations) << t.name << " run " << i;
        EXPECT_EQ(first[t.name].allocated_bytes, t.metrics.allocated_bytes) << t.name << " run " << i;
        EXPECT_EQ(first[t.name].live_bytes, t.metrics.live_bytes) << t.name << " run " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, GtestPluginRepeatable, ::testing::Values("counters", "exact"));

TEST_F(GtestPlugin, RepeatMeasuresTheFirstIterationOnce) {
  SuiteRun once = run_suite("sample_suite", dir_ + "/once", {"--gtest_filter=Sample.Counted"});
  SuiteRun repeated =
      run_suite("sample_suite", dir_ + "/repeat", {"--gtest_filter=Sample.Counted", "--gtest_repeat=3"});
  ASSERT_TRUE(once.has_report && repeated.has_report);
  EXPECT_EQ(repeated.exit_code, 0) << repeated.output;
  ASSERT_EQ(repeated.report.tests.size(), 1u);
  EXPECT_EQ(repeated.report.tests[0].metrics, once.report.tests[0].metrics);
}

TEST_F(GtestPlugin, SuppressedLeakPasses) {
  const std::string suppressions = dir_ + "/suppressions.txt";
  ASSERT_TRUE(sys::write_file_atomic(suppressions, "# known\nleak:leak_three_blocks\n"));
  SuiteRun run = run_suite("sample_suite", dir_ + "/r",
                           {"--gtest_filter=Sample.Leaks", "--heapgate_suppressions=" + suppressions});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  ASSERT_EQ(run.report.tests.size(), 1u);
  EXPECT_EQ(run.report.tests[0].verdict, Verdict::pass);
  EXPECT_NE(run.report.tests[0].message.find("suppressed"), std::string::npos) << run.report.tests[0].message;
  // A malformed or missing suppressions file is a setup error: exit 2 before
  // any test runs, one clear line naming the file and line.
  ASSERT_TRUE(sys::write_file_atomic(suppressions, "leak:ok\nlaek:typo\n"));
  for (const std::string& file : {suppressions, dir_ + "/missing.txt"}) {
    sys::ProcessOptions options;
    options.unset_env = {"MALLOC_CONF", "LD_PRELOAD", "HEAPGATE_MODE"};
    auto bad = sys::run_process({testing::helper_binary("sample_suite"), "--gtest_filter=Sample.Clean",
                                 "--heapgate_report=" + dir_ + "/bad", "--heapgate_suppressions=" + file},
                                options);
    ASSERT_TRUE(bad) << bad.error().message();
    EXPECT_EQ(bad->exit_code, 2) << bad->stderr_text;
    EXPECT_NE(bad->stderr_text.find(file == suppressions ? suppressions + ":2" : file), std::string::npos)
        << bad->stderr_text;
    EXPECT_EQ(bad->stdout_text.find("[ RUN      ]"), std::string::npos) << "a test ran: " << bad->stdout_text;
  }
}

TEST_F(GtestPlugin, ACrashKeepsTheTestsThatFinished) {
  sys::ProcessOptions options;
  options.extra_env = {"SAMPLE_CRASH=1"};
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD", "HEAPGATE_MODE"};
  auto ran = sys::run_process({testing::helper_binary("sample_suite"), "--heapgate_report=" + dir_,
                               "--gtest_filter=Sample.Clean:Sample.Counted:Sample.CrashesOnRequest"},
                              options);
  ASSERT_TRUE(ran) << ran.error().message();
  EXPECT_NE(ran->term_signal, 0);
  auto report = read_report(dir_);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_FALSE(report->run.complete);
  ASSERT_EQ(report->tests.size(), 3u);
  EXPECT_NE(find_record(*report, "Sample.Clean"), nullptr);
  EXPECT_NE(find_record(*report, "Sample.Counted"), nullptr);
  // The crashed test is named, by the line the plugin's signal handler wrote.
  const TestRecord* crashed = find_record(*report, "Sample.CrashesOnRequest");
  ASSERT_NE(crashed, nullptr);
  EXPECT_EQ(crashed->interrupted, Interruption::crashed);
  EXPECT_NE(crashed->message.find("SIGABRT"), std::string::npos) << crashed->message;
}

TEST_F(GtestPlugin, JUnitReportValidatesAgainstTheJenkinsSchema) {
  if (!sys::find_program("xmllint")) {
    if (testing::profiling_required()) FAIL() << "xmllint not found; fix: apt-get install libxml2-utils";
    GTEST_SKIP() << "xmllint not found";
  }
  SuiteRun run = run_suite("sample_suite", dir_, {"--gtest_filter=Sample.Clean:Sample.Leaks:Sample.OverBudget"});
  ASSERT_TRUE(run.has_report);
  auto lint = sys::run_process(
      {"xmllint", "--noout", "--schema", testing::data_path("junit/junit-10.xsd"), dir_ + "/sample_suite.junit.xml"});
  ASSERT_TRUE(lint);
  EXPECT_EQ(lint->exit_code, 0) << lint->stderr_text;
  auto xml = sys::read_file(dir_ + "/sample_suite.junit.xml");
  ASSERT_TRUE(xml);
  EXPECT_NE(xml->find("heapgate.leaked"), std::string::npos);
  EXPECT_NE(xml->find("heapgate.over_budget"), std::string::npos);
  EXPECT_NE(xml->find("leak_three_blocks"), std::string::npos);
}

TEST_F(GtestPlugin, BaselineCreatedThenRegressionAndImprovementDetected) {
  const std::string baselines = dir_ + "/baselines";
  fs::create_directories(baselines);
  const std::string filter = "--gtest_filter=Sample.Clean:Sample.Counted";
  SuiteRun created =
      run_suite("sample_suite", dir_ + "/r1", {filter, "--heapgate_baselines=" + baselines}, {"SAMPLE_EXTRA=2"});
  EXPECT_EQ(created.exit_code, 0) << created.output;
  ASSERT_TRUE(fs::exists(baselines + "/sample_suite.json"));
  EXPECT_EQ(find_record(created.report, "Sample.Counted")->verdict, Verdict::new_test);

  SuiteRun same =
      run_suite("sample_suite", dir_ + "/r2", {filter, "--heapgate_baselines=" + baselines}, {"SAMPLE_EXTRA=2"});
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_EQ(find_record(same.report, "Sample.Counted")->verdict, Verdict::pass);

  SuiteRun regressed =
      run_suite("sample_suite", dir_ + "/r3", {filter, "--heapgate_baselines=" + baselines}, {"SAMPLE_EXTRA=5"});
  EXPECT_EQ(regressed.exit_code, 1) << regressed.output;
  const TestRecord* r = find_record(regressed.report, "Sample.Counted");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->verdict, Verdict::regressed);
  ASSERT_TRUE(r->baseline.has_value());
  EXPECT_EQ(r->baseline->allocations, 9u);
  EXPECT_EQ(r->metrics.allocations, 12u);
  EXPECT_NE(regressed.output.find("[  FAILED  ] Sample.Counted"), std::string::npos) << regressed.output;
  EXPECT_EQ(find_record(regressed.report, "Sample.Clean")->verdict, Verdict::pass);

  SuiteRun improved = run_suite("sample_suite", dir_ + "/r4", {filter, "--heapgate_baselines=" + baselines});
  EXPECT_EQ(improved.exit_code, 0) << improved.output;
  EXPECT_EQ(find_record(improved.report, "Sample.Counted")->verdict, Verdict::improved);

  // A baseline entry whose test no longer runs is reported as missing (an unfiltered run only).
  {
    auto baseline = read_baseline(baselines + "/sample_suite.json");
    ASSERT_TRUE(baseline) << baseline.error().message();
    baseline->tests["Sample.Removed"] = baseline->tests.at("Sample.Clean");
    ASSERT_TRUE(write_baseline(baselines + "/sample_suite.json", *baseline));
    SuiteRun whole = run_suite("sample_suite", dir_ + "/whole", {"--heapgate_baselines=" + baselines});
    const TestRecord* removed = find_record(whole.report, "Sample.Removed");
    ASSERT_NE(removed, nullptr) << whole.output;
    EXPECT_EQ(removed->verdict, Verdict::missing);
    EXPECT_EQ(find_record(regressed.report, "Sample.Removed"), nullptr);
  }

  // Accepting the change rewrites the baseline; the next run passes.
  SuiteRun accepted = run_suite("sample_suite", dir_ + "/r5",
                                {filter, "--heapgate_baselines=" + baselines, "--heapgate_update_baselines"});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.output;
  SuiteRun after = run_suite("sample_suite", dir_ + "/r6", {filter, "--heapgate_baselines=" + baselines});
  EXPECT_EQ(find_record(after.report, "Sample.Counted")->verdict, Verdict::pass);
}

// GoogleTest's seed is the clock's unless given; a measured run pins it, so
// a test seeded from it counts the same every run, and a given seed is kept.
TEST_F(GtestPlugin, TheRandomSeedIsPinnedUnlessGiven) {
  const std::string filter = "--gtest_filter=Sample.SeededData";
  constexpr std::uint64_t kPinnedCount = 2;  // 1 + heapgate::gtest::kPinnedRandomSeed (1) % 1000
  SuiteRun first = run_suite("sample_suite", dir_ + "/r1", {filter});
  SuiteRun second = run_suite("sample_suite", dir_ + "/r2", {filter});
  ASSERT_NE(find_record(first.report, "Sample.SeededData"), nullptr) << first.output;
  ASSERT_NE(find_record(second.report, "Sample.SeededData"), nullptr) << second.output;
  EXPECT_EQ(find_record(first.report, "Sample.SeededData")->metrics.allocations, kPinnedCount);
  EXPECT_EQ(find_record(second.report, "Sample.SeededData")->metrics.allocations, kPinnedCount);
  SuiteRun given = run_suite("sample_suite", dir_ + "/r3", {filter, "--gtest_random_seed=7"});
  ASSERT_NE(find_record(given.report, "Sample.SeededData"), nullptr) << given.output;
  EXPECT_EQ(find_record(given.report, "Sample.SeededData")->metrics.allocations, 8u);
}

// A test that skips itself is in the report as skipped, never written to
// the baseline, and an entry it already has is neither missing nor changed.
TEST_F(GtestPlugin, ASkippedTestIsReportedSkippedAndItsBaselineEntryKept) {
  const std::string baselines = dir_ + "/baselines";
  const std::string filter = "--gtest_filter=Sample.Clean:Sample.Skips";
  SuiteRun recorded = run_suite("sample_suite", dir_ + "/r1", {filter, "--heapgate_baselines=" + baselines});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.output;
  const TestRecord* skipped = find_record(recorded.report, "Sample.Skips");
  ASSERT_NE(skipped, nullptr) << recorded.output;
  EXPECT_EQ(skipped->verdict, Verdict::skipped);
  EXPECT_NE(skipped->message.find("skipped on purpose"), std::string::npos) << skipped->message;
  auto baseline = read_baseline(baselines + "/sample_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  EXPECT_EQ(baseline->tests.count("Sample.Skips"), 0u);
  EXPECT_EQ(baseline->tests.count("Sample.Clean"), 1u);

  // An entry from the days the test ran.
  baseline->tests["Sample.Skips"] = baseline->tests.at("Sample.Clean");
  ASSERT_TRUE(write_baseline(baselines + "/sample_suite.json", *baseline));
  SuiteRun whole = run_suite("sample_suite", dir_ + "/whole", {"--heapgate_baselines=" + baselines});
  ASSERT_NE(find_record(whole.report, "Sample.Skips"), nullptr) << whole.output;
  EXPECT_EQ(find_record(whole.report, "Sample.Skips")->verdict, Verdict::skipped);
  SuiteRun updated = run_suite("sample_suite", dir_ + "/r2",
                               {filter, "--heapgate_baselines=" + baselines, "--heapgate_update_baselines"});
  EXPECT_EQ(updated.exit_code, 0) << updated.output;
  auto after = read_baseline(baselines + "/sample_suite.json");
  ASSERT_TRUE(after) << after.error().message();
  EXPECT_EQ(after->tests.at("Sample.Skips"), baseline->tests.at("Sample.Skips"));
}

TEST_F(GtestPlugin, ShardsMergeIntoTheUnshardedReport) {
  SuiteRun whole = run_suite("sample_suite", dir_ + "/whole", {kGoodTests});
  SuiteRun s0 =
      run_suite("sample_suite", dir_ + "/shards", {kGoodTests}, {"GTEST_TOTAL_SHARDS=2", "GTEST_SHARD_INDEX=0"});
  SuiteRun s1 =
      run_suite("sample_suite", dir_ + "/shards", {kGoodTests}, {"GTEST_TOTAL_SHARDS=2", "GTEST_SHARD_INDEX=1"});
  ASSERT_TRUE(whole.has_report && s0.has_report && s1.has_report);
  EXPECT_FALSE(s0.report.tests.empty());
  EXPECT_FALSE(s1.report.tests.empty());
  auto merged = merge_reports({s0.report, s1.report});
  ASSERT_TRUE(merged) << merged.error().message();
  ASSERT_EQ(merged->tests.size(), whole.report.tests.size());
  for (const auto& t : whole.report.tests) {
    const TestRecord* m = find_record(*merged, t.name);
    ASSERT_NE(m, nullptr) << t.name;
    if (t.name == "Sample.LazyStatic") continue;  // which test first builds the table depends on the order
    EXPECT_EQ(m->metrics.allocations, t.metrics.allocations) << t.name;
    EXPECT_EQ(m->metrics.allocated_bytes, t.metrics.allocated_bytes) << t.name;
  }
}

TEST_F(GtestPlugin, DeathTestChildDoesNotWriteTheReport) {
  SuiteRun run = run_suite("sample_suite", dir_, {"--gtest_filter=SampleDeathTest.*:Sample.Clean"});
  ASSERT_TRUE(run.has_report) << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.report.tests.size(), 2u);
  EXPECT_NE(find_record(run.report, "SampleDeathTest.Dies"), nullptr);
  EXPECT_NE(find_record(run.report, "Sample.Clean"), nullptr);
}

TEST_F(GtestPlugin, BadFlagIsOneClearLineAndExitCode2) {
  sys::ProcessOptions options;
  auto ran = sys::run_process({testing::helper_binary("sample_suite"), "--heapgate_mdoe=exact"}, options);
  ASSERT_TRUE(ran);
  EXPECT_EQ(ran->exit_code, 2);
  EXPECT_NE(ran->stderr_text.find("--heapgate_mdoe=exact"), std::string::npos) << ran->stderr_text;
  EXPECT_NE(ran->stderr_text.find("--heapgate_mode"), std::string::npos) << ran->stderr_text;
}

TEST(GtestPluginNoJemalloc, UnavailableIsReportedAndStrictFails) {
  const std::string dir = testing::make_temp_dir();
  SuiteRun run = run_suite("sample_suite_nojemalloc", dir, {"--gtest_filter=Sample.Clean"});
  ASSERT_TRUE(run.has_report);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  ASSERT_EQ(run.report.tests.size(), 1u);
  EXPECT_EQ(run.report.tests[0].verdict, Verdict::unavailable);
  EXPECT_NE(run.report.run.unavailable_reason.find("jemalloc"), std::string::npos);
  SuiteRun strict =
      run_suite("sample_suite_nojemalloc", dir + "/strict", {"--gtest_filter=Sample.Clean", "--heapgate_strict"});
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
}

}  // namespace
}  // namespace heapgate
