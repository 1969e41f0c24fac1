// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// mixed_workload.h as a plain program: no heapgate, no GoogleTest, the
// allocator it is linked or preloaded with. scripts/bench_paired.sh runs it
// with jemalloc preloaded, built with -fsanitize=leak, and under heaptrack and
// Valgrind massif, beside bench/mixed_suite.cpp in heapgate's modes.
//   HEAPGATE_MIXED_ENTRIES=N mixed_workload   (3N allocations; default in mixed_workload.h)
#include <cstdio>

#include "mixed_workload.h"

int main() {
  auto entries = heapgate::bench::mixed_entries();
  if (!entries) {
    std::fprintf(stderr, "heapgate: mixed_workload: %s\n", heapgate::bench::kMixedEntriesError);
    return 2;
  }
  heapgate::bench::mixed_churn(0, *entries, heapgate::bench::kMixedLive);
  return 0;
}
