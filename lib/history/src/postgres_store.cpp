// SPDX-License-Identifier: MIT
// The team store: a PostgreSQL database that many CI jobs write at once.
// Each run is one transaction; its results go in with one COPY, the
// fastest way libpq has to send many rows.
#include <libpq-fe.h>

#include <map>
#include <memory>
#include <utility>

#include "postgres_text.h"
#include "store_schema.h"
#include "stores.h"

namespace heapgate {

bool postgresql_supported() noexcept { return true; }

namespace detail {
namespace {

using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

class PostgresStore final : public HistoryStore {
 public:
  PostgresStore(std::string location, PGconn* conn) : location_(std::move(location)), conn_(conn) {}
  ~PostgresStore() override { PQfinish(conn_); }

  Error error(const PGresult* result, const std::string& doing) const {
    const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    const std::string said = first_line(result != nullptr ? PQresultErrorMessage(result) : PQerrorMessage(conn_));
    const std::string code = state != nullptr ? state : "";
    if (PQstatus(conn_) != CONNECTION_OK) {
      return make_error(ErrorCode::io_error, location_,
                        doing + ": the connection to the server was lost (" + said + "); nothing was written",
                        "check the server, then run again");
    }
    if (code == "55P03" || code == "40P01") {
      return make_error(
          ErrorCode::io_error, location_,
          doing + ": another writer held a lock for longer than the lock timeout (" + said + "); nothing was written",
          "run again when the other writer is done, or wait longer with --lock-timeout SECONDS");
    }
    if (code == "42501" || code == "25006") {
      return make_error(ErrorCode::io_error, location_,
                        doing + ": not allowed to write (" + said + "); nothing was written",
                        "grant this user CREATE and INSERT in the database, or use another one");
    }
    return make_error(ErrorCode::io_error, location_, doing + ": " + said + "; nothing was written",
                      "check the server's log for more");
  }

  // Runs `sql` with text parameters; `expect` is PGRES_COMMAND_OK or PGRES_TUPLES_OK.
  Result<ResultPtr> run(const std::string& sql, const std::vector<std::string>& params, ExecStatusType expect,
                        const std::string& doing) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const std::string& p : params) values.push_back(p.c_str());
    ResultPtr result(
        PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0),
        &PQclear);
    if (!result || PQresultStatus(result.get()) != expect) return fail(error(result.get(), doing));
    return result;
  }

  Result<void> command(const std::string& sql, const std::string& doing) {
    auto result = run(sql, {}, PGRES_COMMAND_OK, doing);
    if (!result) return fail(result.error());
    return {};
  }

  void rollback() { ResultPtr(PQexec(conn_, "ROLLBACK"), &PQclear); }

  Result<void> prepare_schema(bool for_writing) {
    if (for_writing) {
      if (auto ok = command("BEGIN", "opening the store"); !ok) return ok;
      // Two first writers must not both create the tables.
      auto locked = run("SELECT pg_advisory_xact_lock(4501)", {}, PGRES_TUPLES_OK, "opening the store");
      if (!locked) {
        rollback();
        return fail(locked.error());
      }
    }
    auto done = [&](Result<void> result) {
      if (for_writing) {
        if (result) {
          if (auto ok = command("COMMIT", "creating the history's tables"); !ok) return ok;
        } else {
          rollback();
        }
      }
      return result;
    };
    auto has =
        run("SELECT to_regclass('schema_version') IS NOT NULL, (SELECT count(*) FROM "
            "information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('runs', "
            "'tests', 'results'))",
            {}, PGRES_TUPLES_OK, "reading its schema");
    if (!has) return done(fail(has.error()));
    const bool versioned = std::string(PQgetvalue(has->get(), 0, 0)) == "t";
    if (!versioned) {
      if (std::string(PQgetvalue(has->get(), 0, 1)) != "0" || !for_writing) {
        return done(fail(make_error(ErrorCode::parse_error, location_,
                                    for_writing ? "the database has tables runs, tests or results but no "
                                                  "schema_version: not a heapgate history; it was left as it is"
                                                : "no heapgate history in this database yet",
                                    for_writing ? "give --history another database"
                                                : "add runs first: heapgate history add --history URL REPORT.json")));
      }
      for (const std::string& statement : schema_statements(Dialect::postgresql)) {
        if (auto ok = command(statement, "creating the history's tables"); !ok) return done(ok);
      }
      return done({});
    }
    auto version = run("SELECT max(version) FROM schema_version", {}, PGRES_TUPLES_OK, "reading its schema version");
    if (!version) return done(fail(version.error()));
    const int v = std::atoi(PQgetvalue(version->get(), 0, 0));
    if (auto ok = check_schema_version(location_, v); !ok) return done(ok);
    if (!for_writing) return {};
    for (int from = v; from < kHistorySchemaVersion; ++from) {
      for (const std::string& statement : migration_statements(Dialect::postgresql, from)) {
        if (auto ok = command(statement, "migrating the schema"); !ok) return done(ok);
      }
      if (auto ok = command("UPDATE schema_version SET version = " + std::to_string(from + 1), "migrating the schema");
          !ok) {
        return done(ok);
      }
    }
    return done({});
  }

