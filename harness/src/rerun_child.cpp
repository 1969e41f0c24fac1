// SPDX-License-Identifier: MIT
// collect_stacks(): in the exact re-run child, a test's top stacks and call sites from its heap
// profile (on disk or in memory), for the parent to read from the child's report.
#include "rerun_child.h"

#include "explainers.h"
#include "test_requests.h"

namespace heapgate::harness {

void collect_stacks(TestRecord& record, PluginRun& run, const Profile* in_memory) {
  const bool gated = gates_call_sites(record.name, run.options());
  std::vector<CallSite> all;
  std::vector<StackSample> top;
  if (in_memory != nullptr) {
    // --heapgate_internal_call_sites: the parent keeps only a test's call
    // sites; its stacks would make the report tens of kilobytes a test.
    top = summarize_profile(*in_memory, run.normalizer(), run.options().top_stacks * 2, &all);
  } else if (!record.profiles.empty()) {
    // Twice as many as it shows: the parent picks those that explain its verdict (explaining_stacks()).
    record.stacks = summarize_profile(record.profiles.front(), run.normalizer(), run.options().top_stacks * 2, &all);
  } else {
    return;
  }
  record.call_sites_complete = keeps_all_call_sites(gated, all);
  if (record.call_sites_complete) {
    record.call_sites = std::move(all);
  } else if (in_memory != nullptr) {
    record.call_sites = call_sites_of(without_framework_stacks(top));
  }
}

}  // namespace heapgate::harness
