// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Per-call-site budgets end to end: call_site_suite moves allocations from
// one call site to another with its totals unchanged; a test that gates its
// call sites (HEAPGATE_GATE_CALL_SITES() or --heapgate_gate_call_sites) fails
// and names the site, one that does not passes.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
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
  std::string output;
  Report report;
};

SuiteRun run_suite(const fs::path& work, int moved, std::vector<std::string> args = {},
                   std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {
      testing::helper_binary("call_site_suite"), "--heapgate_report=" + (work / "report").string(),
      "--heapgate_baselines=" + (work / "baselines").string(), "--heapgate_gate_call_sites=CallSites.ByFlag"};
  argv.insert(argv.end(), args.begin(), args.end());
  sys::ProcessOptions options;
  options.extra_env = {"CALL_SITE_SUITE_MOVED=" + std::to_string(moved)};
  options.extra_env.insert(options.extra_env.end(), env.begin(), env.end());
  options.unset_env = testing::suite_unset_env();
  options.unset_env.push_back("HEAPGATE_GATE_CALL_SITES");
  options.timeout = std::chrono::minutes(5);
  SuiteRun run;
  auto ran = sys::run_process(argv, options);
  EXPECT_TRUE(ran) << ran.error().message();
  if (!ran) return run;
  run.exit_code = ran->exit_code;
  run.output = ran->stdout_text + ran->stderr_text;
  auto report = read_report((work / "report" / "call_site_suite.json").string());
  EXPECT_TRUE(report) << (report ? "" : report.error().message()) << "\n" << run.output;
  if (report) run.report = std::move(*report);
  return run;
}

const TestRecord& record(const SuiteRun& run, const std::string& name) {
  for (const auto& t : run.report.tests) {
    if (t.name == name) return t;
  }
  static const TestRecord none;
  ADD_FAILURE() << name << " is not in the report\n" << run.output;
  return none;
}

class CallSiteGateEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = fs::path(::testing::TempDir()) / ("call-site-gate-" + std::to_string(::getpid()));
    fs::remove_all(work_);
    fs::create_directories(work_);
  }
  void TearDown() override { fs::remove_all(work_); }
  fs::path work_;
};

// The processes that ran CallSites.DISABLED_LeavesAMarker with `marker`.
int disabled_runs(const fs::path& marker) {
  int runs = 0;
  for (const auto& entry : fs::directory_iterator(marker.parent_path())) {
    if (entry.path().filename().string().rfind(marker.filename().string() + ".", 0) == 0) ++runs;
  }
  return runs;
}

// Recording a baseline re-runs the suite in exact mode for its call sites.
// That re-run runs the tests the user's run ran: not the disabled ones,
// unless the user asked for them too.
TEST_F(CallSiteGateEndToEnd, RecordingCallSitesRunsDisabledTestsOnlyIfTheRunDid) {
  const fs::path marker = work_ / "disabled-ran";
  fs::create_directories(work_ / "plain");
  fs::create_directories(work_ / "with-disabled");
  const SuiteRun plain = run_suite(work_ / "plain", 0, {}, {"CALL_SITE_SUITE_DISABLED_MARKER=" + marker.string()});
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_TRUE(fs::exists(work_ / "plain" / "baselines" / "call_site_suite.json")) << plain.output;
  EXPECT_EQ(disabled_runs(marker), 0) << plain.output;

  const SuiteRun with_disabled = run_suite(work_ / "with-disabled", 0, {"--gtest_also_run_disabled_tests"},
                                           {"CALL_SITE_SUITE_DISABLED_MARKER=" + marker.string()});
  ASSERT_EQ(with_disabled.exit_code, 0) << with_disabled.output;
  EXPECT_EQ(disabled_runs(marker), 2) << "the suite and its exact re-run\n" << with_disabled.output;
}

TEST_F(CallSiteGateEndToEnd, AMovedAllocationFailsOnlyTheGatedTestsAndNamesTheSite) {
  const SuiteRun recorded = run_suite(work_, 0);
  ASSERT_EQ(recorded.exit_code, 0) << recorded.output;
  auto baseline = read_baseline((work_ / "baselines" / "call_site_suite.json").string());
  ASSERT_TRUE(baseline) << baseline.error().message();
  // Gated tests keep every call site; so does a test with few of them
  // (kAllCallSitesUpTo), gated or not.
  EXPECT_TRUE(baseline->tests.at("CallSites.Gated").call_sites_complete);
  EXPECT_TRUE(baseline->tests.at("CallSites.ByFlag").call_sites_complete);
  EXPECT_TRUE(baseline->tests.at("CallSites.NotGated").call_sites_complete);

  const SuiteRun same = run_suite(work_, 0);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_EQ(record(same, "CallSites.Gated").verdict, Verdict::pass) << record(same, "CallSites.Gated").message;
  EXPECT_TRUE(record(same, "CallSites.Gated").call_sites_complete);

  const SuiteRun moved = run_suite(work_, 100);
  EXPECT_EQ(moved.exit_code, 1) << moved.output;
  for (const char* name : {"CallSites.Gated", "CallSites.ByFlag"}) {
    const TestRecord& t = record(moved, name);
    EXPECT_EQ(t.verdict, Verdict::regressed) << name << ": " << t.message;
    EXPECT_NE(t.message.find("regressed at a call site while the totals stayed within tolerance"), std::string::npos)
        << t.message;
    EXPECT_NE(t.message.find("+100 allocations (+3200 B) at (anonymous namespace)::allocate_in_hot_loop"),
              std::string::npos)
        << t.message;
    // The totals did not move.
    ASSERT_TRUE(t.baseline.has_value());
    EXPECT_EQ(t.metrics.allocations, t.baseline->allocations) << t.message;
  }
  EXPECT_EQ(record(moved, "CallSites.NotGated").verdict, Verdict::pass) << record(moved, "CallSites.NotGated").message;
  // The console says it too, where the developer looks.
  EXPECT_NE(moved.output.find("allocate_in_hot_loop"), std::string::npos);
}

TEST_F(CallSiteGateEndToEnd, ABaselineWithoutEverySiteSaysHowToRecordThem) {
  // Recorded while the flag selected nothing; ByFlag has few sites, so its
  // entry holds them all. An entry that holds only its top sites (a test
  // with many, or a baseline written before small tests kept all) is made
  // by keeping its first site and dropping the mark.
  const SuiteRun recorded = run_suite(work_, 0, {"--heapgate_gate_call_sites="});
  ASSERT_EQ(recorded.exit_code, 0) << recorded.output;
  const std::string path = (work_ / "baselines" / "call_site_suite.json").string();
  auto baseline = read_baseline(path);
  ASSERT_TRUE(baseline) << baseline.error().message();
  BaselineEntry& by_flag = baseline->tests.at("CallSites.ByFlag");
  EXPECT_TRUE(by_flag.call_sites_complete);
  ASSERT_GT(by_flag.call_sites.size(), 1u);
  by_flag.call_sites.resize(1);
  by_flag.call_sites_complete = false;
  ASSERT_TRUE(write_baseline(path, *baseline));
  const SuiteRun moved = run_suite(work_, 100, {"--gtest_filter=CallSites.ByFlag"});
  EXPECT_EQ(moved.exit_code, 0) << moved.output;
  const TestRecord& t = record(moved, "CallSites.ByFlag");
  EXPECT_EQ(t.verdict, Verdict::pass);
  EXPECT_NE(t.message.find("call sites not gated: the baseline does not hold all of this test's call sites"),
            std::string::npos)
      << t.message;
}

}  // namespace
}  // namespace heapgate
