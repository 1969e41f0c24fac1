// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The history rows of the bad-input catalogue (docs/bad-inputs.md, "The
// history store", H-NN): each runs the real `heapgate` against a real
// SQLite file or PostgreSQL server and checks the exit code, the message,
// and that the store is unchanged. BAD_INPUTS_CAPTURE=1 prints what heapgate
// said, to paste into a new row.
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <gtest/gtest.h>

#include "history_fixtures.h"
#include "postgres_server.h"
#include "test_support.h"

namespace heapgate {
namespace {

namespace fs = std::filesystem;
using testing::heapgate;
using testing::history_report;

// Exit 2 and `line` as one line of stderr (a prefix when it ends in "...").
void expect_refused(const sys::ProcessResult& r, const std::string& line) { testing::expect_refused(r, 2, line); }

std::string sqlite_count(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::string value = "ERROR";
  if (sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    value = std::to_string(sqlite3_column_int64(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

void sqlite_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

class HistoryBadInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir();
    report_ = testing::write_report_file(dir_ + "/report/t.json", history_report("t", 3, 10));
    other_ = testing::write_report_file(dir_ + "/other/t.json", history_report("t", 3, 20));
  }
  sys::ProcessResult add(const std::string& history, const std::string& report, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"history", "add",      "--history", history,  "--commit",
                                     "c1",      "--branch", "main",      "--time", "2026-01-01T00:00:00Z",
                                     "--job",   "j"};
    args.insert(args.end(), more.begin(), more.end());
    args.push_back(report);
    return heapgate(args);
  }
  // A store with one run of three tests.
  std::string one_run_store() {
    const std::string db = dir_ + "/history.db";
    auto added = add(db, report_);
    EXPECT_EQ(added.exit_code, 0) << added.stderr_text;
    return db;
  }
  std::string dir_;
  std::string report_;
  std::string other_;
};

TEST_F(HistoryBadInputs, H01_NotASqliteFile) {
  const std::string notes = dir_ + "/notes.txt";
  const std::string text(4096, 'x');
  ASSERT_TRUE(sys::write_file_atomic(notes, text));
  expect_refused(add(notes, report_),
                 "heapgate: " + notes +
                     ": not a SQLite database (file is not a database); it was left as it is; fix: give --history "
                     "the path of a heapgate history file, or a new path");
  EXPECT_EQ(*sys::read_file(notes), text);
}

TEST_F(HistoryBadInputs, H02_SqliteButNotAHistory) {
  const std::string db = dir_ + "/app.db";
  sqlite_exec(db, "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada')");
  expect_refused(add(db, report_), "heapgate: " + db +
                                       ": a SQLite database, but not a heapgate history (it has no table "
                                       "schema_version); it was left as it is; fix: give --history a heapgate "
                                       "history file, or a new path");
  EXPECT_EQ(sqlite_count(db, "users"), "1");
  EXPECT_EQ(sqlite_count(db, "sqlite_master"), "1");
}

TEST_F(HistoryBadInputs, H03_SchemaNewerThanThisHeapgate) {
  const std::string db = one_run_store();
  sqlite_exec(db, "UPDATE schema_version SET version = 2");
  const std::string said = "heapgate: " + db +
                           ": the history's schema is version 2, newer than this heapgate's (1); nothing was "
                           "written; fix: use the heapgate that wrote it, or a newer one";
  expect_refused(add(db, other_), said);
  expect_refused(heapgate({"history", "show", "--history", db}), said);
  EXPECT_EQ(sqlite_count(db, "runs"), "1");
}

TEST_F(HistoryBadInputs, H04_ReadOnlyLocation) {
  const std::string mounted = dir_ + "/ro";
  fs::create_directories(mounted);
  const bool root = ::geteuid() == 0;
  // Root writes through file modes: a read-only file system is what stops it.
  if (root) {
    ASSERT_EQ(::mount("tmpfs", mounted.c_str(), "tmpfs", 0, "size=4m"), 0) << std::strerror(errno);
  }
  const std::string db = mounted + "/history.db";
  ASSERT_EQ(add(db, report_).exit_code, 0);
  if (root) {
    ASSERT_EQ(::mount("tmpfs", mounted.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=4m"), 0) << std::strerror(errno);
  } else {
    fs::permissions(db, fs::perms::owner_read);
    fs::permissions(mounted, fs::perms::owner_read | fs::perms::owner_exec);
  }
  expect_refused(add(db, other_), "heapgate: " + db +
                                      ": opening the store for writing: cannot write here (unable to open database "
                                      "file); nothing was written; fix: give --history a path in a directory you can "
                                      "write to");
  // Reading still works: a read-only store is read as immutable.
  const sys::ProcessResult shown = heapgate({"history", "show", "--history", db});
  EXPECT_EQ(shown.exit_code, 0) << shown.stderr_text;
  EXPECT_NE(shown.stdout_text.find("Suite0.Test2 (t), allocations"), std::string::npos) << shown.stdout_text;
  if (root) {
    // A WAL database is read with its -shm file, which a read-only file system cannot hold.
    ASSERT_EQ(::mount("tmpfs", mounted.c_str(), "tmpfs", MS_REMOUNT, "size=4m"), 0) << std::strerror(errno);
  }
  EXPECT_EQ(sqlite_count(db, "runs"), "1");
  if (root) {
    EXPECT_EQ(::umount(mounted.c_str()), 0);
  } else {
    fs::permissions(mounted, fs::perms::owner_all);
  }
}

TEST_F(HistoryBadInputs, H05_LockedPastTheTimeout) {
  const std::string db = one_run_store();
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  const sys::ProcessResult r = add(db, other_, {"--lock-timeout", "0.5"});
  const auto waited = std::chrono::steady_clock::now() - start;
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  expect_refused(r, "heapgate: " + db +
                        ": opening the store for writing"
                        ": another process held the store's lock for more than 0.50 s (database is locked); "
                        "nothing was written; fix: run again when the other writer is done, or wait longer with "
                        "--lock-timeout SECONDS");
  EXPECT_GE(waited, std::chrono::milliseconds(450));
  EXPECT_EQ(sqlite_count(db, "runs"), "1");
}

TEST_F(HistoryBadInputs, H06_PostgresqlUnreachable) {
  // A port nothing listens on: bound, then closed.
  const int port = [] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
    ::close(fd);
    return static_cast<int>(ntohs(address.sin_port));
  }();
  const std::string url = "postgresql://ci:secret@127.0.0.1:" + std::to_string(port) + "/history";
  const sys::ProcessResult r = add(url, report_);
  expect_refused(r, "heapgate: postgresql://ci:***@127.0.0.1:" + std::to_string(port) +
                        "/history: cannot connect to PostgreSQL: ...");
  EXPECT_NE(r.stderr_text.find("fix: start the server, or check the host and port in the URL"), std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("secret"), std::string::npos) << r.stderr_text;
}

TEST_F(HistoryBadInputs, H07_PostgresqlRefusesThePassword) {
  testing::PostgresServer* server = testing::PostgresServer::shared();
  ASSERT_NE(server, nullptr);
  const std::string url = server->url("postgres", "wrong-password");
  const sys::ProcessResult r = add(url, report_);
  expect_refused(r, "heapgate: postgresql://heapgate:***@127.0.0.1:" + std::to_string(server->port()) +
                        "/postgres: cannot connect to PostgreSQL: ...");
  EXPECT_NE(r.stderr_text.find("password authentication failed for user \"heapgate\""), std::string::npos)
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("fix: check the user and password in the URL (or PGPASSWORD, ~/.pgpass)"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(testing::query_value(server->url("postgres"), "SELECT to_regclass('schema_version') IS NULL"), "t");
}

TEST_F(HistoryBadInputs, H08_PostgresqlSchemaNewerThanThisHeapgate) {
  testing::PostgresServer* server = testing::PostgresServer::shared();
  ASSERT_NE(server, nullptr);
  const std::string url = server->new_database("newer");
  ASSERT_EQ(add(url, report_).exit_code, 0);
  ASSERT_EQ(testing::run_sql(url, "UPDATE schema_version SET version = 2"), "");
  expect_refused(add(url, other_), "heapgate: postgresql://heapgate:***@127.0.0.1:" + std::to_string(server->port()) +
                                       "/" + url.substr(url.rfind('/') + 1) +
                                       ": the history's schema is version 2, newer than this heapgate's (1); "
                                       "nothing was written; fix: use the heapgate that wrote it, or a newer one");
  EXPECT_EQ(testing::query_value(url, "SELECT count(*) FROM runs"), "1");
}

TEST_F(HistoryBadInputs, H09_NotAHeapgateReport) {
  const std::string db = one_run_store();
  const std::string notes = dir_ + "/package.json";
  ASSERT_TRUE(sys::write_file_atomic(notes, "{\"name\": \"left-pad\", \"version\": \"1.3.0\"}\n"));
  const std::string said = "heapgate: " + notes +
                           ": /schema: not a heapgate report (required key \"schema\" is missing); nothing was added; "
                           "fix: give the reports heapgate run writes (its --report directory) or a test binary's "
                           "--heapgate_report files";
  expect_refused(add(db, notes), said);
  EXPECT_EQ(sqlite_count(db, "runs"), "1");
  // Nothing is added when one of several reports is bad, the good one first included.
  expect_refused(heapgate({"history", "add", "--history", db, "--commit", "c2", other_, notes}), said);
  EXPECT_EQ(sqlite_count(db, "runs"), "1");
}

TEST_F(HistoryBadInputs, H10_SameReportAddedTwice) {
  const std::string db = one_run_store();
  expect_refused(add(db, report_), "heapgate: " + db + ": " + report_ +
                                       ": already stored as run 1 (the same content); nothing added; fix: nothing "
                                       "to do; pass --skip-known to count a known report as success");
  EXPECT_EQ(sqlite_count(db, "runs"), "1");
  const sys::ProcessResult skipped = add(db, report_, {"--skip-known"});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.stderr_text;
  EXPECT_EQ(sqlite_count(db, "runs"), "1");
  EXPECT_EQ(sqlite_count(db, "results"), "3");
}

TEST_F(HistoryBadInputs, H11_NoHistoryToShow) {
  const std::string db = dir_ + "/missing.db";
  expect_refused(heapgate({"history", "show", "--history", db}),
                 "heapgate: " + db + ": no history here yet; fix: add runs first: heapgate history add --history " +
                     db + " REPORT.json");
  EXPECT_FALSE(sys::exists(db));
}

TEST_F(HistoryBadInputs, H12_UnknownMetric) {
  const std::string db = one_run_store();
  expect_refused(heapgate({"history", "show", "--history", db, "--metric", "allocs"}), "heapgate: --metric: ...");
}

TEST_F(HistoryBadInputs, H13_ImportGitOutsideACheckout) {
  sys::ProcessOptions options;
  options.unset_env = testing::kHistoryCleanEnvironment;
  options.extra_env = {"GIT_CEILING_DIRECTORIES=" + fs::path(dir_).parent_path().string()};
  auto ran = sys::run_process(
      {"sh", "-c",
       "cd '" + dir_ + "' && exec " + HEAPGATE_CLI_PATH + " history import-git baselines --history " + dir_ + "/h.db"},
      options);
  ASSERT_TRUE(ran);
  expect_refused(*ran, "heapgate: baselines: git log failed: fatal: not a git repository ...");
  EXPECT_FALSE(sys::exists(dir_ + "/h.db"));
}

TEST_F(HistoryBadInputs, H14_PostgresqlLockedPastTheTimeout) {
  testing::PostgresServer* server = testing::PostgresServer::shared();
  ASSERT_NE(server, nullptr);
  const std::string url = server->new_database("locked");
  ASSERT_EQ(add(url, report_).exit_code, 0);
  // Another writer holds the runs table for the whole of heapgate's wait.
  std::unique_ptr<PGconn, decltype(&PQfinish)> holder(PQconnectdb(url.c_str()), &PQfinish);
  ASSERT_EQ(PQstatus(holder.get()), CONNECTION_OK) << PQerrorMessage(holder.get());
  PQclear(PQexec(holder.get(), "BEGIN"));
  PQclear(PQexec(holder.get(), "LOCK TABLE runs IN ACCESS EXCLUSIVE MODE"));
  const sys::ProcessResult r = add(url, other_, {"--lock-timeout", "0.5"});
  PQclear(PQexec(holder.get(), "ROLLBACK"));
  expect_refused(r, "heapgate: postgresql://heapgate:***@127.0.0.1:" + std::to_string(server->port()) + "/" +
                        url.substr(url.rfind('/') + 1) + ": ...");
  EXPECT_NE(r.stderr_text.find("another writer held a lock for longer than the lock timeout (ERROR:  canceling "
                               "statement due to lock timeout); nothing was written; fix: run again when the other "
                               "writer is done, or wait longer with --lock-timeout SECONDS"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(testing::query_value(url, "SELECT count(*) FROM runs"), "1");
  EXPECT_EQ(testing::query_value(url, "SELECT count(*) FROM results"), "3");
}

}  // namespace
}  // namespace heapgate
