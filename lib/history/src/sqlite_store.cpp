// SPDX-License-Identifier: MIT
// The default store: one SQLite file, nothing to start. Many processes may
// add at once: WAL lets readers go on beside a writer, busy_timeout makes a
// writer wait for another's lock, and each run is one transaction.
#include "stores.h"

#include <sqlite3.h>

#include <cstdio>
#include <map>
#include <utility>

#include "heapgate/sys.h"
#include "sqlite_statement.h"
#include "store_schema.h"

namespace heapgate::detail {
namespace {

// Parameters 1 to 4 of query_conditions().
void bind_conditions(Statement& select, const HistoryQuery& query) {
  select.bind(1, query.branch);
  select.bind(2, query.since);
  select.bind(3, query.binary);
  select.bind(4, query.until);
}

class SqliteStore final : public HistoryStore {
 public:
  SqliteStore(std::string path, sqlite3* db, std::chrono::milliseconds lock_timeout)
      : path_(std::move(path)), db_(db), lock_timeout_(lock_timeout) {}
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  Result<void> exec(const std::string& sql, const std::string& doing) {
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return fail(error(rc, doing));
    return {};
  }

  Result<void> prepare(Statement& statement, const std::string& sql, const std::string& doing) {
    const int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), statement.out(), nullptr);
    if (rc != SQLITE_OK) return fail(error(rc, doing));
    return {};
  }

  Error error(int rc, const std::string& doing) const { return sqlite_error(path_, rc, db_, doing, lock_timeout_); }

  // The version in schema_version, or nullopt when the file has no such table.
  Result<std::optional<int>> schema_version() {
    Statement has;
    if (auto ok = prepare(has, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
                          "reading its schema");
        !ok) {
      return fail(ok.error());
    }
    if (const int rc = sqlite3_step(has.get()); rc != SQLITE_ROW) return fail(error(rc, "reading its schema"));
    if (has.integer(0) == 0) return std::optional<int>();
    Statement version;
    if (auto ok = prepare(version, "SELECT max(version) FROM schema_version", "reading its schema version"); !ok) {
      return fail(ok.error());
    }
    if (const int rc = sqlite3_step(version.get()); rc != SQLITE_ROW) {
      return fail(error(rc, "reading its schema version"));
    }
    return std::optional<int>(static_cast<int>(version.integer(0)));
  }

  // Creates the schema in a new file, or migrates an older one, under the
  // write lock, so that two first writers do not both create it.
  Result<void> prepare_schema() {
    if (auto ok = exec("BEGIN IMMEDIATE", "opening the store for writing"); !ok) return ok;
    auto done = [&](Result<void> result) {
      sqlite3_exec(db_, result ? "COMMIT" : "ROLLBACK", nullptr, nullptr, nullptr);
      return result;
    };
    auto version = schema_version();
    if (!version) return done(fail(version.error()));
    if (!*version) {
      Statement tables;
      if (auto ok = prepare(tables, "SELECT count(*) FROM sqlite_master", "reading its schema"); !ok) return done(ok);
      if (const int rc = sqlite3_step(tables.get()); rc != SQLITE_ROW)
        return done(fail(error(rc, "reading its schema")));
      if (tables.integer(0) != 0) return done(fail(not_a_history()));
      for (const std::string& statement : schema_statements(Dialect::sqlite)) {
        if (auto ok = exec(statement, "creating the history's tables"); !ok) return done(ok);
      }
      return done({});
    }
    if (auto ok = check_schema_version(path_, **version); !ok) return done(ok);
    for (int v = **version; v < kHistorySchemaVersion; ++v) {
      for (const std::string& statement : migration_statements(Dialect::sqlite, v)) {
        if (auto ok = exec(statement, "migrating the schema from version " + std::to_string(v)); !ok) return done(ok);
      }
      if (auto ok = exec("UPDATE schema_version SET version = " + std::to_string(v + 1), "migrating the schema"); !ok) {
        return done(ok);
      }
    }
    return done({});
  }

  Result<void> check_for_reading() {
    auto version = schema_version();
    if (!version) return fail(version.error());
    if (!*version) return fail(not_a_history());
    return check_schema_version(path_, **version);
  }

  Error not_a_history() const {
    return make_error(ErrorCode::parse_error, path_,
                      "a SQLite database, but not a heapgate history (it has no table schema_version); it was left "
                      "as it is",
                      "give --history a heapgate history file, or a new path");
  }

