// SPDX-License-Identifier: MIT
// A run's report: RunInfo, TestRecord, Report, Interruption and LiveGrowth; its JSON
// (to_json(), record_json_line(), parse/read/write_report()) and merge_reports() of shards.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/allocator.h"
#include "heapgate/error.h"
#include "heapgate/fingerprint.h"
#include "heapgate/metrics.h"
#include "heapgate/stack_sample.h"
#include "heapgate/verdict.h"
#include "heapgate/vocabulary.h"

namespace heapgate {

/// The schema tag of JSON reports; a higher version is refused. Version 2
/// added the evidence a verdict rests on (TestRecord::confirmations,
/// leaks_checked, suppressed; RunInfo::accepting); version 1 reports are
/// still read (TestRecord::legacy_evidence).
inline constexpr std::string_view kReportSchema = "heapgate.report/2";
/// The oldest schema still read.
inline constexpr std::string_view kReportSchemaV1 = "heapgate.report/1";

/// What ran: one test binary, or one shard of it.
struct RunInfo {
  /// The test binary's file name.
  std::string binary;
  /// Its GNU build-id (hex), or "" when unknown.
  std::string build_id;
  /// The mode the run measured in (`off` when nothing could be measured).
  Mode mode = Mode::off;
  /// jemalloc's version string, or "" without jemalloc.
  std::string jemalloc_version;
  /// The host name.
  std::string host;
  /// When the run started, ISO-8601 UTC ("2024-05-01T12:00:00Z").
  std::string started_at;
  /// gtest sharding (GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS): -1 and 0 when
  /// the run was not sharded, and in merged reports.
  int shard_index = -1;
  int total_shards = 0;
  /// `unavailable` verdicts are failures (--heapgate_strict).
  bool strict = false;
  /// Why nothing could be measured, when the mode fell back to `off`.
  std::string unavailable_reason;
  /// False when the report was recovered from a ReportWriter journal: the run
  /// ended (crashed) before finish(), and tests after the last record are absent.
  bool complete = true;
  /// The environment of the run (JSON "fingerprint", absent when empty);
  /// accepting the run records it in the baseline.
  Fingerprint fingerprint;
  /// The run recorded its tests as the new baseline as it judged them (the
  /// first run of a binary, --heapgate_update_baselines): a change against
  /// the old entry was not a failure (GatePolicy::accepting). JSON
  /// "accepting", absent when false; judging the report again does the same.
  bool accepting = false;
};

/// Field-by-field equality.
bool operator==(const RunInfo& a, const RunInfo& b) noexcept;
bool operator!=(const RunInfo& a, const RunInfo& b) noexcept;

/// What stayed live after each of several runs of a test in one process
/// (the leak rule's evidence, docs/design.md §6a): element i is counted after
/// run i+1, over all runs so far. Empty when the test was not repeated.
struct LiveGrowth {
  std::vector<std::uint64_t> live_allocations;
  std::vector<std::uint64_t> live_bytes;

