// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Sharded CI: N jobs each run one shard of a suite and upload its report; a
// final job merges them and gates. The merged report must judge every test as
// one unsharded run does, and accepting it must write the same baseline.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

namespace fs = std::filesystem;

// Tests whose numbers do not depend on which tests ran before them in the
// same process (Sample.LazyStatic and Sample.ReplacesGlobal do, by design) or
// on timing (Sample.Threads: what its threads free before it ends).
constexpr const char* kFilter =
    "Sample.Clean:Sample.Counted:Sample.Leaks:Sample.AllowedLeak:Sample.OverBudget:Sample.WithinBudget:"
    "Sample.AssertionFails:Counts/*";
constexpr std::size_t kTests = 10;

sys::ProcessResult run(std::vector<std::string> argv, std::vector<std::string> env = {}) {
  sys::ProcessOptions options;
  options.extra_env = std::move(env);
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX", "HEAPGATE_MODE"};
  auto ran = sys::run_process(argv, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
}

sys::ProcessResult heapgate_cli(std::vector<std::string> args) {
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  return run(std::move(args));
}

// Runs the suite as `shards` separate processes (shards == 0: unsharded),
// each writing its report into `dir`; returns the report files.
std::vector<std::string> run_shards(const std::string& dir, int shards, const std::string& baselines) {
  std::vector<std::string> argv{testing::helper_binary("sample_suite"), "--heapgate_report=" + dir,
                                std::string("--gtest_filter=") + kFilter};
  if (!baselines.empty()) argv.push_back("--heapgate_baselines=" + baselines);
  if (shards == 0) {
    run(argv);
    return {dir + "/sample_suite.json"};
  }
  std::vector<std::string> files;
  for (int i = 0; i < shards; ++i) {
    run(argv, {"GTEST_TOTAL_SHARDS=" + std::to_string(shards), "GTEST_SHARD_INDEX=" + std::to_string(i)});
    files.push_back(dir + "/sample_suite.shard-" + std::to_string(i) + "-of-" + std::to_string(shards) + ".json");
  }
  return files;
}

// `heapgate report merge` of the files into `<dir>/sample_suite.json`, alone in its directory.
std::string merge(const std::vector<std::string>& files, const std::string& dir) {
  fs::create_directories(dir);
  std::vector<std::string> args{"report", "merge", "-o", dir + "/sample_suite.json"};
  args.insert(args.end(), files.begin(), files.end());
  auto merged = heapgate_cli(args);
  EXPECT_EQ(merged.exit_code, 0) << merged.stderr_text;
  return dir + "/sample_suite.json";
}

std::map<std::string, std::string> verdicts(const std::string& report_file) {
  auto report = read_report(report_file);
  EXPECT_TRUE(report) << (report ? "" : report.error().message());
  std::map<std::string, std::string> out;
  if (!report) return out;
  for (const TestRecord& t : report->tests) {
    out[t.name] = std::string(to_string(t.verdict)) + (t.gtest_failed ? " (gtest failed)" : "");
  }
  return out;
}

std::string accept_into(const std::string& report_dir, const std::string& baselines) {
  auto accepted = heapgate_cli({"accept", "--baselines", baselines, "--report", report_dir});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.stdout_text << accepted.stderr_text;
  auto text = sys::read_file(baselines + "/sample_suite.json");
  EXPECT_TRUE(text) << (text ? "" : text.error().message());
  return text ? *text : std::string();
}

TEST(ShardedCi, MergedShardsGateAndAcceptLikeOneUnshardedRun) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string root = testing::make_temp_dir();

  // One unsharded run records the baseline, then is judged against it.
  run_shards(root + "/u-record", 0, "");
  const std::string baseline = accept_into(root + "/u-record", root + "/baselines-unsharded");
  ASSERT_NE(baseline.find("Sample.Counted"), std::string::npos) << baseline;
  const auto unsharded = verdicts(run_shards(root + "/u-gate", 0, root + "/baselines-unsharded").front());
  ASSERT_EQ(unsharded.size(), kTests);
  EXPECT_EQ(unsharded.at("Sample.Counted"), "pass");
  EXPECT_NE(unsharded.at("Sample.Leaks"), "pass");

  for (int n : {1, 2, 7}) {
    SCOPED_TRACE("shards: " + std::to_string(n));
    const std::string tag = "/n" + std::to_string(n);
    // Recording: the merged report of N shards accepts into the same baseline.
    const std::string recorded = merge(run_shards(root + tag + "-record", n, ""), root + tag + "-record-merged");
    EXPECT_EQ(accept_into(root + tag + "-record-merged", root + tag + "-baselines"), baseline);
    // Gating: the merged report of N shards has the unsharded run's verdicts.
    const std::string gated =
        merge(run_shards(root + tag + "-gate", n, root + "/baselines-unsharded"), root + tag + "-gate-merged");
    EXPECT_EQ(verdicts(gated), unsharded);
    auto compared = heapgate_cli(
        {"compare", "--baselines", root + "/baselines-unsharded", "--report", root + tag + "-gate-merged"});
    EXPECT_EQ(compared.exit_code, 1) << "Sample.Leaks and Sample.OverBudget fail the gate\n" << compared.stdout_text;
  }
}

