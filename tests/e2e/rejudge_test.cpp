// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// One verdict: a saved report judged again (`heapgate compare`) against the
// baselines the run judged it by gives the run's verdict for every test and
// the run's exit code. Each scenario takes a verdict path: a first run that
// records, a regression, a leak, a budget, one-time setup, a test's own
// failure, a regression a fresh run does not reproduce, one that alone is
// lighter, a calibrated noise band, an improvement ratcheted, sampled
// estimates, a sharded run merged.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

namespace fs = std::filesystem;

class Rejudge : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    dir_ = testing::make_temp_dir();
    baselines_ = dir_ + "/baselines";
    fs::create_directories(baselines_);
  }

  sys::ProcessResult cli(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), HEAPGATE_CLI_PATH);
    sys::ProcessOptions options;
    options.unset_env = testing::suite_unset_env();
    options.extra_env = std::move(env);
    auto ran = sys::run_process(args, options);
    EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
    return ran ? *ran : sys::ProcessResult{};
  }

  static std::map<std::string, Verdict> verdicts(const std::string& report_dir, const std::string& binary) {
    std::map<std::string, Verdict> out;
    auto report = read_report(report_dir + "/" + binary + ".json");
    EXPECT_TRUE(report) << (report ? "" : report.error().message());
    if (report) {
      for (const TestRecord& t : report->tests) out[t.name] = t.verdict;
    }
    return out;
  }

  // Runs `heapgate run RUN_ARGS -- BINARY SUITE_ARGS`, then `heapgate
  // compare` of its report against a copy of the baselines as they were
  // before the run, and expects the same verdicts and exit code. Returns the
  // run's verdicts, for the scenario's own checks.
  std::map<std::string, Verdict> expect_same_verdicts(const std::string& binary, std::vector<std::string> run_args,
                                                      std::vector<std::string> suite_args,
                                                      std::vector<std::string> env = {}) {
    const std::string step = std::to_string(++step_);
    const std::string before = dir_ + "/baselines-before-" + step;
    fs::copy(baselines_, before, fs::copy_options::recursive);
    const std::string report = dir_ + "/report-" + step;
    std::vector<std::string> args{"run", "--progress", "none", "--baselines", baselines_, "--report", report};
    args.insert(args.end(), run_args.begin(), run_args.end());
    args.push_back("--");
    args.push_back(testing::helper_binary(binary));
    args.insert(args.end(), suite_args.begin(), suite_args.end());
    const sys::ProcessResult ran = cli(args, env);
    const bool ratchet = std::find(run_args.begin(), run_args.end(), "--ratchet") != run_args.end();
    std::vector<std::string> compare{"compare", "--baselines", before, "--report", report, "-o", report + "/again"};
    if (ratchet) compare.push_back("--ratchet");
    const sys::ProcessResult judged = cli(compare);
    EXPECT_EQ(judged.exit_code, ran.exit_code) << "run:\n"
                                               << ran.stdout_text << ran.stderr_text << "\ncompare:\n"
                                               << judged.stdout_text << judged.stderr_text;
    const auto first = verdicts(report, binary);
    const auto again = verdicts(report + "/again", binary);
    EXPECT_FALSE(first.empty());
    for (const auto& [name, verdict] : first) {
      auto it = again.find(name);
      if (it == again.end()) {
        ADD_FAILURE() << name << " is not in the re-judged report";
        continue;
      }
      EXPECT_EQ(to_string(it->second), to_string(verdict)) << name << "\nrun:\n"
                                                           << ran.stdout_text << "\ncompare:\n"
                                                           << judged.stdout_text;
    }
    return first;
  }

  std::string dir_, baselines_;
  int step_ = 0;
};