  bool empty() const noexcept { return live_allocations.empty(); }
};

bool operator==(const LiveGrowth& a, const LiveGrowth& b) noexcept;
bool operator!=(const LiveGrowth& a, const LiveGrowth& b) noexcept;

/// How a test that never finished ended (JSON "interrupted", absent for a
/// test that finished). Closed list, spelled as in JSON:
/// - `none`: the test finished.
/// - `crashed`: the test binary died of a signal (SIGSEGV, SIGABRT, …) while
///   the test ran.
/// - `hung`: the test was still running when a timeout ran out
///   (--heapgate_test_timeout, or `heapgate run --timeout`); heapgate stopped
///   the run, with the stacks of its threads when the plugin's watchdog did.
/// - `exited`: the test called exit() (or something did while it ran).
/// - `killed`: the test binary was killed from outside (SIGKILL, SIGTERM,
///   `heapgate run` interrupted) while the test ran.
enum class Interruption { none, crashed, hung, exited, killed };

/// Every Interruption but `none` with its name. `none` has no word: JSON
/// leaves the field out, so "" must not parse as a value.
inline constexpr Vocabulary<Interruption, 4> kInterruptionWords = {{
    {Interruption::crashed, "crashed"},
    {Interruption::hung, "hung"},
    {Interruption::exited, "exited"},
    {Interruption::killed, "killed"},
}};

/// The name as written in JSON ("crashed"); "" for none.
std::string_view to_string(Interruption interruption) noexcept;
/// Parses a name; the error names the value and lists the valid ones.
Result<Interruption> parse_interruption(std::string_view text);

/// The live blocks a suppression took out of a test's metrics.
struct SuppressedLeak {
  std::uint64_t allocations = 0;
  std::uint64_t bytes = 0;
  /// Where the matching suppressions come from ("suppressions.txt").
  std::string source;
};
bool operator==(const SuppressedLeak& a, const SuppressedLeak& b) noexcept;

/// Everything heapgate knows about one test of a run.
struct TestRecord {
  /// The full gtest name, "Suite.Test" (as gtest prints typed/param names).
  std::string name;
  /// Its two parts: test suite name and test name.
  std::string suite;
  std::string test;
  /// Where the test is defined, or "" / 0 when unknown.
  std::string file;
  int line = 0;
  /// The mode that measured this test.
  Mode mode = Mode::off;
  /// The metrics are estimates (sampled mode).
  bool estimated = false;
  Metrics metrics;
  /// Estimated metrics: their standard errors (JSON "standard_errors", absent
  /// for exact counts); each estimate lies within kSamplingConfidenceZ of
  /// them of the truth (docs/design.md §6b). peak_bytes, counted exactly by
  /// the hooks, has none.
  std::optional<Metrics> standard_errors;
  /// The part of the allocations other threads made (JSON "other_threads":
  /// {"allocations": N, "bytes": B}, absent when none): accepting the record
  /// stores it, and the gate then allows for scheduling (scheduling_allowance()).
  ThreadShare other_threads = {};
  /// The test's metrics from a fresh process of its own (JSON "alone",
  /// absent when not measured): with `--heapgate_measure_alone` for every
  /// test, else from the first confirmation run of a regression. Accepting
  /// the record stores it (BaselineEntry::alone).
  std::optional<Metrics> alone;
  /// The baseline's metrics, when the baseline has an entry for the test.
  std::optional<Metrics> baseline;
  /// The baseline entry's noise band, when it has one (JSON
  /// "baseline_noise", absent otherwise): a report shows the band the test
  /// was judged within beside this run (noise_band_text()).
  std::optional<NoiseBand> baseline_noise;
  /// A threaded test judged in parts (JSON "thread_parts": {"own_thread":
  /// {...}, "other_threads": {...}}, each {"now", "low", "high", "limit":
  /// {"allocations", "bytes"}, "banded": bool}; absent otherwise): which part
  /// was judged exactly, which within a band, and their limits.
  std::optional<ThreadPartsJudged> thread_parts;
  /// Per-metric comparison with the baseline (Comparison::deltas).
  std::vector<MetricDelta> deltas;
  Verdict verdict = Verdict::pass;
  /// Why the verdict is what it is, readable on one screen; "" for a pass.
  std::string message;
  /// The stacks that explain the verdict, most important first.
  std::vector<StackSample> stacks;
  /// Raw heap profiles (heap_v2) written for this test.
  std::vector<std::string> profiles;
  /// Wall-clock duration of the test, milliseconds.
  double duration_ms = 0;
  /// The test failed its own assertions (apart from heapgate's verdict).
  bool gtest_failed = false;
  /// HEAPGATE_LIMIT_* budgets: metric name → limit.
  std::map<std::string, std::uint64_t> budgets;
  /// Live blocks after repeated runs, when the test ended with live blocks
  /// (JSON "growth", absent when empty).
  LiveGrowth growth;
  /// The test's main call sites, when an exact run measured them (JSON
  /// "call_sites", absent when empty); accepting the record stores them in
  /// the baseline.
  std::vector<CallSite> call_sites;
  /// The baseline entry's call sites when this record's were compared with
  /// them (JSON "baseline_call_sites", absent when empty), so a report can
  /// show the change per call site (call_site_changes(), gate.h).
  std::vector<CallSite> baseline_call_sites;
  /// `call_sites` holds every call site of the test, not only the top few:
  /// it was measured for a test whose call sites are gated
  /// (HEAPGATE_GATE_CALL_SITES(), --heapgate_gate_call_sites). JSON
  /// "call_sites_complete", absent when false.
  bool call_sites_complete = false;
  /// The live blocks the test left were judged one-time setup (they stayed
  /// level across repetitions, or within what the baseline recorded as
  /// setup); JSON "setup_residue", absent when false. Accepting the record
  /// stores it in the baseline, so later runs need not repeat the test.
  bool setup_residue = false;
  /// Every block the test left live was freed later in the same run, by
  /// later tests (detail::released_since()): held, not leaked, so the test
  /// was not repeated to tell. JSON "released_later", absent when false.
  bool released_later = false;
  /// Metrics this run could not measure (not_measured_by(): the calling
  /// thread's bytes only), in kMetricNames order. JSON "not_measured" names
  /// them and "metrics" leaves them out; reports show them as not measured,
  /// and comparisons skip them. Absent when all five were measured.
  std::vector<MetricName> not_measured;
  /// The test never finished (JSON "interrupted", absent for `none`): it has
  /// no measurements, `gtest_failed` is set, and `message` says what ended
  /// it. Such a record fails the run, and its report is incomplete.
  Interruption interrupted = Interruption::none;

