// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The fault table of docs/bad-inputs.md ("Faults"), one test per row: a full
// disk (a real tmpfs) or an I/O error (the write seam) under a report, a
// journal or a baseline; a test that segfaults, aborts, calls exit(0) or
// hangs; a test binary killed from outside; `heapgate run` interrupted. Each
// checks that no baseline is corrupted, no finished test's record is lost,
// the message names what happened, and the exit code is the table's
// (heapgate::GateExit).
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/baseline.h"
#include "heapgate/gate.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

namespace fs = std::filesystem;

constexpr int kIncomplete = exit_status(GateExit::incomplete);
constexpr int kUsage = exit_status(GateExit::usage);

using testing::find_record;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A small tmpfs, mounted for the test and filled to the last byte: writes on
// it fail with ENOSPC, as on a full disk. Needs root (CI runs as root).
class FullDisk {
 public:
  explicit FullDisk(const std::string& dir) : dir_(dir) {
    fs::create_directories(dir_);
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=64k") != 0) {
      why_not_ = std::string("cannot mount a tmpfs (") + std::strerror(errno) + "); the full-disk rows need root";
      return;
    }
    mounted_ = true;
  }
  // Fills what is left; files made before stay.
  void fill() {
    std::FILE* f = std::fopen((dir_ + "/filler").c_str(), "w");
    if (f == nullptr) return;
    const std::string block(4096, 'x');
    while (std::fwrite(block.data(), 1, block.size(), f) == block.size() && std::fflush(f) == 0) {
    }
    std::fclose(f);
    // The last partial page too.
    if (std::FILE* g = std::fopen((dir_ + "/filler2").c_str(), "w")) {
      while (std::fputc('x', g) != EOF && std::fflush(g) == 0) {
      }
      std::fclose(g);
    }
  }
  ~FullDisk() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  FullDisk(const FullDisk&) = delete;
  FullDisk& operator=(const FullDisk&) = delete;
  const std::string& why_not() const { return why_not_; }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string why_not_;
};

#define REQUIRE_FULL_DISK(disk)                                                  \
  do {                                                                           \
    if (!(disk).why_not().empty()) {                                             \
      if (::heapgate::testing::profiling_required()) FAIL() << (disk).why_not(); \
      GTEST_SKIP() << (disk).why_not();                                          \
    }                                                                            \
  } while (0)

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_COUNTERS();
    dir_ = testing::make_temp_dir();
    baselines_ = dir_ + "/baselines";
    report_ = dir_ + "/report";
  }

  // The fault suite run directly, as a user runs a test binary.
  sys::ProcessResult suite(const std::string& fault, std::vector<std::string> extra = {},
                           std::vector<std::string> env = {}) {
    std::vector<std::string> argv{testing::helper_binary("fault_suite"), "--heapgate_baselines=" + baselines_,
                                  "--heapgate_report=" + report_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    sys::ProcessOptions options;
    options.unset_env = testing::suite_unset_env();
    options.extra_env = std::move(env);
    options.extra_env.push_back("HEAPGATE_FAULT=" + fault);
    options.timeout = std::chrono::minutes(2);
    auto ran = sys::run_process(argv, options);
    EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
    return ran ? *ran : sys::ProcessResult{};
  }

  // The command line, with the fault suite behind `heapgate run` unless
  // `args` names another verb.
  sys::ProcessResult cli(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), HEAPGATE_CLI_PATH);
    sys::ProcessOptions options;
    options.unset_env = testing::suite_unset_env();
    options.extra_env = std::move(env);
    options.timeout = std::chrono::minutes(2);
    auto ran = sys::run_process(args, options);
    EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
    return ran ? *ran : sys::ProcessResult{};
  }
  std::vector<std::string> run_args(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"run", "--progress", "none", "--baselines", baselines_, "--report", report_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.push_back(testing::helper_binary("fault_suite"));
    return args;
  }

  // A clean run first: the baseline a fault must leave as it is.
  std::string record_baseline() {
    auto clean = suite("");
    EXPECT_EQ(clean.exit_code, 0) << clean.stderr_text;
    auto bytes = sys::read_file(baselines_ + "/fault_suite.json");
    EXPECT_TRUE(bytes);
    fs::remove_all(report_);
    return bytes ? *bytes : std::string();
  }
  void expect_baseline(const std::string& before) {
    auto after = sys::read_file(baselines_ + "/fault_suite.json");
    ASSERT_TRUE(after);
    EXPECT_EQ(*after, before) << "the baseline changed";
    for (const auto& entry : fs::directory_iterator(baselines_)) {
      EXPECT_FALSE(contains(entry.path().filename().string(), ".tmp.")) << "left behind: " << entry.path();
    }
  }
  // What the run kept: the two tests before the fault, the faulty one named.
  Report expect_interrupted_report(Interruption how) {
    auto report = read_report(report_ + "/fault_suite.json");
    EXPECT_TRUE(report) << (report ? "" : report.error().message());
    if (!report) return {};
    EXPECT_FALSE(report->run.complete);
    EXPECT_NE(find_record(*report, "Faults.First"), nullptr);
    EXPECT_NE(find_record(*report, "Faults.Second"), nullptr);
    EXPECT_EQ(find_record(*report, "Faults.Later"), nullptr);
    const TestRecord* trigger = find_record(*report, "Faults.Trigger");
    EXPECT_NE(trigger, nullptr);
    if (trigger != nullptr) {
      EXPECT_EQ(trigger->interrupted, how) << trigger->message;
    }
    return *report;
  }

  std::string dir_, baselines_, report_;
};