TEST_F(Rejudge, TheSampleSuiteOnEveryVerdictPath) {
  const std::vector<std::string> all{"--gtest_filter=Sample.*:SampleTyped/*:Counts/*:-Sample.CrashesOnRequest"};
  // A first run records (new), with a leak, a budget, one-time setup, a
  // test's own failure and threads in it.
  auto first = expect_same_verdicts("sample_suite", {}, all);
  EXPECT_EQ(first["Sample.Leaks"], Verdict::leaked);
  EXPECT_EQ(first["Sample.OverBudget"], Verdict::over_budget);
  // A regression, then the same run sharded over two processes and merged.
  auto regressed = expect_same_verdicts("sample_suite", {}, all, {"SAMPLE_EXTRA=2"});
  EXPECT_EQ(regressed["Sample.Counted"], Verdict::regressed);
  expect_same_verdicts("sample_suite", {"--jobs", "2"}, all, {"SAMPLE_EXTRA=2"});
  // Record a heavier test, then improve it and ratchet the improvement.
  ASSERT_EQ(cli({"run", "--progress", "none", "--baselines", dir_ + "/heavy", "--report", dir_ + "/heavy-report", "--",
                 testing::helper_binary("sample_suite"), "--gtest_filter=Sample.Counted"},
                {"SAMPLE_EXTRA=3"})
                .exit_code,
            0);
  fs::remove_all(baselines_);
  fs::copy(dir_ + "/heavy", baselines_, fs::copy_options::recursive);
  auto improved = expect_same_verdicts("sample_suite", {"--ratchet"}, {"--gtest_filter=Sample.Counted"});
  EXPECT_EQ(improved["Sample.Counted"], Verdict::improved);
}

TEST_F(Rejudge, ARegressionThatAFreshRunDoesNotReproduce) {
  // The case: one more 4 KiB block only in the first process after
  // a marker file was removed. The run passes it; judged again, it must too.
  const std::vector<std::string> filter{"--gtest_filter=FirstProcess.Only:Steady.Fixed"};
  const std::string marker = dir_ + "/marker";
  ASSERT_TRUE(sys::write_file_atomic(marker, "seen\n"));
  expect_same_verdicts("noisy_suite", {}, filter, {"NOISY_MARKER=" + marker});
  fs::remove(marker);
  auto run = expect_same_verdicts("noisy_suite", {}, filter, {"NOISY_MARKER=" + marker});
  EXPECT_EQ(run["FirstProcess.Only"], Verdict::pass);
  auto report = read_report(dir_ + "/report-2/noisy_suite.json");
  ASSERT_TRUE(report);
  for (const TestRecord& t : report->tests) {
    if (t.name != "FirstProcess.Only") continue;
    EXPECT_NE(t.message.find("not reproducible"), std::string::npos) << t.message;
    EXPECT_FALSE(t.confirmations.empty());
  }
}

TEST_F(Rejudge, CalibratedNoiseAndATestLighterAlone) {
  const std::string counter = dir_ + "/counter";
  ASSERT_EQ(cli({"run", "--progress", "none", "--calibrate", "3", "--baselines", baselines_, "--report",
                 dir_ + "/calibration", "--", testing::helper_binary("noisy_suite")},
                {"NOISY_COUNTER_FILE=" + counter})
                .exit_code,
            0);
  expect_same_verdicts("noisy_suite", {}, {}, {"NOISY_COUNTER_FILE=" + counter});
  // Carry.After carries more from Carry.Before than it did when recorded;
  // alone it measures as it did then.
  expect_same_verdicts("noisy_suite", {}, {}, {"NOISY_COUNTER_FILE=" + counter, "NOISY_CARRY=4"});
  // A planted allocation is a regression either way.
  auto planted = expect_same_verdicts("noisy_suite", {}, {}, {"NOISY_COUNTER_FILE=" + counter, "NOISY_EXTRA=1"});
  EXPECT_EQ(planted["Steady.Fixed"], Verdict::regressed);
}

TEST_F(Rejudge, SampledEstimates) {
  const std::vector<std::string> filter{"--gtest_filter=Sample.Clean:Sample.Counted:Sample.Leaks"};
  expect_same_verdicts("sample_suite", {"--mode", "sampled"}, filter);
  expect_same_verdicts("sample_suite", {"--mode", "sampled"}, filter, {"SAMPLE_EXTRA=40"});
}

}  // namespace
}  // namespace heapgate
