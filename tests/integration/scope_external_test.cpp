// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// MALLOC_CONF started profiling active: heapgate must not interfere (as Mesos).
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/profile_scope.h"
#include "test_support.h"
#include "workloads.h"

namespace heapgate {
namespace {

TEST(ExternalProfiling, ProfilingScopesAreRefused) {
  ASSERT_TRUE(allocator_status().profiling_started_externally);
  // jemalloc's profiler belongs to whoever started it: `sampled` keeps off it,
  // and so does `exact` unless the hooks record its stacks.
  std::vector<Mode> refused = {Mode::sampled};
  if (!allocator_status().exact_through_hooks) refused.push_back(Mode::exact);
  for (Mode mode : refused) {
    ProfileScope scope{"refused", ScopeOptions{mode}};
    auto r = scope.finish();
    ASSERT_FALSE(r) << to_string(mode);
    EXPECT_EQ(r.error().code, ErrorCode::conflict);
    EXPECT_NE(r.error().message().find("prof_active"), std::string::npos) << r.error().message();
  }
  // Untouched: still active, as MALLOC_CONF asked.
  EXPECT_TRUE(*jemalloc::prof_active());
}

// The hooks' `exact` never touches jemalloc's profiler, so it works beside it.
TEST(ExternalProfiling, ExactThroughTheHooksStillWorks) {
  if (!allocator_status().exact_through_hooks) GTEST_SKIP() << "exact needs jemalloc's profiler here (no libunwind)";
  std::vector<void*> keep;
  keep.reserve(3);
  ProfileScope scope{"exact", ScopeOptions{Mode::exact}};
  testing::allocate_blocks(keep, 3, 64);
  auto r = scope.finish();
  testing::free_blocks(keep);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->mode, Mode::exact);
  EXPECT_EQ(r->allocations, 3u);
  EXPECT_FALSE(r->profile_path.empty());
  EXPECT_TRUE(*jemalloc::prof_active());
}

TEST(ExternalProfiling, CountersStillWork) {
  HEAPGATE_REQUIRE_COUNTERS();
  std::vector<void*> keep;
  keep.reserve(5);
  ProfileScope scope{"counters"};
  testing::allocate_blocks(keep, 5, 64);
  auto r = scope.finish();
  testing::free_blocks(keep);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->allocations, 5u);
}

}  // namespace
}  // namespace heapgate
