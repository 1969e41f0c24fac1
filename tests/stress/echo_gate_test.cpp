// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The gate never crashes or hangs a suite whose tests start threads, and its
// numbers do not move between runs: echo_suite (500 tests, each with a server
// thread pool and a client thread on loopback, linked with
// heapgate::gtest_main) runs under the gate HEAPGATE_STRESS_RUNS times
// (default 3; scripts/stress.sh runs 20), the first run recording the
// baseline, then once in `exact` mode. Every run must end by itself with exit
// 0 and every test pass, with the same counts in every run.
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

int runs() {
  const char* env = std::getenv("HEAPGATE_STRESS_RUNS");
  const int n = env != nullptr ? std::atoi(env) : 0;
  return n > 1 ? n : 3;
}

struct GatedRun {
  bool finished = false;  // ended by itself, not by a signal or the timeout
  int exit_code = -1;
  std::string output;
  std::map<std::string, Metrics> metrics;  // per test
  std::map<std::string, Verdict> verdicts;
};

GatedRun run_gated(const std::string& dir, int index, const std::vector<std::string>& extra) {
  const std::string report_dir = dir + "/report-" + std::to_string(index);
  std::vector<std::string> argv = {testing::helper_binary("echo_suite"), "--heapgate_baselines=" + dir + "/baselines",
                                   "--heapgate_report=" + report_dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  sys::ProcessOptions options;
  options.unset_env = testing::suite_unset_env();
  options.timeout = std::chrono::minutes(5);
  GatedRun run;
  auto ran = sys::run_process(argv, options);
  EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
  if (!ran) return run;
  run.finished = !ran->timed_out && ran->term_signal == 0;
  run.exit_code = ran->exit_code;
  run.output =
      ran->stdout_text.substr(ran->stdout_text.size() > 4000 ? ran->stdout_text.size() - 4000 : 0) + ran->stderr_text;
  auto report = read_report(report_dir + "/echo_suite.json");
  EXPECT_TRUE(report) << (report ? "" : report.error().message());
  if (!report) return run;
  for (const TestRecord& t : report->tests) {
    run.metrics[t.name] = t.metrics;
    run.verdicts[t.name] = t.verdict;
  }
  return run;
}

TEST(EchoGate, ThreadedSuiteRunsUnderTheGateAgainAndAgainWithTheSameCounts) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string dir = testing::make_temp_dir();
  std::vector<GatedRun> done;
  for (int i = 0; i < runs(); ++i) {
    done.push_back(run_gated(dir, i, {}));
    const GatedRun& run = done.back();
    ASSERT_TRUE(run.finished) << "run " << i << " hung or crashed:\n" << run.output;
    EXPECT_EQ(run.exit_code, 0) << "run " << i << ":\n" << run.output;
    ASSERT_EQ(run.metrics.size(), 500u) << "run " << i;
    // 500 threaded tests that took about 2 s are not cheap to run 8 more
    // times: recording runs them twice more, the exact run one of the two.
    if (i == 0) {
      EXPECT_NE(run.output.find("(2 more runs each"), std::string::npos) << run.output;
    }
    for (const auto& [name, verdict] : run.verdicts) {
      EXPECT_TRUE(verdict == Verdict::pass || verdict == Verdict::new_test)
          << "run " << i << ": " << name << " " << to_string(verdict);
    }
  }
  for (std::size_t i = 1; i < done.size(); ++i) {
    for (const auto& [name, metrics] : done[0].metrics) {
      EXPECT_EQ(done[i].metrics[name], metrics) << "run " << i << ": " << name;
    }
  }
  // `exact` records every allocation's stack and counts the same.
  const GatedRun exact = run_gated(dir, 1000, {"--heapgate_mode=exact"});
  ASSERT_TRUE(exact.finished) << "the exact run hung or crashed:\n" << exact.output;
  EXPECT_EQ(exact.exit_code, 0) << exact.output;
  for (const auto& [name, metrics] : done[0].metrics) EXPECT_EQ(exact.metrics.at(name), metrics) << name;
}

}  // namespace
}  // namespace heapgate
