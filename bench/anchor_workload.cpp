// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The anchors' workload as a plain program: no heapgate, no GoogleTest, the
// allocator it is linked or preloaded with. scripts/bench_anchors.sh runs it
// as is (glibc), with jemalloc preloaded, built with -fsanitize=leak or
// -fsanitize=address, and under heaptrack and Valgrind.
//   HEAPGATE_ANCHOR_ENTRIES=N anchor_workload   (2N allocations; default in map_workload.h)
#include <cstdio>

#include "map_workload.h"

int main() {
  auto entries = heapgate::bench::anchor_entries();
  if (!entries) {
    std::fprintf(stderr, "heapgate: anchor_workload: %s\n", heapgate::bench::kAnchorEntriesError);
    return 2;
  }
  heapgate::bench::map_of_strings(*entries);
  return 0;
}
