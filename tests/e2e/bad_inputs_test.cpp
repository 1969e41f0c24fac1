// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The bad-input catalogue, docs/bad-inputs.md: one test per row, named after
// the row's id (BI07_... for BI-07; tests/e2e/bad_inputs_catalogue_check.cmake
// keeps the two lists equal). Each runs what a user runs: the real `heapgate`
// executable, the real plugin binary (sample_suite) or a real HTTP client on
// loopback, and asserts the row's message and exit code or HTTP status.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "heapgate/report.h"
#include "heapgate/sys.h"
#include "http_test_support.h"
#include "test_support.h"

namespace heapgate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

// ---- Running what the user runs.

// Environment a child must not inherit from ctest: this binary's allocator
// settings and any heapgate setting of the developer's shell.
const std::vector<std::string> kCleanEnvironment = {
    "MALLOC_CONF",           "LD_PRELOAD",          "HEAPGATE_MODE",         "HEAPGATE_REPORT", "HEAPGATE_BASELINES",
    "HEAPGATE_PROFILES",     "HEAPGATE_REEXECUTED", "HEAPGATE_SUPPRESSIONS", "HEAPGATE_STRICT", "HEAPGATE_FINGERPRINT",
    "HEAPGATE_CONFIRM_RUNS", "GTEST_TOTAL_SHARDS",  "GTEST_SHARD_INDEX"};

sys::ProcessResult run(std::vector<std::string> argv, std::vector<std::string> env = {},
                       std::chrono::milliseconds timeout = std::chrono::minutes(2)) {
  sys::ProcessOptions options;
  options.unset_env = kCleanEnvironment;
  options.extra_env = std::move(env);
  options.timeout = timeout;
  auto ran = sys::run_process(argv, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
}

sys::ProcessResult heapgate_cli(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  return run(std::move(args), std::move(env));
}

sys::ProcessResult sample_suite(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), HEAPGATE_SAMPLE_SUITE);
  return run(std::move(args), std::move(env));
}

using testing::expect_refused;

// The plugin refuses before any test runs: no test started.
void expect_refused_before_any_test(const sys::ProcessResult& r, const std::string& line) {
  expect_refused(r, 2, line);
  EXPECT_EQ(r.stdout_text.find("[ RUN      ]"), std::string::npos) << r.stdout_text;
}

// ---- Inputs.

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  auto written = sys::write_file_atomic(path, text);
  ASSERT_TRUE(written) << written.error().message();
}

// A well-formed counters-mode report of binary `binary` with one test.
std::string report_json(const std::string& binary = "t") {
  Report report;
  report.run.binary = binary;
  report.run.mode = Mode::counters;
  TestRecord record;
  record.name = "Cache.Hit";
  record.suite = "Cache";
  record.test = "Hit";
  record.mode = Mode::counters;
  report.tests = {record};
  return to_json(report);
}

// The same report with `pointer` set to `value`.
std::string report_json_with(const std::string& pointer, const json& value) {
  json doc = json::parse(report_json());
  doc[json::json_pointer(pointer)] = value;
  return doc.dump(2);
}

// The header line and one record of a journal, as a run that crashed left it.
std::string journal_with_binary(const std::string& binary) {
  json doc = json::parse(report_json());
  json header = {{"journal", true}, {"run", doc["run"]}, {"schema", doc["schema"]}};
  header["run"]["binary"] = binary;
  return header.dump() + "\n" + doc["tests"][0].dump() + "\n";
}

std::string baseline_json() {
  return R"({"binary": "t", "schema": "heapgate.baseline/1", "tests": {}})"
         "\n";
}

std::string benchmark_json(const std::string& executable) {
  json doc = {{"context", {{"executable", executable}}}, {"benchmarks", json::array()}};
  return doc.dump(2);
}

// A tiny valid heap profile.
constexpr const char* kTinyProfile = "heap_v2/1\n  t*: 0: 0 [0: 0]\n";

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    found.push_back(fs::relative(entry.path(), dir).string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// ---- A client that sends exactly the bytes it is given.

struct RawAnswer {
  int status = 0;
  std::string head;
  std::string body;
};

// A connection to the server on loopback with `request` sent (as much of it
// as the server takes before it answers and closes); -1 if none.
int connect_and_send(int port, const std::string& request, milliseconds receive_timeout = std::chrono::seconds(30)) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(receive_timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((receive_timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  return fd;
}

// Sends `request` on a fresh connection and reads one answer: its head, then
// Content-Length bytes of body.
std::optional<RawAnswer> raw_exchange(int port, const std::string& request,
                                      milliseconds receive_timeout = std::chrono::seconds(30)) {
  const int fd = connect_and_send(port, request, receive_timeout);
  if (fd < 0) return std::nullopt;
  std::string received;
  {
    char chunk[16 * 1024];
    for (;;) {
      const std::size_t end = received.find("\r\n\r\n");
      if (end != std::string::npos) {
        const std::string head = received.substr(0, end + 2);
        const std::size_t length_at = head.find("\r\nContent-Length: ");
        const std::size_t length = length_at == std::string::npos ? 0 : std::stoul(head.substr(length_at + 18));
        if (received.size() >= end + 4 + length) break;
      }
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      received.append(chunk, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  const std::size_t end = received.find("\r\n\r\n");
  if (end == std::string::npos || received.compare(0, 9, "HTTP/1.1 ") != 0) return std::nullopt;
  RawAnswer answer;
  answer.status = std::stoi(received.substr(9, 3));
  answer.head = received.substr(0, end + 2);
  answer.body = received.substr(end + 4);
  return answer;
}

class BadInputs : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir(); }
  std::string dir_;
};

// ---- The command line: verbs, flags and their values.

TEST_F(BadInputs, BI01_NoVerb) {
  expect_refused(heapgate_cli({}), 2,
                 "heapgate: a subcommand is required; fix: name a command: run, compare, accept, report, diff, "
                 "fetch, bench, record, history (heapgate --help)");
}

TEST_F(BadInputs, BI02_MistypedVerb) {
  expect_refused(heapgate_cli({"rnu"}), 2,
                 "heapgate: unknown command \"rnu\"; fix: did you mean `heapgate run`? (heapgate --help lists them)");
}

TEST_F(BadInputs, BI03_UnknownVerb) {
  expect_refused(heapgate_cli({"frobnicate"}), 2,
                 "heapgate: unknown command \"frobnicate\"; fix: use one of run, compare, accept, report, diff, "
                 "fetch, bench, record, history (heapgate --help lists them)");
}

TEST_F(BadInputs, BI04_MistypedOption) {
  expect_refused(heapgate_cli({"run", "--baseline", "b", "--", "/bin/true"}), 2,
                 "heapgate run: unknown option --baseline; fix: did you mean --baselines? See heapgate run --help");
}

TEST_F(BadInputs, BI05_UnknownOption) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", "--frobnicate", dir_ + "/x.heap", dir_ + "/x.heap"}), 2,
                 "heapgate diff: unknown option --frobnicate; fix: see heapgate diff --help");
}

TEST_F(BadInputs, BI06_MissingArgument) {
  expect_refused(heapgate_cli({"diff"}), 2, "heapgate diff: base is required; fix: see heapgate diff --help");
}

TEST_F(BadInputs, BI07_MissingFile) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", dir_ + "/nope.heap", dir_ + "/x.heap"}), 2,
                 "heapgate diff: base: File does not exist: " + dir_ + "/nope.heap; fix: see heapgate diff --help");
}

