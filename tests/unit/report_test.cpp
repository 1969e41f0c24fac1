// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
//
// Approved files: the JSON, JUnit, Markdown and HTML renderings of a fixed
// Report are compared with tests/approved/report.{json,junit.xml,md,html}, and
// the differential flame graph of its stacks with tests/approved/flamegraph.svg.
// After an intended change, rewrite them and review the diff:
//
//   HEAPGATE_APPROVE=1 ctest --test-dir build -R ReportApproval
//
// The fixed Report holds no durations, timestamps, hosts, addresses or paths
// of this machine, so nothing needs normalizing before the comparison.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/flamegraph.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "heapgate/report_files.h"
#include "heapgate/gate.h"
#include "test_support.h"

namespace heapgate {
namespace {

TestRecord record(const std::string& suite, const std::string& test, Metrics current, std::optional<Metrics> baseline,
                  double ms) {
  TestRecord t;
  t.suite = suite;
  t.test = test;
  t.name = suite + "." + test;
  t.file = "tests/parser_test.cpp";
  t.line = 10;
  t.mode = Mode::exact;
  t.metrics = current;
  t.duration_ms = ms;
  if (baseline) {
    BaselineEntry e{*baseline, Mode::exact, std::nullopt, {}, {}};
    Comparison c = compare_to_baseline(current, &e, Tolerances::strict());
    t.baseline = baseline;
    t.deltas = c.deltas;
    t.verdict = c.verdict;
    if (c.verdict != Verdict::pass) t.message = c.explanation;
  } else {
    t.verdict = Verdict::new_test;
  }
  return t;
}

// A run with every verdict, sorted by name.
Report sample_report() {
  Report r;
  r.run.binary = "parser_test";
  r.run.build_id = "4f2a9c0d1e";
  r.run.mode = Mode::exact;
  r.run.jemalloc_version = "5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c";
  r.run.host = "ci-runner-1";
  r.run.started_at = "2024-05-01T12:00:00Z";

  TestRecord budget = record("Budget", "Exceeded", Metrics{180, 4000, 0, 0, 2000}, Metrics{180, 4000, 0, 0, 2000}, 2.5);
  budget.verdict = Verdict::over_budget;
  budget.budgets["allocations"] = 150;
  budget.budgets["peak_bytes"] = 4096;
  budget.message = "heapgate: Budget.Exceeded over_budget | allocations 180 over the budget of 150 (+30)";
  r.tests.push_back(budget);

  r.tests.push_back(record("Fresh", "NewTest", Metrics{4, 64, 0, 0, 64}, std::nullopt, 0.25));

  TestRecord gone;
  gone.name = "Gone.Removed";
  gone.suite = "Gone";
  gone.test = "Removed";
  gone.mode = Mode::exact;
  gone.baseline = Metrics{1, 16, 0, 0, 16};
  gone.verdict = Verdict::missing;
  gone.message = "the baseline has an entry for Gone.Removed, but the test did not run";
  r.tests.push_back(gone);

  TestRecord param =
      record("Inst/Param", "Works/0", Metrics{1000, 64000, 0, 0, 32000}, Metrics{1000, 64000, 0, 0, 32000}, 12.125);
  param.mode = Mode::sampled;
  param.estimated = true;
  r.tests.push_back(param);

  TestRecord nojem = record("NoJemalloc", "Test", Metrics{}, std::nullopt, 1);
  nojem.mode = Mode::off;
  nojem.verdict = Verdict::unavailable;
  nojem.message = "jemalloc is not loaded in this process; fix: link the test with -ljemalloc";
  r.tests.push_back(nojem);

  TestRecord faster = record("Parser", "Faster", Metrics{60, 2048, 0, 0, 1024}, Metrics{120, 4096, 0, 0, 1024}, 3);
  r.tests.push_back(faster);

  TestRecord grows =
      record("Parser", "GrowsBuffer", Metrics{180, 8192, 0, 0, 4096}, Metrics{120, 4096, 0, 0, 4096}, 4.75);
  grows.stacks.push_back(
      StackSample{{"std::vector<char>::reserve(unsigned long)", "Parser::grow()", "Parser::parse()"}, 0, 0, 60, 4096});
  grows.stacks.push_back(StackSample{{"operator new(unsigned long)", "Parser::token()"}, 0, 0, 0.5, 12.25});
  grows.profiles.push_back("reports/parser_test/Parser.GrowsBuffer.heap");
  r.tests.push_back(grows);

  TestRecord leaks = record("Parser", "Leaks", Metrics{10, 400, 3, 96, 400}, Metrics{10, 400, 0, 0, 400}, 1.5);
  leaks.verdict = Verdict::leaked;
  leaks.message =
      "heapgate: Parser.Leaks leaked (exact mode)\nleaked 3 allocations (96 bytes) still live at the end of the test";
  leaks.stacks.push_back(StackSample{{"malloc", "Parser::cache()"}, 3, 96, 3, 96});
  r.tests.push_back(leaks);

  TestRecord ok = record("Parser", "ReadsConfig", Metrics{120, 4096, 0, 0, 2048}, Metrics{120, 4096, 0, 0, 2048}, 0.5);
  r.tests.push_back(ok);

  TestRecord asserts = record("Parser", "WrongAnswer", Metrics{5, 80, 0, 0, 80}, Metrics{5, 80, 0, 0, 80}, 0.75);
  asserts.gtest_failed = true;
  r.tests.push_back(asserts);
  return r;
}

std::string approved_path(const std::string& name) { return std::string(HEAPGATE_APPROVED_DIR) + "/" + name; }

bool approving() {
  const char* v = std::getenv("HEAPGATE_APPROVE");
  return v != nullptr && std::string(v) == "1";
}

void expect_approved(const std::string& name, const std::string& actual) {
  const std::string path = approved_path(name);
  if (approving()) {
    ASSERT_TRUE(sys::write_file_atomic(path, actual)) << path;
    return;
  }
  auto approved = sys::read_file(path);
  ASSERT_TRUE(approved) << path << " is missing; run with HEAPGATE_APPROVE=1 to create it";
  EXPECT_EQ(actual, *approved) << "the output differs from " << path
                               << "; if the change is intended, re-run with HEAPGATE_APPROVE=1 and review the diff";
}

// xmllint --schema <junit-10.xsd> --noout <file>. Skips (fails under
// HEAPGATE_REQUIRE_PROFILING=1, as in CI) when xmllint is missing.
#define HEAPGATE_EXPECT_VALID_JUNIT(xml)                                                         \
  do {                                                                                           \
    if (!sys::find_program("xmllint")) {                                                         \
      const char* why_ = "xmllint not found on PATH; fix: apt-get install libxml2-utils";        \
      if (testing::profiling_required()) FAIL() << why_;                                         \
      GTEST_SKIP() << why_;                                                                      \
    }                                                                                            \
    std::string file_ = testing::make_temp_dir() + "/report.junit.xml";                          \
    ASSERT_TRUE(sys::write_file_atomic(file_, xml));                                             \
    auto run_ = sys::run_process({"xmllint", "--schema", HEAPGATE_JUNIT_XSD, "--noout", file_}); \
    ASSERT_TRUE(run_) << run_.error().message();                                                 \
    EXPECT_EQ(run_->exit_code, 0) << run_->stderr_text << "\n" << xml;                           \
  } while (0)

TEST(ReportJson, RoundTripIsLosslessAndByteIdentical) {
  Report r = sample_report();
  std::string text = to_json(r);
  auto parsed = parse_report_json(text, "r.json");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(*parsed, r);
  EXPECT_EQ(to_json(*parsed), text);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.rfind("{\n  \"run\": {", 0), 0u) << "keys are sorted: run, schema, tests";

