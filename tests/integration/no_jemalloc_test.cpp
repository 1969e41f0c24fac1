// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Built without jemalloc: mode off, one clear reason, and tests still run.
#include <gtest/gtest.h>

#include "heapgate/profile_scope.h"

namespace heapgate {
namespace {

TEST(NoJemalloc, StatusSaysOffAndWhy) {
  const AllocatorStatus& s = allocator_status();
  EXPECT_FALSE(s.jemalloc_detected);
  EXPECT_EQ(s.best_mode(), Mode::off);
  EXPECT_NE(s.describe().find("not loaded"), std::string::npos) << s.describe();
  EXPECT_NE(s.describe().find("LD_PRELOAD"), std::string::npos) << s.describe();
}

TEST(NoJemalloc, CounterScopeFailsWithTheFix) {
  ProfileScope scope{"absent"};
  EXPECT_EQ(scope.mode(), Mode::off);
  auto r = scope.finish();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message().find("jemalloc is not loaded"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("fix:"), std::string::npos);
}

TEST(NoJemalloc, OffScopeMeasuresNothingAndSucceeds) {
  ProfileScope scope{"off", ScopeOptions{Mode::off}};
  auto r = scope.finish();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->mode, Mode::off);
  EXPECT_EQ(r->allocations, 0u);
}

TEST(NoJemalloc, MallctlWrappersSayJemallocIsAbsent) {
  auto v = jemalloc::version();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, ErrorCode::unavailable);
  EXPECT_FALSE(jemalloc::prof_dump("/tmp/x.heap"));
  EXPECT_FALSE(jemalloc::stats());
}

}  // namespace
}  // namespace heapgate
