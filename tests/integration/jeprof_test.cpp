// SPDX-License-Identifier: MIT
// The jeprof driver against the real jeprof, on dumps of the heap_workload
// child program, plus the parser of jeprof's --text output.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/jeprof.h"
#include "heapgate/profile.h"
#include "profile_test_support.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

using testing::find_function;
using testing::flat_of;

class JeprofRun : public ::testing::Test {
 protected:
  void SetUp() override {
    HEAPGATE_REQUIRE_PROFILING();
    HEAPGATE_REQUIRE_PROGRAM("jeprof");
    dir_ = testing::make_temp_dir();
    dump_ = dir_ + "/workload.heap";
    auto run = testing::run_heap_workload(dump_, 7, 3);
    ASSERT_TRUE(run) << run.error().message();
    ASSERT_EQ(*run, "allocations=220 allocated_bytes=23664 live_allocations=13 live_bytes=10528\n");
  }

  JeprofOptions options(JeprofFormat format, std::vector<std::string> extra = {}) const {
    JeprofOptions o;
    o.binary = testing::helper_binary("heap_workload");
    o.profile = dump_;
    o.format = format;
    o.extra_args = std::move(extra);
    return o;
  }

  JeprofText text(std::vector<std::string> extra) const {
    auto out = run_jeprof(options(JeprofFormat::text, std::move(extra)));
    EXPECT_TRUE(out) << out.error().message();
    if (!out) return {};
    auto parsed = parse_jeprof_text(*out);
    EXPECT_TRUE(parsed) << parsed.error().message() << "\n" << *out;
    return parsed ? *parsed : JeprofText{};
  }

  std::string dir_;
  std::string dump_;
};

TEST_F(JeprofRun, TextNamesTheWorkloadFunctionsWithTheirCounts) {
  JeprofText live = text({"--inuse_objects"});
  EXPECT_EQ(live.total, 13);
  EXPECT_EQ(live.unit, "objects");
  EXPECT_EQ(flat_of(live, "injected_leak"), 3);
  EXPECT_EQ(flat_of(live, "steady_work"), 10);
  EXPECT_EQ(find_function(live, "injected_extra"), nullptr);  // freed: nothing in use
  const JeprofTextLine* main_line = find_function(live, "main");
  ASSERT_NE(main_line, nullptr);
  EXPECT_EQ(main_line->flat, 0);
  EXPECT_EQ(main_line->cum, 13);
  EXPECT_DOUBLE_EQ(main_line->cum_percent, 100.0);

  JeprofText allocated = text({"--alloc_objects"});
  EXPECT_EQ(allocated.total, 220);
  EXPECT_EQ(flat_of(allocated, "steady_work"), 210);
  EXPECT_EQ(flat_of(allocated, "injected_extra"), 7);
  EXPECT_EQ(flat_of(allocated, "injected_leak"), 3);
  ASSERT_FALSE(allocated.lines.empty());
  EXPECT_EQ(testing::bare_function_name(allocated.lines[0].name), "steady_work");  // sorted by flat
}

TEST_F(JeprofRun, CollapsedStacksEndInTheWorkloadFunctions) {
  auto out = run_jeprof(options(JeprofFormat::collapsed, {"--show_bytes"}));
  ASSERT_TRUE(out) << out.error().message();
  bool leak = false;
  bool steady = false;
  std::string_view rest = *out;
  while (!rest.empty()) {
    std::string_view line = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(std::min(rest.size(), line.size() + 1));
    std::size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string_view::npos) << line;
    std::string_view stack = line.substr(0, space);
    std::string_view count = line.substr(space + 1);
    EXPECT_NE(stack.find("main"), std::string_view::npos) << line;  // root;...;leaf
    if (stack.size() >= 16 && stack.find("injected_leak(int)") == stack.size() - 18) {
      leak = true;
      EXPECT_EQ(count, "288");
    }
    if (stack.find("steady_work()") != std::string_view::npos && count == "10240") steady = true;
  }
  EXPECT_TRUE(leak) << *out;
  EXPECT_TRUE(steady) << *out;
}

TEST_F(JeprofRun, SvgIsACallGraphOfTheWorkload) {
  HEAPGATE_REQUIRE_PROGRAM("dot");
  auto out = run_jeprof(options(JeprofFormat::svg));
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_NE(out->find("<svg"), std::string::npos) << out->substr(0, 200);
  EXPECT_NE(out->find("</svg>"), std::string::npos);
  EXPECT_NE(out->find("injected_leak"), std::string::npos);
  EXPECT_NE(out->find("steady_work"), std::string::npos);
}

