// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A doctest suite linked with heapgate::doctest_main, run as a child process
// by framework_faces_test. Each test case has a known allocation behaviour;
// SAMPLE_EXTRA=N makes "counted" allocate N more times, a regression without
// rebuilding. The names hold characters doctest's filters treat specially
// (`,` and the wildcard `*`), which the re-run children must select exactly.
#include <doctest/doctest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "heapgate/doctest.h"
#include "sample_workload.h"

using namespace sample_workload;  // the workload of both sample suites

TEST_CASE("clean, with a comma * and a star") {
  allocate_and_free(10, 64);
  CHECK(true);
}

TEST_CASE("counted") {
  allocate_and_free(7, 128);
  planted_extra(extra_allocations());
}

TEST_CASE("leaks") { leak_three_blocks(); }

TEST_CASE("over budget") {
  HEAPGATE_LIMIT_ALLOCATIONS(5);
  allocate_and_free(8, 32);
}

TEST_CASE("threaded") {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([] { allocate_and_free(25, 48); });
  for (auto& thread : threads) thread.join();
}

TEST_CASE("subcases share their test case's window") {
  std::vector<int> numbers(100, 1);
  SUBCASE("first") {
    SUBCASE("nested") {
      SUBCASE("deeper") { allocate_and_free(1, 32); }
    }
  }
  SUBCASE("second") { allocate_and_free(3, 32); }
  CHECK(numbers.size() == 100);
}

// Nested as deep as the test case before it: run after it, it counts what
// it counts alone.
TEST_CASE("more subcases") {
  SUBCASE("a") {
    SUBCASE("b") {
      SUBCASE("c") { allocate_and_free(2, 16); }
    }
  }
}

// Fails its own assertion: its framework's failure is the test's, and
// heapgate judges nothing more (its framework keeps the failure's records).
TEST_CASE("fails its own assertion") {
  leak_three_blocks();
  CHECK(1 == 2);
}

// A test case in a TEST_SUITE: recorded as "parser.in a suite", selected in
// a child by --test-case= and --test-suite= together.
TEST_SUITE("parser") {
  TEST_CASE("in a suite") { allocate_and_free(4, 16); }
}
