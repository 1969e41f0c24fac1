// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `sampled` mode: counts are estimates, scaled back up as jeprof does, and say so.
#include <cmath>
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

TEST(SampledMode, EstimatesCarryTheirStandardErrors) {
  HEAPGATE_REQUIRE_MODE(Mode::sampled);
  std::vector<void*> keep;
  keep.reserve(400);
  ProfileScope scope{"sampled", ScopeOptions{Mode::sampled}};
  testing::allocate_blocks(keep, 400, 256 * 1024);
  auto r = scope.finish();
  testing::free_blocks(keep);
  ASSERT_TRUE(r) << r.error().message();
  // The model's error for 400 blocks each sampled with p = 1 - e^-0.5:
  // sqrt(400 (1 - p) / p) = 24.8 blocks; the estimate from the sample is near it.
  const double p = 1 - std::exp(-0.5);
  const double model = std::sqrt(400 * (1 - p) / p);
  EXPECT_NEAR(r->sampling_errors.live_allocations, model, model * 0.5);
  EXPECT_NEAR(r->sampling_errors.allocations, model, model * 0.5);
  EXPECT_GT(r->sampling_errors.live_bytes, 0);
  // Within 4 standard errors of the truth: fails once in ~16,000 runs.
  EXPECT_NEAR(static_cast<double>(r->live_allocations), 400.0, 4 * r->sampling_errors.live_allocations);
  EXPECT_NEAR(static_cast<double>(r->live_bytes), 400.0 * 256 * 1024, 4 * r->sampling_errors.live_bytes);
}

TEST(SampledMode, CountedScopesHaveNoSamplingError) {
  ProfileScope scope{"counted", ScopeOptions{Mode::counters}};
  std::vector<void*> keep;
  testing::allocate_blocks(keep, 10, 64);
  auto r = scope.finish();
  testing::free_blocks(keep);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->estimated);
  EXPECT_EQ(r->sampling_errors.allocations, 0);
  EXPECT_EQ(r->sampling_errors.live_bytes, 0);
}

// This process samples every 2^19 bytes. jemalloc's profiler could not give
// `exact` here (prof.reset lowers the rate only at each thread's next sample
// event, so the first allocations would go unrecorded), but the hooks record
// every allocation's stack whatever jemalloc samples.
TEST(SampledMode, ExactWorksAtAnotherSampleRateThroughTheHooks) {
  const AllocatorStatus& status = allocator_status();
  if (!status.exact_through_hooks) {
    auto r = status.check(Mode::exact);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::unavailable);
    EXPECT_NE(r.error().message().find("lg_prof_sample"), std::string::npos) << r.error().message();
    GTEST_SKIP() << "libunwind.so.8 is not installed: exact needs lg_prof_sample:0 from the start";
  }
  ASSERT_TRUE(status.check(Mode::exact));
  std::vector<void*> keep;
  keep.reserve(7);
  ProfileScope scope{"exact", Mode::exact};
  testing::allocate_blocks(keep, 7, 100);
  auto r = scope.finish();
  testing::free_blocks(keep);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->mode, Mode::exact);
  EXPECT_FALSE(r->estimated);
  EXPECT_EQ(r->allocations, 7u);
  EXPECT_EQ(r->live_bytes, 7u * 112);
  auto profile = read_profile(r->profile_path);
  ASSERT_TRUE(profile) << profile.error().message();
  EXPECT_EQ(profile->sample_period, 1u);
  EXPECT_EQ(profile->totals.accum_objects, 7u);
}

}  // namespace
}  // namespace heapgate
