// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A Catch2 v2 suite linked with heapgate::catch2_main, run as a child process
// by framework_faces_test. Each test case has a known allocation behaviour;
// SAMPLE_EXTRA=N makes "counted" allocate N more times, a regression without
// rebuilding. The names hold characters Catch2's test spec treats specially
// (`,`), which the re-run children must select exactly.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>
#include <vector>

#include "heapgate/catch2.h"
#include "sample_workload.h"

using namespace sample_workload;  // the workload of both sample suites

TEST_CASE("clean, with a comma", "[sample]") {
  allocate_and_free(10, 64);
  CHECK(true);
}

TEST_CASE("counted", "[sample][steady]") {
  allocate_and_free(7, 128);
  planted_extra(extra_allocations());
}

TEST_CASE("leaks", "[sample]") { leak_three_blocks(); }

TEST_CASE("over budget", "[sample]") {
  HEAPGATE_LIMIT_ALLOCATIONS(5);
  allocate_and_free(8, 32);
}

TEST_CASE("threaded", "[sample][steady]") {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([] { allocate_and_free(25, 48); });
  for (auto& thread : threads) thread.join();
}

TEST_CASE("sections share their test case's window", "[sample]") {
  std::vector<int> numbers(100, 1);
  SECTION("first") {
    SECTION("nested") {
      SECTION("deeper") { allocate_and_free(1, 32); }
    }
  }
  SECTION("second") { allocate_and_free(3, 32); }
  CHECK(numbers.size() == 100);
}

// Nested as deep as the test case before it: run after it, it counts what
// it counts alone.
TEST_CASE("more sections", "[sample]") {
  SECTION("a") {
    SECTION("b") {
      SECTION("c") { allocate_and_free(2, 16); }
    }
  }
}

// Fails its own assertion: its framework's failure is the test's, and
// heapgate judges nothing more (its framework keeps the failure's records).
TEST_CASE("fails its own assertion", "[sample]") {
  leak_three_blocks();
  CHECK(1 == 2);
}
