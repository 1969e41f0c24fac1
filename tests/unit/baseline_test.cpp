// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

Baseline sample_baseline() {
  Baseline b;
  b.binary = "parser_test";
  b.fingerprint = {{"compiler", "gcc 12.2.0"}, {"libc", "glibc 2.36"}, {"page_size", "4096"}};
  BaselineEntry plain;
  plain.metrics = Metrics{120, 4096, 0, 0, 2048};
  plain.mode = Mode::exact;
  plain.top_stacks = {"std::vector<int>::reserve() < parse() < main", "load() < main"};
  b.tests["Parser.ReadsConfig"] = plain;

  BaselineEntry tolerant;
  tolerant.metrics = Metrics{7, 100, 1, 16, 64};
  tolerant.mode = Mode::sampled;
  Tolerances t = Tolerances::for_mode(Mode::sampled);
  t[MetricName::allocations] = Tolerance{3, 0.25};
  tolerant.tolerance = t;
  tolerant.setup_residue = true;  // its 1 live block was one-time setup
  tolerant.noise = NoiseBand{5, Metrics{6, 96, 1, 16, 60}, Metrics{9, 144, 1, 16, 70}};
  b.tests["Inst/Param.Works/0"] = tolerant;

  BaselineEntry counters;
  counters.metrics = Metrics{0, 0, 0, 0, 0};
  counters.mode = Mode::counters;
  b.tests["Typed/0.Caf\xC3\xA9"] = counters;
  return b;
}

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Baseline, RoundTripIsByteIdentical) {
  Baseline original = sample_baseline();
  std::string text = to_json(original);
  auto parsed = parse_baseline_json(text, "mem.json");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(*parsed, original);
  EXPECT_EQ(to_json(*parsed), text);

  std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(write_baseline(dir + "/a.json", original));
  auto read = read_baseline(dir + "/a.json");
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_TRUE(read->exists);
  ASSERT_TRUE(write_baseline(dir + "/b.json", *read));
  EXPECT_EQ(*sys::read_file(dir + "/a.json"), *sys::read_file(dir + "/b.json"));
  EXPECT_EQ(*sys::read_file(dir + "/a.json"), text);
}

TEST(Baseline, OutputIsSortedIndentedAndEndsInNewline) {
  Baseline b;
  b.binary = "t";
  BaselineEntry e;
  e.metrics = Metrics{3, 48, 0, 0, 32};
  e.mode = Mode::exact;
  e.top_stacks = {"f() < main"};
  b.tests["Z.Last"] = e;
  b.tests["A.First"] = e;
  b.tests["A.First"].metrics.allocations = 2;
  EXPECT_EQ(to_json(b), R"({
  "binary": "t",
  "schema": "heapgate.baseline/1",
  "tests": {
    "A.First": {
      "metrics": {
        "allocated_bytes": 48,
        "allocations": 2,
        "live_allocations": 0,
        "live_bytes": 0,
        "peak_bytes": 32
      },
      "mode": "exact",
      "top_stacks": [
        "f() < main"
      ]
    },
    "Z.Last": {
      "metrics": {
        "allocated_bytes": 48,
        "allocations": 3,
        "live_allocations": 0,
        "live_bytes": 0,
        "peak_bytes": 32
      },
      "mode": "exact",
      "top_stacks": [
        "f() < main"
      ]
    }
  }
}
)");
}

TEST(Baseline, MissingFileIsAnEmptyBaseline) {
  std::string dir = testing::make_temp_dir();
  auto b = read_baseline(dir + "/nothing.json");
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_FALSE(b->exists);
  EXPECT_TRUE(b->tests.empty());
}

TEST(Baseline, UnreadablePathIsAnIoError) {
  std::string dir = testing::make_temp_dir();
  auto b = read_baseline(dir);  // a directory
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, ErrorCode::io_error);
}

struct Malformed {
  const char* label;
  std::string text;
  std::string where;  // expected Error::where (prefix "a.json" added below)
  std::string what;   // a substring of Error::what
  std::string fix;    // a substring of Error::fix
};

std::string with_entry(const std::string& entry, const std::string& name = "Suite.Test") {
  return R"({"schema": "heapgate.baseline/1", "binary": "t", "tests": {")" + name + R"(": )" + entry + "}}";
}