  Report setup = sample_report();
  setup.tests.front().setup_residue = true;
  setup.run.fingerprint = {{"arch", "x86_64"}, {"jemalloc", "5.3.0"}};
  auto with_setup = parse_report_json(to_json(setup), "setup.json");
  ASSERT_TRUE(with_setup) << with_setup.error().message();
  EXPECT_EQ(*with_setup, setup);
  EXPECT_NE(to_json(setup).find("\"setup_residue\": true"), std::string::npos);
}

// Records are written without building nlohmann's tree, compact for the
// journal and indented from that line for the report: the bytes are
// nlohmann's own dump of the same document (sorted keys, its escapes and
// number forms), whatever the strings and numbers hold, and read back equal.
TEST(ReportJson, WrittenLikeTheLibrarysOwnDump) {
  Report r = sample_report();
  TestRecord& t = r.tests.front();
  t.message = "a {\"quoted\": [1, 2]}, back\\slash: colon, tab\t, \x01 control, \xE2\x86\x92 arrow, \x7F del";
  t.profiles = {};
  t.budgets.clear();
  t.stacks.push_back(StackSample{{"f(std::map<int, int>)", "g[abi:cxx11]()"}, {-0.5, 1e300, 3.0, 1.0 / 3}});
  t.alone = t.metrics;
  t.other_threads = ThreadShare{3, 96};
  t.growth = LiveGrowth{{1, 2, 3}, {32, 64, 96}};
  t.standard_errors = t.metrics;
  t.call_sites = {CallSite{"f()", "a.cpp:1", 2, 64}};
  t.call_sites_complete = true;
  t.baseline_call_sites = {CallSite{"g()", "", 1, 32}};
  t.setup_residue = true;
  t.duration_ms = 0.002484;
  t.line = -1;
  ASSERT_FALSE(t.deltas.empty());
  t.deltas.front().delta = -7;
  t.deltas.front().ratio = std::nan("");
  for (const TestRecord& record : r.tests) {
    const std::string line = record_json_line(record);
    EXPECT_EQ(line, nlohmann::json::parse(line).dump(-1)) << line;
  }
  for (const Report& report : {r, Report{r.run, {}}}) {
    const std::string text = to_json(report);
    auto parsed = nlohmann::json::parse(text);
    EXPECT_EQ(text, parsed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  t.deltas.front().ratio = 0;  // NaN is written as 0
  auto back = parse_report_json(to_json(r), "r.json");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, r);

  // Invalid UTF-8 is written as U+FFFD, as nlohmann's replace handler does.
  t.message = "bad \xFF byte";
  EXPECT_NE(record_json_line(t).find("bad \xEF\xBF\xBD byte"), std::string::npos);
}

TEST(ReportJson, ErrorsNamePointer) {
  std::string good = to_json(sample_report());
  struct Case {
    std::string from, to, where, what;
  } cases[] = {
      {"\"schema\": \"heapgate.report/2\"", "\"schema\": \"heapgate.report/7\"", "r.json: /schema", "newer"},
      {"\"verdict\": \"over_budget\"", "\"verdict\": \"overbudget\"", "r.json: /tests/0/verdict", "expected a verdict"},
      {"\"allocations\": 150", "\"allocations\": -150", "r.json: /tests/0/budgets/allocations",
       "expected an unsigned integer, got -150"},
      {"\"mode\": \"exact\",\n      \"name\"", "\"mode\": 3,\n      \"name\"", "r.json: /tests/0/mode",
       "expected a string, got 3"},
  };
  for (const auto& c : cases) {
    std::string text = good;
    auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    auto parsed = parse_report_json(text, "r.json");
    ASSERT_FALSE(parsed) << c.to;
    EXPECT_EQ(parsed.error().where, c.where) << parsed.error().message();
    EXPECT_NE(parsed.error().what.find(c.what), std::string::npos) << parsed.error().message();
  }
  auto truncated = parse_report_json(good.substr(0, good.size() / 2), "r.json");
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().where.rfind("r.json:", 0), 0u);
}

// The binary's name becomes file names (baselines, reports): a report from a
// CI artifact must not name a path.
TEST(ReportJson, TheBinaryIsAPlainFileName) {
  const std::string good = to_json(sample_report());
  const std::string from = "\"binary\": \"parser_test\"";
  ASSERT_NE(good.find(from), std::string::npos);
  struct Case {
    std::string binary, what;
  } cases[] = {
      {"\"../escape/evil\"", "got \"../escape/evil\", which contains '/'"},
      {"\"a/b\"", "which contains '/'"},
      {"\"..\"", "which is \"..\", a directory"},
      {"\".\"", "which is \".\", a directory"},
      {"\"\"", "which is empty"},
      {"\"nul\\u0000x\"", "which contains a NUL byte"},
      {"\"" + std::string(kMaxBinaryNameLength + 1, 'x') + "\"", "which is 201 bytes long, over the limit of 200"},
      {"7", "expected a string, got 7"},
  };
  for (const auto& c : cases) {
    std::string text = good;
    text.replace(text.find(from), from.size(), "\"binary\": " + c.binary);
    auto parsed = parse_report_json(text, "r.json");
    ASSERT_FALSE(parsed) << c.binary;
    EXPECT_EQ(parsed.error().where, "r.json: /run/binary") << parsed.error().message();
    EXPECT_NE(parsed.error().what.find(c.what), std::string::npos) << parsed.error().message();
  }
  // Required: every report heapgate writes has it.
  std::string absent = good;
  absent.replace(absent.find(from), from.size() + 1, "");
  auto parsed = parse_report_json(absent, "r.json");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().where, "r.json: /run/binary") << parsed.error().message();
  // Names that are plain file names still read.
  for (const char* name : {"my_tests", "a.b-c", "...", "x y", ".hidden"}) {
    Report r = sample_report();
    r.run.binary = name;
    auto read = parse_report_json(to_json(r), "r.json");
    ASSERT_TRUE(read) << name << ": " << read.error().message();
    EXPECT_EQ(read->run.binary, name);
  }
}

