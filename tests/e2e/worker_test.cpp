// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What other threads allocate is gated (docs/design.md §6a, "A threaded test
// in two parts"), through the documented CI path on worker_suite.cpp: the
// first run records, later runs of the unchanged build pass, and one more
// block per request in the handler fails every test whose requests it
// handles — on a pool per test, a shared service pool, a detached thread,
// an executor or the test's own thread — named at the planted line.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

// The line of worker_suite.cpp that holds the planted allocation.
int planted_line() {
  std::ifstream source(WORKER_SUITE_SOURCE);
  std::string text;
  for (int line = 1; std::getline(source, text); ++line) {
    if (text.find("planted: one more block per request") != std::string::npos &&
        text.find("malloc") != std::string::npos) {
      return line;
    }
  }
  return 0;
}

class Workers : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    dir_ = testing::make_temp_dir();
  }

  sys::ProcessResult gate(const std::string& report, std::vector<std::string> env = {}) {
    return testing::gate_suite(HEAPGATE_CLI_PATH, "worker_suite", dir_ + "/baselines", report, std::move(env));
  }

  std::vector<TestRecord> records(const std::string& report) {
    auto r = read_report(report + "/worker_suite.json");
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    return r ? r->tests : std::vector<TestRecord>{};
  }

  std::string dir_;
};

TEST_F(Workers, AHandlerThatAllocatesMoreFailsWhereverItRuns) {
  const int line = planted_line();
  ASSERT_GT(line, 0) << "the planted line's marker is missing from " << WORKER_SUITE_SOURCE;
  const sys::ProcessResult first = gate(dir_ + "/report-1");
  ASSERT_EQ(first.exit_code, 0) << first.stdout_text << first.stderr_text;
  const sys::ProcessResult quiet = gate(dir_ + "/report-2");
  EXPECT_EQ(quiet.exit_code, 0) << quiet.stdout_text << quiet.stderr_text;

  const sys::ProcessResult planted = gate(dir_ + "/report-planted", {"WORKER_PLANT=1"});
  EXPECT_EQ(planted.exit_code, 1) << planted.stdout_text << planted.stderr_text;
  const std::string at = "worker_suite.cpp:" + std::to_string(line) + ")";
  const std::vector<TestRecord> tests = records(dir_ + "/report-planted");
  EXPECT_EQ(tests.size(), 6u);
  // The Markdown report lists the threaded tests with what was gated how.
  auto markdown = sys::read_file(dir_ + "/report-planted/worker_suite.md");
  ASSERT_TRUE(markdown) << markdown.error().message();
  EXPECT_NE(markdown->find("5 threaded tests: gated in two parts"), std::string::npos) << *markdown;
  const std::size_t row = markdown->find("| `PoolPerTest.HandlesFiftyRequests` | regressed | own thread ");
  ASSERT_NE(row, std::string::npos) << *markdown;
  const std::string pool_row = markdown->substr(row, markdown->find('\n', row) - row);
  EXPECT_NE(pool_row.find("other threads "), std::string::npos) << pool_row;
  EXPECT_NE(pool_row.find("(grew)"), std::string::npos) << pool_row;
  for (const TestRecord& t : tests) {
    EXPECT_EQ(t.verdict, Verdict::regressed) << t.name << ": " << t.message;
    EXPECT_NE(t.message.find(at), std::string::npos) << t.name << " does not name " << at << ": " << t.message;
    if (t.name != "OwnThread.HandlesFortyRequests") {
      // The part that grew is the other threads', and the call site says so.
      EXPECT_NE(t.message.find("other threads made"), std::string::npos) << t.name << ": " << t.message;
      EXPECT_NE(t.message.find(" on other threads at (anonymous namespace)::handle_request(int) (" + at),
                std::string::npos)
          << t.name << ": " << t.message;
      // The record says what was gated how: the other threads' part beyond its limit.
      EXPECT_TRUE(t.thread_parts &&
                  t.thread_parts->other_threads.now.allocations > t.thread_parts->other_threads.limit.allocations)
          << t.name;
    }
  }
}

}  // namespace
}  // namespace heapgate
