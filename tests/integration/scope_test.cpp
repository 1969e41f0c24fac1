// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// ProfileScope's counts on real jemalloc, in every mode the executable's
// allocator configuration allows (HEAPGATE_TEST_MODES, set per executable).
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/integration.h"
#include "heapgate/profile_scope.h"
#include "test_support.h"
#include "workloads.h"

#define HEAPGATE_STR_(...) #__VA_ARGS__
#define HEAPGATE_STR(...) HEAPGATE_STR_(__VA_ARGS__)

namespace heapgate {

// gtest prints parameters through PrintTo found by argument-dependent lookup.
void PrintTo(Mode mode, std::ostream* os) { *os << to_string(mode); }

namespace {

using testing::allocate_blocks;
using testing::free_blocks;

std::vector<Mode> modes_under_test() {
  std::vector<Mode> modes;
  std::stringstream list(HEAPGATE_STR(HEAPGATE_TEST_MODES));  // e.g. "counters,exact"
  for (std::string name; std::getline(list, name, ',');) modes.push_back(*parse_mode(name));
  return modes;
}

class ScopeTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    if (GetParam() == Mode::exact) {
      HEAPGATE_REQUIRE_PROFILING();
    } else {
      HEAPGATE_REQUIRE_COUNTERS();
    }
    blocks_.reserve(100000);
  }
  void TearDown() override { free_blocks(blocks_); }

  ScopeResult measure(const std::function<void()>& body) { return testing::measure_scope(GetParam(), body); }

  std::vector<void*> blocks_;
};

TEST_P(ScopeTest, CountsExactlyTheAllocationsMade) {
  ScopeResult r = measure([&] { allocate_blocks(blocks_, 100, 128); });
  EXPECT_EQ(r.mode, GetParam());
  EXPECT_EQ(r.allocations, 100u);
  EXPECT_EQ(r.allocated_bytes, 100u * 128);
  EXPECT_EQ(r.live_allocations, 100u);
  EXPECT_EQ(r.live_bytes, 100u * 128);
  EXPECT_EQ(r.peak_bytes, 100u * 128);
  EXPECT_FALSE(r.estimated);
}

TEST_P(ScopeTest, BytesAreRoundedToSizeClasses) {
  // 100 bytes is served from jemalloc's 112-byte class; 5000 from the 5120 class.
  ScopeResult r = measure([&] {
    allocate_blocks(blocks_, 10, 100);
    allocate_blocks(blocks_, 3, 5000);
  });
  EXPECT_EQ(r.allocations, 13u);
  EXPECT_EQ(r.allocated_bytes, 10u * 112 + 3u * 5120);
}

TEST_P(ScopeTest, FreedAllocationsAreNotLive) {
  ScopeResult r = measure([&] {
    allocate_blocks(blocks_, 50, 64);
    free_blocks(blocks_);
  });
  EXPECT_EQ(r.allocations, 50u);
  EXPECT_EQ(r.live_allocations, 0u);
  EXPECT_EQ(r.live_bytes, 0u);
  EXPECT_EQ(r.peak_bytes, 50u * 64);
}

TEST_P(ScopeTest, FreeingOlderMemoryDoesNotGoNegative) {
  std::vector<void*> older;
  older.reserve(20);
  allocate_blocks(older, 20, 256);
  ScopeResult r = measure([&] {
    free_blocks(older);
    allocate_blocks(blocks_, 5, 64);
  });
  EXPECT_EQ(r.allocations, 5u);
  EXPECT_EQ(r.live_allocations, 5u);
  EXPECT_EQ(r.live_bytes, 5u * 64);
  EXPECT_EQ(r.deallocations, 20u);
}

// The hooks are installed only while a scope counts: blocks cross that
// boundary both ways, and each scope still counts exactly its own region.
TEST_P(ScopeTest, BlocksLeftLiveByAnEarlierScopeAndFreedInALaterOneDoNotCount) {
  std::vector<void*> earlier;
  earlier.reserve(10);
  ScopeResult first = measure([&] { allocate_blocks(earlier, 10, 128); });
  EXPECT_EQ(first.live_allocations, 10u);
  ScopeResult second = measure([&] {
    free_blocks(earlier);
    allocate_blocks(blocks_, 3, 64);
  });
  EXPECT_EQ(second.allocations, 3u);
  EXPECT_EQ(second.deallocations, 10u);
  EXPECT_EQ(second.live_allocations, 3u);
  EXPECT_EQ(second.live_bytes, 3u * 64);
}