TEST(ReportJson, NonFiniteNumbersAreWrittenAsZero) {
  Report r;
  r.run.binary = "t";
  TestRecord t = record("S", "T", Metrics{}, std::nullopt, std::nan(""));
  r.tests.push_back(t);
  auto parsed = parse_report_json(to_json(r), "r.json");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->tests[0].duration_ms, 0.0);
}

std::vector<Report> split_into_shards(const Report& whole, int shards) {
  std::vector<Report> out(static_cast<std::size_t>(shards));
  for (int i = 0; i < shards; ++i) {
    out[static_cast<std::size_t>(i)].run = whole.run;
    out[static_cast<std::size_t>(i)].run.shard_index = i;
    out[static_cast<std::size_t>(i)].run.total_shards = shards;
    // Later shards start later; the merged report keeps the earliest start.
    out[static_cast<std::size_t>(i)].run.started_at = "2024-05-01T12:00:0" + std::to_string(i) + "Z";
  }
  for (std::size_t i = 0; i < whole.tests.size(); ++i) out[(i * 7 + 3) % out.size()].tests.push_back(whole.tests[i]);
  // gtest runs tests in registration order, not sorted: shuffle each shard.
  for (auto& s : out) std::reverse(s.tests.begin(), s.tests.end());
  return out;
}

