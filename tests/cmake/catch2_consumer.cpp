// SPDX-License-Identifier: MIT
// The Catch2 suite the find_package consumers build with an installed
// heapgate::catch2_main (no main() here) and run with --heapgate_strict:
// exactly 3 allocations within a budget of 3, so the run passes only when
// heapgate measured the test case and found it within budget.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "heapgate/catch2.h"

TEST_CASE("three blocks", "[consumer]") {
  HEAPGATE_LIMIT_ALLOCATIONS(3);
  void* volatile blocks[3] = {};
  for (auto& block : blocks) block = std::malloc(100);
  for (auto& block : blocks) {
    CHECK(block != nullptr);
    std::free(block);
  }
}
