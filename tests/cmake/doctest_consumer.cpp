// SPDX-License-Identifier: MIT
// The doctest suite the find_package consumers build with an installed
// heapgate::doctest_main (no main() here) and run with --heapgate_strict:
// exactly 3 allocations within a budget of 3, so the run passes only when
// heapgate measured the test case and found it within budget.
#include <doctest/doctest.h>

#include <cstdlib>

#include "heapgate/doctest.h"

TEST_CASE("three blocks") {
  HEAPGATE_LIMIT_ALLOCATIONS(3);
  void* volatile blocks[3] = {};
  for (auto& block : blocks) block = std::malloc(100);
  for (auto& block : blocks) {
    CHECK(block != nullptr);
    std::free(block);
  }
}