TEST_F(JeprofRun, OutputPathReceivesStdout) {
  JeprofOptions o = options(JeprofFormat::text, {"--show_bytes"});
  o.output_path = dir_ + "/report.txt";
  auto out = run_jeprof(o);
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(*out, "");
  auto file = sys::read_file(*o.output_path);
  ASSERT_TRUE(file) << file.error().message();
  auto parsed = parse_jeprof_text(*file, *o.output_path);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->unit, "B");
  EXPECT_EQ(parsed->total, 10528);
  EXPECT_EQ(flat_of(*parsed, "injected_leak"), 3 * 96);
}

TEST_F(JeprofRun, MissingJeprofIsUnavailableWithTheFix) {
  for (std::string program : {"/nonexistent/jeprof", "heapgate-no-such-jeprof"}) {
    SCOPED_TRACE(program);
    JeprofOptions o = options(JeprofFormat::text);
    o.jeprof_program = program;
    auto out = run_jeprof(o);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().code, ErrorCode::unavailable);
    EXPECT_EQ(out.error().where, program);
    EXPECT_NE(out.error().what.find("jeprof not found"), std::string::npos) << out.error().message();
    EXPECT_NE(out.error().what.find(program), std::string::npos) << out.error().message();
    EXPECT_NE(out.error().fix.find("apt-get install libjemalloc-dev"), std::string::npos) << out.error().message();
  }
}

TEST_F(JeprofRun, MissingInputsAreIoErrorsNamingThePath) {
  const std::string missing = dir_ + "/no-such.heap";
  JeprofOptions profile = options(JeprofFormat::text);
  profile.profile = missing;
  JeprofOptions base = options(JeprofFormat::text);
  base.base = missing;
  JeprofOptions binary = options(JeprofFormat::text);
  binary.binary = dir_ + "/no-such-binary";
  for (const JeprofOptions* o : {&profile, &base, &binary}) {
    auto out = run_jeprof(*o);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().code, ErrorCode::io_error) << out.error().message();
    const std::string& expected = o == &binary ? binary.binary : missing;
    EXPECT_EQ(out.error().where, expected);
    EXPECT_NE(out.error().message().find(expected), std::string::npos) << out.error().message();
  }
}

TEST_F(JeprofRun, JeprofFailingIsAnExternalToolErrorWithItsStderr) {
  const std::string garbage = dir_ + "/garbage.heap";
  ASSERT_TRUE(sys::write_file_atomic(garbage, "this is not a heap profile\n"));
  JeprofOptions o = options(JeprofFormat::text);
  o.profile = garbage;
  auto out = run_jeprof(o);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, ErrorCode::external_tool);
  EXPECT_NE(out.error().what.find("exited with status"), std::string::npos) << out.error().message();
  EXPECT_NE(out.error().what.find("garbage.heap"), std::string::npos) << out.error().message();  // jeprof's complaint
}

// jeprof's total for a sampled profile is the sum of heapgate's unsample() per record.
TEST(Jeprof, TotalOfASampledProfileEqualsUnsample) {
  HEAPGATE_REQUIRE_PROGRAM("jeprof");
  const std::string fixture = testing::data_path("profiles/sampled.heap");
  auto profile = read_profile(fixture);
  ASSERT_TRUE(profile) << profile.error().message();
  double live = 0;
  for (const auto& s : profile->stacks) live += unsample(s.counts, profile->sample_period).live_bytes;

  JeprofOptions o;
  o.binary = testing::helper_binary("heap_workload");  // any ELF file: the fixture's addresses map nowhere
  o.profile = fixture;
  o.extra_args = {"--show_bytes"};
  auto out = run_jeprof(o);
  ASSERT_TRUE(out) << out.error().message();
  auto text = parse_jeprof_text(*out);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(text->total, std::trunc(live)) << *out;
  EXPECT_EQ(text->total, 105577307);  // 97,088,030.x + 8,488,876.x + 400, truncated once
}