TEST(ShardedCi, BazelsShardingVariablesShardTheSuite) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string root = testing::make_temp_dir();
  const auto unsharded = verdicts(run_shards(root + "/u", 0, "").front());
  std::vector<std::string> files;
  for (int i = 0; i < 2; ++i) {
    const std::string status = root + "/status-" + std::to_string(i);
    run({testing::helper_binary("sample_suite"), "--heapgate_report=" + root + "/b",
         std::string("--gtest_filter=") + kFilter},
        {"TEST_TOTAL_SHARDS=2", "TEST_SHARD_INDEX=" + std::to_string(i), "TEST_SHARD_STATUS_FILE=" + status});
    EXPECT_TRUE(sys::exists(status)) << "Bazel reads this file as: the test honours sharding";
    files.push_back(root + "/b/sample_suite.shard-" + std::to_string(i) + "-of-2.json");
    auto shard = read_report(files.back());
    ASSERT_TRUE(shard) << shard.error().message();
    EXPECT_LT(shard->tests.size(), kTests) << "each shard runs only its part";
  }
  EXPECT_EQ(verdicts(merge(files, root + "/merged")), unsharded);
}

TEST(ShardedCi, MergeRefusesAMissingOrRepeatedShard) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string root = testing::make_temp_dir();
  std::vector<std::string> files = run_shards(root + "/s", 3, "");
  auto missing = heapgate_cli({"report", "merge", "-o", root + "/m.json", files[0], files[2]});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("shard 1 of 3 is missing"), std::string::npos) << missing.stderr_text;
  EXPECT_FALSE(sys::exists(root + "/m.json"));
  auto twice = heapgate_cli({"report", "merge", "-o", root + "/m.json", files[0], files[1], files[1], files[2]});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.stderr_text.find("shard 1 of 3 is given twice (reports 2 and 3)"), std::string::npos)
      << twice.stderr_text;
}

TEST(ShardedCi, RunGivesEachShardItsOwnTemporaryDirectoryOfOneLength) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string root = testing::make_temp_dir();
  // Sample.Clean and Counts/* report TMPDIR and TEST_TMPDIR in their logs (SAMPLE_PRINT_TMPDIR).
  auto ran = run({HEAPGATE_CLI_PATH, "run", "--jobs", "2", "--baselines", root + "/b", "--report", root + "/r", "--",
                  testing::helper_binary("sample_suite"), "--gtest_filter=Sample.Clean:Counts/*"},
                 {"SAMPLE_PRINT_TMPDIR=1", "TMPDIR=" + root});
  EXPECT_EQ(ran.exit_code, 0) << ran.stdout_text << ran.stderr_text;
  std::map<std::string, std::size_t> dirs;  // TMPDIR seen -> its length
  for (const char* log : {"/r/shards/sample_suite.shard-0-of-2.log", "/r/shards/sample_suite.shard-1-of-2.log"}) {
    auto text = sys::read_file(root + log);
    ASSERT_TRUE(text) << text.error().message();
    for (std::size_t at = text->find("TMPDIR="); at != std::string::npos; at = text->find("TMPDIR=", at + 1)) {
      if (at > 0 && (*text)[at - 1] == '_') continue;  // TEST_TMPDIR, checked below
      std::string dir = text->substr(at + 7, text->find(' ', at) - at - 7);
      dirs[dir] = dir.size();
      EXPECT_NE(text->find("TEST_TMPDIR=" + dir), std::string::npos) << *text;
      EXPECT_EQ(dir.rfind(root + "/heapgate-run.", 0), 0u) << dir;
    }
  }
  ASSERT_EQ(dirs.size(), 2u) << "two shards, two directories";
  EXPECT_EQ(dirs.begin()->second, dirs.rbegin()->second);
  EXPECT_FALSE(sys::exists(dirs.begin()->first)) << "removed after the run";
}

}  // namespace
}  // namespace heapgate
