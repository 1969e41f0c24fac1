// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// heapgate's symbolic diff and `jeprof --base` on the rebased base profile
// must tell the same story for two processes of one build: for every metric,
// each function jeprof charges a non-zero flat delta to is the innermost frame
// of a changed heapgate stack with that same delta, and the reverse.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "heapgate/diff.h"
#include "heapgate/jeprof.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/rebase.h"
#include "heapgate/symbolizer.h"
#include "profile_test_support.h"
#include "test_support.h"

namespace heapgate {
namespace {

using testing::bare_function_name;

struct Column {
  ProfileMetric metric;
  std::vector<std::string> jeprof_flags;
};

class DiffAgreement : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_PROFILING();
    HEAPGATE_REQUIRE_PROGRAM("jeprof");
    dir_ = testing::make_temp_dir();
    base_path_ = dir_ + "/base.heap";
    current_path_ = dir_ + "/current.heap";
    // Both sides non-trivial: the base already has some of each injected kind.
    auto b = testing::run_heap_workload(base_path_, 2, 1);
    ASSERT_TRUE(b) << b.error().message();
    auto c = testing::run_heap_workload(current_path_, 9, 4);
    ASSERT_TRUE(c) << c.error().message();
    auto base = read_profile(base_path_);
    auto current = read_profile(current_path_);
    ASSERT_TRUE(base) << base.error().message();
    ASSERT_TRUE(current) << current.error().message();
    Symbolizer symbols;
    diff_ = diff_profiles(normalize_profile(*base, symbols), normalize_profile(*current, symbols));
    std::error_code ec;
    exe_ = std::filesystem::canonical(testing::helper_binary("heap_workload"), ec).string();
    ASSERT_FALSE(ec) << ec.message();
  }

  // Flat deltas per function, from jeprof --base (rebased) --text.
  std::map<std::string, double> jeprof_deltas(const Column& column) const {
    JeprofOptions o;
    o.binary = exe_;
    o.profile = current_path_;
    o.base = base_path_;
    o.extra_args = column.jeprof_flags;
    auto out = run_jeprof_rebased(o);
    EXPECT_TRUE(out) << out.error().message();
    if (!out) return {};
    auto text = parse_jeprof_text(*out);
    EXPECT_TRUE(text) << text.error().message() << "\n" << *out;
    std::map<std::string, double> deltas;
    if (!text) return deltas;
    for (const auto& line : text->lines) {
      if (line.flat != 0) deltas[std::string(bare_function_name(line.name))] += line.flat;
    }
    return deltas;
  }

  // Deltas per innermost frame, from heapgate's diff.
  std::map<std::string, double> heapgate_deltas(ProfileMetric metric) const {
    std::map<std::string, double> deltas;
    for (const auto& entry : diff_.entries) {
      double d = profile_metric_value(entry.delta, metric);
      if (d != 0 && !entry.frames.empty()) deltas[std::string(bare_function_name(entry.frames.front().view()))] += d;
    }
    return deltas;
  }

  std::string dir_;
  std::string base_path_;
  std::string current_path_;
  std::string exe_;
  ProfileDiff diff_;
};

TEST_F(DiffAgreement, EveryMetricAgreesWithJeprofBaseOnTheRebasedProfile) {
  const Column columns[] = {
      {ProfileMetric::live_objects, {"--inuse_objects"}},
      {ProfileMetric::accum_objects, {"--alloc_objects"}},
      {ProfileMetric::live_bytes, {"--inuse_space", "--show_bytes"}},
      {ProfileMetric::accum_bytes, {"--alloc_space", "--show_bytes"}},
  };
  for (const Column& column : columns) {
    SCOPED_TRACE(std::string(to_string(column.metric)));
    std::map<std::string, double> ours = heapgate_deltas(column.metric);
    std::map<std::string, double> theirs = jeprof_deltas(column);
    EXPECT_EQ(ours, theirs);
  }
}

TEST_F(DiffAgreement, TheDeltasAreTheInjectedOnes) {
  // Cross-check of the agreed numbers against what the workload injected:
  // 7 more freed 48 B blocks, 3 more leaked 96 B blocks.
  EXPECT_EQ(heapgate_deltas(ProfileMetric::live_objects), (std::map<std::string, double>{{"injected_leak", 3}}));
  EXPECT_EQ(heapgate_deltas(ProfileMetric::live_bytes), (std::map<std::string, double>{{"injected_leak", 288}}));
  EXPECT_EQ(heapgate_deltas(ProfileMetric::accum_objects),
            (std::map<std::string, double>{{"injected_extra", 7}, {"injected_leak", 3}}));
  EXPECT_EQ(heapgate_deltas(ProfileMetric::accum_bytes),
            (std::map<std::string, double>{{"injected_extra", 336}, {"injected_leak", 288}}));
}

}  // namespace
}  // namespace heapgate