std::string with_metrics(const std::string& allocations, const std::string& name = "Suite.Test") {
  return with_entry(R"({"mode": "exact", "metrics": {"allocations": )" + allocations +
                        R"(, "allocated_bytes": 1, "live_allocations": 0, "live_bytes": 0, "peak_bytes": 1}})",
                    name);
}

const std::string kGoodMetrics =
    R"("metrics": {"allocations": 1, "allocated_bytes": 1, "live_allocations": 0, "live_bytes": 0, "peak_bytes": 1})";

TEST(Baseline, MalformedInputNamesPathPointerExpectationAndFix) {
  const Malformed cases[] = {
      {"truncated", R"({"schema": "heapgate.baseline/1", "tests": {"A.B": {"mo)", "a.json:1:", "not valid JSON",
       "restore"},
      {"truncated on line 3", "{\n  \"schema\": \"heapgate.baseline/1\",\n  \"tests\": {",
       "a.json:3:", "not valid JSON", ""},
      {"empty file", "", "a.json:1:1", "empty", ""},
      {"count as string", with_metrics(R"("5")"), "a.json: /tests/Suite.Test/metrics/allocations",
       R"(expected an unsigned integer, got "5")", "without quotes"},
      {"negative count", with_metrics("-5"), "a.json: /tests/Suite.Test/metrics/allocations",
       "expected an unsigned integer, got -5", "negative"},
      {"fractional count", with_metrics("1.5"), "a.json: /tests/Suite.Test/metrics/allocations",
       "expected an unsigned integer, got 1.5", "whole number"},
      {"count beyond 2^64", with_metrics("18446744073709551616"), "a.json: /tests/Suite.Test/metrics/allocations",
       "expected an unsigned integer", "2^64"},
      {"unknown metric",
       with_entry(R"({"mode": "exact", "metrics": {"allocs": 1, "allocations": 1, "allocated_bytes": 1, )"
                  R"("live_allocations": 0, "live_bytes": 0, "peak_bytes": 1}})"),
       "a.json: /tests/Suite.Test/metrics/allocs", "unknown metric \"allocs\"", "spelling"},
      {"missing metric",
       with_entry(R"({"mode": "exact", "metrics": {"allocations": 1, "allocated_bytes": 1, "live_allocations": 0, )"
                  R"("live_bytes": 0}})"),
       "a.json: /tests/Suite.Test/metrics/peak_bytes", "required key \"peak_bytes\" is missing", "add it"},
      {"newer schema", R"({"schema": "heapgate.baseline/2", "tests": {}, "weights": []})", "a.json: /schema", "newer",
       "upgrade heapgate"},
      {"another schema", R"({"schema": "heapgate.report/1", "tests": {}})", "a.json: /schema",
       R"(expected schema "heapgate.baseline/1", got "heapgate.report/1")", "re-record"},
      {"no schema", R"({"tests": {}})", "a.json: /schema", "required key \"schema\"", ""},
      {"not an object", "[1, 2]", "a.json", "expected an object, got an array", ""},
      {"unknown mode", with_entry("{\"mode\": \"fast\", " + kGoodMetrics + "}"), "a.json: /tests/Suite.Test/mode",
       R"(expected a mode (off, counters, exact or sampled), got "fast")", "exact"},
      {"relative as percent string",
       with_entry("{\"mode\": \"exact\", " + kGoodMetrics + R"(, "tolerance": {"allocations": {"relative": "5%"}}})"),
       "a.json: /tests/Suite.Test/tolerance/allocations/relative", R"(expected a number, got "5%")", "0.05"},
      {"negative relative",
       with_entry("{\"mode\": \"exact\", " + kGoodMetrics + R"(, "tolerance": {"allocations": {"relative": -0.1}}})"),
       "a.json: /tests/Suite.Test/tolerance/allocations/relative", "expected a fraction >= 0", "0.05"},
      {"unknown tolerance metric",
       with_entry("{\"mode\": \"exact\", " + kGoodMetrics + R"(, "tolerance": {"bytes": {"relative": 0.1}}})"),
       "a.json: /tests/Suite.Test/tolerance/bytes", "unknown metric \"bytes\"", ""},
      {"misspelled key", with_entry("{\"mode\": \"exact\", " + kGoodMetrics + R"(, "top_stack": []})"),
       "a.json: /tests/Suite.Test/top_stack", "unknown key \"top_stack\"", "spelling"},
      {"stack not a string", with_entry("{\"mode\": \"exact\", " + kGoodMetrics + R"(, "top_stacks": [1]})"),
       "a.json: /tests/Suite.Test/top_stacks/0", "expected a string, got 1", ""},
      {"slash in test name is escaped", with_metrics("true", "Inst/P.T~1"),
       "a.json: /tests/Inst~1P.T~01/metrics/allocations", "got true", ""},
  };
  for (const Malformed& c : cases) {
    auto b = parse_baseline_json(c.text, "a.json");
    ASSERT_FALSE(b) << c.label;
    EXPECT_EQ(b.error().code, ErrorCode::parse_error) << c.label;
    if (c.where.back() == ':') {
      EXPECT_EQ(b.error().where.rfind(c.where, 0), 0u) << c.label << ": " << b.error().message();
    } else {
      EXPECT_EQ(b.error().where, c.where) << c.label << ": " << b.error().message();
    }
    EXPECT_NE(b.error().what.find(c.what), std::string::npos) << c.label << ": " << b.error().message();
    EXPECT_NE(b.error().fix.find(c.fix), std::string::npos) << c.label << ": " << b.error().message();
    EXPECT_FALSE(b.error().fix.empty()) << c.label << ": every error says how to fix it";
  }
}

