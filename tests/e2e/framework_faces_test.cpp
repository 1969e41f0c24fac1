// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// End to end: the Catch2 and doctest sample suites (e2e/sample_catch2.cpp,
// e2e/sample_doctest.cpp) run as child processes with their drop-in mains;
// the tests read each run's exit status, output and JSON report. The same
// assertions for both frameworks: the engine and the gate are the same.
#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

struct Framework {
  const char* binary;
  const char* clean_name;  // a name the framework's filter syntax treats specially
  bool catch2;
};

// Names the parameter in test output (instead of its bytes).
void PrintTo(const Framework& framework, std::ostream* os) { *os << framework.binary; }

const Framework kCatch2{"sample_catch2", "clean, with a comma", true};
const Framework kDoctest{"sample_doctest", "clean, with a comma * and a star", false};

// The user's own selection of `names`, in the framework's syntax.
std::string selection_of(const Framework& framework, const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) {
    std::string escaped;
    for (const char c : name) {
      if (c == ',' || c == '\\' || (framework.catch2 && c == '"')) escaped += '\\';
      escaped += c;
    }
    if (framework.catch2) escaped = "\"" + escaped + "\"";
    joined += (joined.empty() ? "" : ",") + escaped;
  }
  return framework.catch2 ? joined : "--test-case=" + joined;
}

struct SuiteRun {
  int exit_code = -1;
  std::string output;  // stdout + stderr
  Report report;
};

SuiteRun run_suite(const Framework& framework, const std::string& report_dir, const std::vector<std::string>& tests,
                   std::vector<std::string> args = {}, std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {testing::helper_binary(framework.binary), "--heapgate_report=" + report_dir,
                                   selection_of(framework, tests)};
  argv.insert(argv.end(), args.begin(), args.end());
  sys::ProcessOptions options;
  options.extra_env = std::move(env);
  options.unset_env = testing::suite_unset_env();
  options.timeout = std::chrono::minutes(2);
  SuiteRun run;
  auto ran = sys::run_process(argv, options);
  EXPECT_TRUE(ran) << ran.error().message();
  if (!ran) return run;
  run.exit_code = ran->exit_code;
  run.output = ran->stdout_text + ran->stderr_text;
  auto report = read_report(report_dir + "/" + framework.binary + ".json");
  EXPECT_TRUE(report) << (report ? "" : report.error().message()) << "\n" << run.output;
  if (report) run.report = std::move(*report);
  return run;
}

using testing::find_record;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class FrameworkFaces : public ::testing::TestWithParam<Framework> {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    dir_ = testing::make_temp_dir();
  }
  std::string dir_;
};