  // The evidence the verdict rests on beyond the metrics, so that judging the
  // record again (`heapgate compare`, judge_run()) gives the same verdict.
  /// The fresh runs that tried to confirm a regression, in order (JSON
  /// "confirmations": their metrics, each with its "other_threads" when
  /// other threads allocated; absent when none): one within the baseline,
  /// or alone within the entry's `alone` band, made it not reproducible.
  std::vector<Measurement> confirmations;
  /// The further runs of the test that a run recording a baseline made to
  /// learn its spread, in order (JSON "samples", written as "confirmations"
  /// are; absent when none):
  /// with `metrics`, the runs whose lowest and highest values become the
  /// baseline's noise band (baseline_entries()). Only tests that other
  /// threads allocated in are sampled (docs/design.md §6a, "Learned spread").
  std::vector<Measurement> samples;
  /// The leak rule applied to this test (the run's --heapgate_check_leaks and
  /// the test's HEAPGATE_EXPECT_NO_LEAKS / HEAPGATE_ALLOW_LEAKS). JSON
  /// "leaks_checked", absent when true.
  bool leaks_checked = true;
  /// The live blocks suppressions took out of `metrics` (JSON "suppressed",
  /// absent when none): the leak was suppressed.
  std::optional<SuppressedLeak> suppressed;
  /// Read from a version 1 report, which kept no evidence: judged again the
  /// old way (a leak stays a leak, other live blocks stay out of the leak
  /// rule, a regression stays one). Not written.
  bool legacy_evidence = false;
};

/// Field-by-field equality of what a report keeps (doubles compare exactly:
/// JSON round trips are exact); `legacy_evidence`, never written, is left out.
bool operator==(const TestRecord& a, const TestRecord& b) noexcept;
bool operator!=(const TestRecord& a, const TestRecord& b) noexcept;

/// A run's report: what ran and one record per test.
///
/// JSON (keys sorted; `tests` keeps the order of `Report::tests`):
/// `{"run": {...}, "schema": "heapgate.report/2", "tests": [{...}, ...]}`,
/// each record an object with the TestRecord field names; `baseline` is null
/// when absent; `mode`, `verdict` and metric names are spelled as the enums.
struct Report {
  RunInfo run;
  std::vector<TestRecord> tests;
};

/// Field-by-field equality (doubles compare exactly: JSON round trips are exact).
bool operator==(const Report& a, const Report& b) noexcept;
bool operator!=(const Report& a, const Report& b) noexcept;

/// The JSON report: sorted keys, 2-space indent, trailing newline. Stable:
/// parse_report_json() then to_json() gives back identical bytes for any
/// text this function wrote. Non-finite doubles are written as 0 and invalid
/// UTF-8 as U+FFFD. Pure.
std::string to_json(const Report& report);

/// One record as one line of compact JSON with sorted keys, no newline: a
/// line of the report journal, indented as it is in to_json()'s report. Pure.
std::string record_json_line(const TestRecord& record);

/// The record of a test that never finished: its name (suite and test split
/// at the first '.'), `interrupted`, `gtest_failed`, verdict `unavailable`
/// and a message that says what ended it, followed by `detail` (a signal's
/// name, how long it ran, the threads' stacks) when not empty. Pure.
TestRecord interrupted_record(std::string name, Interruption how, const std::string& detail);

/// The journal line that says a test was interrupted, as a plugin writes it
/// from a signal handler (docs/design.md §7): `{"interrupted":"<how>",
/// "test":"<name>"` followed by `,"signal":N}` or `}`; here the part up to
/// and including the name, JSON-escaped. A journal reader turns such a line
/// into interrupted_record(), unless a full record of the test follows it. Pure.
std::string interruption_line_prefix(Interruption how, std::string_view name);

/// to_json() of a report whose records are already serialized: `run`, then
/// `record_lines` (record_json_line() of each record, in order). A writer
/// that journaled each record serializes it once. Pure.
std::string report_json(const RunInfo& run, const std::vector<std::string>& record_lines);

/// Parses a JSON report; `source` names it in errors. Errors: `parse_error`
/// at `source:line:column` for bad JSON, or at `source: /json/pointer` for
/// a wrong shape (missing or newer schema, wrong types, unknown keys,
/// enums). Required per record: name, metrics, mode, verdict; the other
/// fields default when absent. Pure.
Result<Report> parse_report_json(std::string_view text, std::string_view source);

/// Reads a report. `path` may be:
/// - a JSON report (`<stem>.json`);
/// - a ReportWriter journal (`<stem>.partial.jsonl`): the records of a run
///   that crashed, with `run.complete == false`;
/// - a `<stem>.json` that does not exist while `<stem>.partial.jsonl` does:
///   the journal is read, as above;
/// - a directory holding exactly one report stem (json or journal).
/// Errors: `io_error` when nothing is found or readable (naming the path),
/// `parse_error` as parse_report_json, `invalid_argument` for a directory
/// with several reports.
Result<Report> read_report(const std::string& path);

/// Writes to_json(report) to `path` atomically. Errors: `io_error` naming the path.
Result<void> write_report(const std::string& path, const Report& report);

/// Sorts `report.tests` by name (stable), the order of merged reports.
void sort_tests(Report& report);

/// Merges shard reports into one, losslessly: every record of every input,
/// sorted by name. A test present in several inputs is kept once if the
/// records are identical, else it is a `conflict` error naming the test.
/// Run info: binary, build_id, mode, jemalloc_version and total_shards must
/// agree (else `conflict` naming the field and both values); host keeps the
/// distinct hosts joined by ", "; started_at the earliest; strict and
/// unavailable_reason any input's; complete only if all are; the shard
/// fields become -1 and 0. Shard reports (total_shards N > 0) must be each
/// of the N shards exactly once: a missing shard (a CI job that failed to
/// upload its report would otherwise drop its tests from the gate silently)
/// or a shard given twice is a `conflict` naming the shard. An empty list is
/// `invalid_argument`. Pure.
enum class MissingShards { refuse, allow };
Result<Report> merge_reports(const std::vector<Report>& reports, MissingShards missing = MissingShards::refuse);

}  // namespace heapgate
