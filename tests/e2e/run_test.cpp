// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate run`, `compare` and `accept` end to end: the built executable
// gating tests/e2e/sample_suite (linked with jemalloc, and a twin without it).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

// Deterministic tests of the sample suite: single-threaded, no leaks, no
// failures (Sample.Threads' peak depends on how its threads interleave).
constexpr const char* kCleanTests =
    "--gtest_filter=Sample.Clean:Sample.Counted:Sample.WithinBudget:SampleTyped/*:Counts/*";

sys::ProcessResult heapgate_cli(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
  options.extra_env = std::move(env);
  auto ran = sys::run_process(args, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
}

using testing::find_record;

class RunGate : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    dir_ = testing::make_temp_dir();
    baselines_ = dir_ + "/baselines";
    report_ = dir_ + "/report";
  }
  sys::ProcessResult run(std::vector<std::string> extra, std::vector<std::string> env = {},
                         const std::string& binary = "sample_suite") {
    std::vector<std::string> args{"run", "--progress", "plain", "--baselines", baselines_, "--report", report_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.push_back(testing::helper_binary(binary));
    args.push_back(kCleanTests);
    return heapgate_cli(args, std::move(env));
  }
  Report report(const std::string& binary = "sample_suite") {
    auto read = read_report(report_ + "/" + binary + ".json");
    EXPECT_TRUE(read) << read.error().message();
    return read ? *read : Report{};
  }
  std::string dir_, baselines_, report_;
};