// F-01: the report directory is on a full disk.
TEST_F(Faults, F01_ReportOnAFullDisk) {
  const std::string before = record_baseline();
  FullDisk disk(dir_ + "/full");
  REQUIRE_FULL_DISK(disk);
  disk.fill();
  report_ = dir_ + "/full/report";
  auto direct = suite("");
  const std::string said = direct.stdout_text + direct.stderr_text;  // GoogleTest prints its failure on stdout
  EXPECT_EQ(direct.exit_code, kUsage) << said;
  EXPECT_TRUE(contains(said, dir_ + "/full/report")) << said;
  EXPECT_TRUE(contains(said, "No space left on device; fix: free space")) << said;
  auto run = cli(run_args());
  EXPECT_EQ(run.exit_code, kUsage) << run.stderr_text;
  EXPECT_TRUE(contains(run.stderr_text, dir_ + "/full/report")) << run.stderr_text;
  expect_baseline(before);
}

// F-02: the journal cannot be written (EIO): the final report still holds every test.
TEST_F(Faults, F02_JournalWriteFails) {
  auto run = suite("", {}, {"HEAPGATE_INJECT_WRITE_ERROR=EIO:fault_suite.partial.jsonl"});
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_TRUE(contains(run.stderr_text, "cannot append to the journal")) << run.stderr_text;
  EXPECT_TRUE(contains(run.stderr_text, "Input/output error")) << run.stderr_text;
  auto report = read_report(report_ + "/fault_suite.json");
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_TRUE(report->run.complete);
  EXPECT_EQ(report->tests.size(), 4u);
}

// F-03: the final report cannot be written (EIO): exit 2, and the journal keeps every test.
TEST_F(Faults, F03_ReportWriteFails) {
  auto run = suite("", {}, {"HEAPGATE_INJECT_WRITE_ERROR=EIO:report/fault_suite.json"});
  EXPECT_EQ(run.exit_code, kUsage) << run.stderr_text;
  EXPECT_TRUE(contains(run.stderr_text, "fault_suite.json: write failed: Input/output error")) << run.stderr_text;
  auto journal = read_report(report_ + "/fault_suite.partial.jsonl");
  ASSERT_TRUE(journal) << journal.error().message();
  EXPECT_EQ(journal->tests.size(), 4u);
}

// F-04: the baseline is on a full disk: accept refuses, the old baseline stays.
TEST_F(Faults, F04_BaselineOnAFullDisk) {
  FullDisk disk(dir_ + "/full");
  REQUIRE_FULL_DISK(disk);
  baselines_ = dir_ + "/full/baselines";
  const std::string before = record_baseline();
  auto grown = suite("", {}, {"FAULT_SUITE_GROW=1"});
  disk.fill();
  auto accepted = cli({"accept", "--baselines", baselines_, "--report", report_});
  EXPECT_EQ(accepted.exit_code, kUsage) << accepted.stderr_text;
  EXPECT_TRUE(contains(accepted.stderr_text, "No space left on device")) << accepted.stderr_text;
  EXPECT_TRUE(contains(accepted.stderr_text, "it is unchanged")) << accepted.stderr_text;
  expect_baseline(before);
}

