// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "rerun_child.h"

#include "explainers.h"
#include "test_requests.h"

namespace heapgate::gtest {

void collect_stacks(TestRecord& record, PluginRun& run) {
  if (record.profiles.empty()) return;
  record.call_sites_complete = gates_call_sites(record.name, run.options());
  // Twice as many as it shows: the parent picks those that explain its verdict (explaining_stacks()).
  record.stacks = summarize_profile(record.profiles.front(), run.symbolizer(), run.options().top_stacks * 2,
                                    record.call_sites_complete ? &record.call_sites : nullptr);
}

}  // namespace heapgate::gtest
