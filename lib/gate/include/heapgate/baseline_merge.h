// SPDX-License-Identifier: MIT
// Merging a run into a baseline: what any path writes into a baseline — the first
// run of a suite, --heapgate_update_baselines, `heapgate accept`, --ratchet,
// --calibrate, `heapgate bench compare --update` — and what it refuses, with
// the same rules and words for all (docs/design.md §6a, "One baseline
// writer"). Pure: the faces read and write the files
// (heapgate/baseline.h); this decides which entries change. Implemented in
// lib/gate/src/baseline_merge.cpp.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/report.h"

namespace heapgate {

/// Who is writing (only what differs between them is listed):
/// - `first_run`: a run that found no baseline records one;
/// - `update`: --heapgate_update_baselines, `bench compare --update`;
/// - `accept`: `heapgate accept` (may `force` sampled over exact);
/// - `ratchet`: --ratchet, which writes improvements only;
/// - `calibrate`: --calibrate, entries from several runs with noise bands.
enum class BaselineAuthor { first_run, update, accept, ratchet, calibrate };

/// A run records a baseline as it runs: the first run of a suite (no
/// baseline yet), or when asked to (`update_requested`). The one place that
/// says so, for the plugin, `heapgate run` and `bench compare`.
bool run_records_baseline(bool baseline_exists, bool update_requested) noexcept;

struct BaselineMergeRules {
  BaselineAuthor author = BaselineAuthor::accept;
  /// Only these tests; empty: every test of the run.
  std::set<std::string> select;
  /// Sampled estimates may replace an exact entry (`heapgate accept --force`).
  bool force = false;
};

/// A record that is not written, and why, in words every author prints the same.
struct BaselineRefusal {
  std::string test;
  std::string reason;
};

/// What writing did.
struct BaselineMerge {
  BaselineUpdate update;
  /// Records left out: failed their own assertions, measured nothing,
  /// did not finish, or regressed (a ratchet never writes a regression).
  std::vector<BaselineRefusal> refused;
  /// Why nothing at all was written, when so: the run did not finish, or
  /// its sampled estimates would replace exact entries without `force`;
  /// `blocked_fix` says what to do.
  std::string blocked;
  std::string blocked_fix;
};

/// Records `run` into `baseline` by `rules` (pure; the caller writes the
/// file): the entries of the selected records that were measured, each
/// replacing its test's entry (update_entries(): hand-edited tolerances
/// kept), and the run's fingerprint. Refused, whoever writes: a record that
/// failed its own assertions, measured nothing or did not finish; every
/// record of a run that did not finish; sampled estimates over an exact
/// entry unless `force` (then nothing is written); for `ratchet`, every
/// record but the improved ones.
BaselineMerge merge_run_into(Baseline& baseline, const Report& run, const BaselineMergeRules& rules);

/// The same for `calibrate`: the entries of several runs of one build
/// (calibrated_entries(): medians and noise bands), with the refusals of
/// the first run.
BaselineMerge merge_runs_into(Baseline& baseline, const std::vector<Report>& runs, const BaselineMergeRules& rules);

/// One line for the log: "created DIR/x.json (12 tests)", "updated DIR/x.json
/// (1 added, 2 changed, 9 unchanged)".
std::string describe_baseline_write(const std::string& path, bool existed, const BaselineMerge& write);

}  // namespace heapgate