TEST_F(BadInputs, BI08_DirectoryForAFile) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", dir_, dir_ + "/x.heap"}), 2,
                 "heapgate diff: base: File is actually a directory: " + dir_ + "; fix: see heapgate diff --help");
}

TEST_F(BadInputs, BI09_BadEnumValue) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", "--format", "pdf", dir_ + "/x.heap", dir_ + "/x.heap"}), 2,
                 "heapgate diff: --format: pdf not in {text,folded,svg,jeprof,pprof}; fix: see heapgate diff --help");
}

TEST_F(BadInputs, BI10_BadMetric) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", "--metric", "live-bytes", dir_ + "/x.heap", dir_ + "/x.heap"}), 2,
                 "heapgate diff: --metric: unknown metric \"live-bytes\"; expected one of live_objects, live_bytes, "
                 "accum_objects, accum_bytes; fix: see heapgate diff --help");
}

TEST_F(BadInputs, BI11_NegativeNumber) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(
      heapgate_cli({"diff", "--max-stacks", "-3", dir_ + "/x.heap", dir_ + "/x.heap"}), 2,
      "heapgate diff: --max-stacks: a number of stacks from 0 to 999999999, got -3; fix: see heapgate diff --help");
}

TEST_F(BadInputs, BI12_NotANumber) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(
      heapgate_cli({"diff", "--max-stacks", "ten", dir_ + "/x.heap", dir_ + "/x.heap"}), 2,
      "heapgate diff: --max-stacks: a number of stacks from 0 to 999999999, got ten; fix: see heapgate diff --help");
  for (const std::string flag : {"--jobs", "--timeout", "--calibrate"}) {
    expect_refused(heapgate_cli({"run", flag, "abc", "--", HEAPGATE_SAMPLE_SUITE}), 2,
                   "heapgate run: could not convert: " + flag + " = abc; fix: see heapgate run --help");
  }
}

TEST_F(BadInputs, BI13_JeprofFormatWithoutBinary) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", "--format", "jeprof", dir_ + "/x.heap", dir_ + "/x.heap"}), 2,
                 "heapgate: --format jeprof: jeprof needs the profiled program; fix: add --binary PATH");
}

TEST_F(BadInputs, BI14_BadMode) {
  expect_refused(heapgate_cli({"run", "--mode", "precise", "--", "/bin/true"}), 2,
                 "heapgate run: --mode: unknown mode \"precise\"; expected one of off, counters, exact, sampled; f"
                 "ix: see heapgate run --help");
}

TEST_F(BadInputs, BI15_BadJobs) {
  expect_refused(heapgate_cli({"run", "-j", "0", "--", HEAPGATE_SAMPLE_SUITE}), 2,
                 "heapgate: --jobs: 0 is not a number of processes; fix: use --jobs 1 or more");
}

TEST_F(BadInputs, BI16_BadTimeout) {
  expect_refused(heapgate_cli({"run", "--report", dir_ + "/r", "--timeout", "0", "--", HEAPGATE_SAMPLE_SUITE}), 2,
                 "heapgate: --timeout: 0 is not a number of seconds; fix: use --timeout 1 or more (the default is "
                 "3600)");
}

TEST_F(BadInputs, BI17_BadFingerprintCheck) {
  expect_refused(heapgate_cli({"run", "--fingerprint", "maybe", "--", HEAPGATE_SAMPLE_SUITE}), 2,
                 "heapgate run: --fingerprint: unknown fingerprint check \"maybe\"; expected one of warn, strict, "
                 "ignore; fix: see heapgate run --help");
}

TEST_F(BadInputs, BI18_BadProgress) {
  expect_refused(heapgate_cli({"run", "--progress", "loud", "--", HEAPGATE_SAMPLE_SUITE}), 2,
                 "heapgate run: --progress: loud not in {auto,tty,plain,none}; fix: see heapgate run --help");
}

TEST_F(BadInputs, BI19_RunWithoutTestBinary) {
  expect_refused(heapgate_cli({"run"}), 2,
                 "heapgate run: no test binary; fix: heapgate run [OPTIONS] -- TEST_BINARY [TEST_ARGS...], or --c"
                 "test-dir DIR");
}

TEST_F(BadInputs, BI20_RunMissingTestBinary) {
  expect_refused(heapgate_cli({"run", "--report", dir_ + "/r", "--", dir_ + "/no_such_tests"}), 2,
                 "heapgate: " + dir_ + "/no_such_tests: no such test binary; fix: build it first, or fix the path");
}

TEST_F(BadInputs, BI21_RunMissingSuppressions) {
  expect_refused(heapgate_cli({"run", "--report", dir_ + "/r", "--baselines", dir_ + "/b", "--suppressions",
                               dir_ + "/nope.txt", "--", HEAPGATE_SAMPLE_SUITE}),
                 2,
                 std::string("heapgate: ") + HEAPGATE_SAMPLE_SUITE +
                     " exited 2 (bad input or output): heapgate: " + dir_ +
                     "/nope.txt: cannot read the suppressions file: cannot open for reading: No such file or "
                     "directory; fix: create the file (one leak:<pattern> per line) or correct the "
                     "--heapgate_suppressions path");
}

TEST_F(BadInputs, BI22_ReportBadAction) {
  write(dir_ + "/r.json", report_json());
  expect_refused(heapgate_cli({"report", "pdf", dir_ + "/r.json"}), 2,
                 "heapgate report: action: pdf not in {merge,junit,markdown,html}; fix: see heapgate report --help "
                 "(heapgate report REPORT.json --pprof DIR writes only pprof files)");
}

TEST_F(BadInputs, BI23_ReportTwoFilesWithoutMerge) {
  write(dir_ + "/a.json", report_json());
  write(dir_ + "/b.json", report_json());
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/a.json", dir_ + "/b.json"}), 2,
                 "heapgate report junit: expected one report, got 2; fix: merge shard reports first: heapgate report "
                 "merge -o all.json A.json B.json");
}

TEST_F(BadInputs, BI24_ReportMissingFile) {
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/nope.json"}), 2,
                 "heapgate: " + dir_ +
                     "/nope.json: no such report (nor a journal of a crashed run beside it); fix: check the path; "
                     "reports are written by --heapgate_report=<dir>");
}

