// SPDX-License-Identifier: MIT
// The gate as the verbs apply it to saved reports (run, compare, accept,
// bench): reading a report directory, each binary's baseline file, judging
// reports again, the ratchet, the summary table and the exit code.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/error.h"
#include "heapgate/report.h"

namespace heapgate::runner {

/// Reads the merged reports of a report directory: every `<dir>/*.json`
/// except shard reports (`*.shard-*`), sorted by file name; `dir` may also
/// name one report file. Errors:
/// `io_error` naming the directory when it cannot be listed or holds no
/// report; a report's own read error, naming the file.
Result<std::vector<Report>> read_reports(const std::string& dir);

/// Judges `report` again against `baseline` with the gate (judge_run() in
/// heapgate/gate.h), under the run's own strictness; regressions and
/// improvements say when the two fingerprints differ.
void rejudge(Report& report, const Baseline& baseline);

/// The gate's exit code over reports: gate_exit() of heapgate/gate.h.
int gate_exit_code(const std::vector<Report>& reports, bool allow_unmeasured = false);

/// --ratchet: accepts every `improved` test of each report into its baseline
/// (merge_run_into, heapgate/baseline_merge.h; written atomically) and prints what moved; other tests'
/// entries stay. Returns how many baselines changed.
Result<std::size_t> ratchet_improvements(const std::string& baselines_dir, const std::vector<Report>& reports);

/// The exit code of a gated run with --ratchet: the gate's own when it is not
/// 0, else exit_status(GateExit::baseline_changed) when a baseline was written, else 0.
int ratchet_exit_code(int gate_exit, std::size_t changed_baselines);

/// Prints one line per report (binary: tests and the count per verdict), then
/// each test that did not pass with the first line of its explanation.
void print_summary(std::FILE* out, const std::vector<Report>& reports);

}  // namespace heapgate::runner