TEST(MergeReports, ShardsMergeIntoTheUnshardedReportInAnyOrder) {
  Report whole = sample_report();
  std::vector<Report> shards = split_into_shards(whole, 3);
  ASSERT_FALSE(shards[0].tests.empty());
  ASSERT_FALSE(shards[1].tests.empty());
  auto merged = merge_reports(shards);
  ASSERT_TRUE(merged) << merged.error().message();
  Report expected = whole;
  sort_tests(expected);
  EXPECT_EQ(*merged, expected);
  EXPECT_EQ(to_json(*merged), to_json(expected));

  std::reverse(shards.begin(), shards.end());
  auto reversed = merge_reports(shards);
  ASSERT_TRUE(reversed);
  EXPECT_EQ(*reversed, expected);
}

TEST(MergeReports, IdenticalDuplicatesAreKeptOnceConflictsFail) {
  Report a = sample_report();
  Report b = sample_report();
  auto merged = merge_reports({a, b});
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(merged->tests.size(), a.tests.size());

  b.tests[0].metrics.allocations += 1;
  auto conflict = merge_reports({a, b});
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code, ErrorCode::conflict);
  EXPECT_EQ(conflict.error().where, a.tests[0].name);
  EXPECT_FALSE(conflict.error().fix.empty());
}