TEST_F(BadInputs, BI25_ReportEmptyDirectory) {
  fs::create_directories(dir_ + "/empty");
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/empty"}), 2,
                 "heapgate: " + dir_ +
                     "/empty: no heapgate report (*.json or *.partial.jsonl) in the directory; fix: pass the "
                     "directory the tests wrote with --heapgate_report");
}

TEST_F(BadInputs, BI26_FetchBadUrl) {
  expect_refused(heapgate_cli({"fetch", "--url", "ftp://example", "-o", dir_ + "/p.heap"}), 2,
                 "heapgate: --url ftp://example: scheme \"ftp\" is not http or https; fix: write http://HOST:PORT or "
                 "HOST:PORT, e.g. 127.0.0.1:5050");
  EXPECT_FALSE(fs::exists(dir_ + "/p.heap"));
}

TEST_F(BadInputs, BI27_FetchNothingListening) {
  // A port that was free a moment ago: nothing listens there.
  int port = 0;
  {
    testing::TestServer t;
    ASSERT_TRUE(t.server);
    port = t.server->port();
  }
  expect_refused(heapgate_cli({"fetch", "--url", "127.0.0.1:" + std::to_string(port), "-o", dir_ + "/p.heap"}), 2,
                 "heapgate: http://127.0.0.1:" + std::to_string(port) +
                     "/memory-profiler/start: cannot connect (connection refused, unknown host or no route); fix: "
                     "check --url and that the service runs with its memory profiler enabled (heapgate: "
                     "HEAPGATE_MEMORY_PROFILING=true, address in HEAPGATE_HTTP=HOST:PORT; Mesos: --memory_profiling)");
  EXPECT_FALSE(fs::exists(dir_ + "/p.heap"));
}

TEST_F(BadInputs, BI28_FetchBadDuration) {
  expect_refused(heapgate_cli({"fetch", "--url", "127.0.0.1:1", "--duration", "forever", "-o", dir_ + "/p.heap"}), 2,
                 "heapgate: --duration forever: Could not parse parameter 'duration': Failed to convert '' to "
                 "number; fix: give --duration in Mesos syntax within the server's bounds, e.g. 30secs or 5mins");
}

TEST_F(BadInputs, BI29_BenchMissingResults) {
  expect_refused(
      heapgate_cli({"bench", "compare", dir_ + "/nope.json", "--baselines", dir_ + "/b"}), 2,
      "heapgate bench: results: File does not exist: " + dir_ + "/nope.json; fix: see heapgate bench --help");
}

// ---- JSON documents: reports, baselines, journals, benchmark results.

TEST_F(BadInputs, BI30_ReportNotJson) {
  write(dir_ + "/r.json", "garbage\n");
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/r.json"}), 2,
                 "heapgate: " + dir_ +
                     "/r.json:1:1: not valid JSON: syntax error while parsing value - invalid literal; last read: 'g';"
                     " fix: re-run the tests to write the report again");
}

TEST_F(BadInputs, BI31_ReportTruncated) {
  const std::string whole = report_json();
  write(dir_ + "/r.json", whole.substr(0, whole.size() / 2));
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/r.json"}), 2,
                 "heapgate: " + dir_ +
                     "/r.json:22:22: not valid JSON: syntax error while parsing value - invalid literal; last read: '"
                     "\"estimated\": fa'; fix: re-run the tests to write the report again");
}

TEST_F(BadInputs, BI32_ReportEmptyFile) {
  write(dir_ + "/r.json", "");
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/r.json"}), 2,
                 "heapgate: " + dir_ +
                     "/r.json:1:1: not valid JSON: the file is empty; syntax error while parsing value - unexpected en"
                     "d of input; expected '[', '{', or a literal; fix: re-run the tests to write the report again");
}

TEST_F(BadInputs, BI33_ReportWrongType) {
  write(dir_ + "/r.json", report_json_with("/tests", "none"));
  expect_refused(
      heapgate_cli({"report", "junit", dir_ + "/r.json"}), 2,
      "heapgate: " + dir_ + "/r.json: /tests: expected an array, got \"none\"; fix: write a JSON array, e.g. []");
}

TEST_F(BadInputs, BI34_ReportWrongFieldValue) {
  write(dir_ + "/r.json", report_json_with("/run/mode", "precise"));
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/r.json"}), 2,
                 "heapgate: " + dir_ +
                     "/r.json: /run/mode: expected a mode (off, counters, exact, sampled), got \"precise\"; fix: write"
                     " one of off, counters, exact, sampled");
}

TEST_F(BadInputs, BI35_ReportWrongSchema) {
  write(dir_ + "/r.json", report_json_with("/schema", "heapgate.report/9"));
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/r.json"}), 2,
                 "heapgate: " + dir_ +
                     "/r.json: /schema: schema \"heapgate.report/9\" is newer than this heapgate reads "
                     "(\"heapgate.report/2\"); fix: upgrade heapgate, or re-record the file with this version");
}

TEST_F(BadInputs, BI36_BenchmarkOutputForAReport) {
  write(dir_ + "/bench.json", benchmark_json("b"));
  expect_refused(heapgate_cli({"report", "html", dir_ + "/bench.json"}), 2,
                 "heapgate: " + dir_ +
                     "/bench.json: is Google Benchmark's output (--benchmark_out), not a heapgate report; fix: gate it"
                     " with `heapgate bench compare " +
                     dir_ + "/bench.json --report DIR`, then render DIR/<binary>.json");
}

TEST_F(BadInputs, BI37_BaselineNotJson) {
  write(dir_ + "/reports/t.json", report_json());
  write(dir_ + "/b/t.json", "{\"binary\": \"t\",");
  expect_refused(heapgate_cli({"compare", "--report", dir_ + "/reports", "--baselines", dir_ + "/b"}), 2,
                 "heapgate: " + dir_ +
                     "/b/t.json:1:16: not valid JSON: syntax error while parsing object key - unexpected end of input;"
                     " expected string literal; fix: restore the file from version control, or re-record the baseline "
                     "(heapgate accept, or --heapgate_update_baselines)");
}

TEST_F(BadInputs, BI38_BaselineWrongSchema) {
  write(dir_ + "/reports/t.json", report_json());
  write(dir_ + "/b/t.json", R"({"binary": "t", "schema": "heapgate.baseline/7", "tests": {}})");
  expect_refused(heapgate_cli({"compare", "--report", dir_ + "/reports", "--baselines", dir_ + "/b"}), 2,
                 "heapgate: " + dir_ +
                     "/b/t.json: /schema: schema \"heapgate.baseline/7\" is newer than this heapgate reads "
                     "(\"heapgate.baseline/1\"); fix: upgrade heapgate, or re-record the file with this version");
}