  Result<AddOutcome> add(const StoredRun& run) override {
    if (auto ok = command("BEGIN", "adding " + run.source); !ok) return fail(ok.error());
    auto result = add_in_transaction(run);
    if (!result || !result->stored) {
      rollback();
      return result;
    }
    if (auto ok = command("COMMIT", "adding " + run.source); !ok) {
      rollback();
      return fail(ok.error());
    }
    return result;
  }

  Result<AddOutcome> add_in_transaction(const StoredRun& stored) {
    const std::string doing = "adding " + stored.source;
    auto inserted = run(std::string("INSERT INTO runs (") + kRunColumns +
                            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (content_hash) DO "
                            "NOTHING RETURNING id",
                        {stored.content_hash, stored.context.commit, stored.context.branch, stored.context.time,
                         stored.context.job, stored.binary, std::string(to_string(stored.mode)),
                         fingerprint_json(stored.fingerprint), stored.source, now_utc()},
                        PGRES_TUPLES_OK, doing);
    if (!inserted) return fail(inserted.error());
    if (PQntuples(inserted->get()) == 0) {
      auto known = run("SELECT id FROM runs WHERE content_hash = $1", {stored.content_hash}, PGRES_TUPLES_OK, doing);
      if (!known) return fail(known.error());
      const std::int64_t id = PQntuples(known->get()) > 0 ? std::atoll(PQgetvalue(known->get(), 0, 0)) : 0;
      return AddOutcome{false, id, 0};
    }
    const std::string run_id = PQgetvalue(inserted->get(), 0, 0);

    // The tests in one sorted statement: concurrent writers of the same
    // binary then take the unique index's locks in the same order.
    std::vector<const std::string*> names;
    names.reserve(stored.results.size());
    for (const StoredResult& r : stored.results) names.push_back(&r.test);
    std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    names.erase(
        std::unique(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a == *b; }),
        names.end());
    if (auto ok = run("INSERT INTO tests (binary_name, name) SELECT $1, n FROM unnest($2::text[]) AS n ORDER BY n ON "
                      "CONFLICT DO NOTHING",
                      {stored.binary, text_array(names)}, PGRES_COMMAND_OK, doing);
        !ok) {
      return fail(ok.error());
    }
    auto ids = run("SELECT id, name FROM tests WHERE binary_name = $1", {stored.binary}, PGRES_TUPLES_OK, doing);
    if (!ids) return fail(ids.error());
    std::map<std::string, std::string, std::less<>> test_ids;
    for (int i = 0; i < PQntuples(ids->get()); ++i)
      test_ids.emplace(PQgetvalue(ids->get(), i, 1), PQgetvalue(ids->get(), i, 0));

