// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Budgets as people write them: sizes with units, and a budget for one block
// of a test. Run by gtest_plugin_test, one test at a time.
#include <gtest/gtest.h>

#include <cstdlib>

#include "heapgate/gtest.h"

namespace {

void* volatile g_sink = nullptr;

void allocate_and_free(int blocks, std::size_t size) {
  for (int i = 0; i < blocks; ++i) {
    g_sink = std::malloc(size);
    std::free(g_sink);
  }
}

}  // namespace

TEST(Budget, SizeWithUnitsWithin) {
  HEAPGATE_LIMIT_ALLOCATED_BYTES("1 KiB");
  HEAPGATE_LIMIT_ALLOCATIONS(0 + 3);
  allocate_and_free(3, 64);
}

TEST(Budget, SizeWithUnitsOver) {
  HEAPGATE_LIMIT_ALLOCATED_BYTES("0.1 KB");  // 100 bytes
  allocate_and_free(3, 64);
}

TEST(Budget, MalformedSizeFails) { HEAPGATE_LIMIT_PEAK_BYTES("12 parsecs"); }

TEST(Budget, ScopedBlockOver) {
  allocate_and_free(5, 64);  // setup: outside the block's budget
  {
    HEAPGATE_SCOPED_LIMIT_ALLOCATIONS(2);
    allocate_and_free(3, 64);
  }
}

TEST(Budget, ScopedBlockWithin) {
  allocate_and_free(5, 64);
  {
    HEAPGATE_SCOPED_LIMIT_ALLOCATIONS(3);
    HEAPGATE_SCOPED_LIMIT_PEAK_BYTES("1 KiB");
    allocate_and_free(3, 64);
  }
}