// F-05: the baseline cannot be written (EIO), by the plugin and by accept.
TEST_F(Faults, F05_BaselineWriteFails) {
  const std::string before = record_baseline();
  const std::vector<std::string> eio{"HEAPGATE_INJECT_WRITE_ERROR=EIO:baselines/fault_suite.json",
                                     "FAULT_SUITE_GROW=1"};
  auto updated = suite("", {"--heapgate_update_baselines"}, eio);
  EXPECT_EQ(updated.exit_code, kUsage) << updated.stderr_text;
  EXPECT_TRUE(contains(updated.stderr_text, "fault_suite.json: write failed: Input/output error"))
      << updated.stderr_text;
  auto accepted = cli({"accept", "--baselines", baselines_, "--report", report_}, eio);
  EXPECT_EQ(accepted.exit_code, kUsage) << accepted.stderr_text;
  expect_baseline(before);
}

// F-06: a test segfaults.
TEST_F(Faults, F06_ATestSegfaults) {
  const std::string before = record_baseline();
  auto direct = suite("segv", {"--heapgate_update_baselines"});
  EXPECT_EQ(direct.term_signal, SIGSEGV);
  EXPECT_TRUE(contains(direct.stderr_text, "Faults.Trigger: crashed")) << direct.stderr_text;
  auto journal = read_report(report_ + "/fault_suite.json");  // the journal, read as the report
  ASSERT_TRUE(journal) << journal.error().message();
  ASSERT_NE(find_record(*journal, "Faults.Trigger"), nullptr);
  EXPECT_TRUE(contains(find_record(*journal, "Faults.Trigger")->message, "SIGSEGV"));
  auto run = cli(run_args(), {"HEAPGATE_FAULT=segv"});
  EXPECT_EQ(run.exit_code, kIncomplete) << run.stderr_text;
  expect_interrupted_report(Interruption::crashed);
  expect_baseline(before);
}

// F-07: a test calls abort().
TEST_F(Faults, F07_ATestAborts) {
  const std::string before = record_baseline();
  auto direct = suite("abort", {"--heapgate_update_baselines"});
  EXPECT_EQ(direct.term_signal, SIGABRT);
  auto run = cli(run_args(), {"HEAPGATE_FAULT=abort"});
  EXPECT_EQ(run.exit_code, kIncomplete) << run.stderr_text;
  const Report report = expect_interrupted_report(Interruption::crashed);
  EXPECT_TRUE(contains(run.stdout_text, "crashed     Faults.Trigger")) << run.stdout_text;
  expect_baseline(before);
}

// F-08: a test calls exit(0) in the middle of the suite: not a pass.
TEST_F(Faults, F08_ATestCallsExit) {
  const std::string before = record_baseline();
  auto direct = suite("exit0", {"--heapgate_update_baselines"});
  EXPECT_EQ(direct.exit_code, kIncomplete) << direct.stderr_text;
  EXPECT_TRUE(contains(direct.stderr_text, "Faults.Trigger called exit()")) << direct.stderr_text;
  expect_interrupted_report(Interruption::exited);
  auto run = cli(run_args(), {"HEAPGATE_FAULT=exit0"});
  EXPECT_EQ(run.exit_code, kIncomplete) << run.stderr_text;
  expect_interrupted_report(Interruption::exited);
  expect_baseline(before);
}

// F-09: a test hangs: the watchdog stops the run and keeps every thread's stack.
TEST_F(Faults, F09_ATestHangs) {
  const std::string before = record_baseline();
  auto direct = suite("hang", {"--heapgate_test_timeout=2"});
  EXPECT_FALSE(direct.timed_out);
  EXPECT_EQ(direct.exit_code, kIncomplete) << direct.stderr_text;
  const Report report = expect_interrupted_report(Interruption::hung);
  const TestRecord* hung = find_record(report, "Faults.Trigger");
  ASSERT_NE(hung, nullptr);
  // The test's thread and the two it started, each waiting in the same function.
  std::size_t waiting = 0;
  for (std::size_t at = 0; (at = hung->message.find("wait_forever_for_a_reply", at)) != std::string::npos; ++at) {
    ++waiting;
  }
  EXPECT_GE(waiting, 3u) << hung->message;
  auto junit = sys::read_file(report_ + "/fault_suite.junit.xml");
  ASSERT_TRUE(junit);
  EXPECT_TRUE(contains(*junit, "<error message=\"hung:")) << *junit;
  EXPECT_TRUE(contains(*junit, "wait_forever_for_a_reply")) << *junit;
  expect_baseline(before);
}

