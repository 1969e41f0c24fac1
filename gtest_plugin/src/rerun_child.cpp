// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "rerun_child.h"

#include "explainers.h"
#include "gtest_frames.h"
#include "test_requests.h"

namespace heapgate::gtest {

void collect_stacks(TestRecord& record, PluginRun& run, const Profile* in_memory) {
  record.call_sites_complete = gates_call_sites(record.name, run.options());
  if (in_memory != nullptr) {
    // --heapgate_internal_call_sites: the parent keeps only a test's call
    // sites; its stacks would make the report tens of kilobytes a test.
    std::vector<CallSite> all;
    std::vector<StackSample> top = summarize_profile(*in_memory, run.symbolizer(), run.options().top_stacks * 2,
                                                     record.call_sites_complete ? &all : nullptr);
    record.call_sites = record.call_sites_complete ? std::move(all) : call_sites_of(without_gtest_overhead(top));
    return;
  }
  if (record.profiles.empty()) return;
  // Twice as many as it shows: the parent picks those that explain its verdict (explaining_stacks()).
  record.stacks = summarize_profile(record.profiles.front(), run.symbolizer(), run.options().top_stacks * 2,
                                    record.call_sites_complete ? &record.call_sites : nullptr);
}

}  // namespace heapgate::gtest