TEST(MergeReports, RunsOfDifferentBinariesConflict) {
  Report a = sample_report();
  Report b = sample_report();
  b.run.binary = "other_test";
  b.tests.clear();
  auto merged = merge_reports({a, b});
  ASSERT_FALSE(merged);
  EXPECT_EQ(merged.error().code, ErrorCode::conflict);
  EXPECT_EQ(merged.error().where, "run.binary");
  EXPECT_NE(merged.error().what.find("other_test"), std::string::npos);
  EXPECT_EQ(merge_reports({}).error().code, ErrorCode::invalid_argument);
}

TEST(MergeReports, KeepsHostsStrictAndIncompleteness) {
  Report a;
  a.run.binary = "t";
  a.run.host = "b-host";
  Report b = a;
  b.run.host = "a-host";
  b.run.strict = true;
  b.run.complete = false;
  auto merged = merge_reports({a, b});
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->run.host, "a-host, b-host");
  EXPECT_TRUE(merged->run.strict);
  EXPECT_FALSE(merged->run.complete);
}

TEST(Report, CountsVerdictsAndFailures) {
  Report r = sample_report();
  VerdictCounts c = count_verdicts(r);
  EXPECT_EQ(c.total, r.tests.size());
  EXPECT_EQ(c[Verdict::pass], 3u);
  EXPECT_EQ(c[Verdict::regressed], 1u);
  // regressed, leaked, over_budget, and a test that failed its own
  // assertions (it fails the run: docs/design.md §6a)
  EXPECT_EQ(c.own_failures, 1u);
  EXPECT_EQ(c.failures, 4u);
  r.run.strict = true;
  EXPECT_EQ(count_verdicts(r).failures, 5u);  // + unavailable
}

TEST(Report, MissingTestsAndBaselineEntries) {
  Report r = sample_report();
  r.tests.erase(
      std::remove_if(r.tests.begin(), r.tests.end(), [](const TestRecord& t) { return t.verdict == Verdict::missing; }),
      r.tests.end());
  Baseline b;
  b.tests["Gone.Removed"] = BaselineEntry{Metrics{1, 16, 0, 0, 16}, Mode::exact, std::nullopt, {}, {}};
  b.tests["Parser.ReadsConfig"] = BaselineEntry{};
  add_missing_tests(r, b);
  auto it = std::find_if(r.tests.begin(), r.tests.end(), [](const TestRecord& t) { return t.name == "Gone.Removed"; });
  ASSERT_NE(it, r.tests.end());
  EXPECT_EQ(it->verdict, Verdict::missing);
  EXPECT_TRUE(std::is_sorted(r.tests.begin(), r.tests.end(),
                             [](const TestRecord& x, const TestRecord& y) { return x.name < y.name; }));

  auto entries = baseline_entries(sample_report());
  EXPECT_EQ(entries.count("Gone.Removed"), 0u) << "missing tests were not measured";
  EXPECT_EQ(entries.count("NoJemalloc.Test"), 0u) << "unavailable tests were not measured";
  EXPECT_EQ(entries.count("Parser.WrongAnswer"), 0u) << "tests that failed their assertions are not recorded";
  ASSERT_EQ(entries.count("Parser.GrowsBuffer"), 1u);
  EXPECT_EQ(entries["Parser.GrowsBuffer"].metrics.allocations, 180u);
  EXPECT_EQ(entries["Parser.GrowsBuffer"].top_stacks.front(),
            "std::vector<char>::reserve(unsigned long) < Parser::grow() < Parser::parse()");
}

