// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// 1,000 trivial tests (one small allocation each) and one allocation-heavy
// test, linked with heapgate::gtest_main: what listener_bench runs per mode.
#include <gtest/gtest.h>

#include <string>

#include "map_workload.h"

using heapgate::bench::escape;

// The rows of ten names stay as written.
// clang-format off
#define HEAPGATE_TRIVIAL(n)            \
  TEST(Trivial, Test##n) {             \
    std::string s(40, 'x');            \
    escape(s.data());                  \
  }
#define HEAPGATE_TRIVIAL10(n)                                                               \
  HEAPGATE_TRIVIAL(n##0) HEAPGATE_TRIVIAL(n##1) HEAPGATE_TRIVIAL(n##2) HEAPGATE_TRIVIAL(n##3) \
  HEAPGATE_TRIVIAL(n##4) HEAPGATE_TRIVIAL(n##5) HEAPGATE_TRIVIAL(n##6) HEAPGATE_TRIVIAL(n##7) \
  HEAPGATE_TRIVIAL(n##8) HEAPGATE_TRIVIAL(n##9)
#define HEAPGATE_TRIVIAL100(n)                                                                      \
  HEAPGATE_TRIVIAL10(n##0) HEAPGATE_TRIVIAL10(n##1) HEAPGATE_TRIVIAL10(n##2) HEAPGATE_TRIVIAL10(n##3) \
  HEAPGATE_TRIVIAL10(n##4) HEAPGATE_TRIVIAL10(n##5) HEAPGATE_TRIVIAL10(n##6) HEAPGATE_TRIVIAL10(n##7) \
  HEAPGATE_TRIVIAL10(n##8) HEAPGATE_TRIVIAL10(n##9)
// clang-format on

HEAPGATE_TRIVIAL100(1)
HEAPGATE_TRIVIAL100(2)
HEAPGATE_TRIVIAL100(3)
HEAPGATE_TRIVIAL100(4)
HEAPGATE_TRIVIAL100(5)
HEAPGATE_TRIVIAL100(6)
HEAPGATE_TRIVIAL100(7)
HEAPGATE_TRIVIAL100(8)
HEAPGATE_TRIVIAL100(9)
HEAPGATE_TRIVIAL100(10)

// 200,000 allocations in a std::map<int, std::string> workload.
TEST(Heavy, MapOfStrings) { heapgate::bench::map_of_strings(100000); }