    if (auto ok = run(std::string("COPY results (run_id, test_id, ") + kResultColumns + ") FROM STDIN", {},
                      PGRES_COPY_IN, doing);
        !ok) {
      return fail(ok.error());
    }
    std::string buffer;
    std::map<std::string, bool, std::less<>> seen;
    std::size_t rows = 0;
    for (const StoredResult& r : stored.results) {
      if (!seen.emplace(r.test, true).second) continue;
      buffer += run_id;
      buffer += '\t';
      buffer += test_ids[r.test];
      buffer += '\t';
      append_copy_text(buffer, r.verdict);
      buffer += '\t';
      buffer += to_string(r.mode);
      for (MetricName metric : kMetricNames) buffer += '\t' + std::to_string(to_db(get(r.metrics, metric)));
      if (r.band) {
        buffer += '\t' + std::to_string(r.band->runs);
        for (MetricName metric : kMetricNames) buffer += '\t' + std::to_string(to_db(get(r.band->low, metric)));
        for (MetricName metric : kMetricNames) buffer += '\t' + std::to_string(to_db(get(r.band->high, metric)));
      } else {
        for (int i = 0; i < 11; ++i) buffer += "\t\\N";
      }
      buffer += '\n';
      ++rows;
      if (buffer.size() > (1u << 20)) {
        if (PQputCopyData(conn_, buffer.data(), static_cast<int>(buffer.size())) != 1) {
          return fail(error(nullptr, doing));
        }
        buffer.clear();
      }
    }
    if ((!buffer.empty() && PQputCopyData(conn_, buffer.data(), static_cast<int>(buffer.size())) != 1) ||
        PQputCopyEnd(conn_, nullptr) != 1) {
      return fail(error(nullptr, doing));
    }
    ResultPtr copied(PQgetResult(conn_), &PQclear);
    const bool copy_ok = copied && PQresultStatus(copied.get()) == PGRES_COMMAND_OK;
    Error copy_error = copy_ok ? Error{} : error(copied.get(), doing);
    while (PGresult* rest = PQgetResult(conn_)) PQclear(rest);
    if (!copy_ok) return fail(copy_error);
    return AddOutcome{true, std::atoll(run_id.c_str()), rows};
  }

  Result<std::vector<RunRow>> runs(const HistoryQuery& query) override {
    auto selected = run("SELECT id, commit_sha, branch, run_time, job, binary_name, source FROM runs WHERE " +
                            query_conditions(Dialect::postgresql, "runs", "runs") + " ORDER BY run_time, id",
                        {query.branch, query.since, query.binary, query.until}, PGRES_TUPLES_OK, "reading runs");
    if (!selected) return fail(selected.error());
    std::vector<RunRow> rows;
    const PGresult* r = selected->get();
    for (int i = 0; i < PQntuples(r); ++i) {
      RunRow row;
      row.id = std::atoll(PQgetvalue(r, i, 0));
      row.context = RunContext{PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4)};
      row.binary = PQgetvalue(r, i, 5);
      row.source = PQgetvalue(r, i, 6);
      rows.push_back(std::move(row));
    }
    return rows;
  }

  Result<void> for_each_point(const HistoryQuery& query, const std::function<void(const PointRow&)>& each) override {
    const std::string sql = "SELECT r.run_id, t.binary_name, t.name, " + result_columns_of("r") +
                            " FROM results r JOIN tests t ON t.id = r.test_id JOIN runs u ON u.id = r.run_id WHERE " +
                            query_conditions(Dialect::postgresql, "u", "t") + " ORDER BY r.test_id";
    const char* values[4] = {query.branch.c_str(), query.since.c_str(), query.binary.c_str(), query.until.c_str()};
    if (PQsendQueryParams(conn_, sql.c_str(), 4, nullptr, values, nullptr, nullptr, 0) != 1) {
      return fail(error(nullptr, "reading results"));
    }
    // One row at a time: a large history is never held whole.
    PQsetSingleRowMode(conn_);
    PointRow row;
    bool first = true;
    bool selected = true;
    Result<void> outcome;
    while (PGresult* raw = PQgetResult(conn_)) {
      ResultPtr r(raw, &PQclear);
      const ExecStatusType status = PQresultStatus(raw);
      if (status == PGRES_TUPLES_OK) continue;
      if (status != PGRES_SINGLE_TUPLE) {
        if (outcome) outcome = fail(error(raw, "reading results"));
        continue;
      }
      if (first || row.test != PQgetvalue(raw, 0, 2) || row.binary != PQgetvalue(raw, 0, 1)) {
        row.binary = PQgetvalue(raw, 0, 1);
        row.test = PQgetvalue(raw, 0, 2);
        selected = query.test_glob.empty() || glob_match(query.test_glob, row.test);
        first = false;
      }
      if (!selected) continue;
      row.run_id = std::atoll(PQgetvalue(raw, 0, 0));
      row.verdict = PQgetvalue(raw, 0, 3);
      row.mode = parse_mode(PQgetvalue(raw, 0, 4)).value_or(Mode::counters);
      int column = 5;
      for (MetricName metric : kMetricNames)
        get(row.metrics, metric) = from_db(std::atoll(PQgetvalue(raw, 0, column++)));
      if (PQgetisnull(raw, 0, column)) {
        row.band.reset();
      } else {
        NoiseBand band;
        band.runs = static_cast<std::uint32_t>(std::atoll(PQgetvalue(raw, 0, column++)));
        for (MetricName metric : kMetricNames)
          get(band.low, metric) = from_db(std::atoll(PQgetvalue(raw, 0, column++)));
        for (MetricName metric : kMetricNames)
          get(band.high, metric) = from_db(std::atoll(PQgetvalue(raw, 0, column++)));
        row.band = band;
      }
      each(row);
    }
    return outcome;
  }

  const std::string& location() const override { return location_; }

 private:
  std::string location_;
  PGconn* conn_;
};

}  // namespace

Result<std::unique_ptr<HistoryStore>> open_postgres_history(const std::string& url, const HistoryOpenOptions& options) {
  const std::string location = without_password(url);
  // The URL's own settings come last, so they win over these defaults.
  const char* keywords[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"10", "heapgate", url.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, 1);
  if (conn == nullptr) return fail(connection_error(location, "out of memory"));
  if (PQstatus(conn) != CONNECTION_OK) {
    Error e = connection_error(location, first_line(PQerrorMessage(conn)));
    PQfinish(conn);
    return fail(e);
  }
  auto store = std::make_unique<PostgresStore>(location, conn);
  // Quiet: CREATE TABLE's notices are not the user's business.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  if (auto ok =
          store->command("SET lock_timeout = " + std::to_string(options.lock_timeout.count()), "opening the store");
      !ok) {
    return fail(ok.error());
  }
  if (auto ok = store->prepare_schema(options.for_writing); !ok) return fail(ok.error());
  return std::unique_ptr<HistoryStore>(std::move(store));
}

}  // namespace detail
}  // namespace heapgate
