// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "heapgate/report_files.h"
#include "test_support.h"

namespace heapgate {
namespace {

RunInfo run_info() {
  RunInfo run;
  run.binary = "crashy_test";
  run.mode = Mode::counters;
  run.host = "h";
  run.started_at = "2024-05-01T12:00:00Z";
  return run;
}

TestRecord numbered(int i) {
  TestRecord t;
  t.suite = "Crash";
  t.test = "T" + std::to_string(i);
  t.name = t.suite + "." + t.test;
  t.mode = Mode::counters;
  t.metrics = Metrics{static_cast<std::uint64_t>(i), 16, 0, 0, 16};
  t.message = "line one\nline two";  // records span one journal line each, whatever they hold
  return t;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ReportWriter, RecordsOfTestsFinishedBeforeACrashAreKept) {
  std::string dir = testing::make_temp_dir();
  pid_t pid = ::fork();
  if (pid == 0) {
    ReportWriter writer(dir, "crashy_test", run_info());
    for (int i = 1; i <= 3; ++i) {
      if (!writer.add(numbered(i))) ::_exit(2);
    }
    ::_exit(1);  // a crash: no finish(), no destructors
  }
  ASSERT_EQ(wait_exit_code(pid), 1);
  EXPECT_FALSE(sys::exists(dir + "/crashy_test.json"));

  // The path the final report would have: the journal beside it is read.
  auto report = read_report(dir + "/crashy_test.json");
  ASSERT_TRUE(report) << report.error().message();
  ASSERT_EQ(report->tests.size(), 3u);
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(report->tests[static_cast<std::size_t>(i - 1)], numbered(i));
  EXPECT_FALSE(report->run.complete);
  EXPECT_EQ(report->run.binary, "crashy_test");

  // The directory and the journal itself read the same.
  auto by_dir = read_report(dir);
  ASSERT_TRUE(by_dir) << by_dir.error().message();
  EXPECT_EQ(*by_dir, *report);
  auto by_journal = read_report(dir + "/crashy_test.partial.jsonl");
  ASSERT_TRUE(by_journal) << by_journal.error().message();
  EXPECT_EQ(*by_journal, *report);
}

TEST(ReportWriter, LineCutOffByTheCrashIsIgnored) {
  std::string dir = testing::make_temp_dir();
  {
    ReportWriter writer(dir, "t", run_info());
    ASSERT_TRUE(writer.add(numbered(1)));
    ASSERT_TRUE(writer.add(numbered(2)));
  }  // destroyed without finish(), as if the process died
  std::string journal = dir + "/t.partial.jsonl";
  auto text = sys::read_file(journal);
  ASSERT_TRUE(text);
  ASSERT_TRUE(sys::write_file_atomic(journal, *text + "{\"name\": \"Crash.T3\", \"met"));
  auto report = read_report(journal);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->tests.size(), 2u);

  // A damaged line in the middle is an error naming the line.
  ASSERT_TRUE(sys::write_file_atomic(journal, *text + "garbage\n" + *text));
  auto damaged = read_report(journal);
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.error().where.rfind(journal + ":4", 0), 0u) << damaged.error().message();
}

TEST(ReportWriter, FinishWritesAllFilesAndRemovesTheJournal) {
  std::string dir = testing::make_temp_dir();
  ReportWriter writer(dir, "t", run_info());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(writer.add(numbered(i)));
  EXPECT_TRUE(sys::exists(writer.journal_path()));
  ASSERT_TRUE(writer.finish());
  EXPECT_FALSE(sys::exists(writer.journal_path()));
  auto report = read_report(dir + "/t.json");
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_TRUE(report->run.complete);
  EXPECT_EQ(report->tests.size(), 1000u);
  EXPECT_EQ(*report, writer.report());
  // Indented from the journal's lines, byte for byte the report of the records.
  EXPECT_EQ(*sys::read_file(dir + "/t.json"), to_json(writer.report()));
  EXPECT_TRUE(sys::exists(dir + "/t.junit.xml"));
  EXPECT_TRUE(sys::exists(dir + "/t.md"));

  auto twice = writer.finish();
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, ErrorCode::conflict);
  auto late = writer.add(numbered(1));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::conflict);
}