TEST(Jeprof, CommandLineIsFormatExtrasBaseBinaryProfile) {
  JeprofOptions o;
  o.binary = "/bin/prog";
  o.profile = "/tmp/p.heap";
  o.base = "/tmp/b.heap";
  o.format = JeprofFormat::collapsed;
  o.extra_args = {"--inuse_objects", "--exclude=gtest"};
  o.jeprof_program = "/opt/jeprof";
  EXPECT_EQ(jeprof_command(o),
            (std::vector<std::string>{"/opt/jeprof", "--collapsed", "--inuse_objects", "--exclude=gtest",
                                      "--base=/tmp/b.heap", "/bin/prog", "/tmp/p.heap"}));
  o.base.reset();
  o.format = JeprofFormat::svg;
  o.extra_args.clear();
  EXPECT_EQ(jeprof_command(o), (std::vector<std::string>{"/opt/jeprof", "--svg", "/bin/prog", "/tmp/p.heap"}));
}

TEST(Jeprof, FormatNamesRoundTrip) {
  for (JeprofFormat f : {JeprofFormat::text, JeprofFormat::svg, JeprofFormat::collapsed, JeprofFormat::raw}) {
    auto parsed = parse_jeprof_format(to_string(f));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, f);
  }
  auto bad = parse_jeprof_format("pdf");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::parse_error);
  EXPECT_NE(bad.error().what.find("unknown format \"pdf\""), std::string::npos);
  EXPECT_NE(bad.error().what.find("text, svg, collapsed, raw"), std::string::npos);
}

TEST(JeprofText, ParsesTotalsLinesAndBaseDifferences) {
  // As jeprof prints a --base difference: negative values, names with spaces.
  const char* out =
      "Using local file ./prog.\n"
      "Total: -10 objects\n"
      "       3 -30.0% -30.0%        3 -30.0% ::injected_leak\n"
      "       0   0.0% -30.0%       -13 130.0% operator new(unsigned long)\n"
      "     -13 130.0% 100.0%      -13 130.0% 0x00005555000012ff\n";
  auto text = parse_jeprof_text(out, "jeprof.out");
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(text->total, -10);
  EXPECT_EQ(text->unit, "objects");
  ASSERT_EQ(text->lines.size(), 3u);
  EXPECT_EQ(text->lines[0].flat, 3);
  EXPECT_EQ(text->lines[0].flat_percent, -30.0);
  EXPECT_EQ(text->lines[1].name, "operator new(unsigned long)");
  EXPECT_EQ(text->lines[1].cum, -13);
  EXPECT_EQ(text->lines[2].sum_percent, 100.0);
  EXPECT_TRUE(testing::is_address(text->lines[2].name));
  EXPECT_EQ(text->find("operator new(unsigned long)"), &text->lines[1]);
  EXPECT_EQ(text->find("nothing"), nullptr);
}

TEST(JeprofText, ParsesPercentagesOfAZeroTotal) {
  // jeprof's Percent() prints a bare nan/+inf/-inf when everything cancels.
  const char* out =
      "Total: 0.0 MB\n"
      "     0.1   +inf   +inf      0.1   +inf ::injected_leak\n"
      "    -0.1   -inf    nan     -0.1   -inf ::steady_work\n";
  auto text = parse_jeprof_text(out);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(text->total, 0);
  EXPECT_EQ(text->unit, "MB");
  ASSERT_EQ(text->lines.size(), 2u);
  EXPECT_TRUE(std::isinf(text->lines[0].flat_percent));
  EXPECT_GT(text->lines[0].flat_percent, 0);
  EXPECT_TRUE(std::isinf(text->lines[1].flat_percent));
  EXPECT_LT(text->lines[1].flat_percent, 0);
  EXPECT_TRUE(std::isnan(text->lines[1].sum_percent));
  EXPECT_EQ(text->lines[1].flat, -0.1);
}

TEST(JeprofText, ErrorsNameTheLine) {
  auto none = parse_jeprof_text("Using local file x.\nno total here\n", "out.txt");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::parse_error);
  EXPECT_EQ(none.error().where, "out.txt:3");
  EXPECT_NE(none.error().what.find("no \"Total:\" line"), std::string::npos);

  auto bad = parse_jeprof_text("Total: 5 objects\n   5 100.0% 100.0%  5 ::f\n", "out.txt");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "out.txt:2");
  EXPECT_NE(bad.error().what.find("expected \"<flat> <flat%> <sum%> <cum> <cum%> <name>\""), std::string::npos);
  EXPECT_NE(bad.error().what.find("::f"), std::string::npos);

  auto total = parse_jeprof_text("Total: lots\n", "out.txt");
  ASSERT_FALSE(total);
  EXPECT_EQ(total.error().where, "out.txt:1");
}

}  // namespace
}  // namespace heapgate
