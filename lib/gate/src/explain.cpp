// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "heapgate/explain.h"

#include <algorithm>
#include <optional>

namespace heapgate {

std::string gate_test(TestRecord& record, Observation observation, const BaselineEntry* baseline,
                      const GatePolicy& policy, Explainer& explainer, const Suppressions& suppressions,
                      const ExplainOptions& options) {
  std::optional<Explanation> leak_run;
  std::string no_stacks = options.enabled ? std::string() : "--heapgate_explain=false";
  if (leak_suspected(observation, policy) && options.enabled) {
    // A leak is what recurs: the second of two runs tells a real leak from a
    // lazily initialised static, which allocates only once.
    auto repeated = explainer.repeat(record.name);
    if (!repeated) {
      no_stacks = repeated.error().message();
    } else if (repeated->metrics.live_allocations == 0 && repeated->metrics.live_bytes == 0) {
      observation.leak.residue = LeakResidue::one_time;
    } else {
      observation.leak.residue = LeakResidue::recurs;
      bool all_suppressed = !suppressions.empty();
      bool any_live_stack = false;
      for (const auto& s : repeated->stacks) {
        if (s.delta_live_objects <= 0) continue;
        any_live_stack = true;
        if (suppressions.match(s) == nullptr) all_suppressed = false;
      }
      if (all_suppressed && any_live_stack) {
        observation.leak.suppressed = true;
        observation.leak.suppressions_source = suppressions.source;
      }
      leak_run = std::move(*repeated);
    }
  }
  apply(judge(observation, baseline, policy), record);
  if (!is_failure(record.verdict, policy.strict)) return {};
  if (record.verdict == Verdict::unavailable) return failure_text(record, {});

  // Explain: the leak's own repeat, the test's own profile, or one more run.
  std::optional<Explanation> explained;
  if (record.verdict == Verdict::leaked && leak_run) {
    explained = std::move(leak_run);
  } else if (options.enabled) {
    auto run = explainer.explain(record.name);
    if (run) {
      explained = std::move(*run);
    } else {
      no_stacks = run.error().message();
    }
  }
  if (explained) {
    record.stacks = explaining_stacks(std::move(explained->stacks), record.verdict, options.top_stacks);
    for (auto& p : explained->profiles) {
      if (std::find(record.profiles.begin(), record.profiles.end(), p) == record.profiles.end()) record.profiles.push_back(p);
    }
  }
  return failure_text(record, explained ? explained->source : std::string(), no_stacks);
}

}  // namespace heapgate