TEST_F(BadInputs, BI39_BaselineWrongType) {
  write(dir_ + "/reports/t.json", report_json());
  write(dir_ + "/b/t.json", R"({"binary": "t", "schema": "heapgate.baseline/1", "tests": []})");
  expect_refused(heapgate_cli({"compare", "--report", dir_ + "/reports", "--baselines", dir_ + "/b"}), 2,
                 "heapgate: " + dir_ +
                     "/b/t.json: /tests: expected an object, got an array; fix: see the schema in heapgate's "
                     "documentation");
}

TEST_F(BadInputs, BI40_BaselineUnknownKey) {
  write(dir_ + "/reports/t.json", report_json());
  write(dir_ + "/b/t.json",
        R"({"binary": "t", "schema": "heapgate.baseline/1", "tests": {}, "tolerance": {"allocations": "5%"}})");
  expect_refused(heapgate_cli({"compare", "--report", dir_ + "/reports", "--baselines", dir_ + "/b"}), 2,
                 "heapgate: " + dir_ +
                     "/b/t.json: /tolerance: unknown key \"tolerance\"; expected one of binary, fingerprint, schema, "
                     "tests; fix: remove it or correct its spelling (a newer heapgate may have written it: upgrade)");
}

TEST_F(BadInputs, BI41_JournalTruncatedLastLine) {
  const std::string journal = journal_with_binary("t");
  write(dir_ + "/t.partial.jsonl", journal.substr(0, journal.size() - 10));
  // A crash cuts the last line: that record is dropped, the rest is read, exit 0.
  const auto r = heapgate_cli({"report", "markdown", dir_ + "/t.json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stderr_text, "");
  EXPECT_EQ(r.stdout_text.find("Cache.Hit"), std::string::npos) << r.stdout_text;
}

TEST_F(BadInputs, BI42_JournalHeaderCut) {
  const std::string journal = journal_with_binary("t");
  write(dir_ + "/t.partial.jsonl", journal.substr(0, journal.find('\n') / 2));
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/t.json"}), 2,
                 "heapgate: " + dir_ +
                     "/t.partial.jsonl: the journal has no complete header line; fix: the run "
                     "ended before its first test finished; re-run the tests");
}

TEST_F(BadInputs, BI43_JournalBinaryEscape) {
  write(dir_ + "/t.partial.jsonl", journal_with_binary("../escape/evil"));
  expect_refused(heapgate_cli({"report", "junit", dir_ + "/t.json"}), 2,
                 "heapgate: " + dir_ +
                     "/t.partial.jsonl:1: /run/binary: expected the test binary's file name, got \"../escape/evil\", w"
                     "hich contains '/'; fix: a report names its binary by file name only (\"my_tests\"); re-run the t"
                     "ests to write the report again");
}

TEST_F(BadInputs, BI44_BenchResultsNotJson) {
  write(dir_ + "/bench.json", "{\"context\": ");
  expect_refused(heapgate_cli({"bench", "compare", dir_ + "/bench.json", "--baselines", dir_ + "/b"}), 2,
                 "heapgate: " + dir_ +
                     "/bench.json:1:13: not valid JSON: syntax error while parsing value - unexpected end of input; ex"
                     "pected '[', '{', or a literal; fix: pass the file written by --benchmark_out (JSON, the default "
                     "--benchmark_out_format)");
}

TEST_F(BadInputs, BI45_BenchResultsWrongType) {
  write(dir_ + "/bench.json", R"({"context": {"executable": "b"}, "benchmarks": {}})");
  expect_refused(heapgate_cli({"bench", "compare", dir_ + "/bench.json", "--baselines", dir_ + "/b"}), 2,
                 "heapgate: " + dir_ +
                     "/bench.json: /benchmarks: expected an array, got an object; fix: pass the file written by --benc"
                     "hmark_out (JSON, the default --benchmark_out_format)");
}

TEST_F(BadInputs, BI46_BenchExecutableWithoutName) {
  write(dir_ + "/bench.json", benchmark_json("dir/"));
  expect_refused(heapgate_cli({"bench", "compare", dir_ + "/bench.json", "--baselines", dir_ + "/b"}), 2,
                 "heapgate: " + dir_ +
                     "/bench.json: /context/executable: the benchmark binary's name \"\" is empty; fix: pass the "
                     "--benchmark_out file the benchmark binary wrote itself");
  EXPECT_FALSE(fs::exists(dir_ + "/b"));
}

// ---- Binary names that escape the baselines directory.

TEST_F(BadInputs, BI47_AcceptBinaryEscape) {
  write(dir_ + "/reports/t.json", report_json("../escape/evil"));
  expect_refused(heapgate_cli({"accept", "--report", dir_ + "/reports", "--baselines", dir_ + "/b/inner"}), 2,
                 "heapgate: " + dir_ +
                     "/reports/t.json: /run/binary: expected the test binary's file name, got \"../escape/evil\", "
                     "which contains '/'; fix: a report names its binary by file name only (\"my_tests\"); re-run "
                     "the tests to write the report again");
  EXPECT_EQ(entries_of(dir_), (std::vector<std::string>{"reports", "reports/t.json"}));
}

TEST_F(BadInputs, BI48_CompareBinaryEscape) {
  write(dir_ + "/reports/t.json", report_json(".."));
  write(dir_ + "/b/t.json", baseline_json());
  expect_refused(heapgate_cli({"compare", "--report", dir_ + "/reports", "--baselines", dir_ + "/b"}), 2,
                 "heapgate: " + dir_ +
                     "/reports/t.json: /run/binary: expected the test binary's file name, got \"..\", which is \"..\","
                     " a directory; fix: a report names its binary by file name only (\"my_tests\"); re-run the tests "
                     "to write the report again");
}

TEST_F(BadInputs, BI49_ReportBinaryNotAFileName) {
  for (const std::string& binary : {std::string("a/b"), std::string("."), std::string(""), std::string(201, 'x')}) {
    SCOPED_TRACE(binary);
    write(dir_ + "/r.json", report_json(binary));
    expect_refused(heapgate_cli({"report", "junit", dir_ + "/r.json"}), 2,
                   "heapgate: " + dir_ + "/r.json: /run/binary: expected the test binary's file name...");
  }
}

// ---- Heap profiles.

TEST_F(BadInputs, BI50_ProfileGarbage) {
  write(dir_ + "/bad.heap", "garbage\n");
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", dir_ + "/bad.heap", dir_ + "/x.heap"}), 2,
                 "heapgate: " + dir_ +
                     "/bad.heap:1: missing header: \"garbage\"; expected \"heap_v2/<period>\"; fix: pass a jemalloc (>"
                     "= 4) heap profile written by prof.dump");
}

