// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// mixed_workload.h as GoogleTest tests linked with heapgate::gtest_main, for
// scripts/bench_paired.sh (run with --heapgate_mode=off, counters, exact):
//   Mixed.StringsAndVectors  one thread, HEAPGATE_MIXED_ENTRIES entries (3 allocations each)
//   Mixed.EightThreads       the same entries split over 8 threads, all in the test's one window
//   HEAPGATE_MIXED_ENTRIES=N mixed_suite --gtest_filter=Mixed.StringsAndVectors --heapgate_mode=MODE
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "mixed_workload.h"

TEST(Mixed, StringsAndVectors) {
  auto entries = heapgate::bench::mixed_entries();
  ASSERT_TRUE(entries) << "heapgate: mixed_suite: " << heapgate::bench::kMixedEntriesError;
  heapgate::bench::mixed_churn(0, *entries, heapgate::bench::kMixedLive);
}

// The same allocations from 8 threads at once: thread t makes entries t, t+8, ...
// of the one-thread test's sizes (entries first..first+share), and keeps an
// eighth of its live entries. Starting the threads adds a few allocations of
// std::thread's own.
TEST(Mixed, EightThreads) {
  auto entries = heapgate::bench::mixed_entries();
  ASSERT_TRUE(entries) << "heapgate: mixed_suite: " << heapgate::bench::kMixedEntriesError;
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  int first = 0;
  for (int t = 0; t < kThreads; ++t) {
    const int share = *entries / kThreads + (t < *entries % kThreads ? 1 : 0);
    threads.emplace_back(heapgate::bench::mixed_churn, first, share, heapgate::bench::kMixedLive / kThreads);
    first += share;
  }
  for (auto& thread : threads) thread.join();
}
