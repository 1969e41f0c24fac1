// SPDX-License-Identifier: MIT
// Gating one test with an explainer: the cheap measurement decides, a
// repeated or profiled run explains. The listener supplies the explainer (a
// child process in exact mode, or the test's own exact-mode profile);
// heapgate's tests supply a fake one and check the decisions in-process.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/error.h"
#include "heapgate/gate.h"
#include "heapgate/report.h"
#include "heapgate/suppressions.h"

namespace heapgate {

/// What one more run of a test showed.
struct Explanation {
  /// The run's metrics.
  Metrics metrics;
  /// Its stacks, each with its own counts (StackSample deltas against nothing).
  std::vector<StackSample> stacks;
  /// Heap profiles it wrote, kept beside the report.
  std::vector<std::string> profiles;
  /// Where the stacks come from, for the failure text ("exact re-run").
  std::string source;
  /// Every call site of the run (call_sites_of() over all its stacks), when
  /// the run measured them all (a test whose call sites are gated); else empty.
  std::vector<CallSite> call_sites;
  bool call_sites_complete = false;
};

/// Runs a test again to explain it. Implementations: child processes of the
/// test binary (gtest_plugin), or the test's own exact-mode profile.
class Explainer {
 public:
  virtual ~Explainer() = default;
  /// The test run once more, measuring that run: the stacks of its allocations.
  virtual Result<Explanation> explain(const std::string& test) = 0;
  /// The test run `repetitions` times in one process, counting (cheaply)
  /// what is live after each run, over all runs so far.
  virtual Result<LiveGrowth> growth(const std::string& test, int repetitions) = 0;
  /// The call sites whose live blocks grow: the live blocks after
  /// `repetitions` runs minus those after one, per further run, as stacks.
  virtual Result<Explanation> growing(const std::string& test, int repetitions) = 0;
  /// The test's metrics from a fresh process of its own (`counters`), to
  /// tell a change from timing noise; the GoogleTest plugin runs it twice
  /// there and counts the second run, so what a process sets up once is not
  /// counted. Default: unavailable (no confirmation).
  virtual Result<Measurement> remeasure(const std::string& test);
  /// `stack`, one of this explainer's, was made by the test framework for
  /// every test rather than by the test (GoogleTest's fixture object and flag
  /// saver: gtest_plugin/src/gtest_frames.h). The gate keeps such stacks out
  /// of what explains a failure (its stacks and call sites); a leak's growing
  /// stacks still meet the suppressions whole. Default: none is.
  virtual bool is_framework_stack(const StackSample& stack) const;
};

/// How gate_test() explains.
struct ExplainOptions {
  /// Stacks shown per failure.
  std::size_t top_stacks = 5;
  /// Run the exact-mode explanations (--heapgate_explain): stacks, growing
  /// call sites, suppressions. The cheap growth check runs either way.
  bool enabled = true;
  /// Runs of a test that ended with live blocks, to tell growth from
  /// one-time setup (--heapgate_leak_repetitions). Five, not three: a pool
  /// or queue that keeps its blocks for reuse grows to the most it has held,
  /// and that may rise two runs in a row (a lock-free queue's blocks: live
  /// after 1..4 runs 56, 57, 58, 58); a leak grows in every run. The counters
  /// child stops at the first run that stays level, so setup still costs two.
  int leak_repetitions = 5;
  /// Fresh runs that may clear a regression (--heapgate_confirm_runs): a
  /// regression stands only when every one of them regresses too. 0: none.
  /// At least 2 of them and a test that varied when recorded, grew in sizes
  /// only or by at most 1%: up to 4 more while none clears it.
  int confirm_runs = 2;
  /// Measure every test alone too (--heapgate_measure_alone): one fresh
  /// process per test (`explainer.remeasure()`), kept as TestRecord::alone so
  /// a recorded baseline knows how the test measures alone.
  bool measure_alone = false;
};

/// Gates one measured test:
/// 1. when a leak is suspected (leak_suspected()), asks `explainer.growth()`
///    whether live blocks grow with repetitions (grows()); if they do, asks
///    `explainer.growing()` for the growing call sites, and when every one
///    of them matches `suppressions`, the leak is suppressed and its blocks
///    leave the judged metrics (and so the baseline);
/// 2. judges (judge()); a `regressed` test is measured again in up to
///    `confirm_runs` fresh processes (`explainer.remeasure()`), and when one
///    of them is within the baseline, or alone grows nothing beyond the
///    baseline's `alone` band (compare_alone() does not regress: the same or
///    less), the regression is not reproducible — timing
///    noise or state earlier tests left, not a change — and the test passes
///    with a note; the first fresh run is kept as the record's `alone`; an
///    `improved` test with company gets one fresh run, and passes with a note
///    when that run does not improve too (improvement_clears());
/// 3. for a failure attaches the explaining stacks (the growing sites for a
///    leak, else `explainer.explain()`'s) and their profiles.
/// Fills the record's metrics (less suppressed blocks), growth, verdict,
/// message, deltas, baseline, stacks and profiles. Returns the failure text
/// (failure_text()) for a record that fails, "" otherwise.
std::string gate_test(TestRecord& record, Observation observation, const BaselineEntry* baseline,
                      const GatePolicy& policy, Explainer& explainer, const Suppressions& suppressions,
                      const ExplainOptions& options);

}  // namespace heapgate
