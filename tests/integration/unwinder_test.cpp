// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// libunwind behind jemalloc's prof_backtrace hook must record the same stacks
// as jemalloc's own unwinder: a baseline recorded with one is compared with
// profiles taken with the other (HEAPGATE_UNWINDER=jemalloc, or a machine
// without libunwind.so.8).
#include <dlfcn.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/diff.h"
#include "heapgate/folded.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/profile_scope.h"
#include "heapgate/symbolizer.h"
#include "heapgate/unwinder.h"
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

std::string folded_stacks_with(Unwinder unwinder) {
  EXPECT_TRUE(detail::use_unwinder(unwinder)) << describe(unwinder);
  std::string path;
  {
    ProfileScope scope{"unwinder", ScopeOptions{Mode::exact}};
    EXPECT_EQ(active_unwinder(), unwinder) << "a scope must not switch an explicitly chosen unwinder";
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
  return render_folded(normalized, Metric::accum_objects) + "--- live bytes\n" +
         render_folded(normalized, Metric::live_bytes);
}

TEST(Unwinder, ExactScopesUseLibunwind) {
  REQUIRE_LIBUNWIND();
  { ProfileScope scope{"first", ScopeOptions{Mode::exact}}; }
  EXPECT_EQ(active_unwinder(), Unwinder::libunwind) << describe(active_unwinder());
}

TEST(Unwinder, SameNormalizedStacksAsJemallocsOwn) {
  REQUIRE_LIBUNWIND();
  { ProfileScope warm_up{"warm-up", ScopeOptions{Mode::exact}}; workload(); }  // lazily initialised statics
  const std::string with_default = folded_stacks_with(Unwinder::jemalloc_default);
  const std::string with_libunwind = folded_stacks_with(Unwinder::libunwind);
  ASSERT_FALSE(with_default.empty());
  EXPECT_NE(with_default.find("leaf_strings"), std::string::npos) << with_default;
  EXPECT_NE(with_default.find("recurse("), std::string::npos) << with_default;
  EXPECT_EQ(with_libunwind, with_default);
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