// F-10: heapgate run's own --timeout stops a binary whose watchdog is off.
TEST_F(Faults, F10_RunTimeoutStopsAHungBinary) {
  const std::string before = record_baseline();
  auto run = cli(run_args({"--timeout", "3", "--test-timeout", "0"}), {"HEAPGATE_FAULT=sleep"});
  EXPECT_EQ(run.exit_code, kIncomplete) << run.stderr_text;
  EXPECT_TRUE(contains(run.stderr_text, "timed out after 3 s")) << run.stderr_text;
  const Report report = expect_interrupted_report(Interruption::hung);
  EXPECT_TRUE(contains(find_record(report, "Faults.Trigger")->message, "--timeout of 3 s"))
      << find_record(report, "Faults.Trigger")->message;
  expect_baseline(before);
}

// F-11: the test binary is killed with SIGKILL in the middle of a test.
TEST_F(Faults, F11_AShardKilledMidTest) {
  const std::string before = record_baseline();
  std::thread killer([&] {
    // The suite's first tests take microseconds; Faults.Trigger sleeps a minute.
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (auto log = sys::read_file(report_ + "/shards/fault_suite.log"); log && contains(*log, "Faults.Trigger"))
        break;
    }
    // Only this test's shard: tests run in parallel (ctest -j) start fault_suite too.
    // Anchored, so the shell running pkill, whose command line holds the pattern, is spared.
    std::system(("pkill -KILL -f '^[^ ]*fault_suite .*" + report_ + "'").c_str());
  });
  auto run = cli(run_args(), {"HEAPGATE_FAULT=sleep"});
  killer.join();
  EXPECT_EQ(run.exit_code, kIncomplete) << run.stderr_text;
  EXPECT_TRUE(contains(run.stderr_text, "died of signal 9 (SIGKILL)")) << run.stderr_text;
  expect_interrupted_report(Interruption::killed);
  expect_baseline(before);
}

// F-12: heapgate run itself is interrupted (SIGINT, then SIGTERM).
TEST_F(Faults, F12_RunInterrupted) {
  const std::string before = record_baseline();
  sys::ProcessOptions options;
  options.unset_env = testing::suite_unset_env();
  options.extra_env = {"HEAPGATE_FAULT=sleep"};
  std::vector<std::string> args = run_args();
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  for (int signo : {SIGINT, SIGTERM}) {
    fs::remove_all(report_);
    std::thread interrupter([&] {
      for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (auto log = sys::read_file(report_ + "/shards/fault_suite.log"); log && contains(*log, "Faults.Trigger"))
          break;
      }
      // Only this test's run (its report directory is its own): other tests
      // run heapgate run in parallel under ctest -j.
      std::system((std::string("pkill -") + (signo == SIGINT ? "INT" : "TERM") + " -f '^" + HEAPGATE_CLI_PATH +
                   " run .*" + report_ + "'")
                      .c_str());
    });
    auto run = sys::run_process(args, options);
    interrupter.join();
    ASSERT_TRUE(run);
    EXPECT_EQ(run->exit_code, kIncomplete) << run->stderr_text;
    EXPECT_TRUE(contains(run->stderr_text, "interrupted by " + sys::describe_signal(signo))) << run->stderr_text;
    expect_interrupted_report(Interruption::killed);
    expect_baseline(before);
  }
}

// F-13: a sharded run being recorded crashes while the child that records
// its call sites (started beside its tests) is still running: the child ends
// with it, not minutes later as an orphan re-running the suite.
TEST_F(Faults, F13_ACrashLeavesNoCallSitesChildBehind) {
  const std::string pid_file = dir_ + "/child.pid";
  auto direct =
      suite("segv-beside-child", {}, {"FAULT_SUITE_DIR=" + dir_, "GTEST_TOTAL_SHARDS=1", "GTEST_SHARD_INDEX=0"});
  EXPECT_EQ(direct.term_signal, SIGSEGV) << direct.stderr_text;
  auto text = sys::read_file(pid_file);
  ASSERT_TRUE(text) << "the call-sites child never reached Faults.Trigger: " << direct.stderr_text;
  const pid_t child = static_cast<pid_t>(std::stol(*text));
  const bool gone = testing::process_ends_within(child, 5.0);
  EXPECT_TRUE(gone) << "the call-sites child " << child << " outlived the run that started it";
  if (!gone) ::kill(child, SIGKILL);
}

}  // namespace
}  // namespace heapgate