// What a scope left live and a later scope freed is followed (held, not
// leaked: the GoogleTest plugin needs no repeated run to tell); what stays
// live is not counted as freed.
TEST_P(ScopeTest, BlocksLeftLiveAndFreedInALaterScopeAreReleasedSinceTheFirst) {
  std::vector<void*> held;
  held.reserve(6);
  ScopeResult first = measure([&] { allocate_blocks(held, 6, 100); });
  ASSERT_EQ(first.live_allocations, 6u);
  auto none_yet = detail::released_since(first.counting_window);
  ASSERT_TRUE(none_yet.has_value());
  EXPECT_EQ(none_yet->allocations, 0u);
  std::vector<void*> two_of_them(held.begin(), held.begin() + 2);
  (void)measure([&] { free_blocks(two_of_them); });
  auto some = detail::released_since(first.counting_window);
  ASSERT_TRUE(some.has_value());
  EXPECT_EQ(some->allocations, 2u);
  EXPECT_EQ(some->bytes, 2u * 112);  // jemalloc's size class of 100 bytes
  std::vector<void*> the_rest(held.begin() + 2, held.end());
  (void)measure([&] { free_blocks(the_rest); });
  auto all = detail::released_since(first.counting_window);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->allocations, first.live_allocations);
  EXPECT_EQ(all->bytes, first.live_bytes);
}

// Frees while no scope is open reach heapgate through jemalloc's hooks (once
// installed, they stay) but not through its own entry points, which count
// only while a scope is open: either way no more is reported freed than was.
TEST_P(ScopeTest, BlocksFreedWhileNoScopeCountsAreSeenWholeOrNotAtAll) {
  std::vector<void*> held;
  held.reserve(4);
  ScopeResult first = measure([&] { allocate_blocks(held, 4, 64); });
  free_blocks(held);
  (void)measure([] {});
  auto released = detail::released_since(first.counting_window);
  ASSERT_TRUE(released.has_value());
  EXPECT_TRUE(released->allocations == 0 || released->allocations == 4) << released->allocations;
  EXPECT_EQ(released->bytes, released->allocations * 64);
  ScopeResult empty = measure([] {});
  EXPECT_FALSE(detail::released_since(empty.counting_window).has_value());  // it left nothing live
}

// Asked to, the entry points follow frees between scopes too: a worker that
// frees what a test handed it just after the test returned is seen, though
// no scope counts then, and nothing is counted for it.
TEST_P(ScopeTest, BlocksFreedWhileNoScopeCountsAreFollowedWhenAsked) {
  std::vector<void*> held;
  held.reserve(4);
  ScopeResult first = measure([&] { allocate_blocks(held, 4, 64); });
  ASSERT_EQ(first.live_allocations, 4u);
  detail::follow_frees_between_windows(true);
  free_blocks(held);
  detail::follow_frees_between_windows(false);
  auto released = detail::released_since(first.counting_window);
  ASSERT_TRUE(released.has_value());
  const char* source = std::getenv("HEAPGATE_COUNT_WITH");
  if (source != nullptr && std::string(source) == "hooks") {
    EXPECT_TRUE(released->allocations == 0 || released->allocations == 4) << released->allocations;
  } else {
    EXPECT_EQ(released->allocations, 4u);
    EXPECT_EQ(released->bytes, 4u * 64);
  }
  ScopeResult next = measure([&] { allocate_blocks(blocks_, 2, 64); });
  EXPECT_EQ(next.allocations, 2u);
  EXPECT_EQ(next.deallocations, 0u);
}

TEST_P(ScopeTest, BlocksFreedBetweenScopesLeaveNoTrace) {
  std::vector<void*> kept;
  kept.reserve(5);
  ScopeResult first = measure([&] { allocate_blocks(kept, 5, 64); });
  EXPECT_EQ(first.live_allocations, 5u);
  free_blocks(kept);  // outside any scope: no hook sees these frees
  std::vector<void*> outside;
  outside.reserve(7);
  allocate_blocks(outside, 7, 32);  // nor these allocations
  ScopeResult second = measure([&] { free_blocks(outside); });
  EXPECT_EQ(second.allocations, 0u);
  EXPECT_EQ(second.live_allocations, 0u);
  EXPECT_EQ(second.live_bytes, 0u);
  EXPECT_EQ(second.deallocations, 7u);
}

