// SPDX-License-Identifier: MIT
// Adding runs to a history store (history_add.h): history_location(), open_history_store(),
// add_runs() one transaction each, and add_run_reports() for `heapgate run --history`.
#include "history_add.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "heapgate/run_context.h"

namespace heapgate::runner {

std::string history_location(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("HEAPGATE_HISTORY");
  return env != nullptr && *env != '\0' ? env : kDefaultHistory;
}

Result<std::unique_ptr<HistoryStore>> open_history_store(const HistoryFlags& flags, bool for_writing) {
  if (!(flags.lock_timeout_seconds >= 0) || flags.lock_timeout_seconds > 86400) {
    return fail(make_error(ErrorCode::invalid_argument, "--lock-timeout",
                           std::to_string(flags.lock_timeout_seconds) + " is not a number of seconds",
                           "give 0 to 86400 seconds (the default is 30)"));
  }
  HistoryOpenOptions options;
  options.for_writing = for_writing;
  options.lock_timeout = std::chrono::milliseconds(std::lround(flags.lock_timeout_seconds * 1000));
  return open_history(history_location(flags.history), options);
}

Result<std::size_t> add_runs(HistoryStore& store, const std::vector<StoredRun>& runs, KnownRuns known) {
  std::size_t stored = 0;
  for (const StoredRun& run : runs) {
    auto added = store.add(run);
    if (!added) return fail(added.error());
    if (!added->stored) {
      if (known == KnownRuns::skip) {
        std::fprintf(stderr, "heapgate history: %s: already stored as run %lld; skipped\n", run.source.c_str(),
                     static_cast<long long>(added->run_id));
        continue;
      }
      return fail(make_error(ErrorCode::conflict, store.location(),
                             run.source + ": already stored as run " + std::to_string(added->run_id) +
                                 " (the same content); nothing added" +
                                 (stored > 0 ? " for it (the " + std::to_string(stored) + " before it were)" : ""),
                             "nothing to do; pass --skip-known to count a known report as success"));
    }
    ++stored;
    std::fprintf(stderr, "heapgate history: stored %s (%s, %zu tests) as run %lld at %s%s%s\n", run.source.c_str(),
                 run.binary.c_str(), added->results, static_cast<long long>(added->run_id),
                 run.context.commit.empty() ? "no commit" : run.context.commit.substr(0, 10).c_str(),
                 run.context.branch.empty() ? "" : (" on " + run.context.branch).c_str(),
                 (" in " + store.location()).c_str());
  }
  return stored;
}

Result<void> add_run_reports(const std::string& history, const std::vector<Report>& reports,
                             const std::vector<std::string>& paths) {
  HistoryFlags flags;
  flags.history = history;
  auto store = open_history_store(flags, true);
  if (!store) return fail(store.error());
  const RunContext context = detect_run_context({}, process_environment());
  std::vector<StoredRun> runs;
  for (std::size_t i = 0; i < reports.size() && i < paths.size(); ++i) {
    runs.push_back(stored_run_from_report(reports[i], context, paths[i]));
  }
  auto added = add_runs(**store, runs, KnownRuns::skip);
  if (!added) return fail(added.error());
  return {};
}

}  // namespace heapgate::runner