TEST_F(BadInputs, BI51_ProfileEmpty) {
  write(dir_ + "/empty.heap", "");
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", dir_ + "/x.heap", dir_ + "/empty.heap"}), 2,
                 "heapgate: " + dir_ +
                     "/empty.heap:1: empty input: missing header; expected \"heap_v2/<period>\"; fix: pass a jemalloc "
                     "(>= 4) heap profile written by prof.dump; an empty file is a dump that never started");
}

TEST_F(BadInputs, BI52_ProfileTruncated) {
  auto text = sys::read_file(testing::data_path("profiles/period1.heap"));
  ASSERT_TRUE(text);
  write(dir_ + "/cut.heap", text->substr(0, text->size() / 3));
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", dir_ + "/x.heap", dir_ + "/cut.heap"}), 2,
                 "heapgate: " + dir_ +
                     "/cut.heap:10: truncated file: the last line \"555500001000-55\" has no newline; fix: the dump wa"
                     "s cut short (process killed while dumping?); take it again");
}

TEST_F(BadInputs, BI53_ProfileHuge) {
  const std::string huge = dir_ + "/huge.heap";
  write(huge, "heap_v2/1\n");
  fs::resize_file(huge, sys::kProfileSizeLimit.bytes + 1);  // sparse: no disk used
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", huge, dir_ + "/x.heap"}), 2,
                 "heapgate: " + huge +
                     ": is 1.0 GiB (1073741825 bytes), over heapgate's limit of 1.0 GiB (1073741824 bytes) for a "
                     "heap profile; fix: check that this is the file you meant");
}

TEST_F(BadInputs, BI54_ProfileIsADevice) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", "/dev/zero", dir_ + "/x.heap"}), 2,
                 "heapgate: /dev/zero: is a character device, not a regular file; fix: pass a regular file (save a "
                 "stream or a device's output to a file first)");
}

TEST_F(BadInputs, BI55_ProfileIsAFifo) {
  write(dir_ + "/x.heap", kTinyProfile);
  const std::string fifo = dir_ + "/fifo.heap";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(heapgate_cli({"diff", dir_ + "/x.heap", fifo}), 2,
                 "heapgate: " + dir_ +
                     "/fifo.heap: is a FIFO (named pipe), not a regular file; fix: pass a regular file (save a stream "
                     "or a device's output to a file first)");
}

TEST_F(BadInputs, BI56_ProfileMapsNameAFifo) {
  const std::string fifo = dir_ + "/app";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto text = sys::read_file(testing::data_path("profiles/period1.heap"));
  ASSERT_TRUE(text);
  std::string profile = *text;
  for (std::size_t at; (at = profile.find("/usr/bin/app")) != std::string::npos;) profile.replace(at, 12, fifo);
  write(dir_ + "/p.heap", profile);
  const auto r = heapgate_cli({"diff", dir_ + "/p.heap", dir_ + "/p.heap"});
  EXPECT_FALSE(r.timed_out) << "heapgate diff blocked on the FIFO";
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("0 stacks changed"), std::string::npos) << r.stdout_text;
}

// ---- Resources and files left behind.

TEST_F(BadInputs, BI57_OutOfMemory) {
  // Under the document limit (256 MiB), over what the address-space limit lets it allocate.
  const std::string report = dir_ + "/big.json";
  write(report, "{");
  fs::resize_file(report, 250u << 20);
  expect_refused(run({"sh", "-c", "ulimit -v 200000 && exec \"$0\" report junit \"$1\"", HEAPGATE_CLI_PATH, report}), 2,
                 "heapgate report: out of memory; fix: check the size of the input files, or free memory");
}

TEST_F(BadInputs, BI58_StaleTemporaryFile) {
  write(dir_ + "/reports/t.json", report_json());
  const std::string stale = dir_ + "/b/t.json.tmp.q8ZkT2";
  write(stale, "half a baseline");
  const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(5);
  fs::last_write_time(stale, old);
  const std::string young = dir_ + "/b/t.json.tmp.Ab12Cd";
  write(young, "a write in progress");
  const auto r = heapgate_cli({"accept", "--report", dir_ + "/reports", "--baselines", dir_ + "/b"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("heapgate: removed 1 stale temporary file of an interrupted write of " + dir_ +
                               "/b/t.json: " + stale),
            std::string::npos)
      << r.stderr_text;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(young));
  EXPECT_TRUE(fs::exists(dir_ + "/b/t.json"));
}

TEST_F(BadInputs, BI59_RerunTemporaryDirectories) {
  const std::string tmp = dir_ + "/tmp";
  fs::create_directories(tmp);
  const auto r = sample_suite({"--gtest_filter=Sample.Leaks:Sample.OverBudget", "--heapgate_mode=counters",
                               "--heapgate_report=" + dir_ + "/report"},
                              {"TMPDIR=" + tmp});
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  EXPECT_EQ(entries_of(tmp), std::vector<std::string>{});
  EXPECT_NE(r.stderr_text.find("heapgate: kept "), std::string::npos) << r.stderr_text;
}

TEST_F(BadInputs, BI60_ProfilesDirectoryUncreatable) {
  write(dir_ + "/file", "a file where the directory should go");
  const auto r = sample_suite({"--gtest_filter=Sample.Leaks", "--heapgate_mode=counters",
                               "--heapgate_report=" + dir_ + "/report", "--heapgate_profiles=" + dir_ + "/file/p"});
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("heapgate: " + dir_ +
                               "/file/p: cannot create the directory for heap profiles; none is kept; fix: pass a "
                               "writable --heapgate_profiles=DIR"),
            std::string::npos)
      << r.stderr_text;
}

// ---- The GoogleTest plugin's flags and their environment twins.

TEST_F(BadInputs, BI61_PluginUnknownFlag) {
  expect_refused_before_any_test(
      sample_suite({"--heapgate_mdoe=counters"}),
      "heapgate: --heapgate_mdoe=counters: unknown heapgate flag; fix: use one of --heapgate_mode, --he"
      "apgate_baselines, --heapgate_report, --heapgate_profiles, --heapgate_update_baselines, --heapgat"
      "e_strict, --heapgate_suppressions, --heapgate_libc_suppressions, --heapgate_check_leaks, "
      "--heapgate_fingerprint, --heapgate_ex"
      "plain, --heapgate_gate_call_sites, --heapgate_top_stacks, --heapgate_leak_repetitions, --heapgate_con"
      "firm_runs, --heapgate_test_timeout, --heapgate_measure_alone, --heapgate_measure_alone_skip, --heapg"
      "ate_learn_spread");
}

TEST_F(BadInputs, BI62_PluginBadMode) {
  expect_refused_before_any_test(sample_suite({"--heapgate_mode=precise"}),
                                 "heapgate: --heapgate_mode: bad value \"precise\"; fix: expected one of off, "
                                 "counters, exact, sampled");
}

