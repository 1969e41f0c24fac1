// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `exact` mode against `counters` mode: the dump's numbers must equal the hooks'.
#include <dlfcn.h>
#include <stdlib.h>

#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/profile.h"
#include "heapgate/profile_scope.h"
#include "heapgate/sys.h"
#include "test_support.h"
#include "workloads.h"

namespace heapgate {
namespace {

using testing::allocate_blocks;
using testing::free_blocks;

// A workload with strings, containers, frees and leaks of many size classes.
__attribute__((noinline)) void mixed_workload(std::vector<void*>& keep) {
  std::vector<std::string> words;
  for (int i = 0; i < 300; ++i) words.push_back(std::string(static_cast<std::size_t>(20 + i % 90), 'x'));
  std::vector<void*> temp;
  temp.reserve(64);
  allocate_blocks(temp, 64, 3000);
  free_blocks(temp);
  allocate_blocks(keep, 17, 40);
  allocate_blocks(keep, 3, 70000);
}

ScopeResult run(Mode mode, const std::function<void()>& body) {
  ProfileScope scope{"cmp", ScopeOptions{mode}};
  body();
  auto r = scope.finish();
  EXPECT_TRUE(r) << (r ? "" : r.error().message());
  return r ? *r : ScopeResult{};
}

// `body` run once counting and once in exact mode, the blocks it keeps freed
// after each: {counters, exact}.
std::pair<ScopeResult, ScopeResult> counters_then_exact(const std::function<void(std::vector<void*>&)>& body) {
  std::vector<void*> keep;
  keep.reserve(128);
  ScopeResult c = run(Mode::counters, [&] { body(keep); });
  free_blocks(keep);
  ScopeResult e = run(Mode::exact, [&] { body(keep); });
  free_blocks(keep);
  return {c, e};
}

void expect_same_numbers(const ScopeResult& counters, const ScopeResult& exact) {
  EXPECT_EQ(exact.mode, Mode::exact);
  EXPECT_EQ(counters.mode, Mode::counters);
  EXPECT_EQ(exact.allocations, counters.allocations);
  EXPECT_EQ(exact.allocated_bytes, counters.allocated_bytes);
  EXPECT_EQ(exact.live_allocations, counters.live_allocations);
  EXPECT_EQ(exact.live_bytes, counters.live_bytes);
  EXPECT_EQ(exact.peak_bytes, counters.peak_bytes);
}

TEST(ExactMode, AgreesWithCountersOnAMixedWorkload) {
  HEAPGATE_REQUIRE_PROFILING();
  const auto [c, e] = counters_then_exact(mixed_workload);
  expect_same_numbers(c, e);
  EXPECT_EQ(e.live_allocations, 20u);
  EXPECT_EQ(e.live_bytes, 17u * 48 + 3u * 81920);  // 40 -> 48 and 70000 -> 81920 size classes
}

TEST(ExactMode, AgreesWithCountersAcrossThreads) {
  HEAPGATE_REQUIRE_PROFILING();
  ScopeResult c, e;
  {
    testing::ParkedThreads threads(3, 500, 256);
    c = run(Mode::counters, [&] { threads.run(); });
  }
  {
    testing::ParkedThreads threads(3, 500, 256);
    e = run(Mode::exact, [&] { threads.run(); });
  }
  expect_same_numbers(c, e);
  EXPECT_EQ(e.allocations, 1500u);
}

// A block too large for a stamp (above 128 MiB) is kept in the recording's
// pointer table instead: freed or still live, it counts as in `counters`.
TEST(ExactMode, AgreesWithCountersOnBlocksTooLargeToStamp) {
  HEAPGATE_REQUIRE_PROFILING();
  constexpr std::size_t kHuge = std::size_t{129} << 20;  // reserved, never touched
  auto body = [](std::vector<void*>& keep) {
    void* volatile freed = std::malloc(kHuge);  // volatile: the pair is not optimized away
    std::free(freed);
    keep.push_back(std::malloc(kHuge));
    allocate_blocks(keep, 5, 64);
  };
  const auto [c, e] = counters_then_exact(body);
  expect_same_numbers(c, e);
  EXPECT_EQ(e.allocations, 7u);
  EXPECT_EQ(e.live_allocations, 6u);
}

// Each recording has its own generation of stack ids: a block recorded by
// one scope and freed in the next is not taken out of the next one's counts,
// through more recordings than the ids have generations (255).
TEST(ExactMode, BlocksOfAnEarlierRecordingNeverCountInALaterOne) {
  HEAPGATE_REQUIRE_PROFILING();
  std::vector<void*> previous;
  previous.reserve(2);
  for (int i = 0; i < 300; ++i) {
    std::vector<void*> kept;
    kept.reserve(2);
    ScopeResult e = run(Mode::exact, [&] {
      free_blocks(previous);  // recorded by the last scope, live until now
      allocate_blocks(kept, 1, 48);
    });
    ASSERT_EQ(e.allocations, 1u) << "recording " << i;
    ASSERT_EQ(e.live_allocations, 1u) << "recording " << i;
    ASSERT_EQ(e.live_bytes, 48u) << "recording " << i;
    previous = std::move(kept);
  }
  free_blocks(previous);
}

// Each thread counts the blocks it records in its own tally, and a profile
// sums them: a block made by one thread and freed by another leaves the stack
// that made it. The threads of each round exit, and the next round's threads
// take over their slots and tallies, which must start from zero.
TEST(ExactMode, ProfilesSumTheThreadsCountsAndForgetEarlierRecordings) {
  HEAPGATE_REQUIRE_PROFILING();
  constexpr std::size_t kMade = 400;
  constexpr std::size_t kFreedByAnother = 300;
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> made;
    made.reserve(kMade);
    ScopeOptions options{Mode::exact};
    options.profile_in_memory = true;
    ProfileScope scope{"threads", options};
    std::thread maker([&] { allocate_blocks(made, kMade, 96); });
    maker.join();
    std::thread freer([&] {
      for (std::size_t i = 0; i < kFreedByAnother; ++i) std::free(made[i]);
    });
    freer.join();
    auto r = scope.finish();
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_TRUE(r->profile) << "round " << round;
    const Profile& profile = *r->profile;
    // The same numbers as the counters (std::thread's own blocks included).
    EXPECT_EQ(profile.totals.accum_objects, r->allocations) << "round " << round;
    EXPECT_EQ(profile.totals.accum_bytes, r->allocated_bytes) << "round " << round;
    EXPECT_EQ(profile.totals.live_objects, r->live_allocations) << "round " << round;
    EXPECT_EQ(profile.totals.live_bytes, r->live_bytes) << "round " << round;
    int maker_stacks = 0;
    for (const StackRecord& stack : profile.stacks) {
      if (stack.counts.accum_objects != kMade) continue;
      ++maker_stacks;
      EXPECT_EQ(stack.counts.live_objects, kMade - kFreedByAnother) << "round " << round;
      EXPECT_EQ(stack.counts.live_bytes, (kMade - kFreedByAnother) * 96) << "round " << round;
    }
    EXPECT_EQ(maker_stacks, 1) << "round " << round;
    made.erase(made.begin(), made.begin() + kFreedByAnother);
    free_blocks(made);
  }
}

TEST(ExactMode, WritesAParsableProfileOfTheScopeOnly) {
  HEAPGATE_REQUIRE_PROFILING();
  std::vector<void*> before;
  before.reserve(10);
  allocate_blocks(before, 10, 512);  // live, but older than the scope: not in its profile
  std::vector<void*> keep;
  keep.reserve(10);
  ScopeResult e = run(Mode::exact, [&] { allocate_blocks(keep, 6, 2048); });
  free_blocks(before);
  free_blocks(keep);
  ASSERT_FALSE(e.profile_path.empty());
  EXPECT_EQ(e.sample_period, 1u);
  auto profile = read_profile(e.profile_path);
  ASSERT_TRUE(profile) << profile.error().message();
  EXPECT_EQ(profile->totals.live_objects, 6u);
  EXPECT_EQ(profile->totals.live_bytes, 6u * 2048);
  EXPECT_FALSE(profile->mappings.empty());
}

// A profile kept in memory reuses the mappings read for the last one until
// the dynamic linker loads or unloads an object: a library loaded between two
// scopes must be in the second one's mappings, or its frames go unnamed.
TEST(ExactMode, InMemoryProfilesSeeALibraryLoadedBetweenScopes) {
  HEAPGATE_REQUIRE_PROFILING();
  auto in_memory = [](const char* name) {
    ScopeOptions options{Mode::exact};
    options.profile_in_memory = true;
    std::vector<void*> keep;
    keep.reserve(4);
    ProfileScope scope{name, options};
    allocate_blocks(keep, 4, 96);
    auto r = scope.finish();
    free_blocks(keep);
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    return r ? r->profile : nullptr;
  };
  auto maps_library = [](const Profile& profile, std::string_view name) {
    for (const Mapping& m : profile.mappings) {
      if (m.path.find(name) != std::string::npos) return true;
    }
    return false;
  };
  // heapgate never loads pugixml in this binary; scripts/setup.sh installs it.
  constexpr std::string_view kLibrary = "libpugixml.so";
  auto before = in_memory("before");
  ASSERT_TRUE(before);
  ASSERT_FALSE(maps_library(*before, kLibrary)) << "the library was loaded before the test";
  void* handle = ::dlopen("libpugixml.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  auto after = in_memory("after");
  ASSERT_TRUE(after);
  EXPECT_TRUE(maps_library(*after, kLibrary));
  EXPECT_EQ(after->totals.live_objects, 4u);
  ::dlclose(handle);
}

TEST(ExactMode, DumpsWhereToldAndReportsTheDumpError) {
  HEAPGATE_REQUIRE_PROFILING();
  std::string dir = testing::make_temp_dir();
  {
    ProfileScope scope{"named", ScopeOptions{Mode::exact, dir + "/mine.heap"}};
    auto r = scope.finish();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->profile_path, dir + "/mine.heap");
    EXPECT_TRUE(sys::exists(dir + "/mine.heap"));
  }
  ProfileScope scope{"nowhere", ScopeOptions{Mode::exact, dir + "/no/such/dir/x.heap"}};
  auto r = scope.finish();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find(dir + "/no/such/dir/x.heap"), std::string::npos) << r.error().message();
  // Profiling was released despite the failure: the next scope profiles again.
  ProfileScope next{"next", ScopeOptions{Mode::exact}};
  EXPECT_EQ(next.mode(), Mode::exact);
  EXPECT_TRUE(next.finish());
}

TEST(ExactMode, RestoresProfilingStateAfterwards) {
  HEAPGATE_REQUIRE_PROFILING();
  auto lg_before = jemalloc::prof_lg_sample();
  ASSERT_TRUE(lg_before);
  // Through jemalloc's profiler: on for the scope, off after it.
  ::setenv("HEAPGATE_EXACT_STACKS", "jemalloc", 1);
  {
    ProfileScope scope{"x", ScopeOptions{Mode::exact}};
    EXPECT_TRUE(*jemalloc::prof_active());
  }
  ::unsetenv("HEAPGATE_EXACT_STACKS");
  EXPECT_FALSE(*jemalloc::prof_active());
  EXPECT_EQ(*jemalloc::prof_lg_sample(), *lg_before);
  // Through the hooks (the default): jemalloc's profiler is never switched on.
  {
    ProfileScope scope{"y", ScopeOptions{Mode::exact}};
    EXPECT_EQ(scope.mode(), Mode::exact);
  }
  EXPECT_FALSE(*jemalloc::prof_active());
}

}  // namespace
}  // namespace heapgate
