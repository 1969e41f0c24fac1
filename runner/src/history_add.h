// SPDX-License-Identifier: MIT
// Adding runs to a history store: what `heapgate history add`, `history
// import-git` and `heapgate run --history` share.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "heapgate/history.h"

namespace heapgate::runner {

/// Where `heapgate history` keeps its runs unless told (--history, or
/// HEAPGATE_HISTORY in the environment).
inline constexpr const char* kDefaultHistory = "heapgate-history.db";

/// --history's value: `flag` when given, else HEAPGATE_HISTORY, else kDefaultHistory.
std::string history_location(const std::string& flag);

/// The flags every `heapgate history` verb shares.
struct HistoryFlags {
  std::string history;
  double lock_timeout_seconds = 30;
};

/// Opens the store the flags name. Errors as open_history(), and
/// `invalid_argument` for a --lock-timeout below 0.
Result<std::unique_ptr<HistoryStore>> open_history_store(const HistoryFlags& flags, bool for_writing);

/// How a run already in the store counts.
enum class KnownRuns { refuse, skip };

/// Adds `runs` to the store, one transaction each, saying on stderr what
/// was stored. A run already stored is an `conflict` error (the store
/// unchanged, earlier runs of the list kept) unless `known` is skip.
/// Returns how many were stored.
Result<std::size_t> add_runs(HistoryStore& store, const std::vector<StoredRun>& runs, KnownRuns known);

/// `heapgate run --history`: adds the reports the run wrote (`paths[i]`
/// holds `reports[i]`) with the context of this checkout and CI job; a
/// report stored already is skipped.
Result<void> add_run_reports(const std::string& history, const std::vector<Report>& reports,
                             const std::vector<std::string>& paths);

}  // namespace heapgate::runner
