// SPDX-License-Identifier: MIT
// Private: the one schema of both stores, in each one's SQL, and what both
// stores do alike with values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/history.h"

namespace heapgate::detail {

enum class Dialect { sqlite, postgresql };

/// The statements that create schema version kHistorySchemaVersion, in order.
std::vector<std::string> schema_statements(Dialect dialect);

/// The statements that take a store from `version` to `version + 1`; empty
/// for the current version. Version 1 is the first, so none exist yet: a
/// later schema adds its step here and bumps kHistorySchemaVersion.
std::vector<std::string> migration_statements(Dialect dialect, int version);

/// The columns of `results` after run_id and test_id, in insert order.
inline constexpr const char* kResultColumns =
    "verdict, mode, allocations, allocated_bytes, live_allocations, live_bytes, peak_bytes, band_runs, "
    "low_allocations, low_allocated_bytes, low_live_allocations, low_live_bytes, low_peak_bytes, "
    "high_allocations, high_allocated_bytes, high_live_allocations, high_live_bytes, high_peak_bytes";
inline constexpr int kResultColumnCount = 18;
/// kResultColumns, each prefixed with `table.` for a join.
std::string result_columns_of(const std::string& table);

/// The columns of `runs` after id, in insert order.
inline constexpr const char* kRunColumns =
    "content_hash, commit_sha, branch, run_time, job, binary_name, mode, fingerprint, source, added_at";
inline constexpr int kRunColumnCount = 10;

/// The WHERE conditions of a HistoryQuery (but its test glob) on the runs
/// table named `runs` and the table named `binaries` that has binary_name:
/// parameters 1 to 4 are the branch, since, binary and until, "" for any.
std::string query_conditions(Dialect dialect, const std::string& runs, const std::string& binaries);

/// SQL's integers are signed 64-bit: counts beyond are stored as the largest.
std::int64_t to_db(std::uint64_t value) noexcept;
std::uint64_t from_db(std::int64_t value) noexcept;

/// The fingerprint as compact JSON with sorted keys.
std::string fingerprint_json(const Fingerprint& fingerprint);

/// Now, ISO-8601 UTC.
std::string now_utc();

/// `*` and `?` globs (and `[...]` sets) on a whole name.
bool glob_match(std::string_view pattern, std::string_view name) noexcept;

/// The schema version a store reports: the error when it is newer than
/// this heapgate's.
Result<void> check_schema_version(const std::string& location, int version);

}  // namespace heapgate::detail