// A noisy test passes within a band, not an exact count: every format says
// which band and where this run fell in it.
TEST(Report, ANoisyTestShowsItsBandAndThisRunInEveryFormat) {
  Report r;
  r.run.binary = "parser_test";
  TestRecord t = record("Pool", "Drains", Metrics{2170, 69000, 0, 0, 4096}, Metrics{2160, 69000, 0, 0, 4096}, 1);
  t.verdict = Verdict::pass;
  t.baseline_noise = NoiseBand{5, Metrics{2140, 69000, 0, 0, 4096}, Metrics{2190, 69000, 0, 0, 4096}};
  r.tests.push_back(t);
  r.tests.push_back(record("Parser", "Steady", Metrics{5, 80, 0, 0, 80}, Metrics{5, 80, 0, 0, 80}, 1));
  const std::string band =
      "allocations 2140\xE2\x80\x93"
      "2190 over 5 runs; this run 2170";
  // Only the metric that varied: the others were the same in every run.
  EXPECT_EQ(to_markdown(r).find("allocated_bytes 69000"), std::string::npos);
  const std::string md = to_markdown(r);
  EXPECT_NE(md.find("1 noisy test: judged within the band their recorded runs spread over"), std::string::npos) << md;
  EXPECT_NE(md.find("| `Pool.Drains` | pass | " + band + " |"), std::string::npos) << md;
  EXPECT_EQ(md.find("`Parser.Steady` | pass | allocations"), std::string::npos) << md;
  const std::string xml = to_junit_xml(r);
  EXPECT_NE(xml.find("heapgate.noisy=" + band), std::string::npos) << xml;
  HEAPGATE_EXPECT_VALID_JUNIT(xml);
  const std::string html = to_html(r);
  EXPECT_NE(html.find("noisy: " + band), std::string::npos);
  auto parsed = parse_report_json(to_json(r), "r.json");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->tests[0].baseline_noise, t.baseline_noise);
  EXPECT_FALSE(parsed->tests[1].baseline_noise.has_value());
  // An upside-down band is refused, naming the field.
  std::string bad = to_json(r);
  const std::size_t at = bad.find("\"low\": {\n");
  ASSERT_NE(at, std::string::npos);
  bad.replace(bad.find("\"allocations\": 2140", at), 19, "\"allocations\": 2999");
  auto refused = parse_report_json(bad, "r.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("/tests/0/baseline_noise/low/allocations"), std::string::npos)
      << refused.error().message();
}

TEST(ReportJunit, ValidatesAgainstJunitSchema) { HEAPGATE_EXPECT_VALID_JUNIT(to_junit_xml(sample_report())); }

TEST(ReportJunit, EmptyReportValidates) {
  Report r;
  HEAPGATE_EXPECT_VALID_JUNIT(to_junit_xml(r));
}

TEST(ReportJunit, HostileTextStaysValidXml) {
  Report r;
  r.run.binary = "bin<&>\"'";
  TestRecord t = record("S", "T", Metrics{1, 1, 0, 0, 1}, Metrics{0, 0, 0, 0, 0}, 1);
  t.message = std::string("ctrl\x01\x1b[0m bad utf8 \xff\xfe ]]> <tag> & \"q\" \xed\xa0\x80 ok \xC3\xA9");
  t.stacks.push_back(StackSample{{"f<\x02>()"}, 1, 1, 1, 1});
  r.tests.push_back(t);
  HEAPGATE_EXPECT_VALID_JUNIT(to_junit_xml(r));
}

