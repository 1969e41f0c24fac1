// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The anchors' workload as a GoogleTest test linked with heapgate::gtest_main:
// scripts/bench_anchors.sh runs it with --heapgate_mode=off (the control: the
// same GoogleTest machinery, nothing measured), counters and exact.
//   HEAPGATE_ANCHOR_ENTRIES=N anchor_suite --heapgate_mode=MODE
#include <gtest/gtest.h>

#include "map_workload.h"

TEST(Anchor, MapOfStrings) {
  auto entries = heapgate::bench::anchor_entries();
  ASSERT_TRUE(entries) << "heapgate: anchor_suite: " << heapgate::bench::kAnchorEntriesError;
  heapgate::bench::map_of_strings(*entries);
}
