// SPDX-License-Identifier: MIT
// The history stores' shared schema (store_schema.h): CREATE statements for SQLite and PostgreSQL,
// query conditions, count clamping, fingerprint JSON, glob_match(), check_schema_version().
#include "store_schema.h"

#include <ctime>
#include <limits>

#include <nlohmann/json.hpp>

namespace heapgate::detail {

std::vector<std::string> schema_statements(Dialect dialect) {
  const bool pg = dialect == Dialect::postgresql;
  const std::string id = pg ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY";
  const std::string count = pg ? "BIGINT" : "INTEGER";
  std::string results = "CREATE TABLE results (run_id " + count + " NOT NULL REFERENCES runs(id), test_id " + count +
                        " NOT NULL REFERENCES tests(id), verdict TEXT NOT NULL, mode TEXT NOT NULL";
  for (const char* metric : {"allocations", "allocated_bytes", "live_allocations", "live_bytes", "peak_bytes"}) {
    results += std::string(", ") + metric + " " + count + " NOT NULL";
  }
  // The noise band: all NULL when the test had none.
  results += ", band_runs " + count;
  for (const char* end : {"low_", "high_"}) {
    for (const char* metric : {"allocations", "allocated_bytes", "live_allocations", "live_bytes", "peak_bytes"}) {
      results += std::string(", ") + end + metric + " " + count;
    }
  }
  // Keyed by test first: a test's points are one range of the key.
  results += std::string(", PRIMARY KEY (test_id, run_id))") + (pg ? "" : " WITHOUT ROWID");
  return {
      "CREATE TABLE schema_version (version INTEGER NOT NULL)",
      "CREATE TABLE runs (id " + id +
          ", content_hash TEXT NOT NULL UNIQUE, commit_sha TEXT NOT NULL, branch TEXT NOT NULL, "
          "run_time TEXT NOT NULL, job TEXT NOT NULL, binary_name TEXT NOT NULL, mode TEXT NOT NULL, "
          "fingerprint TEXT NOT NULL, source TEXT NOT NULL, added_at TEXT NOT NULL)",
      "CREATE INDEX runs_by_time ON runs (run_time, id)",
      "CREATE TABLE tests (id " + id + ", binary_name TEXT NOT NULL, name TEXT NOT NULL, UNIQUE (binary_name, name))",
      results,
      "INSERT INTO schema_version (version) VALUES (" + std::to_string(kHistorySchemaVersion) + ")",
  };
}

std::string result_columns_of(const std::string& table) {
  std::string out = table + ".";
  for (const char* c = kResultColumns; *c != '\0'; ++c) {
    out += *c;
    if (*c == ' ') out += table + ".";
  }
  return out;
}

std::string query_conditions(Dialect dialect, const std::string& runs, const std::string& binaries) {
  auto p = [dialect](int n) { return (dialect == Dialect::sqlite ? "?" : "$") + std::to_string(n); };
  // `until` as a prefix: "2026-11" takes in the whole of November.
  return "(" + p(1) + " = '' OR " + runs + ".branch = " + p(1) + ") AND (" + p(2) + " = '' OR " + runs +
         ".run_time >= " + p(2) + ") AND (" + p(3) + " = '' OR " + binaries + ".binary_name = " + p(3) + ") AND (" +
         p(4) + " = '' OR substr(" + runs + ".run_time, 1, length(" + p(4) + ")) <= " + p(4) + ")";
}

std::vector<std::string> migration_statements(Dialect, int) { return {}; }

std::int64_t to_db(std::uint64_t value) noexcept {
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return static_cast<std::int64_t>(value > max ? max : value);
}

std::uint64_t from_db(std::int64_t value) noexcept { return value < 0 ? 0 : static_cast<std::uint64_t>(value); }

std::string fingerprint_json(const Fingerprint& fingerprint) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : fingerprint) object[key] = value;
  return object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string now_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

bool glob_match(std::string_view pattern, std::string_view name) noexcept {
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
      continue;
    }
    if (p < pattern.size() && pattern[p] == '[') {
      const std::size_t close = pattern.find(']', p + 1);
      if (close != std::string_view::npos) {
        bool hit = false;
        for (std::size_t k = p + 1; k < close; ++k) {
          if (k + 2 < close && pattern[k + 1] == '-') {
            hit = hit || (name[n] >= pattern[k] && name[n] <= pattern[k + 2]);
            k += 2;
          } else {
            hit = hit || name[n] == pattern[k];
          }
        }
        if (hit) {
          p = close + 1;
          ++n;
          continue;
        }
      }
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
      continue;
    }
    if (star == std::string_view::npos) return false;
    p = star + 1;
    n = ++resume;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Result<void> check_schema_version(const std::string& location, int version) {
  if (version > kHistorySchemaVersion) {
    return fail(make_error(ErrorCode::parse_error, location,
                           "the history's schema is version " + std::to_string(version) +
                               ", newer than this heapgate's (" + std::to_string(kHistorySchemaVersion) +
                               "); nothing was written",
                           "use the heapgate that wrote it, or a newer one"));
  }
  if (version < 1) {
    return fail(make_error(ErrorCode::parse_error, location,
                           "schema_version holds " + std::to_string(version) + ", not a heapgate history version",
                           "give --history a heapgate history, or a new path"));
  }
  return {};
}

}  // namespace heapgate::detail
