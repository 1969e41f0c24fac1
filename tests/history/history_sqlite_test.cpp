// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The SQLite history store, a real file: what is stored comes back, a run is
// stored once, 16 processes adding at once lose nothing, the context comes
// from CI variables, and import-git stores each committed baseline version
// at its commit.
#include <sqlite3.h>

#include <filesystem>
#include <future>
#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "heapgate/history.h"
#include "heapgate/run_context.h"
#include "heapgate/trend.h"
#include "history_fixtures.h"
#include "test_support.h"

namespace heapgate {
namespace {

using testing::heapgate;
using testing::history_report;

Result<std::unique_ptr<HistoryStore>> open_for_writing(const std::string& path) {
  HistoryOpenOptions options;
  options.for_writing = true;
  return open_history(path, options);
}

std::string sqlite_value(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::string value = "ERROR";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    value = text != nullptr ? reinterpret_cast<const char*>(text) : "NULL";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

TEST(HistorySqlite, StoresEveryTestsNumbersWithItsContext) {
  const std::string path = testing::make_temp_dir() + "/history.db";
  auto store = open_for_writing(path);
  ASSERT_TRUE(store) << store.error().message();
  Report report = history_report("cache_test", 3, 300, 10);
  report.tests[1].verdict = Verdict::regressed;
  report.tests[2].baseline_noise.reset();
  const RunContext context{"3f2a9c1e", "main", "2026-11-02T10:00:00Z", "1234/test"};
  auto added = (*store)->add(stored_run_from_report(report, context, "r/cache_test.json"));
  ASSERT_TRUE(added) << added.error().message();
  EXPECT_TRUE(added->stored);
  EXPECT_EQ(added->results, 3u);

  auto runs = (*store)->runs({});
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].context.commit, "3f2a9c1e");
  EXPECT_EQ((*runs)[0].context.branch, "main");
  EXPECT_EQ((*runs)[0].context.time, "2026-11-02T10:00:00Z");
  EXPECT_EQ((*runs)[0].context.job, "1234/test");
  EXPECT_EQ((*runs)[0].binary, "cache_test");
  EXPECT_EQ((*runs)[0].source, "r/cache_test.json");
  std::map<std::string, PointRow> points;
  ASSERT_TRUE((*store)->for_each_point({}, [&](const PointRow& p) { points[p.test] = p; }));
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points["Suite0.Test1"].metrics, report.tests[1].metrics);
  EXPECT_EQ(points["Suite0.Test1"].verdict, "regressed");
  EXPECT_EQ(points["Suite0.Test1"].mode, Mode::counters);
  ASSERT_TRUE(points["Suite0.Test0"].band);
  EXPECT_EQ(*points["Suite0.Test0"].band, *report.tests[0].baseline_noise);
  EXPECT_FALSE(points["Suite0.Test2"].band);
  EXPECT_EQ(sqlite_value(path, "SELECT fingerprint FROM runs"), "{\"compiler\":\"gcc 12.2\"}");
  EXPECT_EQ(sqlite_value(path, "SELECT version FROM schema_version"), std::to_string(kHistorySchemaVersion));
  EXPECT_EQ(sqlite_value(path, "PRAGMA journal_mode"), "wal");
}

TEST(HistorySqlite, SameReportIsStoredOnceWhateverItsPath) {
  const std::string path = testing::make_temp_dir() + "/history.db";
  auto store = open_for_writing(path);
  ASSERT_TRUE(store);
  const Report report = history_report("t", 5, 10);
  auto first = (*store)->add(stored_run_from_report(report, {"c1", "main", "2026-01-01T00:00:00Z", "1"}, "a.json"));
  auto second = (*store)->add(stored_run_from_report(report, {"c1", "main", "2026-01-01T00:00:00Z", "1"}, "b.json"));
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(first->stored);
  EXPECT_FALSE(second->stored);
  EXPECT_EQ(second->run_id, first->run_id);
  EXPECT_EQ(sqlite_value(path, "SELECT count(*) FROM runs"), "1");
  EXPECT_EQ(sqlite_value(path, "SELECT count(*) FROM results"), "5");
}

