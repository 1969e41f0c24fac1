// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The documented CI path on what untuned suites do (untuned_suite.cpp): the
// first run records without a false leak (glibc's setenv memory, detached
// threads), learns which tests vary from process to process, and later runs
// of the unchanged build pass, while each planted change is still caught.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/baseline.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

class Untuned : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    dir_ = testing::make_temp_dir();
    baselines_ = dir_ + "/baselines";
    counter_ = dir_ + "/counter";
    start_counter();
  }

  // The scripted counter starts at 0 in a file that exists, so every run
  // reads it the same way.
  void start_counter() { ASSERT_TRUE(sys::write_file_atomic(counter_, "0")); }

  sys::ProcessResult gate(const std::string& report, std::vector<std::string> env = {}) {
    env.push_back("UNTUNED_COUNTER_FILE=" + counter_);
    return testing::gate_suite(HEAPGATE_CLI_PATH, "untuned_suite", baselines_, report, std::move(env));
  }

  TestRecord record(const std::string& report, const std::string& test, const std::string& binary = "untuned_suite") {
    auto r = read_report(report + "/" + binary + ".json");
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    if (r) {
      for (const TestRecord& t : r->tests) {
        if (t.name == test) return t;
      }
    }
    ADD_FAILURE() << test << " is not in " << report;
    return {};
  }

  std::string dir_;
  std::string baselines_;
  std::string counter_;
};