TEST(Baseline, ReadErrorNamesTheFileAndPointer) {
  std::string dir = testing::make_temp_dir();
  std::string path = dir + "/a.json";
  ASSERT_TRUE(sys::write_file_atomic(path, with_metrics(R"("5")")));
  auto b = read_baseline(path);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message(), path +
                                     ": /tests/Suite.Test/metrics/allocations: expected an unsigned integer, got "
                                     "\"5\"; fix: write the number without quotes");
}

TEST(Baseline, PartialToleranceTakesTheModeDefaults) {
  auto b = parse_baseline_json(
      with_entry("{\"mode\": \"sampled\", " + kGoodMetrics + R"(, "tolerance": {"allocations": {"absolute": 4}}})"),
      "a.json");
  ASSERT_TRUE(b) << b.error().message();
  const auto& tol = b->tests.at("Suite.Test").tolerance;
  ASSERT_TRUE(tol.has_value());
  EXPECT_EQ((*tol)[MetricName::allocations], (Tolerance{4, 0.0}));
  EXPECT_EQ((*tol)[MetricName::peak_bytes], Tolerances::for_mode(Mode::sampled)[MetricName::peak_bytes]);
}

// Runs `fn` in a child process; as root, the child first becomes `nobody`,
// since root writes into read-only directories anyway. Returns the child's exit code.
template <typename Fn>
int run_unprivileged(Fn fn) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(99);
    ::_exit(fn());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Baseline, WriteIntoReadOnlyDirectoryFailsAndKeepsTheOldFile) {
  std::string root = testing::make_temp_dir();
  ASSERT_EQ(::chmod(root.c_str(), 0755), 0);
  std::string dir = root + "/baselines";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  std::string path = dir + "/t.json";
  Baseline before = sample_baseline();
  ASSERT_TRUE(write_baseline(path, before));
  const std::string old_bytes = *sys::read_file(path);
  ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);

  Baseline after = before;
  after.tests["Parser.ReadsConfig"].metrics.allocations = 999;
  int code = run_unprivileged([&] {
    auto written = write_baseline(path, after);
    if (written) return 0;
    bool names_path = written.error().message().find(path) != std::string::npos;
    return written.error().code == ErrorCode::io_error && names_path ? 1 : 2;
  });
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  EXPECT_EQ(code, 1) << "0: the write succeeded; 2: wrong error; 99: could not drop privileges";
  EXPECT_EQ(*sys::read_file(path), old_bytes);
  EXPECT_EQ(dir_entries(dir), std::vector<std::string>{"t.json"}) << "no temporary file may be left behind";
}

