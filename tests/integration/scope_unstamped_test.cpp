// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Counting stays exact when the hooks cannot map their block stamps
// (lib/measure/src/block_stamps.h): an address-space limit too small for the
// stamps' top level or an arena of runs sends every block to the locked
// pointer table instead. Each test runs in its own process
// (gtest_discover_tests), before any scope mapped stamps.
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/profile_scope.h"
#include "test_support.h"
#include "workloads.h"

namespace heapgate {
namespace {

using testing::allocate_blocks;
using testing::free_blocks;

// The process's mapped bytes now (VmSize in /proc/self/status), 0 if unknown.
std::size_t mapped_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  }
  return 0;
}

class UnstampedScopeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Room for jemalloc's own growth, not for the stamps' 8 MiB top level or
    // their 64 MiB arena of runs.
    const std::size_t now = mapped_bytes();
    ASSERT_GT(now, 0u) << "/proc/self/status has no VmSize";
    const rlimit limit{now + (4u << 20), now + (4u << 20)};
    ASSERT_EQ(setrlimit(RLIMIT_AS, &limit), 0);
  }

  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    void* top_level =
        ::mmap(nullptr, 8u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (top_level != MAP_FAILED) ::munmap(top_level, 8u << 20);
    ASSERT_EQ(top_level, MAP_FAILED) << "the stamps still fit under the limit: the fallback is not exercised";
    blocks_.reserve(10000);
  }
  void TearDown() override { free_blocks(blocks_); }

  ScopeResult measure(const std::function<void()>& body) { return testing::measure_scope(Mode::counters, body); }

  std::vector<void*> blocks_;
};

TEST_F(UnstampedScopeTest, CountsLiveFreedAndPeakExactly) {
  std::vector<void*> freed;
  freed.reserve(500);
  ScopeResult r = measure([&] {
    allocate_blocks(blocks_, 1000, 64);
    allocate_blocks(freed, 500, 128);
    free_blocks(freed);
    allocate_blocks(blocks_, 200, 8);
  });
  EXPECT_EQ(r.allocations, 1700u);
  EXPECT_EQ(r.deallocations, 500u);
  EXPECT_EQ(r.live_allocations, 1200u);
  EXPECT_EQ(r.live_bytes, 1000u * 64 + 200u * 8);
  EXPECT_EQ(r.peak_bytes, 1000u * 64 + 500u * 128);
}

TEST_F(UnstampedScopeTest, BlocksOfAnEarlierScopeFreedInALaterOneDoNotCount) {
  std::vector<void*> earlier;
  earlier.reserve(10);
  EXPECT_EQ(measure([&] { allocate_blocks(earlier, 10, 128); }).live_allocations, 10u);
  ScopeResult second = measure([&] {
    free_blocks(earlier);
    allocate_blocks(blocks_, 3, 64);
  });
  EXPECT_EQ(second.deallocations, 10u);
  EXPECT_EQ(second.live_allocations, 3u);
  EXPECT_EQ(second.live_bytes, 3u * 64);
}

TEST_F(UnstampedScopeTest, NestedScopesEachCountTheirOwnBlocks) {
  ProfileScope outer{"outer", ScopeOptions{Mode::counters}};
  allocate_blocks(blocks_, 10, 64);
  ScopeResult inner = measure([&] { allocate_blocks(blocks_, 3, 128); });
  free_blocks(blocks_);
  auto r = outer.finish();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(inner.live_allocations, 3u);
  EXPECT_EQ(inner.live_bytes, 3u * 128);
  EXPECT_EQ(r->allocations, 13u);
  EXPECT_EQ(r->live_allocations, 0u);
  EXPECT_EQ(r->peak_bytes, 10u * 64 + 3u * 128);
}

}  // namespace
}  // namespace heapgate