TEST_F(BadInputs, BI63_PluginBadBoolean) {
  expect_refused_before_any_test(sample_suite({"--heapgate_strict=maybe"}),
                                 "heapgate: --heapgate_strict: bad value \"maybe\"; fix: expected true or false");
}

TEST_F(BadInputs, BI64_PluginBadCount) {
  expect_refused_before_any_test(sample_suite({"--heapgate_top_stacks=ten"}),
                                 "heapgate: --heapgate_top_stacks: bad value \"ten\"; fix: expected a count from 0 "
                                 "to 999999999");
}

TEST_F(BadInputs, BI65_PluginCountOutOfRange) {
  expect_refused_before_any_test(sample_suite({"--heapgate_leak_repetitions=0"}),
                                 "heapgate: --heapgate_leak_repetitions: bad value \"0\"; fix: expected a number of "
                                 "runs from 1 to 20");
}

TEST_F(BadInputs, BI66_PluginMissingValue) {
  expect_refused_before_any_test(sample_suite({"--heapgate_mode"}),
                                 "heapgate: --heapgate_mode: missing value; fix: write --heapgate_mode=VALUE");
}

TEST_F(BadInputs, BI67_PluginBadFingerprintCheck) {
  expect_refused_before_any_test(sample_suite({"--heapgate_fingerprint=maybe"}),
                                 "heapgate: --heapgate_fingerprint: bad value \"maybe\"; fix: expected one of warn, "
                                 "strict, ignore");
}

TEST_F(BadInputs, BI68_PluginMissingSuppressions) {
  expect_refused_before_any_test(
      sample_suite({"--heapgate_suppressions=" + dir_ + "/nope.txt"}),
      "heapgate: " + dir_ +
          "/nope.txt: cannot read the suppressions file: cannot open for reading: No such file or directory"
          "; fix: create the file (one leak:<pattern> per line) or correct the --heapgate_suppressions path");
}

TEST_F(BadInputs, BI69_PluginSuppressionsIsADevice) {
  expect_refused_before_any_test(sample_suite({"--heapgate_suppressions=/dev/zero"}),
                                 "heapgate: /dev/zero: cannot read the suppressions file: is a character device, not "
                                 "a regular file; fix: create the file (one leak:<pattern> per line) or correct the "
                                 "--heapgate_suppressions path");
}

TEST_F(BadInputs, BI70_PluginSuppressionsBadLine) {
  write(dir_ + "/s.txt", "# ours\nleak:make_cache\nmake_other_cache\n");
  expect_refused_before_any_test(
      sample_suite({"--heapgate_suppressions=" + dir_ + "/s.txt"}),
      "heapgate: " + dir_ +
          "/s.txt:3: expected \"leak:<pattern>\", got \"make_other_cache\"; fix: write one leak:<function o"
          "r file pattern> per line, or start the line with # to make it a comment");
}

TEST_F(BadInputs, BI71_PluginBaselineNotJson) {
  write(dir_ + "/b/sample_suite.json", "{\"binary\": ");
  expect_refused_before_any_test(
      sample_suite({"--heapgate_mode=counters", "--heapgate_baselines=" + dir_ + "/b"}),
      "heapgate: " + dir_ +
          "/b/sample_suite.json:1:12: not valid JSON: syntax error while parsing value - unexpected end of "
          "input; expected '[', '{', or a literal; fix: restore the file from version control, or re-record"
          " the baseline (heapgate accept, or --heapgate_update_baselines)");
}

TEST_F(BadInputs, BI72_EnvBadMode) {
  expect_refused_before_any_test(sample_suite({}, {"HEAPGATE_MODE=precise"}),
                                 "heapgate: HEAPGATE_MODE: bad value \"precise\"; fix: expected one of off, counters, "
                                 "exact, sampled");
}

TEST_F(BadInputs, BI73_EnvCountOutOfRange) {
  expect_refused_before_any_test(sample_suite({}, {"HEAPGATE_CONFIRM_RUNS=9"}),
                                 "heapgate: HEAPGATE_CONFIRM_RUNS: bad value \"9\"; fix: expected a number of runs "
                                 "from 0 to 5");
}

TEST_F(BadInputs, BI74_EnvBadBoolean) {
  expect_refused_before_any_test(sample_suite({}, {"HEAPGATE_STRICT=sometimes"}),
                                 "heapgate: HEAPGATE_STRICT: bad value \"sometimes\"; fix: expected true or false");
}

// ---- HTTP (docs/mesos-protocol.md §7), a real server on loopback.

TEST_F(BadInputs, BI75_HttpIncompleteRequest) {
  HttpOptions options;
  options.request_timeout = milliseconds(1000);
  testing::TestServer t(options);
  ASSERT_TRUE(t.server);
  auto answer = raw_exchange(t.server->port(), "GET /memory-profiler/state HTTP/1.1\r\nX-Drip: 1\r\n");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 408);
  EXPECT_EQ(answer->body,
            "Request timeout: the request did not arrive whole within 1 s of its first byte; send it at once.\n");
}

TEST_F(BadInputs, BI76_HttpBodyTooLarge) {
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  auto answer = raw_exchange(t.server->port(),
                             "POST /memory-profiler/state HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 413);
  EXPECT_EQ(answer->body,
            "Request body too large: Content-Length is 1073741824 bytes, the limit is 65536 (these endpoints take "
            "their parameters in the query).\n");
}

TEST_F(BadInputs, BI77_HttpRequestLineTooLong) {
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.get("/memory-profiler/state?pad=" + std::string(HttpServer::kMaxRequestLineBytes, 'a'));
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 414);
  EXPECT_EQ(res->body, "URI too long: the request line exceeds 8192 bytes; shorten the path and query.\n");
}

TEST_F(BadInputs, BI78_HttpHeadTooLarge) {
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  httplib::Headers many;
  for (int i = 0; i < 40; ++i) many.emplace("X-Pad-" + std::to_string(i), std::string(500, 'p'));
  auto res = t.get("/memory-profiler/state", many);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 431);
  EXPECT_EQ(res->body,
            "Request header fields too large: the request line and headers exceed 16384 bytes, or one header line "
            "8192; send fewer or shorter headers.\n");
}

TEST_F(BadInputs, BI79_HttpUnknownPath) {
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.get("/memory-profiler/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->body,
            "Not found: '/memory-profiler/nope' is not an endpoint; use /memory-profiler/{start,stop,state,statistics,"
            "download/raw,download/text,download/graph} or /heapgate/{heap_profile,download/folded,download/"
            "flamegraph,download/pprof,diff}.\n");
}

TEST_F(BadInputs, BI80_HttpMethodNotAllowed) {
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.client->Put("/memory-profiler/state", "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET, HEAD, POST");
  EXPECT_EQ(res->body, "Method PUT is not allowed on /memory-profiler/state: use GET, HEAD, POST.\n");
}