TEST(HistorySqlite, QueryFiltersByBranchTimesAndTestGlob) {
  const std::string path = testing::make_temp_dir() + "/history.db";
  auto store = open_for_writing(path);
  ASSERT_TRUE(store);
  ASSERT_TRUE((*store)->add(
      stored_run_from_report(history_report("t", 60, 10), {"c1", "main", "2026-01-01T00:00:00Z", "1"}, "1.json")));
  ASSERT_TRUE((*store)->add(
      stored_run_from_report(history_report("t", 60, 20), {"c2", "topic", "2026-02-01T00:00:00Z", "2"}, "2.json")));
  HistoryQuery query;
  query.branch = "main";
  EXPECT_EQ((*store)->runs(query)->size(), 1u);
  query = {};
  query.since = "2026-02";
  ASSERT_EQ((*store)->runs(query)->size(), 1u);
  EXPECT_EQ((*store)->runs(query)->front().context.commit, "c2");
  query = {};
  query.until = "2026-01";
  ASSERT_EQ((*store)->runs(query)->size(), 1u);
  EXPECT_EQ((*store)->runs(query)->front().context.commit, "c1");
  query.until = "2026-02-01";
  EXPECT_EQ((*store)->runs(query)->size(), 2u);
  query = {};
  query.test_glob = "Suite1.Test5?";
  std::size_t points = 0;
  ASSERT_TRUE((*store)->for_each_point(query, [&](const PointRow& p) {
    EXPECT_TRUE(p.test.rfind("Suite1.Test5", 0) == 0) << p.test;
    ++points;
  }));
  EXPECT_EQ(points, 2u * 10u);  // Test50..Test59, in both runs
}

TEST(HistorySqlite, TrendHasOnePointPerCommitItsLastRunInCommitOrder) {
  const std::string path = testing::make_temp_dir() + "/history.db";
  auto store = open_for_writing(path);
  ASSERT_TRUE(store);
  // Added out of order, and c2 twice (a second job): the trend follows the
  // commits' times and keeps c2's later run.
  const std::vector<std::tuple<std::string, std::string, std::uint64_t>> adds = {{"c3", "2026-01-03T00:00:00Z", 30},
                                                                                 {"c1", "2026-01-01T00:00:00Z", 10},
                                                                                 {"c2", "2026-01-02T00:00:00Z", 20},
                                                                                 {"c2", "2026-01-02T00:00:00Z", 25}};
  for (const auto& [commit, time, value] : adds) {
    ASSERT_TRUE((*store)->add(
        stored_run_from_report(history_report("t", 1, value), {commit, "main", time, "j"}, commit + ".json")));
  }
  auto runs = (*store)->runs({});
  ASSERT_TRUE(runs);
  std::vector<std::string> seen;
  ASSERT_TRUE(for_each_trend(**store, {}, *runs, [&](const TestTrend& trend) {
    for (const TrendPoint& p : trend.points) {
      seen.push_back((*runs)[p.run].context.commit + "=" + std::to_string(p.metrics.allocations));
    }
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"c1=10", "c2=25", "c3=30"}));
}

TEST(HistorySqlite, TwentyProcessesAddingAtOnceLoseNothingAndStoreDuplicatesOnce) {
  const std::string dir = testing::make_temp_dir();
  const std::string db = dir + "/history.db";
  std::vector<std::future<sys::ProcessResult>> running;
  for (int i = 0; i < 16; ++i) {
    const std::string report =
        testing::write_report_file(dir + "/r" + std::to_string(i) + "/t" + std::to_string(i % 4) + ".json",
                                   history_report("t" + std::to_string(i % 4), 300, 100 + i));
    // Every fourth report twice at once (a retried CI job): stored once.
    for (int copy = 0; copy < (i % 4 == 0 ? 2 : 1); ++copy) {
      running.push_back(std::async(std::launch::async, [=] {
        return heapgate({"history", "add", "--history", db, "--commit", "c" + std::to_string(i), "--branch", "main",
                         "--time", "2026-03-01T00:00:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "Z",
                         "--job", "job" + std::to_string(i), "--skip-known", report});
      }));
    }
  }
  for (auto& r : running) {
    const sys::ProcessResult result = r.get();
    EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  }
  EXPECT_EQ(sqlite_value(db, "SELECT count(*) FROM runs"), "16");
  EXPECT_EQ(sqlite_value(db, "SELECT count(*) FROM results"), std::to_string(16 * 300));
  EXPECT_EQ(sqlite_value(db, "SELECT count(*) FROM tests"), std::to_string(4 * 300));
  EXPECT_EQ(sqlite_value(db, "SELECT count(DISTINCT run_id) FROM results"), "16");
}