TEST(ReportJunit, CountsAndFailureText) {
  Report r = sample_report();
  std::string xml = to_junit_xml(r);
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(xml.c_str()));
  pugi::xml_node root = doc.child("testsuites");
  EXPECT_EQ(root.attribute("tests").as_int(), 10);
  EXPECT_EQ(root.attribute("failures").as_int(), 4);  // regressed, leaked, over_budget, gtest
  EXPECT_EQ(root.attribute("errors").as_int(), 0);
  EXPECT_STREQ(root.attribute("time").value(), "0.026");
  int suites = 0;
  int skipped = 0;
  for (pugi::xml_node suite : root.children("testsuite")) {
    ++suites;
    int cases = 0;
    int failures = 0;
    int skips = 0;
    for (pugi::xml_node tc : suite.children("testcase")) {
      ++cases;
      failures += tc.child("failure") ? 1 : 0;
      skips += tc.child("skipped") ? 1 : 0;
      EXPECT_STREQ(tc.attribute("classname").value(), suite.attribute("name").value());
    }
    EXPECT_EQ(suite.attribute("tests").as_int(), cases) << suite.attribute("name").value();
    EXPECT_EQ(suite.attribute("failures").as_int(), failures) << suite.attribute("name").value();
    EXPECT_EQ(suite.attribute("skipped").as_int(), skips) << suite.attribute("name").value();
    skipped += skips;
  }
  EXPECT_EQ(suites, 6);
  EXPECT_EQ(skipped, 2);  // missing, unavailable

  pugi::xml_node grows = root.find_child_by_attribute("testsuite", "name", "Parser")
                             .find_child_by_attribute("testcase", "name", "GrowsBuffer");
  ASSERT_TRUE(grows);
  pugi::xml_node failure = grows.child("failure");
  EXPECT_STREQ(failure.attribute("type").value(), "heapgate.regressed");
  std::string text = failure.text().get();
  EXPECT_NE(text.find("allocations 120 \xE2\x86\x92 180 (+60, +50.0%)"), std::string::npos) << text;
  EXPECT_NE(text.find("Parser::grow()"), std::string::npos) << text;
  EXPECT_NE(text.find("Parser.GrowsBuffer.heap"), std::string::npos) << text;
  std::string out = grows.child("system-out").text().get();
  EXPECT_NE(out.find("heapgate.allocations=180\n"), std::string::npos) << out;
  EXPECT_NE(out.find("heapgate.baseline.allocations=120\n"), std::string::npos) << out;

  r.run.strict = true;
  pugi::xml_document strict;
  ASSERT_TRUE(strict.load_string(to_junit_xml(r).c_str()));
  EXPECT_STREQ(strict.child("testsuites")
                   .find_child_by_attribute("testsuite", "name", "NoJemalloc")
                   .child("testcase")
                   .child("failure")
                   .attribute("type")
                   .value(),
               "heapgate.unavailable");
}

TEST(ReportMarkdown, HeadlineProblemsFirstThenAllInDetails) {
  std::string md = to_markdown(sample_report());
  EXPECT_EQ(md.rfind("### heapgate: `parser_test` \xE2\x80\x94 FAIL\n", 0), 0u) << md;
  EXPECT_NE(md.find("**10 tests**: 1 regressed \xC2\xB7 1 leaked \xC2\xB7 1 over_budget \xC2\xB7 1 unavailable"),
            std::string::npos)
      << md;
  auto problems = md.find("| Test | Verdict | Details |");
  auto details = md.find("<details>");
  ASSERT_NE(problems, std::string::npos);
  ASSERT_NE(details, std::string::npos);
  EXPECT_LT(problems, details);
  EXPECT_LT(md.find("`Parser.GrowsBuffer`"), md.find("`Parser.Leaks`")) << "regressions are listed first";
  EXPECT_LT(md.find("`Parser.ReadsConfig`"), md.find("</details>"));
  EXPECT_GT(md.find("`Parser.ReadsConfig`"), details) << "passing tests only in the details table";
  // The budget message holds a '|': escaped so it stays in its cell.
  Report r = sample_report();
  r.tests[0].budgets.clear();
  EXPECT_NE(to_markdown(r).find("over_budget \\| allocations"), std::string::npos);
}

