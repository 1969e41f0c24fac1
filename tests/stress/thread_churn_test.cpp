// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Counting windows opened and closed on one thread while other threads start,
// allocate and exit: the pattern of a test suite whose every test starts a
// thread pool. Installing or removing jemalloc's hooks at such a moment
// corrupts jemalloc 5.3's list of threads (docs/platform-facts.md), which hung
// or crashed such suites when heapgate did it around every test. The rounds
// come from HEAPGATE_STRESS_ROUNDS (ctest's `stress` label runs 100,000;
// scripts/stress.sh a million).
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/profile_scope.h"
#include "test_support.h"

namespace heapgate {
namespace {

long rounds() {
  const char* env = std::getenv("HEAPGATE_STRESS_ROUNDS");
  const long n = env != nullptr ? std::atol(env) : 0;
  return n > 0 ? n : 2000;
}

Mode mode() {
  const char* env = std::getenv("HEAPGATE_STRESS_MODE");
  if (env == nullptr) return Mode::counters;
  return parse_mode(env).value_or(Mode::counters);
}

// What a worker does: the allocations of a request handler (C and C++, sized
// and plain frees, a realloc), then it exits.
void work(int salt) {
  std::vector<std::unique_ptr<std::string>> kept;
  for (int i = 0; i < 8; ++i) kept.push_back(std::make_unique<std::string>(40 + i * salt % 50, 'x'));
  void* block = std::malloc(64);
  block = std::realloc(block, 256);
  std::free(block);
}

// Windows open and close while the previous round's threads are still
// running and exiting, so exits land on every step of opening and closing.
TEST(ThreadChurn, WindowsOpenAndCloseWhileThreadsStartAllocateAndExit) {
  HEAPGATE_REQUIRE_COUNTERS();
  const long n = rounds();
  std::vector<std::thread> previous;
  std::uint64_t measured = 0;
  for (long r = 0; r < n; ++r) {
    ProfileScope scope{"churn", mode()};
    std::vector<std::thread> started;
    for (int t = 0; t < 4; ++t) started.emplace_back(work, static_cast<int>(r + t));
    auto result = scope.finish();
    ASSERT_TRUE(result) << "round " << r << ": " << result.error().message();
    measured += result->allocations;
    for (auto& t : previous) t.join();
    previous = std::move(started);
  }
  for (auto& t : previous) t.join();
  EXPECT_GT(measured, static_cast<std::uint64_t>(n));
}

// The same churn, but each window waits for its own threads: then its counts
// are the same every round, exactly, whatever the scheduling. (After two
// rounds of warm-up: glibc allocates a new thread's TLS vector only until its
// cache of thread stacks holds enough stacks to reuse.)
TEST(ThreadChurn, AWindowThatJoinsItsThreadsCountsTheSameEveryRound) {
  HEAPGATE_REQUIRE_COUNTERS();
  const long n = rounds() / 4;
  std::uint64_t first_allocations = 0;
  std::uint64_t first_bytes = 0;
  for (long r = 0; r < n; ++r) {
    ScopeOptions options{mode()};
    options.profile_in_memory = true;
    ProfileScope scope{"joined", options};
    std::vector<std::thread> started;
    for (int t = 0; t < 4; ++t) started.emplace_back(work, t);
    for (auto& t : started) t.join();
    started.clear();
    started.shrink_to_fit();
    auto result = scope.finish();
    ASSERT_TRUE(result) << "round " << r << ": " << result.error().message();
    if (result->mode == Mode::exact) {
      // The stacks' counts, summed over the threads' tallies (each round's
      // threads take over the last round's), are the counters'.
      ASSERT_TRUE(result->profile) << "round " << r;
      ASSERT_EQ(result->profile->totals.accum_objects, result->allocations) << "round " << r;
      ASSERT_EQ(result->profile->totals.accum_bytes, result->allocated_bytes) << "round " << r;
      ASSERT_EQ(result->profile->totals.live_objects, result->live_allocations) << "round " << r;
    }
    if (r < 2) {
      first_allocations = result->allocations;
      first_bytes = result->allocated_bytes;
      EXPECT_GE(first_allocations, 4u * 10);
      continue;
    }
    ASSERT_EQ(result->allocations, first_allocations) << "round " << r;
    ASSERT_EQ(result->allocated_bytes, first_bytes) << "round " << r;
    ASSERT_EQ(result->live_allocations, 0u) << "round " << r;
  }
}

}  // namespace
}  // namespace heapgate