  Result<AddOutcome> add(const StoredRun& run) override {
    if (auto ok = exec("BEGIN IMMEDIATE", "adding a run"); !ok) return fail(ok.error());
    auto result = add_in_transaction(run);
    if (!result || !result->stored) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return result;
    }
    if (auto ok = exec("COMMIT", "adding a run"); !ok) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return fail(ok.error());
    }
    return result;
  }

  Result<AddOutcome> add_in_transaction(const StoredRun& run) {
    const std::string doing = "adding " + run.source;
    Statement known;
    if (auto ok = prepare(known, "SELECT id FROM runs WHERE content_hash = ?", doing); !ok) return fail(ok.error());
    known.bind(1, run.content_hash);
    int rc = sqlite3_step(known.get());
    if (rc == SQLITE_ROW) return AddOutcome{false, known.integer(0), 0};
    if (rc != SQLITE_DONE) return fail(error(rc, doing));

    Statement insert_run;
    if (auto ok =
            prepare(insert_run,
                    std::string("INSERT INTO runs (") + kRunColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", doing);
        !ok) {
      return fail(ok.error());
    }
    const std::string values[kRunColumnCount] = {run.content_hash,
                                                 run.context.commit,
                                                 run.context.branch,
                                                 run.context.time,
                                                 run.context.job,
                                                 run.binary,
                                                 std::string(to_string(run.mode)),
                                                 fingerprint_json(run.fingerprint),
                                                 run.source,
                                                 now_utc()};
    for (int i = 0; i < kRunColumnCount; ++i) insert_run.bind(i + 1, values[i]);
    if (rc = sqlite3_step(insert_run.get()); rc != SQLITE_DONE) return fail(error(rc, doing));
    const std::int64_t run_id = sqlite3_last_insert_rowid(db_);

    std::map<std::string, std::int64_t, std::less<>> test_ids;
    Statement tests;
    if (auto ok = prepare(tests, "SELECT id, name FROM tests WHERE binary_name = ?", doing); !ok)
      return fail(ok.error());
    tests.bind(1, run.binary);
    while ((rc = sqlite3_step(tests.get())) == SQLITE_ROW) test_ids.emplace(tests.text(1), tests.integer(0));
    if (rc != SQLITE_DONE) return fail(error(rc, doing));

    Statement insert_test;
    Statement insert_result;
    if (auto ok = prepare(insert_test, "INSERT INTO tests (binary_name, name) VALUES (?, ?)", doing); !ok) {
      return fail(ok.error());
    }
    std::string placeholders = "?, ?";
    for (int i = 0; i < kResultColumnCount; ++i) placeholders += ", ?";
    if (auto ok = prepare(insert_result,
                          std::string("INSERT INTO results (run_id, test_id, ") + kResultColumns + ") VALUES (" +
                              placeholders + ") ON CONFLICT DO NOTHING",
                          doing);
        !ok) {
      return fail(ok.error());
    }
    std::size_t stored = 0;
    for (const StoredResult& result : run.results) {
      auto found = test_ids.find(result.test);
      if (found == test_ids.end()) {
        sqlite3_reset(insert_test.get());
        insert_test.bind(1, run.binary);
        insert_test.bind(2, result.test);
        if (rc = sqlite3_step(insert_test.get()); rc != SQLITE_DONE) return fail(error(rc, doing));
        found = test_ids.emplace(result.test, sqlite3_last_insert_rowid(db_)).first;
      }
      sqlite3_reset(insert_result.get());
      int column = 1;
      insert_result.bind(column++, run_id);
      insert_result.bind(column++, found->second);
      insert_result.bind(column++, result.verdict);
      insert_result.bind(column++, std::string(to_string(result.mode)));
      for (MetricName metric : kMetricNames) insert_result.bind(column++, to_db(get(result.metrics, metric)));
      if (result.band) {
        insert_result.bind(column++, static_cast<std::int64_t>(result.band->runs));
        for (MetricName metric : kMetricNames) insert_result.bind(column++, to_db(get(result.band->low, metric)));
        for (MetricName metric : kMetricNames) insert_result.bind(column++, to_db(get(result.band->high, metric)));
      } else {
        while (column <= 2 + kResultColumnCount) insert_result.bind_null(column++);
      }
      if (rc = sqlite3_step(insert_result.get()); rc != SQLITE_DONE) return fail(error(rc, doing));
      stored += static_cast<std::size_t>(sqlite3_changes(db_));
    }
    return AddOutcome{true, run_id, stored};
  }

  Result<std::vector<RunRow>> runs(const HistoryQuery& query) override {
    Statement select;
    if (auto ok = prepare(select,
                          "SELECT id, commit_sha, branch, run_time, job, binary_name, source FROM runs WHERE " +
                              query_conditions(Dialect::sqlite, "runs", "runs") + " ORDER BY run_time, id",
                          "reading runs");
        !ok) {
      return fail(ok.error());
    }
    bind_conditions(select, query);
    std::vector<RunRow> rows;
    int rc;
    while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) {
      RunRow row;
      row.id = select.integer(0);
      row.context = RunContext{select.text(1), select.text(2), select.text(3), select.text(4)};
      row.binary = select.text(5);
      row.source = select.text(6);
      rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) return fail(error(rc, "reading runs"));
    return rows;
  }

  Result<void> for_each_point(const HistoryQuery& query, const std::function<void(const PointRow&)>& each) override {
    Statement select;
    if (auto ok = prepare(select,
                          "SELECT r.run_id, t.binary_name, t.name, " + result_columns_of("r") +
                              " FROM results r JOIN tests t ON t.id = r.test_id JOIN runs u ON u.id = r.run_id "
                              "WHERE " +
                              query_conditions(Dialect::sqlite, "u", "t") + " ORDER BY r.test_id",
                          "reading results");
        !ok) {
      return fail(ok.error());
    }
    bind_conditions(select, query);
    int rc;
    PointRow row;
    bool first = true;
    bool selected = true;
    while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) {
      row.run_id = select.integer(0);
      // Names repeat for every point of a test: compared, not copied, each row.
      const unsigned char* name = sqlite3_column_text(select.get(), 2);
      const std::string_view name_view(reinterpret_cast<const char*>(name),
                                       static_cast<std::size_t>(sqlite3_column_bytes(select.get(), 2)));
      if (first || name_view != row.test || select.text(1) != row.binary) {
        row.binary = select.text(1);
        row.test = std::string(name_view);
        selected = query.test_glob.empty() || glob_match(query.test_glob, row.test);
        first = false;
      }
      if (!selected) continue;
      row.verdict = select.text(3);
      row.mode = parse_mode(select.text(4)).value_or(Mode::counters);
      int column = 5;
      for (MetricName metric : kMetricNames) get(row.metrics, metric) = from_db(select.integer(column++));
      if (select.is_null(column)) {
        row.band.reset();
      } else {
        NoiseBand band;
        band.runs = static_cast<std::uint32_t>(select.integer(column++));
        for (MetricName metric : kMetricNames) get(band.low, metric) = from_db(select.integer(column++));
        for (MetricName metric : kMetricNames) get(band.high, metric) = from_db(select.integer(column++));
        row.band = band;
      }
      each(row);
    }
    if (rc != SQLITE_DONE) return fail(error(rc, "reading results"));
    return {};
  }

  const std::string& location() const override { return path_; }

 private:
  std::string path_;
  sqlite3* db_;
  std::chrono::milliseconds lock_timeout_;
};