// A block freed while no hook runs leaves its stamp behind (block_stamps.h);
// jemalloc hands the same address out again (its thread cache is last in,
// first out), and when a later scope frees that block the old stamp must not
// pass for one of the later scope's own blocks.
TEST_P(ScopeTest, AddressesReusedOutsideAnyScopeDoNotCountAsTheLaterScopes) {
  std::vector<void*> kept;
  kept.reserve(5);
  measure([&] { allocate_blocks(kept, 5, 64); });
  const std::vector<void*> first_addresses = kept;
  free_blocks(kept);
  std::vector<void*> reused;
  reused.reserve(5);
  allocate_blocks(reused, 5, 64);
  int same = 0;
  for (void* p : reused) same += static_cast<int>(std::count(first_addresses.begin(), first_addresses.end(), p));
  ASSERT_GT(same, 0) << "jemalloc did not reuse any address: the case is not exercised";
  ScopeResult second = measure([&] {
    allocate_blocks(blocks_, 2, 64);
    free_blocks(reused);
  });
  EXPECT_EQ(second.allocations, 2u);
  EXPECT_EQ(second.deallocations, 5u);
  EXPECT_EQ(second.live_allocations, 2u);
  EXPECT_EQ(second.live_bytes, 2u * 64);
  EXPECT_EQ(second.peak_bytes, 2u * 64);
}

// jemalloc's smallest blocks are 8 bytes apart, the next 16: each needs its
// own stamp, or freeing one would forget its neighbour, whose free would then
// not count.
TEST_P(ScopeTest, NeighbouringSmallestBlocksAreCountedApart) {
  for (std::size_t size : {8u, 16u}) {
    SCOPED_TRACE(size);
    std::vector<void*> even;
    even.reserve(100);
    std::vector<void*> odd;
    odd.reserve(100);
    ScopeResult r = measure([&] {
      allocate_blocks(blocks_, 200, size);
      for (std::size_t i = 0; i < blocks_.size(); ++i) (i % 2 == 0 ? even : odd).push_back(blocks_[i]);
      blocks_.clear();
      free_blocks(even);
      free_blocks(odd);
    });
    EXPECT_EQ(r.allocations, 200u);
    EXPECT_EQ(r.deallocations, 200u);
    EXPECT_EQ(r.live_allocations, 0u);
    EXPECT_EQ(r.live_bytes, 0u);
    EXPECT_EQ(r.peak_bytes, 200u * size);
  }
}

TEST_P(ScopeTest, PeakIsTheHighestLivePoint) {
  ScopeResult r = measure([&] {
    allocate_blocks(blocks_, 10, 4096);
    free_blocks(blocks_);
    allocate_blocks(blocks_, 5, 4096);
  });
  EXPECT_EQ(r.peak_bytes, 10u * 4096);
  EXPECT_EQ(r.live_bytes, 5u * 4096);
  EXPECT_EQ(r.allocations, 15u);
}

TEST_P(ScopeTest, CountsNewAndDeleteOfObjects) {
  struct Widget {
    char payload[48];
  };
  ScopeResult r = measure([&] {
    std::vector<std::unique_ptr<Widget>> widgets;
    widgets.reserve(10);                                                         // 1 allocation of 80 bytes
    for (int i = 0; i < 10; ++i) widgets.push_back(std::make_unique<Widget>());  // 10 of 48
  });
  EXPECT_EQ(r.allocations, 11u);
  EXPECT_EQ(r.allocated_bytes, 80u + 10u * 48);
  EXPECT_EQ(r.live_allocations, 0u);
}

// Every over-aligned operator new and delete counts once: Debian's jemalloc
// implements some of them with its C functions, called back through
// heapgate's entry points (entry_points.cpp). Counted twice and freed once, an
// alignas(64) object read as a leak (a thread pool's suite: one block per pool).
TEST_P(ScopeTest, OverAlignedNewAndDeleteCountOnce) {
  struct alignas(64) Padded {
    char payload[1300];  // 1344 bytes, served from the 1536-byte class
  };
  constexpr std::align_val_t kAlign{128};
  ScopeResult r = measure([&] {
    auto owned = std::make_unique<Padded>();  // delete: sized and aligned
    testing::escape(owned.get());
    owned.reset();
    auto* array = new Padded[2];  // delete[]: sized and aligned (a trivial type's array has no cookie)
    testing::escape(array);
    delete[] array;
    void* plain = ::operator new(100, kAlign);
    testing::escape(plain);
    ::operator delete(plain, kAlign);  // unsized, aligned
    void* quiet = ::operator new[](200, kAlign, std::nothrow);
    testing::escape(quiet);
    ::operator delete[](quiet, kAlign, std::nothrow);
    void* kept = ::operator new(300, kAlign);
    testing::escape(kept);
    blocks_.push_back(kept);  // freed by TearDown with free(), as jemalloc allows
  });
  EXPECT_EQ(r.allocations, 5u);
  EXPECT_EQ(r.deallocations, 4u);
  EXPECT_EQ(r.allocated_bytes, 1536u + 3072u + 128u + 256u + 384u);
  EXPECT_EQ(r.live_allocations, 1u);
  EXPECT_EQ(r.live_bytes, 384u);
}

