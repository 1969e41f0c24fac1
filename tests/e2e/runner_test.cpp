// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The `heapgate` executable end to end: diff and report verbs, and bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "heapgate/report.h"
#include "profile_test_support.h"
#include "sys/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

sys::ProcessResult heapgate_cli(std::vector<std::string> args) {
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
  auto ran = sys::run_process(args, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
}

class RunnerDiff : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_PROFILING();
    dir_ = testing::make_temp_dir();
    ASSERT_TRUE(testing::run_heap_workload(dir_ + "/base.heap", 0, 0));
    ASSERT_TRUE(testing::run_heap_workload(dir_ + "/current.heap", 7, 3));
  }
  std::string dir_;
};

TEST_F(RunnerDiff, TextNamesTheInjectedAllocationSitesAcrossProcesses) {
  auto r = heapgate_cli({"diff", dir_ + "/base.heap", dir_ + "/current.heap"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("2 stacks changed"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("injected_leak"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("+288 B (0 -> 288)"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("steady_work"), std::string::npos) << r.stdout_text;
}

TEST_F(RunnerDiff, FoldedOutputToAFile) {
  const std::string out = dir_ + "/diff.folded";
  auto r = heapgate_cli({"diff", dir_ + "/base.heap", dir_ + "/current.heap", "--format", "folded", "--metric",
                         "accum_objects", "-o", out});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  auto text = sys::read_file(out);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("main;(anonymous namespace)::injected_extra(int) 7\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("main;(anonymous namespace)::injected_leak(int) 3\n"), std::string::npos) << *text;
}

TEST_F(RunnerDiff, JeprofFormatRebasesTheBase) {
  HEAPGATE_REQUIRE_PROGRAM("jeprof");
  auto r = heapgate_cli({"diff", dir_ + "/base.heap", dir_ + "/current.heap", "--format", "jeprof", "--binary",
                         testing::helper_binary("heap_workload")});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("injected_leak"), std::string::npos) << r.stdout_text;
  // Without --binary: one clear line, exit 2.
  auto missing = heapgate_cli({"diff", dir_ + "/base.heap", dir_ + "/current.heap", "--format", "jeprof"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("--binary"), std::string::npos) << missing.stderr_text;
}

TEST(RunnerBadInput, EachGivesOneClearLineAndExitCode2) {
  const std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(sys::write_file_atomic(dir + "/bad.heap", "garbage\n"));
  auto bad = heapgate_cli({"diff", dir + "/bad.heap", dir + "/bad.heap"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.stderr_text.find(dir + "/bad.heap:1"), std::string::npos) << bad.stderr_text;
  auto absent = heapgate_cli({"diff", dir + "/nope.heap", dir + "/bad.heap"});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_NE(absent.stderr_text.find("nope.heap"), std::string::npos) << absent.stderr_text;
  auto flag = heapgate_cli({"diff", "--frobnicate"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.stderr_text.find("--frobnicate"), std::string::npos) << flag.stderr_text;
  ASSERT_TRUE(sys::write_file_atomic(dir + "/bad.json", "{\"schema\": \"heapgate.report/9\"}"));
  auto report = heapgate_cli({"report", "junit", dir + "/bad.json"});
  EXPECT_EQ(report.exit_code, 2);
  EXPECT_NE(report.stderr_text.find("bad.json"), std::string::npos) << report.stderr_text;
  EXPECT_EQ(report.stdout_text, "");
}

TEST(RunnerReport, MergesShardsAndRendersJUnitAndMarkdown) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string dir = testing::make_temp_dir();
  for (const char* index : {"0", "1"}) {
    sys::ProcessOptions options;
    options.extra_env = {"GTEST_TOTAL_SHARDS=2", std::string("GTEST_SHARD_INDEX=") + index};
    options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
    auto ran = sys::run_process({testing::helper_binary("sample_suite"), "--heapgate_report=" + dir,
                                 "--gtest_filter=Sample.Clean:Sample.Counted:Counts/*"},
                                options);
    ASSERT_TRUE(ran);
  }
  auto merged = heapgate_cli({"report", "merge", "-o", dir + "/all.json", dir + "/sample_suite.shard-0-of-2.json",
                              dir + "/sample_suite.shard-1-of-2.json"});
  EXPECT_EQ(merged.exit_code, 0) << merged.stderr_text;
  auto report = read_report(dir + "/all.json");
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->tests.size(), 5u);
  auto junit = heapgate_cli({"report", "junit", dir + "/all.json"});
  EXPECT_EQ(junit.exit_code, 0);
  EXPECT_NE(junit.stdout_text.find("<testsuites"), std::string::npos);
  auto markdown = heapgate_cli({"report", "markdown", dir + "/all.json"});
  EXPECT_EQ(markdown.exit_code, 0);
  EXPECT_NE(markdown.stdout_text.find("Sample.Counted"), std::string::npos);
  auto two = heapgate_cli({"report", "junit", dir + "/sample_suite.shard-0-of-2.json",
                           dir + "/sample_suite.shard-1-of-2.json"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.stderr_text.find("merge"), std::string::npos) << two.stderr_text;
}

TEST(RunnerHelp, ReadsLikeAManPage) {
  auto help = heapgate_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.stdout_text.find("diff"), std::string::npos);
  EXPECT_NE(help.stdout_text.find("Exit codes"), std::string::npos);
  auto diff_help = heapgate_cli({"diff", "--help"});
  EXPECT_EQ(diff_help.exit_code, 0);
  EXPECT_NE(diff_help.stdout_text.find("--format"), std::string::npos);
}

}  // namespace
}  // namespace heapgate