TEST_F(BadInputs, BI81_HttpBadRequestLine) {
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  // libmicrohttpd's parser refuses it, with its own one-line answer.
  auto answer = raw_exchange(t.server->port(), "GET /memory-profiler/state\r\n\r\n");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 400);
  EXPECT_NE(answer->body.find("Your HTTP request was syntactically incorrect."), std::string::npos) << answer->body;
  auto newer = raw_exchange(t.server->port(), "GET /memory-profiler/state HTTP/2.0\r\n\r\n");
  ASSERT_TRUE(newer);
  EXPECT_EQ(newer->status, 505);
}

TEST_F(BadInputs, BI82_HttpHeadNeverStarts) {
  HEAPGATE_REQUIRE_PROFILING();
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.client->Head("/memory-profiler/start?duration=1mins");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET, POST");
  auto state = t.get("/memory-profiler/state");
  ASSERT_TRUE(state);
  EXPECT_TRUE(json::parse(state->body)["memory_profiler"]["current_run"]["id"].is_null()) << state->body;
}

TEST_F(BadInputs, BI83_HttpHeapProfileBadBoolean) {
  HEAPGATE_REQUIRE_PROFILING();
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.get("/heapgate/heap_profile?active=maybe");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(res->body, "Invalid parameter 'active': expected true or false, got 'maybe'\n");
  // Nothing was switched.
  res = t.get("/heapgate/heap_profile");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("prof.active: false\n"), std::string::npos) << res->body;
}

TEST_F(BadInputs, BI84_HttpStartBadDuration) {
  HEAPGATE_REQUIRE_PROFILING();
  testing::TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.get("/memory-profiler/start?duration=forever");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(res->body, "Could not parse parameter 'duration': Failed to convert '' to number.\n");
}

TEST_F(BadInputs, BI85_HttpTooManyConnections) {
  HttpOptions options;
  options.max_connections = 2;
  testing::TestServer t(options);
  ASSERT_TRUE(t.server);
  // Two connections that started a request hold their places (counted as
  // they are accepted, in order): the third is over the cap.
  std::vector<int> held;
  for (int i = 0; i < 2; ++i)
    held.push_back(connect_and_send(t.server->port(), "GET /memory-profiler/state HTTP/1.1\r\n"));
  auto answer = raw_exchange(t.server->port(), "");
  for (int fd : held) {
    EXPECT_GE(fd, 0);
    if (fd >= 0) ::close(fd);
  }
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 503);
  EXPECT_EQ(answer->body, "Too many connections: 2 are open; retry shortly.\n");
}

// ---- Files heapgate writes, and directories it is pointed at.

TEST_F(BadInputs, BI86_OutputIsNotARegularFile) {
  // rename() over a FIFO or a device replaces the node itself (as root,
  // `-o /dev/full` turned /dev/full into a regular file): refused instead.
  write(dir_ + "/x.heap", kTinyProfile);
  const std::string fifo = dir_ + "/out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(heapgate_cli({"diff", "-o", fifo, dir_ + "/x.heap", dir_ + "/x.heap"}), 2,
                 "heapgate: " + fifo +
                     ": is a FIFO (named pipe), not a regular file; heapgate writes files by replacing them; fix: "
                     "name a regular file to write, or leave out the output option to write to stdout");
  struct stat after {};
  ASSERT_EQ(::stat(fifo.c_str(), &after), 0);
  EXPECT_TRUE(S_ISFIFO(after.st_mode));
  EXPECT_EQ(entries_of(dir_), (std::vector<std::string>{"out.fifo", "x.heap"}));
}

TEST_F(BadInputs, BI87_CtestDirMissing) {
  expect_refused(heapgate_cli({"run", "--report", dir_ + "/r", "--ctest-dir", dir_ + "/nope"}), 2,
                 "heapgate: " + dir_ +
                     "/nope: no such directory (--ctest-dir); fix: pass a configured CMake build directory with "
                     "tests");
}

TEST_F(BadInputs, BI88_CountTooLarge) {
  write(dir_ + "/x.heap", kTinyProfile);
  expect_refused(heapgate_cli({"diff", "--max-stacks", "99999999999999999999", dir_ + "/x.heap", dir_ + "/x.heap"}), 2,
                 "heapgate diff: --max-stacks: a number of stacks from 0 to 999999999, got 99999999999999999999; fix: "
                 "see heapgate diff --help");
}

TEST_F(BadInputs, BI89_ReportDirectoryUncreatable) {
  write(dir_ + "/file", "a file where the report directory should go");
  const auto r = sample_suite({"--gtest_filter=Sample.Clean:Sample.Counted", "--heapgate_mode=counters",
                               "--heapgate_report=" + dir_ + "/file/r"});
  EXPECT_EQ(r.exit_code, 2) << r.stdout_text << r.stderr_text;
  const std::string said = "heapgate: no report: " + dir_ +
                           "/file/r: cannot create the report directory: Not a directory; fix: make the directory "
                           "writable, or choose another report directory (--heapgate_report=<dir>)";
  // On each stream once (GoogleTest's failure on stdout, stderr for heapgate
  // run), not once per test.
  for (const std::string* stream : {&r.stdout_text, &r.stderr_text}) {
    const std::size_t at = stream->find(said);
    ASSERT_NE(at, std::string::npos) << *stream;
    EXPECT_EQ(stream->find("cannot create the report directory", at + said.size()), std::string::npos) << *stream;
  }
}

// ---- heapgate record: programs it cannot measure, and where it writes.

TEST_F(BadInputs, BI90_RecordStaticProgram) {
  expect_refused(heapgate_cli({"record", "-o", dir_ + "/rec", "--", HEAPGATE_RECORD_STATIC}), 2,
                 std::string("heapgate record: ") + HEAPGATE_RECORD_STATIC +
                     ": cannot measure this program because it is statically linked (there is no dynamic loader to "
                     "preload heapgate into); fix: build it dynamically linked, or link heapgate::measure into it and "
                     "use ProfileScope");
}

TEST_F(BadInputs, BI91_RecordSetuidProgram) {
  const std::string copy = dir_ + "/setuid_program";
  std::filesystem::copy_file(HEAPGATE_RECORD_LEAK, copy);
  ASSERT_EQ(::chmod(copy.c_str(), 04755), 0);
  expect_refused(heapgate_cli({"record", "-o", dir_ + "/rec", "--", copy}), 2,
                 "heapgate record: " + copy +
                     ": cannot measure this program because it is setuid or setgid (the loader ignores LD_PRELOAD for "
                     "it); fix: record a copy without the set-id bit");
}

TEST_F(BadInputs, BI92_RecordNotAnElfFile) {
  const std::string script = dir_ + "/script.sh";
  write(script, "#!/bin/sh\nexit 0\n");
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  expect_refused(heapgate_cli({"record", "-o", dir_ + "/rec", "--", script}), 2,
                 "heapgate record: " + script +
                     ": cannot measure this program because it is not an ELF file; fix: pass the program itself, not "
                     "a script or wrapper (for a script: heapgate record -- /bin/sh SCRIPT records the shell too)");
}