TEST(HistorySqlite, AddThenShowThroughTheCommandLine) {
  const std::string dir = testing::make_temp_dir();
  const std::string db = dir + "/history.db";
  for (int c = 0; c < 8; ++c) {
    Report report = history_report("cache_test", 2, c < 4 ? 301 : 308);
    const std::string path = testing::write_report_file(dir + "/r" + std::to_string(c) + ".json", report);
    auto added = heapgate({"history", "add", "--history", db, "--commit", "abc000" + std::to_string(c), "--branch",
                           "main", "--time", "2026-04-0" + std::to_string(c + 1) + "T00:00:00Z", "--job", "j", path});
    ASSERT_EQ(added.exit_code, 0) << added.stderr_text;
    EXPECT_NE(added.stderr_text.find("heapgate history: stored " + path + " (cache_test, 2 tests) as run"),
              std::string::npos)
        << added.stderr_text;
  }
  auto shown = heapgate({"history", "show", "--history", db, "--test", "*.Test0", "--metric", "allocations"});
  ASSERT_EQ(shown.exit_code, 0) << shown.stderr_text;
  EXPECT_NE(shown.stdout_text.find("Suite0.Test0 (cache_test), allocations"), std::string::npos) << shown.stdout_text;
  EXPECT_EQ(shown.stdout_text.find("Suite0.Test1"), std::string::npos) << shown.stdout_text;
  EXPECT_NE(shown.stdout_text.find("abc0003     2026-04-04T00:00:00Z  main          j                        301"),
            std::string::npos)
      << shown.stdout_text;
  EXPECT_NE(shown.stdout_text.find("`Suite0.Test0` allocations 301 \xE2\x86\x92 308 (+7, +2.3%) at abc0004 "
                                   "(2026-04-05T00:00:00Z), stable for 3 commits since"),
            std::string::npos)
      << shown.stdout_text;
}

TEST(HistorySqlite, ContextComesFromCiVariablesThenFlags) {
  std::map<std::string, std::string> env = {{"GITHUB_SHA", "abc"},
                                            {"GITHUB_REF_NAME", "main"},
                                            {"GITHUB_RUN_ID", "77"},
                                            {"GITHUB_JOB", "test"},
                                            {"CI_COMMIT_SHA", "gitlab"}};
  auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    auto found = env.find(name);
    return found == env.end() ? std::nullopt : std::optional<std::string>(found->second);
  };
  RunContext ci = ci_context(lookup);
  EXPECT_EQ(ci.commit, "abc");
  EXPECT_EQ(ci.branch, "main");
  EXPECT_EQ(ci.job, "77/test");
  env = {{"CI_COMMIT_SHA", "def"}, {"CI_COMMIT_REF_NAME", "topic"}, {"CI_JOB_ID", "9"}};
  ci = ci_context(lookup);
  EXPECT_EQ(ci.commit, "def");
  EXPECT_EQ(ci.branch, "topic");
  EXPECT_EQ(ci.job, "9");
  // Flags win; a commit git does not know keeps the given time.
  const RunContext given{"0123456789abcdef0123456789abcdef01234567", "flagged", "2026-05-05T05:05:05Z", "flag-job"};
  const RunContext context = detect_run_context(given, lookup);
  EXPECT_EQ(context.commit, given.commit);
  EXPECT_EQ(context.branch, "flagged");
  EXPECT_EQ(context.time, "2026-05-05T05:05:05Z");
  EXPECT_EQ(context.job, "flag-job");
}

// A shell command in `dir`: import-git runs git where it is started.
sys::ProcessResult in_dir(const std::string& dir, const std::string& command) {
  sys::ProcessOptions options;
  options.unset_env = testing::kHistoryCleanEnvironment;
  options.extra_env = {"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
                       "GIT_COMMITTER_EMAIL=t@example.com", "HOME=" + dir};
  auto ran = sys::run_process({"sh", "-c", "cd '" + dir + "' && " + command}, options);
  EXPECT_TRUE(ran);
  return ran ? *ran : sys::ProcessResult{};
}

