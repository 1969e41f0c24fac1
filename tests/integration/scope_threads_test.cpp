// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Which thread made a scope's allocations: ScopeResult::other_thread_* count
// the threads other than the one that started the scope, exactly, including
// threads that exit before the scope finishes (their counters fold into the
// process totals when they exit).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "alloc_counting.h"
#include "heapgate/profile_scope.h"
#include "test_support.h"
#include "workloads.h"

namespace heapgate {
namespace {

using testing::allocate_blocks;
using testing::free_blocks;

TEST(ScopeThreads, AllocationsOfAThreadStartedInsideCountAsOtherThreads) {
  HEAPGATE_REQUIRE_COUNTERS();
  std::vector<void*> blocks;
  blocks.reserve(100);
  ProfileScope scope{"threads", Mode::counters};
  // Starting the thread allocates on this thread (std::thread's state, glibc's
  // TLS vector): those count as the starting thread's, not as other threads'.
  std::thread worker([&] { allocate_blocks(blocks, 100, 64); });
  worker.join();  // the worker has exited: its counts were folded
  auto r = scope.finish();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->other_thread_allocations, 100u);
  EXPECT_EQ(r->other_thread_bytes, 100u * 64);
  EXPECT_GT(r->allocations, r->other_thread_allocations);  // the thread's start-up, on this thread
  EXPECT_GE(r->live_allocations, 100u);                    // the exited worker's blocks are still live
  EXPECT_GE(r->live_bytes, 100u * 64);
  EXPECT_GE(r->peak_bytes, r->live_bytes);
  free_blocks(blocks);
}

TEST(ScopeThreads, SingleThreadedBodyHasNoOtherThreadAllocations) {
  HEAPGATE_REQUIRE_COUNTERS();
  std::vector<void*> blocks;
  blocks.reserve(50);
  ProfileScope scope{"one thread", Mode::counters};
  allocate_blocks(blocks, 50, 128);
  free_blocks(blocks);
  allocate_blocks(blocks, 20, 128);
  auto r = scope.finish();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->allocations, 70u);
  EXPECT_EQ(r->other_thread_allocations, 0u);
  EXPECT_EQ(r->other_thread_bytes, 0u);
  EXPECT_EQ(r->live_allocations, 20u);
  EXPECT_EQ(r->peak_bytes, 50u * 128);  // one thread: the peak is exact
  free_blocks(blocks);
}

// Threads that start and exit one after another inside the scope: each one's
// counts and live blocks fold into the totals when it exits, and its slot is
// reused by the next.
TEST(ScopeThreads, ShortLivedThreadsFoldTheirCountsExactly) {
  HEAPGATE_REQUIRE_COUNTERS();
  constexpr std::size_t kThreads = 50;
  std::vector<std::vector<void*>> blocks(kThreads);
  for (auto& b : blocks) b.reserve(10);
  ProfileScope scope{"short-lived threads", Mode::counters};
  for (std::size_t t = 0; t < kThreads; ++t) {
    std::thread worker([&blocks, t] {
      allocate_blocks(blocks[t], 10, 64);
      std::free(blocks[t].back());  // one freed by its own thread
      blocks[t].pop_back();
    });
    worker.join();
  }
  auto r = scope.finish();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->other_thread_allocations, kThreads * 10);
  EXPECT_EQ(r->other_thread_bytes, kThreads * 10 * 64);
  EXPECT_GE(r->live_allocations, kThreads * 9);
  EXPECT_GE(r->live_bytes, kThreads * 9 * 64);
  EXPECT_GE(r->peak_bytes, r->live_bytes);
  for (auto& b : blocks) free_blocks(b);
}

// The opener exits before the scope finishes on another thread: what the
// finishing thread allocated counts as another thread's.
TEST(ScopeThreads, OpenerThatExitedBeforeTheFinishKeepsItsOwnCounts) {
  HEAPGATE_REQUIRE_COUNTERS();
  std::vector<void*> opener_blocks;
  opener_blocks.reserve(5);
  std::vector<void*> main_blocks;
  main_blocks.reserve(7);
  std::optional<ProfileScope> scope;
  std::thread opener([&] {
    scope.emplace("handed over", Mode::counters);
    allocate_blocks(opener_blocks, 5, 32);
  });
  opener.join();
  allocate_blocks(main_blocks, 7, 256);
  auto r = scope->finish();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->allocations, 12u);
  EXPECT_EQ(r->other_thread_allocations, 7u);
  EXPECT_EQ(r->other_thread_bytes, 7u * 256);
  EXPECT_EQ(r->live_allocations, 12u);
  EXPECT_EQ(r->live_bytes, 5u * 32 + 7u * 256);
  free_blocks(opener_blocks);
  free_blocks(main_blocks);
}

// fork() while another thread holds the locks a hook may take (as a thread
// allocating in a window does, briefly, when a page gets its first block). The
// child has only the forking thread, so a lock copied as held would never be
// released there, and the child's first allocation needing it would hang.
// fork() must wait for the locks instead and hand the child free ones.
TEST(ScopeThreads, AChildForkedWhileAHookHoldsItsLocksCanAllocateInTheWindow) {
  HEAPGATE_REQUIRE_COUNTERS();
  ProfileScope scope{"fork", Mode::counters};
  std::atomic<bool> held{false};
  std::thread holder([&] {
    detail::lock_counting_for_fork();
    held.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    detail::unlock_counting_after_fork();
  });
  while (!held.load()) std::this_thread::yield();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Fresh pages of several size classes: each gets its run of stamps.
    std::vector<void*> blocks;
    blocks.reserve(64);
    for (std::size_t size = 8; size <= (std::size_t{1} << 20); size *= 4) {
      for (int i = 0; i < 8; ++i) blocks.push_back(std::malloc(size));
    }
    for (void* block : blocks) std::free(block);
    _exit(0);
  }
  holder.join();
  int status = -1;
  bool hung = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      hung = true;
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(scope.finish());
  EXPECT_FALSE(hung) << "the child hung allocating after fork()";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
}  // namespace heapgate
