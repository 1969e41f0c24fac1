// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
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
  /// Its stacks, each with its own counts (StackSummary deltas against nothing).
  std::vector<StackSummary> stacks;
  /// Heap profiles it wrote, kept beside the report.
  std::vector<std::string> profiles;
  /// Where the stacks come from, for the failure text ("exact re-run").
  std::string source;
};

/// Runs a test again to explain it. Implementations: a child process in
/// exact mode (gtest_plugin), the test's own exact-mode profile.
class Explainer {
 public:
  virtual ~Explainer() = default;
  /// The test run once more, measuring that run: the stacks of its allocations.
  virtual Result<Explanation> explain(const std::string& test) = 0;
  /// The test run twice, measuring the second run: what it leaves live every
  /// time (empty after one-time initialization).
  virtual Result<Explanation> repeat(const std::string& test) = 0;
};

/// How gate_test() explains.
struct ExplainOptions {
  /// Stacks shown per failure.
  std::size_t top_stacks = 5;
  /// Ask the explainer at all (--heapgate_explain).
  bool enabled = true;
};

/// Gates one measured test: when a leak is suspected (leak_suspected()),
/// asks `explainer.repeat()` for the residue and applies `suppressions` to
/// its stacks; judges (judge()); and for a failure attaches the explaining
/// stacks (the repeat's for a leak, else `explainer.explain()`) and their
/// profiles. Fills the record's verdict, message, deltas, baseline, stacks
/// and profiles. Returns the failure text (failure_text()) for a record that
/// fails, "" otherwise.
std::string gate_test(TestRecord& record, Observation observation, const BaselineEntry* baseline,
                      const GatePolicy& policy, Explainer& explainer, const Suppressions& suppressions,
                      const ExplainOptions& options);

}  // namespace heapgate
