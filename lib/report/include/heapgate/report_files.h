// SPDX-License-Identifier: MIT
// The report writers: JUnit XML, Markdown, HTML, the table of formats, the
// files of a run, and ReportWriter, which journals a run as it goes and
// writes them at its end. Implemented in lib/report/src/: report_junit.cpp,
// report_markdown.cpp, report_html.cpp (one per format), report_files.cpp
// (the table, the files, ReportWriter).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/error.h"
#include "heapgate/journal.h"
#include "heapgate/report.h"

namespace heapgate {

/// The JUnit XML report (Ant/Jenkins format; validates against the
/// Jenkins xunit-plugin's junit-10.xsd, kept in tests/data/junit/):
/// - `<testsuites name=binary tests failures errors time>`, holding one
///   `<testsuite name tests failures errors skipped time timestamp hostname>`
///   per gtest suite, in order of first appearance;
/// - each suite's `<properties>` carries the run: heapgate.binary,
///   heapgate.build_id, heapgate.mode, heapgate.jemalloc_version,
///   heapgate.strict, heapgate.shard (when sharded);
/// - one `<testcase name classname time>` per test (classname = suite, time
///   in seconds). A failing verdict (is_failure with run.strict) is
///   `<failure type="heapgate.<verdict>" message=...>` whose text explains
///   it on one screen: the message, the deltas and the top stacks; a test
///   that failed only its own assertions gets `type="gtest"`;
///   non-failing `unavailable` and `missing` are `<skipped message=...>`;
/// - the metrics go in `<system-out>` as `heapgate.<metric>=<value>` lines
///   (plus the baseline and verdict): junit-10.xsd and the Ant schema allow no
///   `<properties>` inside `<testcase>`.
/// Characters XML 1.0 cannot carry become '?'. Pure.
std::string to_junit_xml(const Report& report);

/// A Markdown summary for a CI step summary: a headline with the count per
/// verdict, a table of the tests that did not pass (name, verdict, key deltas
/// or the first line of the message), then all tests with their metrics in a
/// collapsed `<details>` table. `|` in cells is escaped and line breaks
/// become spaces. Pure.
std::string to_markdown(const Report& report);

/// One self-contained HTML page (inline CSS and SVG, no external resources,
/// works offline): a headline with the count per verdict, the run, a table of
/// all tests (problems first) with each metric as baseline → current, delta
/// and limit, then a section per test that regressed, leaked or is over
/// budget: the metrics that changed, the call sites that changed against the
/// baseline (TestRecord::baseline_call_sites against call_sites; this run's
/// call sites when the baseline has none), its message once, and a
/// differential flame graph of its stacks (render_change_flamegraph_svg, at
/// most 200 stacks, short labels, a search box) in the metric that explains
/// the verdict (live bytes for a leak, allocated bytes otherwise); the stacks
/// as text in a collapsed list. Every text from the report is escaped. The
/// page's script sets `data-heapgate-ready="1"` on `<body>` when it has run.
/// Pure.
std::string to_html(const Report& report);

/// One format a report is written in. Adding a format is its writer (a pure
/// `std::string to_<format>(const Report&)` in its own file) and one row in
/// report_formats() (report_files.cpp); `heapgate report` and every run's
/// files follow the table.
struct ReportFormat {
  std::string_view name;    ///< the word `heapgate report` takes ("junit")
  std::string_view suffix;  ///< the file a run writes: `<stem><suffix>` (".junit.xml")
  std::string (*render)(const Report&);
  /// Written by every run with a report directory (write_report_files(),
  /// ReportWriter); the others only when asked (`heapgate report html`).
  bool every_run = false;
};

/// Every format, in the order `heapgate report` lists them: json, junit,
/// markdown, html.
const std::vector<ReportFormat>& report_formats();

/// The format named `name`, or nullptr.
const ReportFormat* find_report_format(std::string_view name);

/// Writes the every-run formats of report_formats() (`<stem>.json`,
/// `<stem>.junit.xml` and `<stem>.md`) atomically into
/// `dir`, creating `dir` if needed. Errors: `io_error` naming the directory,
/// with a fix, when it cannot be created or written.
Result<void> write_report_files(const std::string& dir, const Report& report, const std::string& stem);

/// Writes a run's report as tests finish, so a crash keeps every finished test.
///
/// Design: a JSON-lines journal, `<dir>/<stem>.partial.jsonl`. The
/// constructor removes the outputs of an earlier run with this stem (so a
/// crash cannot leave a stale report that looks current) and writes the
/// first line, `{"journal": ..., "run": {...}, "schema": "heapgate.report/2"}`;
/// add() appends one line per record and flushes it to the kernel (no
/// fsync: a crash of the process loses nothing, a crash of the machine may).
/// Each add costs one record's serialization, so 1,000 tests cost 1,000
/// small appends rather than 1,000 rewrites; the final JSON reuses those
/// lines unless records() was asked for them to change. finish() writes the
/// three files of write_report_files() and removes the journal. read_report()
/// recovers a journal left by a crash (`run.complete == false`), ignoring a
/// last line cut off mid-write. Records are also kept in memory (report()).
///
/// Not thread-safe: call from one thread (gtest calls listeners serially).
class ReportWriter {
 public:
  /// Opens the journal. Never fails here: an error (an unwritable `dir`) is
  /// kept and returned by every add() and by finish().
  ReportWriter(std::string dir, std::string stem, RunInfo run);
  ~ReportWriter();
  ReportWriter(const ReportWriter&) = delete;
  ReportWriter& operator=(const ReportWriter&) = delete;

  /// Appends one finished test to the journal. Errors: `io_error` naming
  /// the journal; the record is kept in memory even then.
  Result<void> add(TestRecord record);
  /// Writes the final JSON, JUnit and Markdown files and removes the journal.
  /// A second call fails with `conflict`. With `complete` false, the report
  /// says the run did not finish (RunInfo::complete): a test was interrupted.
  Result<void> finish(bool complete = true);

  /// The report so far (every record added).
  const Report& report() const noexcept { return report_; }
  /// The records so far, to complete before finish() (the journal keeps
  /// them as added; the final files have the completed ones, serialized
  /// again).
  std::vector<TestRecord>& records() noexcept {
    lines_.clear();
    lines_current_ = false;
    return report_.tests;
  }
  /// `<dir>/<stem>.partial.jsonl`.
  const std::string& journal_path() const noexcept { return journal_->path(); }
  /// The journal's file descriptor (ReportJournal::fd()).
  int journal_fd() const noexcept { return journal_->fd(); }
  /// Why the journal could not be started (an uncreatable or unwritable
  /// `dir`), if so: every add() and finish() will fail with it.
  const std::optional<Error>& error() const noexcept { return journal_->error(); }

 private:
  std::string dir_;
  std::string stem_;
  Report report_;
  // record_json_line() of each record, kept until records() lets them change.
  std::vector<std::string> lines_;
  bool lines_current_ = true;
  std::optional<ReportJournal> journal_;  // always set after construction
  bool finished_ = false;
};

}  // namespace heapgate
