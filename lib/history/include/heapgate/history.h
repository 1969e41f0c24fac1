// SPDX-License-Identifier: MIT
// The history store (`heapgate history`): every test's metrics, verdict,
// mode and noise band of every run, kept with the commit, branch, time and CI
// job, in a SQLite file or a PostgreSQL database (docs/design.md §13).
// Implemented in lib/history/src/: open_history.cpp (choosing the store),
// sqlite_store.cpp, postgres_store.cpp, store_schema.cpp (the one schema),
// stored_run.cpp (a report as rows).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/error.h"
#include "heapgate/metrics.h"
#include "heapgate/report.h"

namespace heapgate {

/// The version of the store's schema this heapgate writes (the one row of
/// the table `schema_version`). A store of a newer version is refused, an
/// older one is migrated when opened for writing.
inline constexpr int kHistorySchemaVersion = 1;

/// Where a run happened: the commit it measured, the branch, when, and the
/// CI job. `time` is ISO-8601 UTC ("2026-12-07T17:52:29Z"); the store orders
/// a test's points by it.
struct RunContext {
  std::string commit;
  std::string branch;
  std::string time;
  std::string job;
};

/// One test's numbers in one run, as stored.
struct StoredResult {
  std::string test;
  /// A Verdict's name ("regressed"), or "baseline" for an accepted version
  /// of a baseline file (history import-git).
  std::string verdict;
  Mode mode = Mode::counters;
  Metrics metrics;
  /// The noise band the test was judged within, when it had one.
  std::optional<NoiseBand> band;
};

/// One run as stored: a report (or a baseline version) with its context.
struct StoredRun {
  RunContext context;
  std::string binary;
  Mode mode = Mode::counters;
  Fingerprint fingerprint;
  /// Where it was read from (a report's path, "git:COMMIT:baselines/x.json").
  std::string source;
  /// content_hash() of what was read: a run is stored once.
  std::string content_hash;
  std::vector<StoredResult> results;
};

/// A 128-bit hash of `text`, 32 hex digits: two FNV-1a passes with different
/// offset bases. It keys duplicates of the same bytes, not an adversary's.
/// Pure.
std::string content_hash(std::string_view text);

/// A report as a run to store: every record's metrics, verdict, mode and
/// baseline noise band; the run's binary, mode and fingerprint; the content
/// hash of its JSON (to_json()) and the commit, so the same report at the
/// same commit is one run whichever file it came from. Pure.
StoredRun stored_run_from_report(const Report& report, const RunContext& context, std::string source);

/// A baseline file's version as a run to store (verdict "baseline"), keyed
/// by its text and the commit, so each accepted version is kept at its
/// commit. Pure.
StoredRun stored_run_from_baseline(const Baseline& baseline, std::string_view text, const RunContext& context,
                                   std::string source);

/// What add() did.
struct AddOutcome {
  /// False: a run with the same content hash was already stored; nothing changed.
  bool stored = false;
  /// The run's id (the earlier run's, for a duplicate).
  std::int64_t run_id = 0;
  std::size_t results = 0;
};

/// Which points to read. Empty fields select everything.
struct HistoryQuery {
  /// A glob (fnmatch: `*`, `?`, `[...]`) on "Suite.Test".
  std::string test_glob;
  std::string branch;
  /// Runs at or after this ISO-8601 time (a prefix such as "2026-11" works).
  std::string since;
  /// Runs at or before this ISO-8601 time, taken as a prefix: "2026-11"
  /// includes all of November.
  std::string until;
  std::string binary;
};

/// One stored run, as read back.
struct RunRow {
  std::int64_t id = 0;
  RunContext context;
  std::string binary;
  std::string source;
};

/// One test's numbers in one run, as read back.
struct PointRow {
  std::int64_t run_id = 0;
  std::string binary;
  std::string test;
  std::string verdict;
  Mode mode = Mode::counters;
  Metrics metrics;
  std::optional<NoiseBand> band;
};

/// A history store. Thread-compatible: one object per thread; any number of
/// processes may add at once (each add is one transaction).
class HistoryStore {
 public:
  virtual ~HistoryStore() = default;

  /// Stores `run` and its results in one transaction: all or nothing. A run
  /// whose content hash is stored already is not stored again
  /// (AddOutcome::stored false). Errors: `io_error` naming the store (locked
  /// past the timeout, read-only, disk full, connection lost), the store
  /// unchanged.
  virtual Result<AddOutcome> add(const StoredRun& run) = 0;

  /// The runs `query` selects (its test glob aside), ordered by time, then id.
  virtual Result<std::vector<RunRow>> runs(const HistoryQuery& query) = 0;

  /// Calls `each` with every point `query` selects, grouped by test (binary,
  /// then name), each test's points in no particular order: a caller sorts
  /// them by runs()' order. Streams, so a large store is never held whole.
  virtual Result<void> for_each_point(const HistoryQuery& query, const std::function<void(const PointRow&)>& each) = 0;

  /// The store's location as given (a path or a URL without its password).
  virtual const std::string& location() const = 0;
};

/// How a store is opened.
struct HistoryOpenOptions {
  /// Create the store (and its schema) when missing, and migrate an older
  /// schema: for adding. Otherwise a missing store is an error and nothing
  /// is written.
  bool for_writing = false;
  /// How long a write waits for another writer's lock (SQLite busy_timeout;
  /// PostgreSQL lock_timeout) before it fails.
  std::chrono::milliseconds lock_timeout{30000};
};

/// True when `location` names a PostgreSQL database ("postgresql://…" or
/// "postgres://…"), false for a SQLite file path.
bool is_postgresql_location(std::string_view location);

/// Whether this heapgate was built with libpq.
bool postgresql_supported() noexcept;

/// Opens the store at `location`: a SQLite file path or a PostgreSQL URL.
/// Errors (each naming the location and the fix), nothing written:
/// - `io_error`: a file that is not a SQLite database (or is corrupt), a
///   location that cannot be created or written, a lock held past the
///   timeout, a server that cannot be reached or refuses the password;
/// - `parse_error`: a schema newer than kHistorySchemaVersion, or tables
///   that are not a heapgate history's;
/// - `unavailable`: a PostgreSQL URL in a build without libpq;
/// - `invalid_argument`: a missing store opened for reading.
Result<std::unique_ptr<HistoryStore>> open_history(const std::string& location, const HistoryOpenOptions& options);

}  // namespace heapgate