TEST_P(FrameworkFaces, CleanThreadedAndSectionedTestsPassAndEachRunsAloneByItsName) {
  const Framework& fw = GetParam();
  const std::string sections =
      fw.catch2 ? "sections share their test case's window" : "subcases share their test case's window";
  const std::string more_sections = fw.catch2 ? "more sections" : "more subcases";
  // measure_alone re-runs every test alone in a child: each name, commas and
  // wildcards included, must select exactly that test in the framework's syntax.
  SuiteRun run = run_suite(fw, dir_, {fw.clean_name, "threaded", sections, more_sections, "counted"},
                           {"--heapgate_measure_alone"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // heapgate's own reports, as for a GoogleTest binary.
  for (const char* extension : {".junit.xml", ".md"}) {
    EXPECT_TRUE(sys::exists(dir_ + "/" + fw.binary + extension)) << extension;
  }
  ASSERT_EQ(run.report.tests.size(), 5u) << run.output;
  for (const TestRecord& t : run.report.tests) {
    EXPECT_EQ(t.verdict, Verdict::pass) << t.name << ": " << t.message << "\n" << run.output;
    ASSERT_TRUE(t.alone.has_value()) << t.name << " was not run alone\n" << run.output;
    // Alone it is the first of its run, here it is not (its framework grew
    // its stacks of open sections and subcases in an earlier test): the same,
    // and in Catch2 its peak too (a fresh run that peaked higher could not
    // clear a regression of the first test of a selection; doctest's peak
    // alone still holds state of its own).
    EXPECT_EQ(t.alone->allocations, t.metrics.allocations) << t.name;
    if (fw.catch2 && t.name != "threaded") {
      EXPECT_EQ(t.alone->peak_bytes, t.metrics.peak_bytes) << t.name;
    }
  }
  // The test's own allocations, whatever its place in the run: the
  // framework's own blocks are not counted (Catch2's copies of a name too
  // long for the small-string buffer are, the same in every run).
  const TestRecord* counted = find_record(run.report, "counted");
  ASSERT_NE(counted, nullptr);
  EXPECT_EQ(counted->metrics.allocations, 7u);
  EXPECT_EQ(counted->alone->allocations, 7u);
  const TestRecord* clean = find_record(run.report, fw.clean_name);
  ASSERT_NE(clean, nullptr);
  EXPECT_GE(clean->metrics.allocations, 10u);
  EXPECT_EQ(clean->metrics.live_allocations, 0u);
  EXPECT_EQ(clean->alone->allocations, clean->metrics.allocations);
  const TestRecord* threaded = find_record(run.report, "threaded");
  ASSERT_NE(threaded, nullptr);
  EXPECT_GE(threaded->metrics.allocations, 100u);
}

TEST_P(FrameworkFaces, ALeakFailsTheRunAndIsNamedByItsLine) {
  SuiteRun run = run_suite(GetParam(), dir_, {"leaks"});
  EXPECT_NE(run.exit_code, 0) << run.output;
  const TestRecord* leak = find_record(run.report, "leaks");
  ASSERT_NE(leak, nullptr) << run.output;
  EXPECT_EQ(leak->verdict, Verdict::leaked) << leak->message;
  EXPECT_EQ(leak->metrics.live_allocations, 3u);
  // The exact re-run child selected the test by name and brought its stacks.
  EXPECT_TRUE(contains(leak->message, "leak_three_blocks() (sample_workload.h:23)")) << leak->message;
  EXPECT_TRUE(contains(run.output, "leak_three_blocks")) << run.output;
  // The framework's own summary counts the test case the gate failed, and
  // not heapgate's warm-up among those doctest skipped.
  if (GetParam().catch2) {
    EXPECT_TRUE(contains(run.output, "test cases: 1 | 1 failed")) << run.output;
  } else {
    EXPECT_TRUE(contains(run.output, "test cases: 1 | 0 passed | 1 failed | 8 skipped")) << run.output;
    EXPECT_TRUE(contains(run.output, "Status: FAILURE!")) << run.output;
  }
}

TEST_P(FrameworkFaces, AFailedAssertionIsTheTestsFailureNotAlsoALeak) {
  SuiteRun run = run_suite(GetParam(), dir_, {"fails its own assertion"});
  EXPECT_NE(run.exit_code, 0) << run.output;
  const TestRecord* failed = find_record(run.report, "fails its own assertion");
  ASSERT_NE(failed, nullptr) << run.output;
  EXPECT_TRUE(failed->gtest_failed);
  EXPECT_EQ(failed->verdict, Verdict::pass) << failed->message;
  EXPECT_FALSE(contains(run.output, "(heapgate)")) << run.output;
}

TEST_P(FrameworkFaces, ABudgetInTestCodeFailsTheTest) {
  SuiteRun run = run_suite(GetParam(), dir_, {"over budget"});
  EXPECT_NE(run.exit_code, 0) << run.output;
  const TestRecord* over = find_record(run.report, "over budget");
  ASSERT_NE(over, nullptr) << run.output;
  EXPECT_EQ(over->verdict, Verdict::over_budget) << over->message;
  EXPECT_TRUE(contains(run.output, "over the budget of 5")) << run.output;
}

TEST_P(FrameworkFaces, ARegressionAgainstTheBaselineIsNamedByItsLineAndACleanRunPasses) {
  const std::string baselines = dir_ + "/baselines";
  const std::string flag = "--heapgate_baselines=" + baselines;
  SuiteRun recorded = run_suite(GetParam(), dir_ + "/r1", {"counted"}, {flag, "--heapgate_update_baselines"});
  ASSERT_EQ(recorded.exit_code, 0) << recorded.output;
  ASSERT_TRUE(sys::read_file(baselines + "/" + GetParam().binary + ".json")) << recorded.output;

  SuiteRun regressed = run_suite(GetParam(), dir_ + "/r2", {"counted"}, {flag}, {"SAMPLE_EXTRA=3"});
  EXPECT_NE(regressed.exit_code, 0) << regressed.output;
  const TestRecord* counted = find_record(regressed.report, "counted");
  ASSERT_NE(counted, nullptr) << regressed.output;
  EXPECT_EQ(counted->verdict, Verdict::regressed) << counted->message;
  EXPECT_EQ(counted->metrics.allocations, 10u);
  EXPECT_TRUE(contains(counted->message, "planted_extra(int) (sample_workload.h:30)")) << counted->message;

  SuiteRun again = run_suite(GetParam(), dir_ + "/r3", {"counted"}, {flag});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  const TestRecord* same = find_record(again.report, "counted");
  ASSERT_NE(same, nullptr) << again.output;
  EXPECT_EQ(same->verdict, Verdict::pass) << same->message;
}

#ifdef HEAPGATE_TEST_DOCTEST
TEST(DoctestFace, ATestCaseInATestSuiteIsNamedSuiteDotNameAndRunsAloneByBoth) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string dir = testing::make_temp_dir();
  SuiteRun run = run_suite(kDoctest, dir, {"in a suite"}, {"--heapgate_measure_alone"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const TestRecord* test = find_record(run.report, "parser.in a suite");
  ASSERT_NE(test, nullptr) << run.output;
  EXPECT_EQ(test->suite, "parser");
  EXPECT_EQ(test->metrics.allocations, 4u);
  ASSERT_TRUE(test->alone.has_value()) << run.output;
  EXPECT_EQ(test->alone->allocations, 4u);
}
#endif

#ifdef HEAPGATE_CLI_PATH
// `heapgate run` lists the binary's tests its framework's way, shards it as it
// shards a GoogleTest binary (-j 2: one of the two tests in each process)
// and gates it the same way. The test's arguments after `--` reach it
// verbatim: Catch2's selects by a tag, `[steady]`.
TEST_P(FrameworkFaces, HeapgateRunRecordsThenCatchesARegression) {
  const Framework& fw = GetParam();
  const std::string selection = fw.catch2 ? "[steady]" : selection_of(fw, {"counted", "threaded"});
  auto heapgate_run = [&](const std::string& report, std::vector<std::string> env) {
    sys::ProcessOptions options;
    options.extra_env = std::move(env);
    options.unset_env = testing::suite_unset_env();
    options.timeout = std::chrono::minutes(2);
    auto ran =
        sys::run_process({HEAPGATE_CLI_PATH, "run", "-j", "2", "--progress", "none", "--baselines", dir_ + "/baselines",
                          "--report", dir_ + "/" + report, "--", testing::helper_binary(fw.binary), selection},
                         options);
    EXPECT_TRUE(ran) << ran.error().message();
    return ran ? *ran : sys::ProcessResult{};
  };
  const sys::ProcessResult recorded = heapgate_run("r1", {});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.stdout_text << recorded.stderr_text;
  EXPECT_TRUE(contains(recorded.stderr_text, "created") && contains(recorded.stderr_text, "(2 tests)"))
      << recorded.stderr_text;
  std::vector<std::string> shard_tests;
  for (int shard = 0; shard < 2; ++shard) {
    const std::string path = dir_ + "/r1/shards/" + fw.binary + ".shard-" + std::to_string(shard) + "-of-2.json";
    auto report = read_report(path);
    ASSERT_TRUE(report) << report.error().message();
    ASSERT_EQ(report->tests.size(), 1u) << path;
    shard_tests.push_back(report->tests.front().name);
  }
  EXPECT_NE(shard_tests[0], shard_tests[1]);

  const sys::ProcessResult regressed = heapgate_run("r2", {"SAMPLE_EXTRA=3"});
  EXPECT_EQ(regressed.exit_code, 1) << regressed.stdout_text << regressed.stderr_text;
  EXPECT_TRUE(contains(regressed.stdout_text + regressed.stderr_text, "counted: regressed: allocations 7 → 10"))
      << regressed.stdout_text << regressed.stderr_text;
}
#endif

// The frameworks this build has (tests/framework_faces_tests.cmake).
const std::vector<Framework> kBuilt = {
#ifdef HEAPGATE_TEST_CATCH2
    kCatch2,
#endif
#ifdef HEAPGATE_TEST_DOCTEST
    kDoctest,
#endif
};

INSTANTIATE_TEST_SUITE_P(Faces, FrameworkFaces, ::testing::ValuesIn(kBuilt),
                         [](const ::testing::TestParamInfo<Framework>& param) {
                           return std::string(param.param.catch2 ? "Catch2" : "Doctest");
                         });

}  // namespace
}  // namespace heapgate
