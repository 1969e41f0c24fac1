// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate record` end to end: the real executable records the programs of
// tests/record/, which know nothing of heapgate, and the numbers are checked
// exactly. Bytes are jemalloc's size classes: 100 -> 112, 200 -> 224,
// 1000 -> 1024, 5000 -> 5120, 1 MiB -> 1 MiB.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "heapgate/recording.h"
#include "heapgate/symbolizer.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

struct Recorded {
  sys::ProcessResult run;
  Recording recording;
  RecordingAnalysis analysis;
};

sys::ProcessResult heapgate_cli(std::vector<std::string> args) {
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
  options.timeout = std::chrono::seconds(60);
  auto ran = sys::run_process(args, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
}

// Records `program` (a helper of the test tree) into a fresh directory and reads the recording back.
Recorded record(const std::string& program, std::vector<std::string> flags = {}, std::vector<std::string> args = {}) {
  Recorded r;
  const std::string dir = testing::make_temp_dir() + "/rec";
  std::vector<std::string> cli = {"record", "-o", dir};
  cli.insert(cli.end(), flags.begin(), flags.end());
  cli.push_back("--");
  cli.push_back(testing::helper_binary(program));
  cli.insert(cli.end(), args.begin(), args.end());
  r.run = heapgate_cli(cli);
  auto read = read_recording(dir);
  EXPECT_TRUE(read) << read.error().message() << "\n" << r.run.stderr_text;
  if (!read) return r;
  r.recording = *read;
  Symbolizer symbolizer;
  auto analysis = analyze_recording(r.recording, symbolizer);
  EXPECT_TRUE(analysis) << analysis.error().message();
  if (analysis) r.analysis = *analysis;
  return r;
}

// The site of `function` in `sites`, or an empty one.
// A function's sites summed: each of its lines is a site of its own.
CallSite site(const std::vector<CallSite>& sites, const std::string& function) {
  CallSite sum;
  for (const CallSite& s : sites) {
    if (s.function != function) continue;
    sum.function = s.function;
    if (sum.location.empty()) sum.location = s.location;
    sum.allocations += s.allocations;
    sum.bytes += s.bytes;
  }
  return sum;
}

const RecordedProcess& root(const Recorded& r) { return r.recording.processes.front(); }

TEST(Record, LeakOfThreeBlocksIsNamedWithItsFunctionAndLine) {
  const Recorded r = record("record_leak", {}, {"x"});
  EXPECT_EQ(r.run.exit_code, 7) << "the program's exit code passes through\n" << r.run.stderr_text;
  ASSERT_EQ(r.recording.processes.size(), 1u);
  const RecordedProcess& p = root(r);
  EXPECT_EQ(p.ended, "exit");
  EXPECT_EQ(p.mode, "exact");
  EXPECT_EQ(p.live_allocations, 3u);
  EXPECT_EQ(p.live_bytes, 336u);
  EXPECT_EQ(p.allocations, 4u);
  EXPECT_EQ(p.allocated_bytes, 336u + 5120u);
  EXPECT_EQ(p.peak_bytes, 336u + 5120u);
  EXPECT_EQ(p.profiles, (std::vector<std::string>{"live.heap", "allocations.heap", "peak.heap"}));
  for (const std::string& name : p.profiles) EXPECT_TRUE(sys::exists(p.dir + "/" + name + ".symbols.json")) << name;
  ASSERT_EQ(r.analysis.live_sites.size(), 1u);
  EXPECT_EQ(r.analysis.live_sites[0].function, "leak_three()");
  EXPECT_EQ(r.analysis.live_sites[0].location, "record_leak.cpp:11");
  EXPECT_EQ(r.analysis.live_sites[0].allocations, 3u);
  EXPECT_EQ(r.analysis.live_sites[0].bytes, 336u);
  EXPECT_EQ(site(r.analysis.allocation_sites, "use_and_free()").bytes, 5120u);
  EXPECT_NE(r.run.stderr_text.find("Live at exit (leaked), by call site:\n         336 B in 3 blocks      "
                                   "leak_three() (record_leak.cpp:11)\n"),
            std::string::npos)
      << r.run.stderr_text;
}

TEST(Record, ProgramThatLinksJemallocItself) {
  const Recorded r = record("record_leak_jemalloc");
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  ASSERT_EQ(r.recording.processes.size(), 1u);
  EXPECT_EQ(root(r).live_allocations, 3u);
  EXPECT_EQ(root(r).live_bytes, 336u);
  EXPECT_EQ(site(r.analysis.live_sites, "leak_three()").allocations, 3u);
}

TEST(Record, SpikeFreedBeforeExitIsThePeak) {
  const Recorded r = record("record_spike");
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  const RecordedProcess& p = root(r);
  EXPECT_EQ(p.peak_bytes, 10u << 20);
  EXPECT_EQ(p.peak_stacks_bytes, 10u << 20);
  // peak.heap's blocks: the eight parts at least, never more than were made.
  EXPECT_GE(p.peak_stacks_allocations, 8u);
  EXPECT_LE(p.peak_stacks_allocations, p.allocations);
  EXPECT_EQ(p.live_bytes, 0u);
  EXPECT_TRUE(r.analysis.live_sites.empty());
  ASSERT_EQ(r.analysis.peak_sites.size(), 1u);
  EXPECT_EQ(r.analysis.peak_sites[0].function, "make_spike()");
  EXPECT_EQ(r.analysis.peak_sites[0].allocations, 10u);
  EXPECT_EQ(r.analysis.peak_sites[0].bytes, 10u << 20);
}

TEST(Record, ForkedChildWritesItsOwnProfiles) {
  const Recorded r = record("record_fork");
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  ASSERT_EQ(r.recording.processes.size(), 2u);
  const RecordedProcess& parent = r.recording.processes[0];
  const RecordedProcess& child = r.recording.processes[1];
  EXPECT_EQ(parent.pid, r.recording.root_pid);
  EXPECT_EQ(child.ppid, parent.pid);
  EXPECT_EQ(parent.live_allocations, 1u);
  EXPECT_EQ(parent.live_bytes, 112u);
  // The parent's block lives on in the child, but it is the parent's.
  EXPECT_EQ(child.live_allocations, 2u);
  EXPECT_EQ(child.live_bytes, 448u);
  EXPECT_EQ(child.allocations, 2u);
  EXPECT_EQ(site(r.analysis.live_sites, "child_leak()").bytes, 448u);
  EXPECT_EQ(site(r.analysis.live_sites, "parent_leak()").bytes, 112u);
}

TEST(Record, ChildThatEndsWithUnderscoreExitWritesItsProfiles) {
  const Recorded r = record("record_fork", {}, {"_exit"});
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  ASSERT_EQ(r.recording.processes.size(), 2u);
  const RecordedProcess& child = r.recording.processes[1];
  EXPECT_EQ(child.ended, "exit");
  EXPECT_EQ(child.live_allocations, 2u);
  EXPECT_EQ(child.live_bytes, 448u);
  EXPECT_EQ(r.recording.processes[0].live_bytes, 112u);
}

TEST(Record, ThreadsAreFollowed) {
  const Recorded r = record("record_threads");
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  const RecordedProcess& p = root(r);
  EXPECT_EQ(p.live_allocations, 20u);
  EXPECT_EQ(p.live_bytes, 1280u);
  EXPECT_EQ(p.allocations, 24u);
  EXPECT_EQ(p.allocated_bytes, 1280u + 4 * 4096u);
  ASSERT_EQ(r.analysis.live_sites.size(), 1u);
  EXPECT_EQ(r.analysis.live_sites[0].function, "thread_leak(int)");
  EXPECT_EQ(r.analysis.live_sites[0].allocations, 20u);
}

// Each thread counts into its own tally: the copy of the stacks at the peak
// sums the tallies of threads that have exited, and frees by another thread
// come off them.
TEST(Record, ThePeakOfBlocksMadeByThreadsAndFreedByAnother) {
  const Recorded r = record("record_threads", {}, {"peak"});
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  const RecordedProcess& p = root(r);
  EXPECT_EQ(site(r.analysis.peak_sites, "make_part(int)").allocations, 8u);
  EXPECT_EQ(site(r.analysis.peak_sites, "make_part(int)").bytes, 8u << 20);
  // glibc's own blocks for the threads may add to the peak, never much.
  EXPECT_GE(p.peak_bytes, 8u << 20);
  EXPECT_LE(p.peak_bytes, (8u << 20) + (64u << 10));
  EXPECT_GE(p.peak_stacks_bytes, 8u << 20);
  EXPECT_LE(p.peak_stacks_bytes, p.peak_bytes);
  EXPECT_LT(p.live_bytes, 64u << 10);  // the 8 MiB were freed by the main thread
}

TEST(Record, ProgramKilledBySigtermStillLeavesItsProfiles) {
  const Recorded r = record("record_sigterm");
  EXPECT_EQ(r.run.exit_code, 128 + 15) << r.run.stderr_text;
  EXPECT_EQ(r.recording.term_signal, 15);
  const RecordedProcess& p = root(r);
  EXPECT_EQ(p.ended, "signal");
  EXPECT_EQ(p.signal, 15);
  EXPECT_EQ(p.profiles.size(), 3u);
  EXPECT_EQ(p.live_allocations, 4u);
  EXPECT_EQ(p.live_bytes, 4096u);
  EXPECT_EQ(site(r.analysis.live_sites, "hold_four()").allocations, 4u);
  EXPECT_NE(r.run.stderr_text.find("killed by signal 15 (SIGTERM)"), std::string::npos) << r.run.stderr_text;
}

TEST(Record, ProgramThatAbortsStillLeavesItsProfiles) {
  const Recorded r = record("record_sigterm", {}, {"abort"});
  EXPECT_EQ(r.run.exit_code, 128 + 6) << r.run.stderr_text;
  const RecordedProcess& p = root(r);
  EXPECT_EQ(p.ended, "signal");
  EXPECT_EQ(p.signal, 6);
  EXPECT_EQ(p.profiles.size(), 3u);
  EXPECT_EQ(p.live_allocations, 4u);
  EXPECT_EQ(p.live_bytes, 4096u);
}

TEST(Record, ProgramKilledBySigkillIsSaidToHaveWrittenNothing) {
  const Recorded r = record("record_sigterm", {}, {"kill"});
  EXPECT_EQ(r.run.exit_code, 128 + 9) << r.run.stderr_text;
  ASSERT_EQ(r.recording.processes.size(), 1u);
  EXPECT_EQ(root(r).ended, "");
  EXPECT_TRUE(root(r).profiles.empty());
  EXPECT_NE(r.run.stderr_text.find(": ended without writing its profiles (SIGKILL, or it replaced itself with exec())"),
            std::string::npos)
      << r.run.stderr_text;
}

TEST(Record, CountersModeHasTheNumbersWithoutStacks) {
  const Recorded r = record("record_leak", {"--mode", "counters"});
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  const RecordedProcess& p = root(r);
  EXPECT_EQ(p.mode, "counters");
  EXPECT_EQ(p.live_allocations, 3u);
  EXPECT_EQ(p.live_bytes, 336u);
  EXPECT_EQ(p.allocations, 4u);
  EXPECT_EQ(p.allocated_bytes, 5456u);
  EXPECT_EQ(p.peak_bytes, 5456u);
  EXPECT_FALSE(p.peak_is_upper_bound);
  EXPECT_TRUE(p.profiles.empty());
}

TEST(Record, SnapshotsTellALeakFromOneTimeSetup) {
  const Recorded r = record("record_growth", {"--snapshot-every", "200ms"});
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  EXPECT_GE(root(r).snapshots, 3u);
  ASSERT_EQ(r.analysis.leaks.size(), 1u) << r.run.stderr_text;
  EXPECT_EQ(r.analysis.leaks[0].site.function, "leak_request()");
  ASSERT_EQ(r.analysis.one_time.size(), 1u) << r.run.stderr_text;
  EXPECT_EQ(r.analysis.one_time[0].site.function, "setup_tables()");
  EXPECT_EQ(r.analysis.one_time[0].site.bytes, 5 * 4096u);
  EXPECT_NE(r.run.stderr_text.find("Leaks (live blocks kept growing across the snapshots; as at the last one):"),
            std::string::npos);
}

TEST(Record, SnapshotsOnSignal) {
  const Recorded r = record("record_growth", {"--snapshot-signal"}, {"signal"});
  EXPECT_EQ(r.run.exit_code, 0) << r.run.stderr_text;
  EXPECT_EQ(root(r).snapshots, 3u);
  ASSERT_EQ(r.analysis.leaks.size(), 1u) << r.run.stderr_text;
  EXPECT_EQ(r.analysis.leaks[0].site.function, "leak_request()");
  // Asked for after the 4th, 12th and 20th leaked block.
  EXPECT_EQ(r.analysis.leaks[0].live_allocations, (std::vector<std::uint64_t>{4, 12, 20}));
}

TEST(Record, ReportRendersThePageWithThreeFlameGraphsAndPprof) {
  const Recorded r = record("record_leak");
  const std::string dir = r.recording.dir;
  const std::string pprof = dir + "/pprof";
  auto report = heapgate_cli({"report", dir, "--pprof", pprof});
  EXPECT_EQ(report.exit_code, 0) << report.stderr_text;
  auto html = sys::read_file(dir + "/report.html");
  ASSERT_TRUE(html);
  for (const char* title : {">Live at exit<", ">Peak<", ">All allocations<"}) {
    EXPECT_NE(html->find(title), std::string::npos) << title;
  }
  EXPECT_EQ(std::count(html->begin(), html->end(), '\0'), 0);
  std::size_t graphs = 0;
  for (std::size_t at = html->find("<svg"); at != std::string::npos; at = html->find("<svg", at + 1)) ++graphs;
  EXPECT_EQ(graphs, 3u);
  EXPECT_NE(html->find("leak_three()"), std::string::npos);
  const std::string pid = std::to_string(r.recording.root_pid);
  for (const char* name : {".live.pb.gz", ".peak.pb.gz", ".allocations.pb.gz"}) {
    EXPECT_TRUE(sys::exists(pprof + "/" + pid + name)) << name;
  }
}

}  // namespace
}  // namespace heapgate
