// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The counters fallback (docs/design.md §3): without usable allocation hooks
// (here forced with HEAPGATE_HOOKS=off), a counters scope measures the calling
// thread's bytes through thread.allocated/thread.deallocated and says so.
#include <gtest/gtest.h>

#include <vector>

#include "heapgate/profile_scope.h"
#include "test_support.h"
#include "workloads.h"

namespace heapgate {
namespace {

using testing::allocate_blocks;
using testing::free_blocks;

TEST(CountersFallback, StatusSaysHooksAreOff) {
  const AllocatorStatus& s = allocator_status();
  EXPECT_TRUE(s.hooks_disabled_by_env);
  EXPECT_FALSE(s.hooks_available);
  EXPECT_TRUE(s.check(Mode::counters));
  EXPECT_NE(s.describe().find("calling thread only"), std::string::npos) << s.describe();
}

TEST(CountersFallback, MeasuresBytesOfTheCallingThreadOnly) {
  std::vector<void*> kept;
  kept.reserve(64);
  std::vector<void*> freed;
  freed.reserve(64);
  ProfileScope scope{"fallback"};
  ASSERT_EQ(scope.mode(), Mode::counters);
  allocate_blocks(kept, 10, 1024);
  allocate_blocks(freed, 20, 64);
  free_blocks(freed);
  auto r = scope.finish();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->bytes_only);
  EXPECT_EQ(r->allocated_bytes, 10u * 1024 + 20u * 64);
  EXPECT_EQ(r->live_bytes, 10u * 1024);
  // Not measured, and not pretending to be: zero, flagged by bytes_only.
  EXPECT_EQ(r->allocations, 0u);
  EXPECT_EQ(r->peak_bytes, 0u);
  free_blocks(kept);
}

TEST(CountersFallback, FreeingOlderMemoryDoesNotGoNegative) {
  std::vector<void*> old;
  old.reserve(8);
  allocate_blocks(old, 8, 4096);
  ProfileScope scope{"frees-only"};
  free_blocks(old);
  auto r = scope.finish();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->allocated_bytes, 0u);
  EXPECT_EQ(r->live_bytes, 0u);
}

}  // namespace
}  // namespace heapgate