TEST_P(ScopeTest, ReallocCountsAsFreeAndAllocation) {
  ScopeResult r = measure([&] {
    void* p = std::malloc(16);
    testing::escape(p);
    p = std::realloc(p, 16000);  // moves: a new 16384-byte block
    testing::escape(p);
    blocks_.push_back(p);
  });
  EXPECT_EQ(r.allocations, 2u);
  EXPECT_EQ(r.allocated_bytes, 16u + 16384u);
  EXPECT_EQ(r.live_allocations, 1u);
  EXPECT_EQ(r.live_bytes, 16384u);
}

// A large block shrinks where it is: jemalloc reports the resize after it
// happened, so the block's old size must come from the report, not from
// asking jemalloc again.
TEST_P(ScopeTest, ReallocInPlaceCountsTheOldSizeFreed) {
  ScopeResult r = measure([&] {
    void* p = std::malloc(65536);
    testing::escape(p);
    void* q = std::realloc(p, 32768);
    testing::escape(q);
    blocks_.push_back(q);
    ASSERT_EQ(q, p) << "jemalloc moved the block: the in-place case is not exercised";
  });
  EXPECT_EQ(r.allocations, 2u);
  EXPECT_EQ(r.deallocations, 1u);
  EXPECT_EQ(r.allocated_bytes, 65536u + 32768u);
  EXPECT_EQ(r.live_allocations, 1u);
  EXPECT_EQ(r.live_bytes, 32768u);
  EXPECT_EQ(r.peak_bytes, 65536u);
}

// operator new and the sized operator delete that the standard containers
// call: jemalloc gives the hooks the sizes asked for and given back, and the
// hooks round them up to the usable size themselves. Sizes on both sides of
// class boundaries, up to one above the largest size rounded without asking
// jemalloc; every other block is freed inside the scope.
TEST_P(ScopeTest, SizedFreesCountTheUsableSize) {
  const std::size_t sizes[] = {1,    8,    9,    16,    17,    100,    128,      129,           1000,
                               1025, 4096, 4097, 14337, 20000, 100000, 4u << 20, (4u << 20) + 1};
  std::vector<std::pair<void*, std::size_t>> kept;
  kept.reserve(std::size(sizes));
  std::uint64_t allocated = 0, live = 0, peak = 0;
  ScopeResult r = measure([&] {
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      void* p = ::operator new(sizes[i]);
      testing::escape(p);
      const std::uint64_t usable = malloc_usable_size(p);
      allocated += usable;
      live += usable;
      peak = std::max(peak, live);
      if (i % 2 == 0) {
        ::operator delete(p, sizes[i]);
        live -= usable;
      } else {
        kept.emplace_back(p, sizes[i]);
      }
    }
  });
  for (auto [p, size] : kept) ::operator delete(p, size);
  EXPECT_EQ(r.allocations, std::size(sizes));
  EXPECT_EQ(r.deallocations, std::size(sizes) - kept.size());
  EXPECT_EQ(r.allocated_bytes, allocated);
  EXPECT_EQ(r.live_allocations, kept.size());
  EXPECT_EQ(r.live_bytes, live);
  EXPECT_EQ(r.peak_bytes, peak);
}

TEST_P(ScopeTest, CountsEveryThread) {
  testing::ParkedThreads threads(4, 1000, 64);
  ScopeResult r = measure([&] { threads.run(); });
  EXPECT_EQ(r.allocations, 4000u);
  EXPECT_EQ(r.allocated_bytes, 4000u * 64);
  EXPECT_EQ(r.live_allocations, 4000u);
  EXPECT_EQ(r.live_bytes, 4000u * 64);
}

TEST_P(ScopeTest, EmptyScopeCountsNothing) {
  ScopeResult r = measure([] {});
  EXPECT_EQ(r.allocations, 0u);
  EXPECT_EQ(r.allocated_bytes, 0u);
  EXPECT_EQ(r.live_allocations, 0u);
  EXPECT_EQ(r.peak_bytes, 0u);
}

TEST_P(ScopeTest, SameWorkloadSameNumbersEveryTime) {
  auto workload = [&] {
    std::string s;
    for (int i = 0; i < 200; ++i) s += "heapgate";
    std::vector<std::string> v(50, s);
    allocate_blocks(blocks_, 7, 1024);
  };
  ScopeResult first = measure(workload);
  for (int i = 0; i < 5; ++i) {
    free_blocks(blocks_);
    ScopeResult again = measure(workload);
    EXPECT_EQ(again.allocations, first.allocations);
    EXPECT_EQ(again.allocated_bytes, first.allocated_bytes);
    EXPECT_EQ(again.live_allocations, first.live_allocations);
    EXPECT_EQ(again.peak_bytes, first.peak_bytes);
  }
}