// `path` as a read-only, immutable URI: no lock, no -shm, no -wal.
Result<std::unique_ptr<HistoryStore>> open_immutable(const std::string& path, const HistoryOpenOptions& options) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02x", static_cast<unsigned char>(c));
      uri += escaped;
    } else {
      uri += c;
    }
  }
  uri += "?immutable=1";
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  auto store = std::make_unique<SqliteStore>(path, db, options.lock_timeout);
  if (rc != SQLITE_OK) return fail(store->error(rc, "opening the store"));
  if (auto ok = store->check_for_reading(); !ok) return fail(ok.error());
  return std::unique_ptr<HistoryStore>(std::move(store));
}

}  // namespace

Result<std::unique_ptr<HistoryStore>> open_sqlite_history(const std::string& path, const HistoryOpenOptions& options) {
  if (!options.for_writing && !sys::exists(path)) {
    return fail(make_error(ErrorCode::invalid_argument, path, "no history here yet",
                           "add runs first: heapgate history add --history " + path + " REPORT.json"));
  }
  sqlite3* db = nullptr;
  const int flags = options.for_writing ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Error e = sqlite_error(path, rc, db, "opening the store", options.lock_timeout);
    sqlite3_close_v2(db);
    return fail(e);
  }
  auto store = std::make_unique<SqliteStore>(path, db, options.lock_timeout);
  sqlite3_busy_timeout(db, static_cast<int>(options.lock_timeout.count()));
  if (options.for_writing) {
    // WAL: readers never wait for a writer; NORMAL sync is durable at each
    // checkpoint and never corrupts (SQLite's documented WAL trade-off).
    if (auto ok = store->exec("PRAGMA journal_mode = WAL", "opening the store for writing"); !ok)
      return fail(ok.error());
    if (auto ok = store->exec("PRAGMA synchronous = NORMAL", "opening the store for writing"); !ok) {
      return fail(ok.error());
    }
    if (auto ok = store->prepare_schema(); !ok) return fail(ok.error());
  } else if (auto ok = store->check_for_reading(); !ok) {
    // A WAL database on read-only media (a mounted CI artifact) cannot get
    // its -shm file; read it as immutable instead, as SQLite documents.
    auto immutable = open_immutable(path, options);
    if (!immutable) return fail(ok.error());
    return immutable;
  }
  return std::unique_ptr<HistoryStore>(std::move(store));
}

}  // namespace heapgate::detail
