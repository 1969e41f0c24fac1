// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The documented CI path on a threaded suite, with no calibration step: the
// run that records the baseline learns the spread of the tests other threads
// allocated in, so later runs of an unchanged build pass, and a planted
// allocation is still caught.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/baseline.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

namespace fs = std::filesystem;

class LearnedSpread : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    dir_ = testing::make_temp_dir();
    baselines_ = dir_ + "/baselines";
    counter_ = dir_ + "/counter";
    quiet_runs_ = dir_ + "/quiet-runs";
  }

  // `heapgate run` as ci/gate.sh runs it: sharded, strict (`more`: flags before the binary).
  sys::ProcessResult gate(const std::string& report, std::vector<std::string> env = {},
                          const std::vector<std::string>& more = {}) {
    std::vector<std::string> args{HEAPGATE_CLI_PATH, "run",      "--progress", "none",   "--strict", "--baselines",
                                  baselines_,        "--report", report,       "--jobs", "2"};
    args.insert(args.end(), more.begin(), more.end());
    args.push_back("--");
    args.push_back(testing::helper_binary("threaded_suite"));
    sys::ProcessOptions options;
    options.unset_env = testing::suite_unset_env();
    options.extra_env = std::move(env);
    options.extra_env.push_back("THREADED_COUNTER_FILE=" + counter_);
    options.extra_env.push_back("QUIET_RUNS_FILE=" + quiet_runs_);
    auto ran = sys::run_process(args, options);
    EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
    return ran ? *ran : sys::ProcessResult{};
  }

  std::string dir_;
  std::string baselines_;
  std::string counter_;
  std::string quiet_runs_;
};

TEST_F(LearnedSpread, TheRecordingRunLearnsWhatVariesAndLaterRunsPassUntilAPlantedChange) {
  const sys::ProcessResult first = gate(dir_ + "/report-1");
  ASSERT_EQ(first.exit_code, 0) << first.stdout_text << first.stderr_text;
  // Each shard says what it learned, in its log.
  std::string logs;
  for (const auto& entry : fs::directory_iterator(dir_ + "/report-1/shards")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    logs += text.str();
  }
  EXPECT_NE(logs.find("learned the spread of"), std::string::npos) << logs;
  // The test that allocates nothing ran twice: in its shard, and in the exact
  // run that records call sites, which a sharded run starts with its first
  // test (which tests allocate is not known then) and runs beside them. The
  // spread's runs, started after the last test, do not repeat it.
  EXPECT_EQ(fs::file_size(quiet_runs_), 2u);

  auto baseline = read_baseline(baselines_ + "/threaded_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  const BaselineEntry& varies = baseline->tests.at("Threaded.Varies");
  ASSERT_TRUE(varies.noise) << "the test whose thread's work varies has no band";
  EXPECT_EQ(varies.noise->runs, 9u);  // cheap tests: kCheapLearnedRuns (8) more runs
  EXPECT_LT(varies.noise->low.allocations, varies.noise->high.allocations);
  // Sampled, but every run agreed: exact.
  EXPECT_FALSE(baseline->tests.at("Threaded.Steady").noise);
  // Measured twice (the run and the exact run), the same both times: exact.
  EXPECT_FALSE(baseline->tests.at("Single.Fixed").noise);
  // A test that slept is exposed to timing (its own thread waited): the
  // report says so, the baseline keeps no waits (they follow the load).
  EXPECT_TRUE(baseline->tests.at("Single.Sleeps").other_threads.empty());

  // The evidence is in the report: the samples beside the run's own measurement.
  auto report = read_report(dir_ + "/report-1/threaded_suite.json");
  ASSERT_TRUE(report) << report.error().message();
  for (const TestRecord& t : report->tests) {
    if (t.name == "Single.Sleeps") {
      EXPECT_GE(t.other_threads.own_waits, 1u);
      EXPECT_EQ(t.other_threads.allocations, 0u);
    }
    if (t.name == "Threaded.Varies") {
      EXPECT_EQ(t.samples.size(), 8u);
    } else if (t.name == "Single.Fixed") {
      // Measured once more by the exact run that records call sites, and
      // the same both times: exact.
      EXPECT_EQ(t.samples.size(), 1u);
    }
  }

  for (int run = 2; run <= 5; ++run) {
    const sys::ProcessResult again = gate(dir_ + "/report-" + std::to_string(run));
    EXPECT_EQ(again.exit_code, 0) << "run " << run << ":\n" << again.stdout_text << again.stderr_text;
  }

  const sys::ProcessResult planted = gate(dir_ + "/report-planted", {"THREADED_EXTRA=1"});
  EXPECT_EQ(planted.exit_code, 1) << planted.stdout_text << planted.stderr_text;
  auto judged = read_report(dir_ + "/report-planted/threaded_suite.json");
  ASSERT_TRUE(judged) << judged.error().message();
  for (const TestRecord& t : judged->tests) {
    if (t.name == "Threaded.Steady") {
      EXPECT_EQ(t.verdict, Verdict::regressed) << t.message;
    } else if (t.name == "Threaded.Varies") {
      EXPECT_EQ(t.verdict, Verdict::pass) << t.message;
    }
  }
}

// --calibrate N learns every test's spread from its N runs: none of them
// runs a threaded test again for a band of its own.
TEST_F(LearnedSpread, CalibrationRunsAreTheSamples) {
  const sys::ProcessResult calibrated = gate(dir_ + "/report-calibrated", {}, {"--calibrate", "2"});
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.stdout_text << calibrated.stderr_text;
  // Threaded.Varies ran in each of the 2 runs, in the first one's exact run
  // that records call sites, and twice alone (the first run measures every
  // test alone, in a fresh process that counts its second run): 5 times.
  // Learning its spread would have added 8 more in each run.
  std::ifstream in(counter_);
  int runs = 0;
  in >> runs;
  EXPECT_EQ(runs, 5);
  auto baseline = read_baseline(baselines_ + "/threaded_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  const BaselineEntry& varies = baseline->tests.at("Threaded.Varies");
  ASSERT_TRUE(varies.noise) << "its two runs differ";
  EXPECT_EQ(varies.noise->runs, 2u);
}

}  // namespace
}  // namespace heapgate
