// SPDX-License-Identifier: MIT
// The report journal: a run's records appended as tests finish, so a crash
// keeps every finished test, and `heapgate run` can show progress while the
// tests run. read_report() (report.h) reads a journal left by a crash.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "heapgate/error.h"
#include "heapgate/report.h"

namespace heapgate {

/// The suffix of a journal file: `<dir>/<stem>.partial.jsonl`.
inline constexpr std::string_view kJournalSuffix = ".partial.jsonl";

/// The file stem of a run's reports: the binary's name, plus
/// ".shard-<index>-of-<total>" for one shard of a sharded gtest run
/// (total_shards > 0). Merged reports use the plain name, and so
/// `heapgate compare` skips stems that contain ".shard-".
std::string report_stem(const std::string& binary, int shard_index, int total_shards);

/// True for a report stem or file name of one shard (see report_stem).
bool is_shard_report(std::string_view file_name) noexcept;

/// Appends a run's records to `<dir>/<stem>.partial.jsonl`, one JSON line
/// each: the first line `{"journal": true, "run": {...}, "schema": ...}`,
/// then one record per line. Each line reaches the kernel (fflush) before
/// append() returns: a crash of the process loses nothing, a crash of the
/// machine may. Not thread-safe.
class ReportJournal {
 public:
  /// Creates `dir` if needed and the journal (truncating an earlier one).
  /// Never fails here: an error is kept and returned by append() and close().
  ReportJournal(const std::string& dir, const std::string& stem, const RunInfo& run);
  ~ReportJournal();
  ReportJournal(const ReportJournal&) = delete;
  ReportJournal& operator=(const ReportJournal&) = delete;

  /// Appends one record, already serialized by record_json_line() (report.h).
  /// Errors: `io_error` naming the journal, with a fix.
  Result<void> append(std::string_view record_line);
  /// Closes the journal and removes it (its records are in the final report).
  void close_and_remove() noexcept;

  const std::string& path() const noexcept { return path_; }
  /// The journal's file descriptor, -1 when none: a signal handler appends
  /// an interruption line (interruption_line_prefix()) with write(2).
  int fd() const noexcept;
  /// The error that stopped the journal, if any.
  const std::optional<Error>& error() const noexcept { return error_; }

 private:
  std::string dir_;
  std::string path_;
  std::FILE* file_ = nullptr;
  std::optional<Error> error_;
};

/// The report directory `dir` exists or is created. Errors: `io_error`
/// naming the directory, with a fix.
Result<void> ensure_report_dir(const std::string& dir);

}  // namespace heapgate
