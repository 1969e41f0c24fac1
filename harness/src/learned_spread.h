// SPDX-License-Identifier: MIT
// The spread a baseline being recorded learns: a test that other threads
// allocated in while it ran (a server's thread pool, a background
// compaction) may count differently next time with no change in the code, so
// it is run a few times more in one child and the lowest and highest counts
// become its noise band. A test that allocated on its own thread alone is
// exact and is not run again. docs/design.md §6a, "Learned spread".
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "explainers.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"

namespace heapgate::harness {

/// More runs of each test whose spread is learned.
inline constexpr int kLearnedRuns = 2;

/// Tests that may vary get kCheapLearnedRuns more runs instead when those
/// extra runs add less than this to the recording run: a few runs of a small
/// threaded test often all land in one state (every sample of a 4-worker word
/// count saw one worker take all the work, then a gated run did not), and more
/// cost little. Bounded by what they add, not by the tests' own time: a suite
/// of 500 threaded tests of 4 ms each took 2.0 s `off` and 18.8 s to record,
/// 14.3 s of it the eight runs (the first run must stay within twice `off`).
inline constexpr double kCheapSpreadAddedMilliseconds = 1000;
inline constexpr int kCheapLearnedRuns = 8;

/// How many more runs tests that may vary and together took `milliseconds`
/// get: kCheapLearnedRuns while the runs beyond kLearnedRuns add less than
/// kCheapSpreadAddedMilliseconds, else kLearnedRuns.
constexpr int learned_runs_wanted(double milliseconds) noexcept {
  return milliseconds * (kCheapLearnedRuns - kLearnedRuns) < kCheapSpreadAddedMilliseconds ? kCheapLearnedRuns
                                                                                           : kLearnedRuns;
}
static_assert(learned_runs_wanted(100) == kCheapLearnedRuns && learned_runs_wanted(2000) == kLearnedRuns);

/// Other threads allocated or ran while the test ran, or its own thread
/// waited (and it allocated): its counts may depend on timing.
bool may_vary(const TestRecord& record);

/// Which tests a child of a recording runs: `names` when they fit in one
/// argument, else the run's own selection on this shard.
struct ChildTests {
  TestSelection selection;
  bool keep_shard = false;
};
ChildTests child_tests(std::vector<std::string> names);

/// What learning the spread runs: the tests that may vary, `runs` more times.
struct SpreadRequest {
  TestSelection selection;  // their names, or the run's own when the names are too many
  bool keep_shard = false;
  int runs = 0;
  std::size_t tests = 0;
  int runs_elsewhere = 0;
  int wanted = kLearnedRuns;  // more runs in all, kCheapLearnedRuns for cheap tests
};

/// The child's run for `tests` (those that may vary), or nothing to run.
/// `runs_elsewhere`: runs of them another child measures (the exact run that
/// records the call sites), besides the samples the records hold already.
std::optional<SpreadRequest> spread_request(const std::vector<const TestRecord*>& tests, int runs_elsewhere);

/// What the child measured, and how it ended.
struct SpreadSamples {
  Result<Report> report;
  sys::ProcessResult outcome;
};

/// Runs the request's child, stopped after `budget`.
SpreadSamples run_spread(RerunExplainer& explainer, const SpreadRequest& request, std::chrono::seconds budget);

/// Adds each run's metrics to its test's record (TestRecord::samples), and
/// says on stderr what was learned, or why not.
void take_spread(Report& run, const SpreadRequest& request, const SpreadSamples& samples, std::chrono::seconds budget);

/// spread_request(), run_spread() and take_spread() of `run`'s tests, one
/// after the other.
void learn_spread(Report& run, RerunExplainer& explainer, std::chrono::seconds budget);

}  // namespace heapgate::harness