TEST_F(RunGate, FirstRunCreatesTheBaselineThenARegressionFailsAndAcceptRoundTrips) {
  auto first = run({});
  EXPECT_EQ(first.exit_code, 0) << first.stdout_text << first.stderr_text;
  EXPECT_TRUE(sys::exists(baselines_ + "/sample_suite.json"));
  // The new baseline keeps each test's call sites, with file:line.
  auto created = read_baseline(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(created) << created.error().message();
  const auto& sites = created->tests.at("Sample.Counted").call_sites;
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_NE(sites[0].function.find("allocate_and_free"), std::string::npos) << sites[0].function;
  EXPECT_EQ(sites[0].location.rfind("sample_suite.cpp:", 0), 0u) << sites[0].location;
  EXPECT_EQ(sites[0].allocations, 7u);
  EXPECT_EQ(find_record(report(), "Sample.Counted")->verdict, Verdict::new_test);
  // Progress as plain lines when stderr is not a terminal.
  EXPECT_NE(first.stderr_text.find("heapgate: sample_suite: 8/8 tests, 0 failing"), std::string::npos)
      << first.stderr_text;

  auto second = run({});
  EXPECT_EQ(second.exit_code, 0) << second.stdout_text;
  EXPECT_EQ(find_record(report(), "Sample.Counted")->verdict, Verdict::pass);

  // Two more allocations: the gate fails and says which test.
  auto regressed = run({}, {"SAMPLE_EXTRA=2"});
  EXPECT_EQ(regressed.exit_code, 1) << regressed.stdout_text;
  EXPECT_NE(regressed.stdout_text.find("regressed   Sample.Counted"), std::string::npos) << regressed.stdout_text;
  const Report judged = report();
  const TestRecord* counted = find_record(judged, "Sample.Counted");
  ASSERT_NE(counted, nullptr);
  EXPECT_EQ(counted->verdict, Verdict::regressed);
  // Explained as the change at its call site, not as the test's totals.
  EXPECT_NE(counted->message.find("by call site, against the baseline:\n+2 allocations (+256 B) at "
                                  "(anonymous namespace)::allocate_and_free(int, unsigned long) (sample_suite.cpp:"),
            std::string::npos)
      << counted->message;
  EXPECT_TRUE(sys::exists(report_ + "/sample_suite.junit.xml"));
  EXPECT_TRUE(sys::exists(report_ + "/sample_suite.md"));

  // Accept only that test; the change is printed; the next run passes.
  auto accepted = heapgate_cli({"accept", "--baselines", baselines_, "--report", report_, "--tests", "Sample.Counted"});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.stderr_text;
  EXPECT_NE(accepted.stdout_text.find("Sample.Counted: allocations 7 → 9 (+2"), std::string::npos)
      << accepted.stdout_text;
  EXPECT_NE(accepted.stdout_text.find("0 new, 1 changed"), std::string::npos) << accepted.stdout_text;
  auto baseline = read_baseline(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(baseline);
  EXPECT_EQ(baseline->tests.at("Sample.Counted").metrics.allocations, 9u);

  auto after = run({}, {"SAMPLE_EXTRA=2"});
  EXPECT_EQ(after.exit_code, 0) << after.stdout_text;
}

// --ratchet (CI on the main branch): an improvement is written into the
// baseline and exit 4 says so; nothing to ratchet is 0; a regression is
// still 1 and never written.
TEST_F(RunGate, RatchetAcceptsImprovementsWithExitFourAndNeverRegressions) {
  auto recorded = run({}, {"SAMPLE_EXTRA=2"});
  ASSERT_EQ(recorded.exit_code, 0) << recorded.stdout_text << recorded.stderr_text;
  auto improved = run({"--ratchet"});
  EXPECT_EQ(improved.exit_code, 4) << improved.stdout_text << improved.stderr_text;
  EXPECT_NE(improved.stdout_text.find("ratcheted Sample.Counted: allocations 9 → 7"), std::string::npos)
      << improved.stdout_text;
  auto baseline = read_baseline(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  EXPECT_EQ(baseline->tests.at("Sample.Counted").metrics.allocations, 7u);

  auto steady = run({"--ratchet"});
  EXPECT_EQ(steady.exit_code, 0) << steady.stdout_text;
  auto regressed = run({"--ratchet"}, {"SAMPLE_EXTRA=1"});
  EXPECT_EQ(regressed.exit_code, 1) << regressed.stdout_text;
  auto after = read_baseline(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->tests.at("Sample.Counted").metrics.allocations, 7u);

  // compare --ratchet on saved reports does the same.
  auto saved = run({}, {"SAMPLE_EXTRA=3"});
  EXPECT_EQ(saved.exit_code, 1);
  auto reset = heapgate_cli({"accept", "--baselines", baselines_, "--report", report_});
  ASSERT_EQ(reset.exit_code, 0) << reset.stderr_text;
  auto plain = run({});  // 7 after 10: improved, reported, exit 0, nothing written
  EXPECT_EQ(plain.exit_code, 0) << plain.stdout_text;
  EXPECT_EQ(read_baseline(baselines_ + "/sample_suite.json")->tests.at("Sample.Counted").metrics.allocations, 10u);
  auto compared = heapgate_cli({"compare", "--ratchet", "--baselines", baselines_, "--report", report_});
  EXPECT_EQ(compared.exit_code, 4) << compared.stdout_text << compared.stderr_text;
  EXPECT_EQ(read_baseline(baselines_ + "/sample_suite.json")->tests.at("Sample.Counted").metrics.allocations, 7u);
}

TEST_F(RunGate, ShardedRunEqualsUnshardedRun) {
  auto whole = run({"--jobs", "1"});
  ASSERT_EQ(whole.exit_code, 0) << whole.stdout_text << whole.stderr_text;
  Report unsharded = report();
  auto created = sys::read_file(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(created);

  baselines_ = dir_ + "/baselines-sharded";
  report_ = dir_ + "/report-sharded";
  auto sharded_run = run({"--jobs", "3"});
  ASSERT_EQ(sharded_run.exit_code, 0) << sharded_run.stdout_text << sharded_run.stderr_text;
  Report sharded = report();
  EXPECT_TRUE(sys::exists(report_ + "/shards/sample_suite.shard-2-of-3.json"));

  ASSERT_EQ(sharded.tests.size(), unsharded.tests.size());
  for (std::size_t i = 0; i < sharded.tests.size(); ++i) {
    EXPECT_EQ(sharded.tests[i].name, unsharded.tests[i].name);
    EXPECT_EQ(sharded.tests[i].verdict, unsharded.tests[i].verdict) << sharded.tests[i].name;
    EXPECT_EQ(sharded.tests[i].metrics, unsharded.tests[i].metrics) << sharded.tests[i].name;
  }
  // The runner created the baseline from the merged shards: the same file.
  auto from_shards = sys::read_file(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(from_shards);
  EXPECT_EQ(*from_shards, *created);
}

TEST_F(RunGate, LeakFailsTheGateWithTheStack) {
  // clang-format off
  std::vector<std::string> args{"run", "--progress", "none", "--baselines", baselines_, "--report", report_,
                                "--", testing::helper_binary("sample_suite"), "--gtest_filter=Sample.Leaks"};
  // clang-format on
  auto r = heapgate_cli(args);
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text;
  const Report saved = report();
  const TestRecord* leaks = find_record(saved, "Sample.Leaks");
  ASSERT_NE(leaks, nullptr);
  EXPECT_EQ(leaks->verdict, Verdict::leaked);
  ASSERT_FALSE(leaks->stacks.empty()) << leaks->message;
  std::string frames;
  for (const auto& frame : leaks->stacks.front().frames) frames += frame + "\n";
  EXPECT_NE(frames.find("leak_three_blocks"), std::string::npos) << frames;
  EXPECT_NE(r.stdout_text.find("leaked      Sample.Leaks"), std::string::npos) << r.stdout_text;
  // The explaining profile travels with the report.
  ASSERT_FALSE(leaks->profiles.empty());
  EXPECT_EQ(leaks->profiles.front().rfind("profiles/sample_suite/", 0), 0u) << leaks->profiles.front();
  EXPECT_TRUE(sys::exists(report_ + "/" + leaks->profiles.front()));
}

// The shards' re-run children work in $TMPDIR; the profiles the report
// names are kept in the report directory, and nothing stays in $TMPDIR.
TEST_F(RunGate, ARunLeavesNothingInTmpdir) {
  const std::string tmp = dir_ + "/tmp";
  std::filesystem::create_directories(tmp);
  // A profile of an earlier run is not this run's.
  std::filesystem::create_directories(report_ + "/profiles/sample_suite");
  ASSERT_TRUE(sys::write_file_atomic(report_ + "/profiles/sample_suite/Old.Test.heap", "heap_v2/1\n"));
  auto r = heapgate_cli({"run", "--progress", "none", "--jobs", "2", "--baselines", baselines_, "--report", report_,
                         "--", testing::helper_binary("sample_suite"), "--gtest_filter=Sample.Leaks:Sample.OverBudget"},
                        {"TMPDIR=" + tmp});
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(tmp)) left.push_back(entry.path().string());
  EXPECT_EQ(left, std::vector<std::string>{});
  const Report saved = report();
  std::set<std::string> named;
  for (const auto& t : saved.tests) {
    for (const auto& profile : t.profiles) {
      named.insert(profile);
      EXPECT_EQ(profile.rfind("profiles/sample_suite/", 0), 0u) << profile;
      EXPECT_TRUE(sys::exists(report_ + "/" + profile)) << profile;
    }
  }
  EXPECT_EQ(named.size(), 2u);
  std::set<std::string> kept;
  for (const auto& entry : std::filesystem::directory_iterator(report_ + "/profiles/sample_suite")) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".heap") == 0) kept.insert("profiles/sample_suite/" + name);
  }
  EXPECT_EQ(kept, named);
}

// kill -9 in the middle of a baseline write leaves `<name>.json.tmp.XXXXXX`;
// the next write of that baseline removes it, and says so.
TEST_F(RunGate, AcceptRemovesTheTempFileOfAnInterruptedBaselineWrite) {
  ASSERT_EQ(run({}).exit_code, 0);
  const std::string target = baselines_ + "/sample_suite.json";
  const std::string orphan = target + ".tmp.q8ZkT2";
  ASSERT_TRUE(sys::write_file_atomic(orphan, std::string(8 << 20, ' ')));
  const std::string fresh = target + ".tmp.Fresh0";
  ASSERT_TRUE(sys::write_file_atomic(fresh, "a writer at work"));
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::minutes(5);
  std::filesystem::last_write_time(orphan, old);
  const std::string other = baselines_ + "/other.json.tmp.q8ZkT2";
  ASSERT_TRUE(sys::write_file_atomic(other, "not this target's"));
  std::filesystem::last_write_time(other, old);

  auto regressed = run({}, {"SAMPLE_EXTRA=2"});
  EXPECT_EQ(regressed.exit_code, 1) << regressed.stdout_text;
  EXPECT_TRUE(sys::exists(orphan)) << "only a write of the baseline cleans up";
  auto accepted = heapgate_cli({"accept", "--baselines", baselines_, "--report", report_});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.stderr_text;
  EXPECT_EQ(accepted.stderr_text,
            "heapgate: removed 1 stale temporary file of an interrupted write of " + target + ": " + orphan + "\n");
  EXPECT_FALSE(sys::exists(orphan));
  EXPECT_TRUE(sys::exists(fresh));
  EXPECT_TRUE(sys::exists(other));
  auto baseline = read_baseline(target);
  ASSERT_TRUE(baseline) << baseline.error().message();
  EXPECT_EQ(baseline->tests.at("Sample.Counted").metrics.allocations, 9u);
}

TEST_F(RunGate, SuppressionsPassThroughAndTheirSetupErrorsAreExit2) {
  // A suppressed leak passes through `heapgate run --suppressions`.
  const std::string suppressions = dir_ + "/suppressions.txt";
  ASSERT_TRUE(sys::write_file_atomic(suppressions, "leak:leak_three_blocks\n"));
  auto suppressed =
      heapgate_cli({"run", "--progress", "none", "--baselines", baselines_, "--report", report_, "--suppressions",
                    suppressions, "--", testing::helper_binary("sample_suite"), "--gtest_filter=Sample.Leaks"});
  EXPECT_EQ(suppressed.exit_code, 0) << suppressed.stdout_text << suppressed.stderr_text;
  // A typo in it stops the run before any test: exit 2, the file and line named.
  ASSERT_TRUE(sys::write_file_atomic(suppressions, "leek:leak_three_blocks\n"));
  for (const std::string& file : {suppressions, dir_ + "/missing.txt"}) {
    auto bad = heapgate_cli({"run", "--progress", "none", "--baselines", baselines_, "--report", report_,
                             "--suppressions", file, "--", testing::helper_binary("sample_suite"), kCleanTests});
    EXPECT_EQ(bad.exit_code, 2) << bad.stdout_text << bad.stderr_text;
    EXPECT_NE(bad.stderr_text.find("exited 2 (bad input or output): heapgate: " + file), std::string::npos)
        << bad.stderr_text;
  }
}

TEST_F(RunGate, KeptProfilesKeepTheirMeaningAfterARebuild) {
  // A copy of the suite, so the test can "rebuild" it in place.
  const std::string binary = dir_ + "/sample_suite";
  std::filesystem::copy_file(testing::helper_binary("sample_suite"), binary);
  std::filesystem::permissions(binary, std::filesystem::perms::owner_all);
  auto ran = heapgate_cli({"run", "--progress", "none", "--baselines", baselines_, "--report", report_, "--", binary,
                           "--gtest_filter=Sample.Leaks"});
  EXPECT_EQ(ran.exit_code, 1) << ran.stdout_text << ran.stderr_text;
  const Report saved = report();
  const TestRecord* leaks = find_record(saved, "Sample.Leaks");
  ASSERT_NE(leaks, nullptr);
  ASSERT_FALSE(leaks->profiles.empty());
  const std::string profile = report_ + "/" + leaks->profiles.front();
  ASSERT_TRUE(sys::exists(profile + ".symbols.json")) << "the kept profile has no symbols sidecar";

  // Rebuilt in place: another file at the same path, newer than the profile.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::filesystem::remove(binary);
  std::filesystem::copy_file(testing::helper_binary("heap_workload"), binary);

  auto diffed = heapgate_cli({"diff", profile, profile});
  EXPECT_EQ(diffed.exit_code, 0) << diffed.stderr_text;
  auto with_base = heapgate_cli({"diff", "--format", "folded", "--metric", "live_objects", profile, profile});
  EXPECT_EQ(with_base.exit_code, 0) << with_base.stderr_text;

  // Without the sidecar the profile would be read against the new binary: refused.
  std::filesystem::remove(profile + ".symbols.json");
  auto refused = heapgate_cli({"diff", profile, profile});
  EXPECT_EQ(refused.exit_code, 2) << refused.stdout_text;
  EXPECT_NE(refused.stderr_text.find(binary + " was rebuilt after this profile was written"), std::string::npos)
      << refused.stderr_text;
}

TEST_F(RunGate, BinaryWithoutJemallocIsMeasuredThroughLdPreload) {
  auto r = run({}, {}, "sample_suite_nojemalloc");
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  Report measured = report("sample_suite_nojemalloc");
  EXPECT_EQ(measured.run.mode, Mode::counters);
  const TestRecord* counted = find_record(measured, "Sample.Counted");
  ASSERT_NE(counted, nullptr);
  EXPECT_EQ(counted->verdict, Verdict::new_test);
  EXPECT_EQ(counted->metrics.allocations, 7u);
}

TEST_F(RunGate, CompareJudgesSavedReportsAgainstTodaysBaselines) {
  ASSERT_EQ(run({}).exit_code, 0);
  auto same = heapgate_cli({"compare", "--baselines", baselines_, "--report", report_});
  EXPECT_EQ(same.exit_code, 0) << same.stdout_text << same.stderr_text;

  // A baseline that expected fewer allocations: the saved run regressed.
  auto baseline = read_baseline(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(baseline);
  baseline->tests.at("Sample.Counted").metrics.allocations = 5;
  ASSERT_TRUE(write_baseline(baselines_ + "/sample_suite.json", *baseline));
  auto lower = heapgate_cli({"compare", "--baselines", baselines_, "--report", report_, "-o", dir_ + "/judged"});
  EXPECT_EQ(lower.exit_code, 1) << lower.stdout_text;
  EXPECT_NE(lower.stdout_text.find("regressed   Sample.Counted: regressed: allocations 5 → 7"), std::string::npos)
      << lower.stdout_text;
  auto judged = read_report(dir_ + "/judged/sample_suite.json");
  ASSERT_TRUE(judged);
  EXPECT_EQ(find_record(*judged, "Sample.Counted")->verdict, Verdict::regressed);
}

TEST_F(RunGate, AcceptRefusesSampledEstimatesOverExactBaselinesUnlessForced) {
  ASSERT_EQ(run({}).exit_code, 0);
  auto before = sys::read_file(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(before);
  auto sampled = run({"--mode", "sampled"});
  ASSERT_NE(sampled.exit_code, 2) << sampled.stderr_text;
  EXPECT_EQ(report().run.mode, Mode::sampled);
  auto refused = heapgate_cli({"accept", "--baselines", baselines_, "--report", report_});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.stderr_text.find("sampled"), std::string::npos) << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find("--force"), std::string::npos) << refused.stderr_text;
  auto unchanged = sys::read_file(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(*unchanged, *before);
  auto forced = heapgate_cli({"accept", "--force", "--baselines", baselines_, "--report", report_});
  EXPECT_EQ(forced.exit_code, 0) << forced.stderr_text;
  auto baseline = read_baseline(baselines_ + "/sample_suite.json");
  ASSERT_TRUE(baseline);
  EXPECT_EQ(baseline->tests.at("Sample.Counted").mode, Mode::sampled);
}

TEST_F(RunGate, ACrashIsIncompleteExitFiveNamesTheTestAndKeepsTheFinishedOnes) {
  // clang-format off
  std::vector<std::string> args{"run", "--progress", "none", "--baselines", baselines_, "--report", report_, "--",
                                testing::helper_binary("sample_suite"),
                                "--gtest_filter=Sample.Clean:Sample.CrashesOnRequest"};
  // clang-format on
  auto r = heapgate_cli(args, {"SAMPLE_CRASH=1"});
  EXPECT_EQ(r.exit_code, 5) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("died of signal 6 (SIGABRT)"), std::string::npos) << r.stderr_text;
  Report crashed = report();
  EXPECT_FALSE(crashed.run.complete);
  EXPECT_NE(find_record(crashed, "Sample.Clean"), nullptr);
  const TestRecord* named = find_record(crashed, "Sample.CrashesOnRequest");
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->interrupted, Interruption::crashed);
  EXPECT_FALSE(std::filesystem::exists(baselines_ + "/sample_suite.json")) << "an incomplete run records no baseline";
}

