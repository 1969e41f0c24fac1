// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Every way `exact` records stacks must give the same normalized stacks: the
// hooks' own recording (the default), and jemalloc's profiler with libunwind
// behind its prof_backtrace hook or with its own unwinder. A baseline recorded
// with one is compared with profiles taken with another
// (HEAPGATE_EXACT_STACKS=jemalloc, HEAPGATE_UNWINDER=jemalloc, or a machine
// without libunwind.so.8).
#include <dlfcn.h>
#include <stdlib.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/allocator.h"
#include "heapgate/diff.h"
#include "heapgate/folded.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/profile_scope.h"
#include "heapgate/symbolizer.h"
#include "heapgate/unwinder_control.h"
#include "test_support.h"
#include "workloads.h"

namespace heapgate {
namespace {

using testing::allocate_blocks;
using testing::free_blocks;

bool libunwind_installed() {
  void* handle = ::dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  return handle != nullptr;
}

#define REQUIRE_LIBUNWIND()                                                        \
  do {                                                                             \
    HEAPGATE_REQUIRE_PROFILING();                                                  \
    if (!libunwind_installed()) GTEST_SKIP() << "libunwind.so.8 is not installed"; \
  } while (0)

__attribute__((noinline)) void leaf_strings(std::vector<std::string>& out, int n) {
  for (int i = 0; i < n; ++i) out.push_back(std::string(static_cast<std::size_t>(24 + i % 70), 'u'));
}

// Each level keeps a string alive across the call, so the recursion is not
// turned into a loop: the stacks are 40 frames deeper.
__attribute__((noinline)) std::size_t recurse(std::vector<std::string>& out, int depth) {
  if (depth == 0) {
    leaf_strings(out, 5);
    return 0;
  }
  std::string level(40, 'r');
  return recurse(out, depth - 1) + level.size();
}

__attribute__((noinline)) void map_workload(std::map<std::string, std::unique_ptr<int>>& m) {
  for (int i = 0; i < 200; ++i) m.emplace("key-" + std::to_string(i) + std::string(20, 'k'), std::make_unique<int>(i));
}

__attribute__((noinline)) void throwing_workload(int& caught) {
  for (int i = 0; i < 20; ++i) {
    try {
      throw std::runtime_error("an exception unwinds through libgcc, not libunwind " + std::to_string(i));
    } catch (const std::runtime_error&) {
      ++caught;
    }
  }
}

// Everything the stacks are compared on: live and total counts per normalized stack.
__attribute__((noinline)) void workload() {
  std::vector<std::string> strings;
  leaf_strings(strings, 300);
  (void)recurse(strings, 40);
  std::map<std::string, std::unique_ptr<int>> m;
  map_workload(m);
  std::vector<void*> blocks;
  blocks.reserve(64);
  allocate_blocks(blocks, 64, 3000);
  free_blocks(blocks);
  int caught = 0;
  throwing_workload(caught);
  EXPECT_EQ(caught, 20);
  {
    testing::ParkedThreads threads(2, 100, 256);
    threads.run();
  }
}

// HEAPGATE_EXACT_STACKS=jemalloc while it lives: `exact` scopes use jemalloc's profiler.
class JemallocProfilerStacks {
 public:
  JemallocProfilerStacks() { ::setenv("HEAPGATE_EXACT_STACKS", "jemalloc", 1); }
  ~JemallocProfilerStacks() { ::unsetenv("HEAPGATE_EXACT_STACKS"); }
  JemallocProfilerStacks(const JemallocProfilerStacks&) = delete;
  JemallocProfilerStacks& operator=(const JemallocProfilerStacks&) = delete;
};

std::string folded_stacks_of_scope() {
  std::string path;
  {
    ProfileScope scope{"unwinder", ScopeOptions{Mode::exact}};
    workload();
    auto result = scope.finish();
    EXPECT_TRUE(result) << (result ? "" : result.error().message());
    if (!result) return {};
    path = result->profile_path;
  }
  auto profile = read_profile(path);
  EXPECT_TRUE(profile) << (profile ? "" : profile.error().message());
  if (!profile) return {};
  Symbolizer symbolizer;
  NormalizedProfile normalized = normalize_profile(*profile, symbolizer);
  return render_folded(normalized, ProfileMetric::accum_objects) + "--- live bytes\n" +
         render_folded(normalized, ProfileMetric::live_bytes);
}

// Who records the stacks of an `exact` scope.
enum class StackSource { jemalloc_default, jemalloc_libunwind, hooks };

// One function for all three, so the stacks compared share every frame above it.
std::string folded_stacks(StackSource source) {
  if (source == StackSource::hooks) return folded_stacks_of_scope();
  JemallocProfilerStacks jemalloc;
  const Unwinder unwinder = source == StackSource::jemalloc_default ? Unwinder::jemalloc_default : Unwinder::libunwind;
  EXPECT_TRUE(detail::use_unwinder(unwinder)) << describe(unwinder);
  std::string folded = folded_stacks_of_scope();
  EXPECT_EQ(active_unwinder(), unwinder) << "a scope must not switch an explicitly chosen unwinder";
  return folded;
}

TEST(Unwinder, ExactScopesThroughJemallocUseLibunwind) {
  REQUIRE_LIBUNWIND();
  JemallocProfilerStacks jemalloc;
  { ProfileScope scope{"first", ScopeOptions{Mode::exact}}; }
  EXPECT_EQ(active_unwinder(), Unwinder::libunwind) << describe(active_unwinder());
}

// The default `exact` leaves jemalloc's profiler off: no sampled block moves
// to a page-sized class, and the profile still names every allocation.
TEST(Unwinder, ExactScopesRecordStacksWithoutJemallocsProfiler) {
  REQUIRE_LIBUNWIND();
  std::vector<void*> blocks;
  blocks.reserve(10);
  ProfileScope scope{"hooks", ScopeOptions{Mode::exact}};
  EXPECT_FALSE(*jemalloc::prof_active());
  allocate_blocks(blocks, 10, 48);
  auto result = scope.finish();
  free_blocks(blocks);
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->allocations, 10u);
  EXPECT_EQ(result->live_allocations, 10u);
  auto profile = read_profile(result->profile_path);
  ASSERT_TRUE(profile) << profile.error().message();
  EXPECT_EQ(profile->sample_period, 1u);
  EXPECT_EQ(profile->totals.accum_objects, 10u);
  EXPECT_EQ(profile->totals.live_bytes, 480u);
  EXPECT_FALSE(profile->mappings.empty());
}

TEST(Unwinder, SameNormalizedStacksAsJemallocsOwn) {
  REQUIRE_LIBUNWIND();
  {
    ProfileScope warm_up{"warm-up", ScopeOptions{Mode::exact}};
    workload();
  }  // lazily initialised statics
  const std::string with_default = folded_stacks(StackSource::jemalloc_default);
  const std::string with_libunwind = folded_stacks(StackSource::jemalloc_libunwind);
  const std::string with_hooks = folded_stacks(StackSource::hooks);
  ASSERT_FALSE(with_default.empty());
  EXPECT_NE(with_default.find("leaf_strings"), std::string::npos) << with_default;
  EXPECT_NE(with_default.find("recurse("), std::string::npos) << with_default;
  EXPECT_EQ(with_libunwind, with_default);
  EXPECT_EQ(with_hooks, with_default);
}

TEST(Unwinder, SwitchesBackToJemallocsDefault) {
  REQUIRE_LIBUNWIND();
  ASSERT_TRUE(detail::use_unwinder(Unwinder::libunwind));
  ASSERT_TRUE(detail::use_unwinder(Unwinder::jemalloc_default));
  EXPECT_EQ(active_unwinder(), Unwinder::jemalloc_default);
  ASSERT_TRUE(detail::use_unwinder(Unwinder::libunwind));
  EXPECT_EQ(active_unwinder(), Unwinder::libunwind);
}

}  // namespace
}  // namespace heapgate