TEST_P(ScopeTest, NestedScopesEachCountTheirOwnRegion) {
  ProfileScope outer{"outer", ScopeOptions{GetParam()}};
  allocate_blocks(blocks_, 10, 64);
  ScopeResult inner_result;
  {
    ProfileScope inner{"inner", ScopeOptions{GetParam()}};
    // Profiling is process-global: a nested profiling scope counts only.
    EXPECT_EQ(inner.mode(), GetParam() == Mode::exact ? Mode::counters : GetParam());
    allocate_blocks(blocks_, 3, 256);
    auto r = inner.finish();
    ASSERT_TRUE(r) << r.error().message();
    inner_result = *r;
  }
  allocate_blocks(blocks_, 2, 1024);
  auto r = outer.finish();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(inner_result.allocations, 3u);
  EXPECT_EQ(inner_result.live_bytes, 3u * 256);
  EXPECT_EQ(r->allocations, 15u);
  EXPECT_EQ(r->allocated_bytes, 10u * 64 + 3u * 256 + 2u * 1024);
  EXPECT_EQ(r->live_allocations, 15u);
}

TEST_P(ScopeTest, FinishTwiceIsAConflict) {
  ProfileScope scope{"twice", ScopeOptions{GetParam()}};
  ASSERT_TRUE(scope.finish());
  auto again = scope.finish();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::conflict);
}

TEST_P(ScopeTest, DestructorFinishesSilentlyWhenAllIsWell) {
  std::vector<Error> errors;
  set_error_sink([&](const Error& e) { errors.push_back(e); });
  { ProfileScope scope{"raii", ScopeOptions{GetParam()}}; }
  set_error_sink(nullptr);
  EXPECT_TRUE(errors.empty());
}

INSTANTIATE_TEST_SUITE_P(Modes, ScopeTest, ::testing::ValuesIn(modes_under_test()),
                         [](const ::testing::TestParamInfo<Mode>& param) {
                           return std::string(to_string(param.param));
                         });

TEST(AllocatorStatus, DetectsJemalloc) {
  const AllocatorStatus& s = allocator_status();
  EXPECT_TRUE(s.jemalloc_detected);
  EXPECT_TRUE(s.jemalloc_active);
  EXPECT_EQ(s.version.rfind("5.", 0), 0u) << s.version;
  EXPECT_TRUE(s.hooks_available);
  EXPECT_TRUE(s.check(Mode::counters));
#ifdef HEAPGATE_TEST_PRELOADED
  // This executable is not linked to jemalloc: it arrived through LD_PRELOAD.
  EXPECT_NE(std::getenv("LD_PRELOAD"), nullptr);
#endif
}

TEST(AllocatorStatus, DescribeSaysWhichModesWork) {
  std::string text = allocator_status().describe();
  EXPECT_NE(text.find("jemalloc: 5."), std::string::npos) << text;
  EXPECT_NE(text.find("mode counters: available"), std::string::npos) << text;
}

TEST(AllocatorStats, ReadsProcessTotals) {
  auto stats = jemalloc::stats();
  ASSERT_TRUE(stats) << stats.error().message();
  EXPECT_GT(stats->allocated, 0u);
  EXPECT_GE(stats->active, stats->allocated);
  EXPECT_GE(stats->resident, stats->active);
  auto json = jemalloc::stats_json();
  ASSERT_TRUE(json);
  EXPECT_EQ(json->rfind("{", 0), 0u);
  EXPECT_NE(json->find("\"jemalloc\""), std::string::npos);
}

TEST(ThreadCounters, FollowTheCallingThread) {
  std::vector<void*> blocks;
  blocks.reserve(4);
  auto before = jemalloc::thread_allocated();
  ASSERT_TRUE(before) << before.error().message();
  allocate_blocks(blocks, 4, 1024);
  EXPECT_EQ(*jemalloc::thread_allocated() - *before, 4u * 1024);
  free_blocks(blocks);
  // thread.peak is net growth since the reset (an approximation jemalloc
  // refreshes on allocation events; a 1 MiB allocation triggers one).
  ASSERT_TRUE(jemalloc::thread_peak_reset());
  allocate_blocks(blocks, 1, 1 << 20);
  EXPECT_GE(*jemalloc::thread_peak(), 1u << 20);
  free_blocks(blocks);
}

}  // namespace
}  // namespace heapgate