TEST_F(RunGate, CtestDirectoryRunsEachHeapgateBinaryOnce) {
  const std::string build = dir_ + "/build";
  std::filesystem::create_directories(build);
  ASSERT_TRUE(sys::write_file_atomic(
      build + "/CTestTestfile.cmake",
      "add_test(clean \"" + testing::helper_binary("sample_suite") + "\" \"" + kCleanTests + "\")\n" +
          "add_test(again \"" + testing::helper_binary("sample_suite") + "\" \"--gtest_filter=Sample.Clean\")\n" +
          "add_test(other \"" + testing::helper_binary("heap_workload") + "\")\n"));
  auto r = heapgate_cli({"run", "--progress", "none", "--baselines", baselines_, "--report", report_, "--ctest-dir",
                         build, "--jobs", "2"});
  // The whole sample suite runs, with its failing tests.
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  EXPECT_TRUE(sys::exists(report_ + "/sample_suite.json"));
  EXPECT_FALSE(sys::exists(report_ + "/heap_workload.json"));
  EXPECT_EQ(find_record(report(), "Sample.AssertionFails")->gtest_failed, true);
}

// Noise learned, not guessed: a baseline calibrated over runs gives the test
// whose counts vary a band it passes within, run after run, while the
// deterministic test keeps an exact gate that a planted allocation fails.
TEST_F(RunGate, CalibratedBaselineTakesTheNoisyTestsSpreadAndStillCatchesARealChange) {
  const std::string counter = "NOISY_COUNTER_FILE=" + dir_ + "/counter";
  auto gate = [&](std::vector<std::string> extra, std::vector<std::string> env) {
    std::vector<std::string> args{"run", "--progress", "none", "--baselines", baselines_, "--report", report_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.push_back(testing::helper_binary("noisy_suite"));
    env.push_back(counter);
    return heapgate_cli(args, env);
  };
  auto calibrated = gate({"--calibrate", "3"}, {});
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.stdout_text << calibrated.stderr_text;
  EXPECT_NE(calibrated.stdout_text.find("calibrated from 3 runs: 6 tests, 5 deterministic, 1 noisy"), std::string::npos)
      << calibrated.stdout_text;
  EXPECT_NE(calibrated.stdout_text.find("noisy Noisy.Varies: "), std::string::npos) << calibrated.stdout_text;
  auto baseline = read_baseline(baselines_ + "/noisy_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  const BaselineEntry& noisy = baseline->tests.at("Noisy.Varies");
  ASSERT_TRUE(noisy.noise.has_value());
  EXPECT_EQ(noisy.noise->runs, 3u);
  EXPECT_GE(noisy.noise->high.allocations - noisy.noise->low.allocations, 2u);  // 1 to 3 blocks
  EXPECT_FALSE(baseline->tests.at("Steady.Fixed").noise.has_value());

  for (int i = 0; i < 4; ++i) {
    auto again = gate({}, {});
    EXPECT_EQ(again.exit_code, 0) << again.stdout_text << again.stderr_text;
    const TestRecord* varies = find_record(report("noisy_suite"), "Noisy.Varies");
    ASSERT_NE(varies, nullptr);
    EXPECT_EQ(varies->verdict, Verdict::pass) << varies->message;
    EXPECT_NE(varies->message.find("noisy: counts varied over the 3 runs recorded: allocations"), std::string::npos)
        << varies->message;
    // The Markdown summary CI shows says the band and this run too.
    auto md_read = sys::read_file(report_ + "/noisy_suite.md");
    const std::string md = md_read ? *md_read : std::string();
    const std::string row = "| `Noisy.Varies` | pass | allocations " + std::to_string(noisy.noise->low.allocations) +
                            "\xE2\x80\x93" + std::to_string(noisy.noise->high.allocations) + " over 3 runs; this run " +
                            std::to_string(varies->metrics.allocations);
    EXPECT_NE(md.find(row), std::string::npos) << row << "\n" << md;
  }
  auto planted = gate({}, {"NOISY_EXTRA=1"});
  EXPECT_EQ(planted.exit_code, 1) << planted.stdout_text;
  const TestRecord* fixed = find_record(report("noisy_suite"), "Steady.Fixed");
  ASSERT_NE(fixed, nullptr);
  EXPECT_EQ(fixed->verdict, Verdict::regressed) << fixed->message;
  EXPECT_NE(fixed->message.find("allocations 3 → 4"), std::string::npos) << fixed->message;
}

// In the suite a test also carries what earlier tests left, and that can
// change with timing; alone it cannot. Calibration measures each test alone
// once, so a later regression whose fresh run alone measures the same passes
// as carried state, while a planted allocation, which shows alone too, fails.
TEST_F(RunGate, ARegressionTheTestAloneDoesNotShowIsStateEarlierTestsLeft) {
  auto gate = [&](std::vector<std::string> extra, std::vector<std::string> env) {
    std::vector<std::string> args{"run", "--progress", "none", "--baselines", baselines_, "--report", report_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.push_back(testing::helper_binary("noisy_suite"));
    args.push_back("--gtest_filter=Carry.*");
    return heapgate_cli(args, env);
  };
  auto calibrated = gate({"--calibrate", "2"}, {});
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.stdout_text << calibrated.stderr_text;
  auto baseline = read_baseline(baselines_ + "/noisy_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  const BaselineEntry& after = baseline->tests.at("Carry.After");
  EXPECT_EQ(after.metrics.allocations, 0u);  // Before left three items: a free slot
  ASSERT_TRUE(after.alone.has_value());
  EXPECT_EQ(after.alone->runs, 1u);
  // Alone, its second run in a fresh process is counted: the first started
  // the node, the second finds the slot free, as it does after Before.
  EXPECT_EQ(after.alone->low.allocations, 0u);
  EXPECT_EQ(after.alone->high.allocations, 0u);

  auto carried = gate({}, {"NOISY_CARRY=4"});
  EXPECT_EQ(carried.exit_code, 0) << carried.stdout_text << carried.stderr_text;
  const TestRecord* passed = find_record(report("noisy_suite"), "Carry.After");
  ASSERT_NE(passed, nullptr);
  EXPECT_EQ(passed->verdict, Verdict::pass) << passed->message;
  EXPECT_EQ(passed->metrics.allocations, 1u);
  EXPECT_NE(passed->message.find("not reproducible: regressed: allocations 0 → 1"), std::string::npos)
      << passed->message;
  EXPECT_NE(passed->message.find("But a fresh run of the test measured allocations 0"), std::string::npos)
      << passed->message;

  auto planted = gate({}, {"NOISY_CARRY=4", "NOISY_AFTER_EXTRA=1"});
  EXPECT_EQ(planted.exit_code, 1) << planted.stdout_text;
  const TestRecord* regressed = find_record(report("noisy_suite"), "Carry.After");
  ASSERT_NE(regressed, nullptr);
  EXPECT_EQ(regressed->verdict, Verdict::regressed) << regressed->message;
  EXPECT_NE(regressed->message.find("allocations 0 → 2"), std::string::npos) << regressed->message;
}

// Calibration measures each test alone in its last run, except a test its
// earlier runs showed to follow timing: only its leaks are gated, and alone
// it would only work as long again.
TEST_F(RunGate, CalibrationMeasuresAloneAllButTheTestsThatFollowTiming) {
  auto calibrated =
      heapgate_cli({"run", "--progress", "none", "--baselines", baselines_, "--report", report_, "--calibrate", "3",
                    "--", testing::helper_binary("noisy_suite"), "--gtest_filter=Timed.*:Steady.*"},
                   {"NOISY_TIMED_FILE=" + dir_ + "/timed"});
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.stdout_text << calibrated.stderr_text;
  auto baseline = read_baseline(baselines_ + "/noisy_suite.json");
  ASSERT_TRUE(baseline) << baseline.error().message();
  const BaselineEntry& timed = baseline->tests.at("Timed.Throughput");
  ASSERT_TRUE(timed.noise.has_value());
  EXPECT_TRUE(timing_bound(*timed.noise)) << timed.noise->low.allocations << "–" << timed.noise->high.allocations;
  EXPECT_FALSE(timed.alone.has_value());
  const BaselineEntry& fixed = baseline->tests.at("Steady.Fixed");
  ASSERT_TRUE(fixed.alone.has_value());
  EXPECT_EQ(fixed.alone->runs, 1u);
  EXPECT_EQ(fixed.alone->low.allocations, fixed.metrics.allocations);
  // Only the last run measured alone: the first two runs' reports hold none.
  for (int run = 1; run <= 3; ++run) {
    const std::string path = report_ + "/calibrate-" + std::to_string(run) + "/noisy_suite.json";
    auto read = read_report(path);
    ASSERT_TRUE(read) << read.error().message();
    const TestRecord* fixed_then = find_record(*read, "Steady.Fixed");
    ASSERT_NE(fixed_then, nullptr) << path;
    EXPECT_EQ(fixed_then->alone.has_value(), run == 3) << path;
  }
}

// Reports arrive as CI artifacts: a crafted binary name must not turn
// `accept` into a write anywhere, nor `compare` into a read anywhere.
TEST(RunBadInput, AReportsBinaryNameNeverLeavesTheBaselinesDirectory) {
  const std::string dir = testing::make_temp_dir();
  const std::string work = dir + "/work";
  const std::string baselines = work + "/baselines";
  const std::string reports = work + "/report";
  // clang-format off
  const std::vector<std::string> names = {"../escape/evil", "..", ".", "", "sub/evil", std::string("nul\0evil", 8),
                                          std::string(kMaxBinaryNameLength + 1, 'x')};
  // clang-format on
  for (const std::string& name : names) {
    std::filesystem::remove_all(work);
    std::filesystem::create_directories(reports);
    Report crafted;
    crafted.run.binary = name;
    TestRecord record;
    record.name = "Sample.Counted";
    record.mode = Mode::counters;
    record.verdict = Verdict::new_test;
    record.metrics.allocations = 7;
    crafted.tests.push_back(record);
    ASSERT_TRUE(sys::write_file_atomic(reports + "/crafted.json", to_json(crafted)));
    for (const char* verb : {"accept", "compare"}) {
      auto r = heapgate_cli({verb, "--baselines", baselines, "--report", reports});
      EXPECT_EQ(r.exit_code, 2) << verb << " " << name << ": " << r.stdout_text << r.stderr_text;
      // One line naming the file and the field.
      EXPECT_NE(r.stderr_text.find(reports + "/crafted.json: /run/binary: expected the test binary's file name"),
                std::string::npos)
          << verb << ": " << r.stderr_text;
      EXPECT_EQ(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 1) << r.stderr_text;
    }
    // Nothing was written: no baselines directory, no escape.
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(work)) {
      found.push_back(entry.path().string());
    }
    EXPECT_EQ(found, (std::vector<std::string>{reports, reports + "/crafted.json"})) << name;
    EXPECT_FALSE(sys::exists(dir + "/escape")) << name;
  }

  // A journal of a crashed run is read the same way.
  ASSERT_TRUE(sys::write_file_atomic(
      dir + "/evil.partial.jsonl",
      "{\"journal\": true, \"run\": {\"binary\": \"../../evil\"}, \"schema\": \"heapgate.report/1\"}\n"));
  auto journal = heapgate_cli({"report", "junit", dir + "/evil.partial.jsonl"});
  EXPECT_EQ(journal.exit_code, 2) << journal.stdout_text;
  EXPECT_NE(journal.stderr_text.find(dir + "/evil.partial.jsonl:1: /run/binary: expected the test binary's file name"),
            std::string::npos)
      << journal.stderr_text;
}

TEST(RunBadInput, EachGivesOneClearLineAndExitCode2) {
  const std::string dir = testing::make_temp_dir();
  auto missing = heapgate_cli({"run", "--report", dir + "/r", "--", dir + "/no_such_tests"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("no_such_tests: no such test binary"), std::string::npos) << missing.stderr_text;

  auto plain = heapgate_cli({"run", "--report", dir + "/r", "--", testing::helper_binary("heap_workload")});
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_NE(plain.stderr_text.find("does not contain heapgate's GoogleTest plugin"), std::string::npos)
      << plain.stderr_text;

  auto none = heapgate_cli({"run"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.stderr_text.find("no test binary"), std::string::npos) << none.stderr_text;

  // A report directory that cannot be created (under a regular file).
  ASSERT_TRUE(sys::write_file_atomic(dir + "/file", "x"));
  auto unwritable = heapgate_cli({"run", "--report", dir + "/file/r", "--", testing::helper_binary("sample_suite")});
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_NE(unwritable.stderr_text.find(dir + "/file/r"), std::string::npos) << unwritable.stderr_text;

  // Malformed and newer baselines stop the run before anything is written.
  for (const char* content :
       {"{not json", "{\"binary\": \"sample_suite\", \"schema\": \"heapgate.baseline/9\", \"tests\": {}}"}) {
    const std::string baselines = dir + "/baselines";
    std::filesystem::create_directories(baselines);
    ASSERT_TRUE(sys::write_file_atomic(baselines + "/sample_suite.json", content));
    auto bad = heapgate_cli({"run", "--baselines", baselines, "--report", dir + "/r2", "--",
                             testing::helper_binary("sample_suite"), kCleanTests});
    EXPECT_EQ(bad.exit_code, 2) << bad.stdout_text;
    EXPECT_NE(bad.stderr_text.find(baselines + "/sample_suite.json"), std::string::npos) << bad.stderr_text;
    auto kept = sys::read_file(baselines + "/sample_suite.json");
    ASSERT_TRUE(kept);
    EXPECT_EQ(*kept, content);
    EXPECT_FALSE(sys::exists(dir + "/r2/sample_suite.json"));
  }

  auto no_report = heapgate_cli({"compare", "--report", dir + "/empty"});
  EXPECT_EQ(no_report.exit_code, 2);
  EXPECT_NE(no_report.stderr_text.find(dir + "/empty"), std::string::npos) << no_report.stderr_text;
}

}  // namespace
}  // namespace heapgate