TEST(ReportApproval, JsonJunitAndMarkdownMatchApprovedFiles) {
  Report r = sample_report();
  expect_approved("report.json", to_json(r));
  expect_approved("report.junit.xml", to_junit_xml(r));
  expect_approved("report.md", to_markdown(r));
}

TEST(ReportApproval, HtmlMatchesApprovedFile) { expect_approved("report.html", to_html(sample_report())); }

// The stacks of every test in the sample, as one differential graph of the
// allocated bytes they changed: the picture the HTML page draws per test, as
// a standalone .svg (XML declaration, zoom script).
TEST(ReportApproval, DifferentialFlameGraphMatchesApprovedFile) {
  std::vector<FoldedStack> stacks;
  for (const TestRecord& t : sample_report().tests) {
    for (const StackSample& s : t.stacks) {
      stacks.push_back(FoldedStack{{s.frames.rbegin(), s.frames.rend()}, s.counts.accum_bytes});
    }
  }
  ASSERT_EQ(stacks.size(), 3u) << "the sample report's stacks changed; the graph would lose its subject";
  FlamegraphOptions options;
  options.title = "parser_test";
  options.subtitle = "allocated bytes by call stack";
  options.differential = true;
  expect_approved("flamegraph.svg", render_flamegraph_svg(stacks, options));
}

TEST(ReportFiles, WritesThreeFilesAndReadsBackTheDirectory) {
  std::string dir = testing::make_temp_dir() + "/out/nested";
  Report r = sample_report();
  ASSERT_TRUE(write_report_files(dir, r, "parser_test"));
  EXPECT_EQ(*sys::read_file(dir + "/parser_test.json"), to_json(r));
  EXPECT_EQ(*sys::read_file(dir + "/parser_test.junit.xml"), to_junit_xml(r));
  EXPECT_EQ(*sys::read_file(dir + "/parser_test.md"), to_markdown(r));
  auto by_dir = read_report(dir);
  ASSERT_TRUE(by_dir) << by_dir.error().message();
  EXPECT_EQ(*by_dir, r);
  auto by_file = read_report(dir + "/parser_test.json");
  ASSERT_TRUE(by_file);
  EXPECT_EQ(*by_file, r);
}

TEST(ReportFiles, UnwritableDirectoryIsAnErrorNamingItWithAFix) {
  std::string root = testing::make_temp_dir();
  std::string blocker = root + "/file";
  ASSERT_TRUE(sys::write_file_atomic(blocker, "not a directory"));
  auto written = write_report_files(blocker + "/reports", sample_report(), "t");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().code, ErrorCode::io_error);
  EXPECT_EQ(written.error().where, blocker + "/reports");
  EXPECT_NE(written.error().fix.find("writable"), std::string::npos);

  // A read-only directory (root ignores permissions, so a child drops to nobody).
  ASSERT_EQ(::chmod(root.c_str(), 0755), 0);
  std::string ro = root + "/ro";
  ASSERT_EQ(::mkdir(ro.c_str(), 0555), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(99);
    auto w = write_report_files(ro, sample_report(), "t");
    ::_exit(!w && w.error().where == ro && w.error().message().find("t.json") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(ReportFiles, ReadingNothingIsAnErrorNamingThePath) {
  std::string dir = testing::make_temp_dir();
  auto none = read_report(dir + "/none.json");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::io_error);
  EXPECT_EQ(none.error().where, dir + "/none.json");
  auto empty_dir = read_report(dir);
  ASSERT_FALSE(empty_dir);
  EXPECT_EQ(empty_dir.error().where, dir);
}

}  // namespace
}  // namespace heapgate