TEST(Baseline, FailedRenameLeavesNoTemporaryFile) {
  std::string dir = testing::make_temp_dir();
  // The target is a non-empty directory: the temp file is written, the rename fails.
  std::string target = dir + "/t.json";
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  ASSERT_TRUE(sys::write_file_atomic(target + "/keep", "x"));
  auto written = write_baseline(target, sample_baseline());
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().code, ErrorCode::io_error);
  EXPECT_EQ(dir_entries(dir), std::vector<std::string>{"t.json"});
}

TEST(Baseline, UpdateKeepsTestsThatDidNotRunAndHandEditedTolerances) {
  Baseline b;
  BaselineEntry a{Metrics{1, 1, 0, 0, 1}, Mode::exact, std::nullopt, {}, {}};
  BaselineEntry c{Metrics{3, 3, 0, 0, 3}, Mode::exact, Tolerances::strict(), {}, {}};
  (*c.tolerance)[MetricName::allocations].absolute = 7;
  b.tests["S.A"] = a;
  b.tests["S.B"] = a;
  b.tests["S.C"] = c;

  std::map<std::string, BaselineEntry> results;
  results["S.B"] = BaselineEntry{Metrics{2, 2, 0, 0, 2}, Mode::exact, std::nullopt, {"f() < main"}, {}};
  results["S.C"] = BaselineEntry{Metrics{4, 4, 0, 0, 4}, Mode::exact, std::nullopt, {}, {}};
  results["S.D"] = BaselineEntry{Metrics{5, 5, 0, 0, 5}, Mode::exact, std::nullopt, {}, {}};
  BaselineUpdate u = update_entries(b, results);
  EXPECT_EQ(u.added, 1u);
  EXPECT_EQ(u.changed, 2u);
  EXPECT_EQ(u.unchanged, 0u);
  EXPECT_EQ(u.kept, 1u);
  ASSERT_EQ(b.tests.size(), 4u);
  EXPECT_EQ(b.tests["S.A"], a) << "a filtered run must not touch tests it did not run";
  EXPECT_EQ(b.tests["S.B"].metrics.allocations, 2u);
  EXPECT_EQ(b.tests["S.B"].top_stacks, std::vector<std::string>{"f() < main"});
  EXPECT_EQ(b.tests["S.C"].metrics.allocations, 4u);
  ASSERT_TRUE(b.tests["S.C"].tolerance);
  EXPECT_EQ((*b.tests["S.C"].tolerance)[MetricName::allocations].absolute, 7u);

  BaselineUpdate again = update_entries(b, results);
  EXPECT_EQ(again.unchanged, 3u);
  EXPECT_EQ(again.changed + again.added, 0u);
}

TEST(Baseline, PruneRemovesOnlyUnknownTests) {
  Baseline b = sample_baseline();
  auto removed = prune_entries(b, {"Parser.ReadsConfig", "Other.Test"});
  EXPECT_EQ(removed, (std::vector<std::string>{"Inst/Param.Works/0", "Typed/0.Caf\xC3\xA9"}));
  EXPECT_EQ(b.tests.size(), 1u);
}

TEST(Baseline, JoinStackUsesTheSeparator) {
  EXPECT_EQ(join_stack({"f()", "g()", "main"}), "f() < g() < main");
  EXPECT_EQ(join_stack({}), "");
}

TEST(Baseline, PathIsTheBinarysFileInTheDirectory) {
  auto path = baseline_path("ci/baselines", "parser_test", "build/parser_test");
  ASSERT_TRUE(path) << path.error().message();
  EXPECT_EQ(*path, "ci/baselines/parser_test.json");
}

TEST(Baseline, PathRefusesANameThatIsNotOneFileName) {
  for (const std::string& bad :
       std::vector<std::string>{"", ".", "..", "../escape", "a/b", std::string(kMaxBinaryNameLength + 1, 'x')}) {
    auto path = baseline_path("ci/baselines", bad, "reports/shard-1");
    ASSERT_FALSE(path) << "accepted \"" << bad << "\" as " << *path;
    EXPECT_EQ(path.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(path.error().message().find("reports/shard-1"), std::string::npos) << path.error().message();
  }
}

}  // namespace
}  // namespace heapgate
