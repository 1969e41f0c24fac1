// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `sampled` mode: counts are estimates, scaled back up as jeprof does, and say so.
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/profile_scope.h"
#include "test_support.h"
#include "workloads.h"

namespace heapgate {
namespace {

TEST(SampledMode, EstimatesLargeAllocationsAndSaysSo) {
  HEAPGATE_REQUIRE_MODE(Mode::sampled);
  std::vector<void*> keep;
  keep.reserve(400);
  ProfileScope scope{"sampled", ScopeOptions{Mode::sampled}};
  ASSERT_EQ(scope.mode(), Mode::sampled);
  testing::allocate_blocks(keep, 400, 256 * 1024);
  auto r = scope.finish();
  testing::free_blocks(keep);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->estimated);
  EXPECT_EQ(r->sample_period, 524288u);
  const double truth = 400.0 * 256 * 1024;
  // 100 MiB at one sample per 512 KiB: ~200 samples, so within 25% with overwhelming probability.
  EXPECT_NEAR(static_cast<double>(r->live_bytes), truth, truth * 0.25);
  EXPECT_NEAR(static_cast<double>(r->allocations), 400.0, 100.0);
}

TEST(SampledMode, ExactIsRefusedAtAnotherSampleRate) {
  // This process samples every 2^19 bytes. prof.reset could lower the rate, but
  // threads adopt it only at their next sample event, so the first allocations
  // would go unrecorded: exact mode must be configured at start instead.
  auto r = allocator_status().check(Mode::exact);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message().find("lg_prof_sample"), std::string::npos) << r.error().message();
  ProfileScope scope{"exact", Mode::exact};
  EXPECT_FALSE(scope.finish());
}

}  // namespace
}  // namespace heapgate