// The formats' table decides what a run writes: each every-run format's file,
// rendered by its own writer, and nothing for the on-demand ones.
TEST(ReportFormats, ARunWritesEveryRunFormatByItsWriterAndNoOther) {
  std::vector<std::string> names;
  for (const ReportFormat& format : report_formats()) names.emplace_back(format.name);
  EXPECT_EQ(names, (std::vector<std::string>{"json", "junit", "markdown", "html"}));
  ASSERT_NE(find_report_format("junit"), nullptr);
  EXPECT_EQ(find_report_format("junit")->suffix, ".junit.xml");
  EXPECT_EQ(find_report_format("pdf"), nullptr);

  const std::string dir = testing::make_temp_dir();
  Report report{run_info(), {numbered(1), numbered(2)}};
  ASSERT_TRUE(write_report_files(dir, report, "r"));
  for (const ReportFormat& format : report_formats()) {
    const std::string path = dir + "/r" + std::string(format.suffix);
    if (!format.every_run) {
      EXPECT_FALSE(sys::exists(path)) << path;
      continue;
    }
    auto written = sys::read_file(path);
    ASSERT_TRUE(written) << path;
    EXPECT_EQ(*written, format.render(report)) << path;
  }
}

// Records completed after they were journaled (call sites added when a
// baseline is recorded) reach the final report as completed.
TEST(ReportWriter, RecordsChangedAfterAddAreWrittenAsChanged) {
  std::string dir = testing::make_temp_dir();
  ReportWriter writer(dir, "t", run_info());
  ASSERT_TRUE(writer.add(numbered(1)));
  writer.records().front().message = "completed later";
  ASSERT_TRUE(writer.add(numbered(2)));
  ASSERT_TRUE(writer.finish());
  auto report = read_report(dir + "/t.json");
  ASSERT_TRUE(report) << report.error().message();
  ASSERT_EQ(report->tests.size(), 2u);
  EXPECT_EQ(report->tests.front().message, "completed later");
  EXPECT_EQ(*sys::read_file(dir + "/t.json"), to_json(writer.report()));

  // Also when the records were asked for before any was added.
  std::string early_dir = testing::make_temp_dir();
  ReportWriter early(early_dir, "t", run_info());
  std::vector<TestRecord>& records = early.records();
  ASSERT_TRUE(early.add(numbered(1)));
  records.front().message = "completed later";
  ASSERT_TRUE(early.finish());
  auto early_report = read_report(early_dir + "/t.json");
  ASSERT_TRUE(early_report) << early_report.error().message();
  EXPECT_EQ(early_report->tests.front().message, "completed later");
}

TEST(ReportWriter, AStaleReportOfAnEarlierRunIsRemovedAtStart) {
  std::string dir = testing::make_temp_dir();
  {
    ReportWriter first(dir, "t", run_info());
    ASSERT_TRUE(first.add(numbered(1)));
    ASSERT_TRUE(first.finish());
  }
  ASSERT_TRUE(sys::exists(dir + "/t.json"));
  pid_t pid = ::fork();
  if (pid == 0) {
    ReportWriter second(dir, "t", run_info());
    ::_exit(0);  // crashed before its first test finished
  }
  ASSERT_EQ(wait_exit_code(pid), 0);
  EXPECT_FALSE(sys::exists(dir + "/t.json")) << "the earlier run's report must not pass for this run's";
  auto report = read_report(dir + "/t.json");
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_TRUE(report->tests.empty());
  EXPECT_FALSE(report->run.complete);
}

TEST(ReportWriter, UnwritableDirectoryIsReportedByAddAndFinish) {
  std::string root = testing::make_temp_dir();
  ASSERT_TRUE(sys::write_file_atomic(root + "/file", "x"));
  ReportWriter writer(root + "/file/sub", "t", run_info());
  auto added = writer.add(numbered(1));
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ErrorCode::io_error);
  EXPECT_EQ(added.error().where, root + "/file/sub");
  EXPECT_FALSE(writer.finish());
  EXPECT_EQ(writer.report().tests.size(), 1u) << "records are kept in memory even when the disk fails";
}

}  // namespace
}  // namespace heapgate