TEST_F(BadInputs, BI93_RecordMissingProgram) {
  expect_refused(heapgate_cli({"record", "-o", dir_ + "/rec", "--", dir_ + "/nope"}), 2,
                 "heapgate record: " + dir_ + "/nope: no such program; fix: check the path (build the program first)");
}

TEST_F(BadInputs, BI94_RecordDirectoryNotWritable) {
  write(dir_ + "/file", "a file where the recording's directory should go");
  expect_refused(heapgate_cli({"record", "-o", dir_ + "/file/rec", "--", HEAPGATE_RECORD_LEAK}), 2,
                 "heapgate record: -o " + dir_ +
                     "/file/rec: cannot write there: Not a directory; fix: give a directory you can write to");
}

TEST_F(BadInputs, BI95_RecordAddressSanitizerProgram) {
  expect_refused(heapgate_cli({"record", "-o", dir_ + "/rec", "--", HEAPGATE_RECORD_ASAN}), 2,
                 std::string("heapgate record: ") + HEAPGATE_RECORD_ASAN +
                     ": cannot measure this program because it installs its own malloc (libasan.so.8), which "
                     "heapgate's preloaded jemalloc cannot replace; fix: build it without the sanitizer or allocator "
                     "(heapgate measures jemalloc's allocations)");
}

TEST_F(BadInputs, BI96_RecordProgramWithItsOwnMalloc) {
  expect_refused(heapgate_cli({"record", "-o", dir_ + "/rec", "--", HEAPGATE_RECORD_OWN_MALLOC}), 2,
                 std::string("heapgate record: ") + HEAPGATE_RECORD_OWN_MALLOC +
                     ": cannot measure this program because it installs its own malloc (malloc defined in the "
                     "program), which heapgate's preloaded jemalloc cannot replace; fix: build it without the "
                     "sanitizer or allocator (heapgate measures jemalloc's allocations)");
}

TEST_F(BadInputs, BI97_RecordSnapshotsInCountersMode) {
  expect_refused(heapgate_cli({"record", "--mode", "counters", "--snapshot-every", "1s", "-o", dir_ + "/rec", "--",
                               HEAPGATE_RECORD_LEAK}),
                 2,
                 "heapgate record: --snapshot-every and --snapshot-signal need --mode exact (counters keeps no "
                 "stacks); fix: drop --mode counters");
}

TEST_F(BadInputs, BI98_RecordWithoutProgram) {
  expect_refused(heapgate_cli({"record", "-o", dir_ + "/rec"}), 2,
                 "heapgate record: no program; fix: heapgate record [--mode exact|counters] [-o DIR] -- PROGRAM "
                 "[ARGS...]");
}

TEST_F(BadInputs, BI99_RecordIntoAnotherDirectory) {
  write(dir_ + "/notes.txt", "someone's files");
  expect_refused(heapgate_cli({"record", "-o", dir_, "--", HEAPGATE_RECORD_LEAK}), 2,
                 "heapgate record: -o " + dir_ +
                     ": not empty and not an earlier recording; fix: give a new or empty directory (an earlier "
                     "recording's is replaced)");
  EXPECT_TRUE(sys::exists(dir_ + "/notes.txt"));
}

// A face's header, compiled alone with `defines` as a suite's translation
// unit would have them: the C++ compiler's answer. A refusal is an #error in
// the header, before anything it includes.
sys::ProcessResult compile_face_header(const std::string& include_dir, const std::string& header,
                                       std::vector<std::string> defines) {
  std::vector<std::string> argv = {HEAPGATE_CXX_COMPILER, "-fsyntax-only", "-std=c++17", "-I", include_dir};
  for (std::string& define : defines) argv.push_back("-D" + std::move(define));
  for (const char* rest : {"-x", "c++", "-include"}) argv.emplace_back(rest);
  argv.push_back(header);
  argv.emplace_back("/dev/null");
  return run(std::move(argv));
}

void expect_compile_refused(const sys::ProcessResult& r, const std::string& message) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.stderr_text.find(message), std::string::npos) << r.stderr_text;
}

TEST_F(BadInputs, BI100_Catch2OwnMainNextToTheFace) {
  expect_compile_refused(
      compile_face_header(HEAPGATE_CATCH2_INCLUDE, "heapgate/catch2.h", {"CATCH_CONFIG_MAIN"}),
      "heapgate/catch2.h: CATCH_CONFIG_MAIN gives Catch2's own main(), which runs every test unmeasured; fix: link "
      "heapgate::catch2_main and drop CATCH_CONFIG_MAIN, or define CATCH_CONFIG_RUNNER and return "
      "heapgate::catch2::run(argc, argv) from your main()");
}

TEST_F(BadInputs, BI101_DoctestOwnMainNextToTheFace) {
  expect_compile_refused(
      compile_face_header(HEAPGATE_DOCTEST_INCLUDE, "heapgate/doctest.h", {"DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN"}),
      "heapgate/doctest.h: DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN gives doctest's own main(), which runs every test "
      "unmeasured; fix: link heapgate::doctest_main and drop it, or define DOCTEST_CONFIG_IMPLEMENT and return "
      "heapgate::run_doctest(argc, argv) from your main()");
}

TEST_F(BadInputs, BI102_Catch2VersionTheFaceDoesNotCover) {
  expect_compile_refused(
      compile_face_header(HEAPGATE_CATCH2_INCLUDE, "heapgate/catch2.h", {"CATCH_VERSION_MAJOR=3"}),
      "heapgate::catch2 supports Catch2 v2 (catch2/catch.hpp, 2.13 or later) only; Catch2 v3 is not covered yet; fix: "
      "build the suite against Catch2 2.13 (Debian 12's catch2), or gate it another way until heapgate covers v3");
  expect_compile_refused(compile_face_header(HEAPGATE_CATCH2_INCLUDE, "heapgate/catch2.h",
                                             {"CATCH_VERSION_MAJOR=2", "CATCH_VERSION_MINOR=12"}),
                         "heapgate::catch2 needs Catch2 2.13 or later (the version it is tested with, Debian 12's); "
                         "fix: update Catch2");
}

TEST_F(BadInputs, BI103_DoctestTooOld) {
  expect_compile_refused(compile_face_header(HEAPGATE_DOCTEST_INCLUDE, "heapgate/doctest.h",
                                             {"DOCTEST_VERSION_MAJOR=2", "DOCTEST_VERSION_MINOR=3"}),
                         "heapgate::doctest needs doctest 2.4 or a later 2.x (listeners and test_case_end's stats); "
                         "fix: update doctest");
}

}  // namespace
}  // namespace heapgate
