// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The PostgreSQL history store on a real server (one per run of this
// binary, postgres_server.cpp): what is stored comes back, a run is stored
// once, 16 processes adding at once lose nothing, and `history show` reads
// it as it reads a SQLite file.
#include <future>
#include <map>

#include <gtest/gtest.h>

#include "heapgate/history.h"
#include "history_fixtures.h"
#include "postgres_server.h"
#include "test_support.h"

namespace heapgate {
namespace {

using testing::heapgate;
using testing::history_report;
using testing::PostgresServer;
using testing::query_value;

class HistoryPostgres : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = PostgresServer::shared();
    ASSERT_NE(server_, nullptr);
    url_ = server_->new_database("store");
  }
  PostgresServer* server_ = nullptr;
  std::string url_;
};

TEST_F(HistoryPostgres, StoresEveryTestsNumbersWithItsContext) {
  HistoryOpenOptions writing;
  writing.for_writing = true;
  auto store = open_history(url_, writing);
  ASSERT_TRUE(store) << store.error().message();
  EXPECT_EQ((*store)->location().find(testing::kPostgresPassword), std::string::npos) << (*store)->location();
  Report report = history_report("cache_test", 3, 300, 10);
  report.tests[1].verdict = Verdict::regressed;
  report.tests[2].baseline_noise.reset();
  report.tests[2].name = "Odd\tname\\with \"quotes\"";
  auto added = (*store)->add(
      stored_run_from_report(report, {"3f2a9c1e", "main", "2026-11-02T10:00:00Z", "1234/test"}, "r/cache_test.json"));
  ASSERT_TRUE(added) << added.error().message();
  EXPECT_TRUE(added->stored);
  EXPECT_EQ(added->results, 3u);
  auto again = (*store)->add(
      stored_run_from_report(report, {"3f2a9c1e", "main", "2026-11-02T10:00:00Z", "1234/test"}, "other.json"));
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_FALSE(again->stored);
  EXPECT_EQ(again->run_id, added->run_id);

  auto runs = (*store)->runs({});
  ASSERT_TRUE(runs) << runs.error().message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].context.commit, "3f2a9c1e");
  EXPECT_EQ((*runs)[0].context.job, "1234/test");
  std::map<std::string, PointRow> points;
  ASSERT_TRUE((*store)->for_each_point({}, [&](const PointRow& p) { points[p.test] = p; }));
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points["Suite0.Test1"].metrics, report.tests[1].metrics);
  EXPECT_EQ(points["Suite0.Test1"].verdict, "regressed");
  ASSERT_TRUE(points["Suite0.Test0"].band);
  EXPECT_EQ(*points["Suite0.Test0"].band, *report.tests[0].baseline_noise);
  ASSERT_EQ(points.count(report.tests[2].name), 1u);
  EXPECT_FALSE(points[report.tests[2].name].band);
  EXPECT_EQ(query_value(url_, "SELECT version FROM schema_version"), std::to_string(kHistorySchemaVersion));
  EXPECT_EQ(query_value(url_, "SELECT count(*) FROM runs"), "1");
}

TEST_F(HistoryPostgres, TwentyProcessesAddingAtOnceLoseNothingAndStoreDuplicatesOnce) {
  const std::string dir = testing::make_temp_dir();
  std::vector<std::future<sys::ProcessResult>> running;
  for (int i = 0; i < 16; ++i) {
    // Four binaries: four writers at a time add the same tests' rows.
    const std::string report = testing::write_report_file(dir + "/r" + std::to_string(i) + "/t.json",
                                                          history_report("t" + std::to_string(i % 4), 300, 100 + i));
    // Every fourth report twice at once (a retried CI job): stored once.
    for (int copy = 0; copy < (i % 4 == 0 ? 2 : 1); ++copy) {
      running.push_back(std::async(std::launch::async, [=, url = url_] {
        return heapgate({"history", "add", "--history", url, "--commit", "c" + std::to_string(i), "--branch", "main",
                         "--time", "2026-03-01T00:00:00Z", "--job", "job" + std::to_string(i), "--skip-known", report});
      }));
    }
  }
  for (auto& r : running) {
    const sys::ProcessResult result = r.get();
    EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  }
  EXPECT_EQ(query_value(url_, "SELECT count(*) FROM runs"), "16");
  EXPECT_EQ(query_value(url_, "SELECT count(*) FROM results"), std::to_string(16 * 300));
  EXPECT_EQ(query_value(url_, "SELECT count(*) FROM tests"), std::to_string(4 * 300));
  EXPECT_EQ(query_value(url_, "SELECT count(DISTINCT run_id) FROM results"), "16");
}

TEST_F(HistoryPostgres, AddThenShowThroughTheCommandLine) {
  const std::string dir = testing::make_temp_dir();
  for (int c = 0; c < 6; ++c) {
    const std::string path =
        testing::write_report_file(dir + "/r" + std::to_string(c) + ".json", history_report("t", 1, c < 2 ? 50 : 64));
    auto added = heapgate({"history", "add", "--history", url_, "--commit", "feed00" + std::to_string(c), "--time",
                           "2026-04-0" + std::to_string(c + 1) + "T00:00:00Z", "--branch", "main", "--job", "j", path});
    ASSERT_EQ(added.exit_code, 0) << added.stderr_text;
  }
  auto shown = heapgate({"history", "show", "--history", url_});
  ASSERT_EQ(shown.exit_code, 0) << shown.stderr_text;
  EXPECT_NE(shown.stdout_text.find("`Suite0.Test0` allocations 50 \xE2\x86\x92 64 (+14, +28.0%) at feed002 "
                                   "(2026-04-03T00:00:00Z), stable for 3 commits since"),
            std::string::npos)
      << shown.stdout_text;
  // A range of commits: the store filters by time at both ends.
  auto range = heapgate({"history", "show", "--history", url_, "--since", "2026-04-02", "--until", "2026-04-04"});
  ASSERT_EQ(range.exit_code, 0) << range.stderr_text;
  EXPECT_NE(range.stdout_text.find("feed001"), std::string::npos) << range.stdout_text;
  EXPECT_NE(range.stdout_text.find("feed003"), std::string::npos) << range.stdout_text;
  EXPECT_EQ(range.stdout_text.find("feed000"), std::string::npos) << range.stdout_text;
  EXPECT_EQ(range.stdout_text.find("feed004"), std::string::npos) << range.stdout_text;
  EXPECT_NE(range.stdout_text.find("change points (allocations):\n  none"), std::string::npos) << range.stdout_text;
}

}  // namespace
}  // namespace heapgate
