// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What allocations outside every counting window cost a program linked with
// heapgate: the anchors' map workload (map_workload.h) with no window open,
// in a program that uses heapgate::ProfileScope, as a test binary does.
// scripts/bench_paired.sh runs it against bench/anchor_workload.cpp linked
// with jemalloc alone (anchor_workload_jemalloc).
//   outside_window                 the workload; no window ever opens
//   outside_window --window-first  one empty `counters` window opens and closes
//                                  first, so the counting is set up (with
//                                  HEAPGATE_COUNT_WITH=hooks: jemalloc's hooks
//                                  installed, which stay), then the workload
//   HEAPGATE_ANCHOR_ENTRIES=N      2N allocations (default in map_workload.h)
#include <cstdio>
#include <cstring>

#include "heapgate/profile_scope.h"
#include "map_workload.h"

int main(int argc, char** argv) {
  const bool window_first = argc > 1 && std::strcmp(argv[1], "--window-first") == 0;
  if (argc > 2 || (argc == 2 && !window_first)) {
    std::fprintf(stderr, "heapgate: outside_window: expected no argument or --window-first; fix: outside_window\n");
    return 2;
  }
  auto entries = heapgate::bench::anchor_entries();
  if (!entries) {
    std::fprintf(stderr, "heapgate: outside_window: %s\n", heapgate::bench::kAnchorEntriesError);
    return 2;
  }
  if (window_first) {
    heapgate::ProfileScope scope("outside_window", heapgate::Mode::counters);
    auto result = scope.finish();
    if (!result || result->mode != heapgate::Mode::counters) {
      std::fprintf(stderr, "heapgate: outside_window: the counters window did not count (%s); fix: link jemalloc\n",
                   result ? "mode is not counters" : result.error().message().c_str());
      return 1;
    }
  }
  heapgate::bench::map_of_strings(*entries);
  return 0;
}
