// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The `heapgate` executable end to end: diff and report verbs, and bad input.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "heapgate/report.h"
#include "profile_test_support.h"
#include "heapgate/sys.h"
#include "heapgate/report_files.h"
#include "test_support.h"

namespace heapgate {
namespace {

sys::ProcessResult heapgate_cli(std::vector<std::string> args,
                                std::chrono::milliseconds timeout = std::chrono::minutes(10)) {
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
  options.timeout = timeout;
  auto ran = sys::run_process(args, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
}

class RunnerDiff : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_PROFILING();
    dir_ = testing::make_temp_dir();
    ASSERT_TRUE(testing::run_heap_workload(dir_ + "/base.heap", 0, 0));
    ASSERT_TRUE(testing::run_heap_workload(dir_ + "/current.heap", 7, 3));
  }
  std::string dir_;
};

TEST_F(RunnerDiff, TextNamesTheInjectedAllocationSitesAcrossProcesses) {
  auto r = heapgate_cli({"diff", dir_ + "/base.heap", dir_ + "/current.heap"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("2 stacks changed"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("injected_leak"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("+288 B (0 -> 288)"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("steady_work"), std::string::npos) << r.stdout_text;
}

TEST_F(RunnerDiff, FoldedOutputToAFile) {
  const std::string out = dir_ + "/diff.folded";
  auto r = heapgate_cli({"diff", dir_ + "/base.heap", dir_ + "/current.heap", "--format", "folded", "--metric",
                         "accum_objects", "-o", out});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  auto text = sys::read_file(out);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("main;(anonymous namespace)::injected_extra(int) 7\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("main;(anonymous namespace)::injected_leak(int) 3\n"), std::string::npos) << *text;
}

TEST_F(RunnerDiff, SvgIsADifferentialFlameGraphOfTheDiff) {
  const std::string out = dir_ + "/diff.svg";
  auto r = heapgate_cli(
      {"diff", dir_ + "/base.heap", dir_ + "/current.heap", "--format", "svg", "--metric", "accum_objects", "-o", out});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  auto svg = sys::read_file(out);
  ASSERT_TRUE(svg);
  EXPECT_EQ(svg->rfind("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n<svg ", 0), 0u);
  ASSERT_GE(svg->size(), 7u);
  EXPECT_EQ(svg->substr(svg->size() - 7), "</svg>\n");
  // The same stacks as --format folded, with signed tooltips and diff colours.
  EXPECT_NE(svg->find("<title>(anonymous namespace)::injected_extra(int) (+7 objects, "), std::string::npos) << *svg;
  EXPECT_NE(svg->find("<title>(anonymous namespace)::injected_leak(int) (+3 objects, "), std::string::npos) << *svg;
  EXPECT_NE(svg->find("<title>all (+10 objects, 100.00%)</title>"), std::string::npos) << *svg;
  EXPECT_NE(svg->find("red grew, blue shrank"), std::string::npos);
  EXPECT_EQ(svg->find("steady_work"), std::string::npos);
  // Deterministic: stdout gets the same bytes.
  auto again = heapgate_cli(
      {"diff", dir_ + "/base.heap", dir_ + "/current.heap", "--format", "svg", "--metric", "accum_objects"});
  EXPECT_EQ(again.exit_code, 0) << again.stderr_text;
  EXPECT_EQ(again.stdout_text, *svg);
}

TEST_F(RunnerDiff, JeprofFormatRebasesTheBase) {
  HEAPGATE_REQUIRE_PROGRAM("jeprof");
  auto r = heapgate_cli({"diff", dir_ + "/base.heap", dir_ + "/current.heap", "--format", "jeprof", "--binary",
                         testing::helper_binary("heap_workload")});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("injected_leak"), std::string::npos) << r.stdout_text;
  // Without --binary: one clear line, exit 2.
  auto missing = heapgate_cli({"diff", dir_ + "/base.heap", dir_ + "/current.heap", "--format", "jeprof"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("--binary"), std::string::npos) << missing.stderr_text;
}

TEST(RunnerBadInput, EachGivesOneClearLineAndExitCode2) {
  const std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(sys::write_file_atomic(dir + "/bad.heap", "garbage\n"));
  auto bad = heapgate_cli({"diff", dir + "/bad.heap", dir + "/bad.heap"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.stderr_text.find(dir + "/bad.heap:1"), std::string::npos) << bad.stderr_text;
  auto absent = heapgate_cli({"diff", dir + "/nope.heap", dir + "/bad.heap"});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_NE(absent.stderr_text.find("nope.heap"), std::string::npos) << absent.stderr_text;
  auto flag = heapgate_cli({"diff", "--frobnicate"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.stderr_text.find("--frobnicate"), std::string::npos) << flag.stderr_text;
  ASSERT_TRUE(sys::write_file_atomic(dir + "/bad.json", "{\"schema\": \"heapgate.report/9\"}"));
  auto report = heapgate_cli({"report", "junit", dir + "/bad.json"});
  EXPECT_EQ(report.exit_code, 2);
  EXPECT_NE(report.stderr_text.find("bad.json"), std::string::npos) << report.stderr_text;
  EXPECT_EQ(report.stdout_text, "");
  // A vocabulary flag answers with the parser's own message: the value and the valid names.
  auto metric = heapgate_cli({"diff", "--metric", "live-bytes", dir + "/bad.heap", dir + "/bad.heap"});
  EXPECT_EQ(metric.exit_code, 2);
  EXPECT_NE(metric.stderr_text.find("unknown metric \"live-bytes\"; expected one of live_objects"), std::string::npos)
      << metric.stderr_text;
  auto mode = heapgate_cli({"run", "--mode", "precise", "--", "/bin/true"});
  EXPECT_EQ(mode.exit_code, 2);
  EXPECT_NE(mode.stderr_text.find("unknown mode \"precise\"; expected one of off, counters"), std::string::npos)
      << mode.stderr_text;
}

// A mistyped verb or option is answered with the closest one, in the one
// error style "heapgate[ verb]: what; fix: how", exit 2.
TEST(RunnerUsage, TyposGetDidYouMean) {
  auto verb = heapgate_cli({"rnu"});
  EXPECT_EQ(verb.exit_code, 2);
  EXPECT_NE(verb.stderr_text.find("heapgate: unknown command \"rnu\"; fix: did you mean `heapgate run`?"),
            std::string::npos)
      << verb.stderr_text;
  auto option = heapgate_cli({"run", "--baseline", "./build/mytests"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.stderr_text.find("heapgate run: unknown option --baseline; fix: did you mean --baselines?"),
            std::string::npos)
      << option.stderr_text;
  auto none = heapgate_cli({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.stderr_text.find("heapgate: a subcommand is required; fix: name a command: run,"), std::string::npos)
      << none.stderr_text;
  auto missing = heapgate_cli({"diff"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("heapgate diff: base is required; fix: see heapgate diff --help"),
            std::string::npos)
      << missing.stderr_text;
  auto far = heapgate_cli({"frobnicate"});
  EXPECT_NE(far.stderr_text.find("heapgate: unknown command \"frobnicate\"; fix: use one of run, compare"),
            std::string::npos)
      << far.stderr_text;
}

// A benchmark's JSON where a report belongs, and a filter that matches no
// test, are said for what they are (exit 2), not "0 changed".
TEST(RunnerUsage, WrongFilesAndEmptyFiltersAreNamed) {
  const std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(sys::write_file_atomic(dir + "/bench.json", R"({"context": {"executable": "b"}, "benchmarks": []})"));
  auto html = heapgate_cli({"report", "html", dir + "/bench.json"});
  EXPECT_EQ(html.exit_code, 2);
  EXPECT_NE(html.stderr_text.find("is Google Benchmark's output (--benchmark_out), not a heapgate report"),
            std::string::npos)
      << html.stderr_text;
  EXPECT_NE(html.stderr_text.find("heapgate bench compare"), std::string::npos) << html.stderr_text;

  Report report;
  report.run.binary = "t";
  report.run.mode = Mode::counters;
  TestRecord record;
  record.name = "Cache.Hit";
  record.suite = "Cache";
  record.test = "Hit";
  record.mode = Mode::counters;
  report.tests = {record};
  std::filesystem::create_directories(dir + "/reports");
  ASSERT_TRUE(sys::write_file_atomic(dir + "/reports/t.json", to_json(report)));
  auto nothing =
      heapgate_cli({"accept", "--report", dir + "/reports", "--baselines", dir + "/b", "--tests", "NoSuch.*"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.stderr_text.find("--tests 'NoSuch.*': matches no test in"), std::string::npos)
      << nothing.stderr_text;
  EXPECT_NE(nothing.stderr_text.find("Cache.Hit"), std::string::npos) << nothing.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(dir + "/b/t.json"));
  // --report may name one report file.
  auto one = heapgate_cli({"accept", "--report", dir + "/reports/t.json", "--baselines", dir + "/b"});
  EXPECT_EQ(one.exit_code, 0) << one.stderr_text;
  EXPECT_TRUE(std::filesystem::exists(dir + "/b/t.json"));
}

// A profile names the files of its process' mappings; heapgate diff opens
// them to symbolize. A FIFO there blocked open() forever.
TEST(RunnerBadInput, DiffReturnsPromptlyWhenTheMapsSectionNamesAFifo) {
  const std::string dir = testing::make_temp_dir();
  const std::string fifo = dir + "/app";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto text = sys::read_file(testing::data_path("profiles/period1.heap"));
  ASSERT_TRUE(text);
  std::string profile = *text;
  for (std::size_t at; (at = profile.find("/usr/bin/app")) != std::string::npos;) profile.replace(at, 12, fifo);
  ASSERT_TRUE(sys::write_file_atomic(dir + "/p.heap", profile));
  auto r = heapgate_cli({"diff", dir + "/p.heap", dir + "/p.heap"}, std::chrono::seconds(60));
  EXPECT_FALSE(r.timed_out) << "heapgate diff blocked on the FIFO";
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("0 stacks changed"), std::string::npos) << r.stdout_text;
  // The jeprof route reads the module's build-id first: the same.
  if (sys::find_program("jeprof")) {
    auto j = heapgate_cli({"diff", "--format", "jeprof", "--binary", testing::helper_binary("heap_workload"),
                           dir + "/p.heap", dir + "/p.heap"},
                          std::chrono::seconds(120));
    EXPECT_FALSE(j.timed_out) << "heapgate diff --format jeprof blocked on the FIFO";
  }
}

TEST(RunnerBadInput, DiffOfWhatIsNotARegularFileIsExit2WithTheReason) {
  const std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(sys::write_file_atomic(dir + "/x.heap", "heap_v2/1\n  t*: 0: 0 [0: 0]\n"));
  // /dev/zero never ends: it was read until std::bad_alloc aborted heapgate (exit 134).
  auto zero = heapgate_cli({"diff", "/dev/zero", dir + "/x.heap"}, std::chrono::seconds(60));
  EXPECT_FALSE(zero.timed_out);
  EXPECT_EQ(zero.exit_code, 2) << zero.stderr_text;
  EXPECT_EQ(zero.stderr_text,
            "heapgate: /dev/zero: is a character device, not a regular file; fix: pass a regular file (save a stream "
            "or a device's output to a file first)\n");
  const std::string fifo = dir + "/fifo.heap";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto piped = heapgate_cli({"diff", dir + "/x.heap", fifo}, std::chrono::seconds(60));
  EXPECT_FALSE(piped.timed_out);
  EXPECT_EQ(piped.exit_code, 2);
  EXPECT_NE(piped.stderr_text.find(fifo + ": is a FIFO (named pipe), not a regular file"), std::string::npos)
      << piped.stderr_text;
  // Over the size limit of a profile (sparse: no disk used): refused unread.
  const std::string huge = dir + "/huge.heap";
  ASSERT_TRUE(sys::write_file_atomic(huge, "heap_v2/1\n"));
  std::filesystem::resize_file(huge, sys::kProfileSizeLimit.bytes + 1);
  auto big = heapgate_cli({"diff", huge, dir + "/x.heap"}, std::chrono::seconds(60));
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_EQ(big.stderr_text, "heapgate: " + huge +
                                 ": is 1.0 GiB (1073741825 bytes), over heapgate's limit of 1.0 GiB (1073741824 "
                                 "bytes) for a heap profile; fix: check that this is the file you meant\n");
}

// std::bad_alloc out of a verb is one line and exit 2, not abort() (134).
TEST(RunnerBadInput, OutOfMemoryIsExit2WithAMessage) {
  if (!sys::find_program("sh")) GTEST_SKIP() << "sh not found on PATH";
  const std::string dir = testing::make_temp_dir();
  // Under the document limit (256 MiB), over what the address-space limit lets it allocate.
  const std::string report = dir + "/big.json";
  ASSERT_TRUE(sys::write_file_atomic(report, "{"));
  std::filesystem::resize_file(report, 250u << 20);
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
  options.timeout = std::chrono::seconds(120);
  auto limited = sys::run_process(
      {"sh", "-c", "ulimit -v 200000 && exec \"$0\" report junit \"$1\"", HEAPGATE_CLI_PATH, report}, options);
  ASSERT_TRUE(limited) << limited.error().message();
  EXPECT_EQ(limited->exit_code, 2) << "signal " << limited->term_signal << ": " << limited->stderr_text;
  EXPECT_EQ(limited->stderr_text,
            "heapgate report: out of memory; fix: check the size of the input files, or free memory\n");
}

TEST(RunnerReport, MergesShardsAndRendersJUnitAndMarkdown) {
  HEAPGATE_REQUIRE_COUNTERS();
  const std::string dir = testing::make_temp_dir();
  for (const char* index : {"0", "1"}) {
    sys::ProcessOptions options;
    options.extra_env = {"GTEST_TOTAL_SHARDS=2", std::string("GTEST_SHARD_INDEX=") + index};
    options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
    auto ran = sys::run_process({testing::helper_binary("sample_suite"), "--heapgate_report=" + dir,
                                 "--gtest_filter=Sample.Clean:Sample.Counted:Counts/*"},
                                options);
    ASSERT_TRUE(ran);
  }
  auto merged = heapgate_cli({"report", "merge", "-o", dir + "/all.json", dir + "/sample_suite.shard-0-of-2.json",
                              dir + "/sample_suite.shard-1-of-2.json"});
  EXPECT_EQ(merged.exit_code, 0) << merged.stderr_text;
  auto report = read_report(dir + "/all.json");
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->tests.size(), 5u);
  auto junit = heapgate_cli({"report", "junit", dir + "/all.json"});
  EXPECT_EQ(junit.exit_code, 0);
  EXPECT_NE(junit.stdout_text.find("<testsuites"), std::string::npos);
  auto markdown = heapgate_cli({"report", "markdown", dir + "/all.json"});
  EXPECT_EQ(markdown.exit_code, 0);
  EXPECT_NE(markdown.stdout_text.find("Sample.Counted"), std::string::npos);
  auto two = heapgate_cli(
      {"report", "junit", dir + "/sample_suite.shard-0-of-2.json", dir + "/sample_suite.shard-1-of-2.json"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.stderr_text.find("merge"), std::string::npos) << two.stderr_text;
}

TEST(RunnerReport, RendersAnHtmlPageWithTheLeaksFlameGraph) {
  HEAPGATE_REQUIRE_PROFILING();
  const std::string dir = testing::make_temp_dir();
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD", "HEAPGATE_MODE"};
  auto ran = sys::run_process(
      {testing::helper_binary("sample_suite"), "--heapgate_report=" + dir, "--gtest_filter=Sample.Clean:Sample.Leaks"},
      options);
  ASSERT_TRUE(ran) << ran.error().message();
  EXPECT_EQ(ran->exit_code, 1) << ran->stdout_text << ran->stderr_text;
  auto html = heapgate_cli({"report", "html", dir + "/sample_suite.json", "-o", dir + "/report.html"});
  EXPECT_EQ(html.exit_code, 0) << html.stderr_text;
  auto page = sys::read_file(dir + "/report.html");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page->find("<code>Sample.Leaks</code> <span class=\"badge v-leaked\">leaked</span>"), std::string::npos)
      << *page;
  EXPECT_NE(page->find("<code>Sample.Clean</code>"), std::string::npos);
  // The leak's stack, as text and as a flame graph frame with its live bytes.
  const std::size_t svg = page->find("<svg");
  ASSERT_NE(svg, std::string::npos);
  const std::size_t frame = page->find("leak_three_blocks()\n", svg);
  ASSERT_NE(frame, std::string::npos) << page->substr(svg);
  EXPECT_NE(page->find("288 bytes now, +288 bytes against the baseline</title>", frame), std::string::npos)
      << page->substr(frame);
  // The page is to_html() of the report the CLI read.
  auto report = read_report(dir + "/sample_suite.json");
  ASSERT_TRUE(report) << report.error().message();
  auto merged = merge_reports({*report});
  ASSERT_TRUE(merged);
  EXPECT_EQ(*page, to_html(*merged));
  auto wrong = heapgate_cli({"report", "pdf", dir + "/sample_suite.json"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.stderr_text.find("html"), std::string::npos) << wrong.stderr_text;
}

TEST(RunnerHelp, ReadsLikeAManPage) {
  auto help = heapgate_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.stdout_text.find("diff"), std::string::npos);
  EXPECT_NE(help.stdout_text.find("Exit codes"), std::string::npos);
  auto diff_help = heapgate_cli({"diff", "--help"});
  EXPECT_EQ(diff_help.exit_code, 0);
  EXPECT_NE(diff_help.stdout_text.find("--format"), std::string::npos);
}

}  // namespace
}  // namespace heapgate