TEST(HistorySqlite, ImportGitStoresEachCommittedBaselineVersionAtItsCommit) {
  const std::string repo = testing::make_temp_dir() + "/repo";
  std::filesystem::create_directories(repo + "/baselines");
  ASSERT_EQ(in_dir(repo, "git init -q -b main .").exit_code, 0);
  std::vector<std::string> commits;
  for (int version = 0; version < 3; ++version) {
    Baseline baseline;
    baseline.binary = "cache_test";
    BaselineEntry entry;
    entry.metrics = Metrics{static_cast<std::uint64_t>(301 + 7 * version), 1000, 0, 0, 500};
    baseline.tests["Cache.Render"] = entry;
    ASSERT_TRUE(sys::write_file_atomic(repo + "/baselines/cache_test.json", to_json(baseline)));
    if (version == 1) {
      ASSERT_TRUE(sys::write_file_atomic(repo + "/baselines/notes.json", "{\"not\": \"a baseline\"}"));
    }
    const std::string date = "2026-06-0" + std::to_string(version + 1) + "T12:00:00Z";
    auto committed = in_dir(repo, "git add baselines && GIT_AUTHOR_DATE=" + date + " GIT_COMMITTER_DATE=" + date +
                                      " git commit -q -m v" + std::to_string(version) + " && git rev-parse HEAD");
    ASSERT_EQ(committed.exit_code, 0) << committed.stderr_text;
    commits.push_back(committed.stdout_text.substr(0, 40));
  }
  const std::string db = repo + "/../history.db";
  auto imported = in_dir(repo, std::string(HEAPGATE_CLI_PATH) + " history import-git baselines --history " + db);
  ASSERT_EQ(imported.exit_code, 0) << imported.stderr_text;
  EXPECT_NE(imported.stderr_text.find("3 baseline versions from 3 commits; 3 stored, 0 already there, 1 skipped"),
            std::string::npos)
      << imported.stderr_text;
  EXPECT_NE(imported.stderr_text.find("skipped git:" + commits[1].substr(0, 10) + ":baselines/notes.json"),
            std::string::npos)
      << imported.stderr_text;
  HistoryOpenOptions read;
  auto store = open_history(db, read);
  ASSERT_TRUE(store) << store.error().message();
  EXPECT_EQ(testing::stored_points(**store),
            (std::vector<std::string>{"cache_test/Cache.Render@" + commits[0] + "=301",
                                      "cache_test/Cache.Render@" + commits[1] + "=308",
                                      "cache_test/Cache.Render@" + commits[2] + "=315"}));
  auto runs = (*store)->runs({});
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].context.time, "2026-06-01T12:00:00Z");
  EXPECT_EQ((*runs)[0].context.branch, "main");
  EXPECT_EQ((*runs)[0].context.job, "import-git");
  // Again: nothing new.
  auto again = in_dir(repo, std::string(HEAPGATE_CLI_PATH) + " history import-git baselines --history " + db);
  ASSERT_EQ(again.exit_code, 0) << again.stderr_text;
  EXPECT_NE(again.stderr_text.find("0 stored, 3 already there"), std::string::npos) << again.stderr_text;
}

TEST(HistorySqlite, RunWithHistoryAddsTheMergedReportWithItsCiContext) {
  const std::string dir = testing::make_temp_dir();
  const std::string db = dir + "/history.db";
  sys::ProcessOptions options;
  options.unset_env = testing::suite_unset_env();
  options.unset_env.insert(options.unset_env.end(), testing::kHistoryCleanEnvironment.begin(),
                           testing::kHistoryCleanEnvironment.end());
  options.extra_env = {"GITHUB_SHA=5eed5eed", "GITHUB_REF_NAME=main", "GITHUB_RUN_ID=99", "GITHUB_JOB=gate"};
  options.timeout = std::chrono::minutes(2);
  auto ran = sys::run_process(
      {HEAPGATE_CLI_PATH, "run", "--history", db, "--baselines", dir + "/baselines", "--report", dir + "/report",
       "--progress", "none", "-j", "2", "--", HEAPGATE_SAMPLE_SUITE, "--gtest_filter=Sample.Clean:Sample.Counted"},
      options);
  ASSERT_TRUE(ran) << ran.error().message();
  ASSERT_EQ(ran->exit_code, 0) << ran->stdout_text << ran->stderr_text;
  EXPECT_NE(ran->stderr_text.find("heapgate history: stored " + dir +
                                  "/report/sample_suite.json (sample_suite, 2 "
                                  "tests) as run 1 at 5eed5eed on main in " +
                                  db),
            std::string::npos)
      << ran->stderr_text;
  auto store = open_history(db, HistoryOpenOptions{});
  ASSERT_TRUE(store) << store.error().message();
  auto runs = (*store)->runs({});
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].context.commit, "5eed5eed");
  EXPECT_EQ((*runs)[0].context.branch, "main");
  EXPECT_EQ((*runs)[0].context.job, "99/gate");
  std::map<std::string, PointRow> points;
  ASSERT_TRUE((*store)->for_each_point({}, [&](const PointRow& p) { points[p.test] = p; }));
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points["Sample.Clean"].verdict, "new");
  EXPECT_GE(points["Sample.Counted"].metrics.allocations, 7u);
}

}  // namespace
}  // namespace heapgate