TEST_F(Untuned, FirstRunRecordsWithoutFalseLeaksAndLaterRunsPass) {
  const sys::ProcessResult first = gate(dir_ + "/report-1");
  ASSERT_EQ(first.exit_code, 0) << first.stdout_text << first.stderr_text;
  // What glibc keeps for setenv is named, not failed.
  const TestRecord env = record(dir_ + "/report-1", "Env.SetsAFreshValue");
  EXPECT_EQ(env.verdict, Verdict::new_test) << env.message;
  EXPECT_NE(env.message.find("the C library keeps"), std::string::npos) << env.message;
  EXPECT_NE(env.message.find("setenv"), std::string::npos) << env.message;
  // Detached threads freed their blocks after the test returned: no leak.
  const TestRecord detached = record(dir_ + "/report-1", "Detached.ShortLived");
  EXPECT_EQ(detached.verdict, Verdict::new_test) << detached.message;
  EXPECT_EQ(detached.metrics.live_allocations, 0u) << detached.message;

  auto baseline = read_baseline(baselines_ + "/untuned_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  // The first run measured every test twice (the run and the exact run that
  // records call sites, a fresh process): the one that differed has a band
  // in the metric that varied, the others stay exact.
  const BaselineEntry& varies = baseline->tests.at("Own.VariesByProcess");
  ASSERT_TRUE(varies.noise) << "a test whose own thread varied from process to process has no band";
  EXPECT_LT(varies.noise->low.allocated_bytes, varies.noise->high.allocated_bytes);
  EXPECT_EQ(varies.noise->low.allocations, varies.noise->high.allocations);
  EXPECT_FALSE(baseline->tests.at("Own.Repeats").noise);

  for (int run = 2; run <= 4; ++run) {
    const std::string report = dir_ + "/report-" + std::to_string(run);
    const sys::ProcessResult gated = gate(report);
    EXPECT_EQ(gated.exit_code, 0) << "run " << run << "\n" << gated.stdout_text << gated.stderr_text;
  }
  // Recording again on the unchanged build writes the same entries, byte
  // for byte, for every test that repeats (the threaded one included: no
  // switches or waits are kept). A test that varies keeps the call sites of
  // whichever run recorded them, and its band.
  const std::string first_dir = baselines_;
  baselines_ = dir_ + "/baselines-again";
  counter_ = dir_ + "/counter-again";
  start_counter();
  ASSERT_EQ(gate(dir_ + "/report-again").exit_code, 0);
  auto first_file = read_baseline(first_dir + "/untuned_suite.json");
  auto second_file = read_baseline(baselines_ + "/untuned_suite.json");
  ASSERT_TRUE(first_file && second_file);
  for (const char* repeats : {"Own.Repeats", "Detached.ShortLived"}) {
    Baseline one;
    Baseline two;
    one.tests[repeats] = first_file->tests.at(repeats);
    two.tests[repeats] = second_file->tests.at(repeats);
    EXPECT_EQ(to_json(one), to_json(two)) << repeats;
  }
  EXPECT_TRUE(second_file->tests.at("Own.VariesByProcess").noise);
}

TEST_F(Untuned, PlantedChangesAreCaughtWithTheirLines) {
  ASSERT_EQ(gate(dir_ + "/report-1").exit_code, 0);

  const sys::ProcessResult extra = gate(dir_ + "/report-extra", {"UNTUNED_EXTRA=1"});
  EXPECT_EQ(extra.exit_code, 1) << extra.stdout_text << extra.stderr_text;
  const TestRecord repeats = record(dir_ + "/report-extra", "Own.Repeats");
  EXPECT_EQ(repeats.verdict, Verdict::regressed) << repeats.message;
  EXPECT_NE(repeats.message.find("allocations 4 \xE2\x86\x92 5"), std::string::npos) << repeats.message;
  EXPECT_NE(repeats.message.find("Own_Repeats_Test::TestBody() (untuned_suite.cpp:"), std::string::npos)
      << repeats.message;

  const sys::ProcessResult more = gate(dir_ + "/report-more", {"UNTUNED_VARIES_MORE=1"});
  EXPECT_EQ(more.exit_code, 1) << more.stdout_text << more.stderr_text;
  EXPECT_EQ(record(dir_ + "/report-more", "Own.VariesByProcess").verdict, Verdict::regressed);

  const sys::ProcessResult leak = gate(dir_ + "/report-leak", {"UNTUNED_DETACHED_LEAK=1"});
  EXPECT_EQ(leak.exit_code, 1) << leak.stdout_text << leak.stderr_text;
  const TestRecord detached = record(dir_ + "/report-leak", "Detached.ShortLived");
  EXPECT_EQ(detached.verdict, Verdict::leaked) << detached.message;
  EXPECT_NE(detached.message.find("untuned_suite.cpp"), std::string::npos) << detached.message;
}

// A block a test hands to a worker shared by the suite, freed by the worker
// after the test returned: not live in a gated run (the run follows what
// other threads free after a test); kept by the worker for good, it is.
// Unsharded, so the later test that lets the worker free is in the same
// process: the suite binary run directly, as a user runs it.
TEST_F(Untuned, BlocksAWorkerFreesAfterTheTestReturnedAreNotLive) {
  auto run = [&](const std::string& report, std::vector<std::string> env = {}) {
    sys::ProcessOptions options;
    options.unset_env = testing::suite_unset_env();
    env.push_back("UNTUNED_COUNTER_FILE=" + counter_);
    options.extra_env = std::move(env);
    auto ran = sys::run_process({testing::helper_binary("untuned_suite"), "--heapgate_baselines=" + baselines_,
                                 "--heapgate_report=" + report, "--heapgate_strict"},
                                options);
    EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
    return ran ? *ran : sys::ProcessResult{};
  };
  const sys::ProcessResult first = run(dir_ + "/report-1");
  ASSERT_EQ(first.exit_code, 0) << first.stdout_text << first.stderr_text;
  EXPECT_EQ(record(dir_ + "/report-1", "Pool.HandsABlockOver").metrics.live_allocations, 0u);

  const sys::ProcessResult late = run(dir_ + "/report-late", {"UNTUNED_POOL_LATE=1"});
  EXPECT_EQ(late.exit_code, 0) << late.stdout_text << late.stderr_text;
  const TestRecord handed = record(dir_ + "/report-late", "Pool.HandsABlockOver");
  EXPECT_EQ(handed.verdict, Verdict::pass) << handed.message;
  EXPECT_EQ(handed.metrics.live_allocations, 0u) << handed.message;
  EXPECT_NE(handed.message.find("held, not kept: 1 of the 1 blocks live at its end"), std::string::npos)
      << handed.message;

  const sys::ProcessResult kept = run(dir_ + "/report-kept", {"UNTUNED_POOL_LATE=1", "UNTUNED_POOL_LEAK=1"});
  EXPECT_EQ(kept.exit_code, 1) << kept.stdout_text << kept.stderr_text;
  const TestRecord leaked = record(dir_ + "/report-kept", "Pool.HandsABlockOver");
  EXPECT_TRUE(is_failure(leaked.verdict)) << leaked.message;
  EXPECT_EQ(leaked.metrics.live_allocations, 1u) << leaked.message;
  EXPECT_NE(leaked.message.find("untuned_suite.cpp"), std::string::npos) << leaked.message;
}

// The suite's first test pays for a static later tests reuse, in the suite
// and in its baseline; a fresh process's second run of it does not. A
// planted allocation there is still caught: its confirmation is a fresh
// process's first run, which pays the same. A later test that a filter
// makes the first pays it too, against a baseline recorded without it: not
// a regression.
TEST_F(Untuned, APlantInTheFirstTestOfTheSuiteIsCaught) {
  auto run = [&](const std::string& report, std::vector<std::string> env = {},
                 const std::string& filter = "--gtest_filter=*") {
    sys::ProcessOptions options;
    options.unset_env = testing::suite_unset_env();
    options.extra_env = std::move(env);
    auto ran = sys::run_process({testing::helper_binary("lazy_static_suite"), "--heapgate_baselines=" + baselines_,
                                 "--heapgate_report=" + report, filter},
                                options);
    EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
    return ran ? *ran : sys::ProcessResult{};
  };
  const sys::ProcessResult first = run(dir_ + "/report-1");
  ASSERT_EQ(first.exit_code, 0) << first.stdout_text << first.stderr_text;
  const sys::ProcessResult again = run(dir_ + "/report-2");
  EXPECT_EQ(again.exit_code, 0) << again.stdout_text << again.stderr_text;

  const sys::ProcessResult planted = run(dir_ + "/report-extra", {"LAZY_EXTRA=1"});
  EXPECT_EQ(planted.exit_code, 1) << planted.stdout_text << planted.stderr_text;
  const TestRecord lazy = record(dir_ + "/report-extra", "Lazy.BuildsTheTableFirst", "lazy_static_suite");
  EXPECT_EQ(lazy.verdict, Verdict::regressed) << lazy.message;
  EXPECT_NE(lazy.message.find("Lazy_BuildsTheTableFirst_Test::TestBody() (lazy_static_suite.cpp:35)"),
            std::string::npos)
      << lazy.message;

  const sys::ProcessResult filtered = run(dir_ + "/report-filtered", {}, "--gtest_filter=Lazy.UsesTheTable");
  EXPECT_EQ(filtered.exit_code, 0) << filtered.stdout_text << filtered.stderr_text;
  const TestRecord uses = record(dir_ + "/report-filtered", "Lazy.UsesTheTable", "lazy_static_suite");
  EXPECT_EQ(uses.verdict, Verdict::pass) << uses.message;
  EXPECT_NE(uses.message.find("not reproducible"), std::string::npos) << uses.message;
}

}  // namespace
}  // namespace heapgate
