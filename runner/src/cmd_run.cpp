// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate run`: runs GoogleTest binaries linked with heapgate's plugin
// under the allocator settings of the mode, sharded over N processes, shows
// progress, merges the shard reports, judges and prints the summary.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "binary_inspect.h"
#include <CLI/CLI.hpp>

#include "commands.h"
#include "report_gate.h"
#include "heapgate/allocator.h"
#include "heapgate/baseline.h"
#include "heapgate/baseline_writer.h"
#include "heapgate/report.h"
#include "output.h"
#include "vocabulary_check.h"
#include "progress.h"
#include "heapgate/sys.h"
#include "heapgate/report_files.h"
#include "heapgate/gate.h"
#include "heapgate/symbols_sidecar.h"

namespace heapgate::runner {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string mode = "counters";
  std::string baselines = kDefaultBaselinesDir;
  std::string report = "heapgate-report";
  int jobs = 1;
  bool strict = false;
  bool allow_unmeasured = false;
  std::string suppressions;
  int timeout_seconds = 3600;
  int test_timeout_seconds = 600;  // --heapgate_test_timeout for every binary
  std::string ctest_dir;
  std::string progress = "auto";
  int calibrate = 0;                      // runs to learn noise bands from; 0: gate as usual
  bool ratchet = false;                   // accept improvements, exit 4 when a baseline changed
  std::string fingerprint = "warn";       // --heapgate_fingerprint for every binary
  std::vector<std::string> plugin_flags;  // extra --heapgate_* flags for every binary
  std::vector<std::string> command;       // binary, then its arguments
};

// One test binary to run: where it is, its arguments and environment.
struct Job {
  std::string path;
  std::string name;  // file name: the baseline's and report's stem
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::size_t total_tests = 0;
  bool whole_suite = true;  // no --gtest_filter: missing tests can be told
};

// A shard's journal, read as it grows, for progress.
struct ShardProgress {
  std::string journal;
  std::size_t offset = 0;
  std::size_t done = 0;
  std::size_t failed = 0;
  bool header_seen = false;
};

std::string stem_of(const Job& job, int index, int shards) {
  if (shards <= 1) return job.name;
  return job.name + ".shard-" + std::to_string(index) + "-of-" + std::to_string(shards);
}

// Reads the lines appended since the last call; a record line that fails a
// gate counts as a failure.
void poll(ShardProgress& shard) {
  std::ifstream in(shard.journal, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(shard.offset));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t consumed = 0;
  for (std::size_t end; (end = chunk.find('\n', consumed)) != std::string::npos; consumed = end + 1) {
    if (!shard.header_seen) {
      shard.header_seen = true;
      continue;
    }
    ++shard.done;
    auto record = nlohmann::json::parse(chunk.begin() + static_cast<std::ptrdiff_t>(consumed),
                                        chunk.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
    if (record.is_discarded() || !record.is_object()) continue;
    auto verdict = parse_verdict(record.value("verdict", std::string("pass")));
    if ((verdict && is_failure(*verdict)) || record.value("gtest_failed", false)) ++shard.failed;
  }
  shard.offset += consumed;
}

// One progress line: a rewritten line on a terminal, plain lines in CI logs.
class ProgressDisplay {
 public:
  explicit ProgressDisplay(const std::string& setting)
      : line_(ProgressLine::style_for(setting), std::chrono::seconds(5)) {}
  void show(const std::string& binary, std::size_t done, std::size_t total, std::size_t failed, bool final) {
    // A plain line only when a test finished since the last one.
    if (!line_.live() && !final && done == last_done_) return;
    char line[512];
    std::snprintf(line, sizeof line, "heapgate: %s: %zu/%zu tests, %zu failing", binary.c_str(), done, total, failed);
    if (line_.show(line, final)) last_done_ = done;
    if (final) line_.end();
  }

 private:
  ProgressLine line_;
  std::size_t last_done_ = static_cast<std::size_t>(-1);
};

int bad(const std::string& what, const std::string& problem, const std::string& fix) {
  return bad_input(make_error(ErrorCode::invalid_argument, what, problem, fix));
}

// The env of the mode: jemalloc preloaded when the binary lacks it, and the
// MALLOC_CONF that exact and sampled need from the start (the plugin would
// otherwise re-exec itself to set it).
Result<std::vector<std::string>> environment_for(const std::string& path, const std::string& mode) {
  std::vector<std::string> env;
  if (mode == "off") return env;
  auto linkage = jemalloc_linkage(path);
  if (!linkage) return fail(linkage.error());
  if (*linkage == JemallocLinkage::absent) {
    auto jemalloc = find_system_jemalloc();
    if (!jemalloc) {
      return fail(make_error(ErrorCode::unavailable, path,
                             "is not linked with jemalloc and no libjemalloc.so.2 was found to preload",
                             "apt-get install libjemalloc2, or set HEAPGATE_JEMALLOC=/path/to/libjemalloc.so.2"));
    }
    std::string preload = *jemalloc;
    if (const char* existing = std::getenv("LD_PRELOAD"); existing != nullptr && *existing != '\0') {
      preload += std::string(":") + existing;
    }
    env.push_back("LD_PRELOAD=" + preload);
  }
  if (mode == "exact" || mode == "sampled") {
    std::string conf;
    if (const char* user = std::getenv("MALLOC_CONF"); user != nullptr && *user != '\0') conf = std::string(user) + ",";
    conf += mode == "exact" ? kExactMallocConf : kSampledMallocConf;
    env.push_back("MALLOC_CONF=" + conf);
  }
  return env;
}

// Counts the tests the binary would run with these arguments.
Result<std::size_t> count_tests(const Job& job) {
  std::vector<std::string> argv{job.path, "--gtest_list_tests"};
  for (const auto& arg : job.args) {
    if (arg.rfind("--gtest_filter", 0) == 0 || arg.rfind("--gtest_also_run_disabled_tests", 0) == 0)
      argv.push_back(arg);
  }
  sys::ProcessOptions options;
  options.extra_env = job.env;
  options.timeout = std::chrono::minutes(2);
  auto listed = sys::run_process(argv, options);
  if (!listed) return fail(listed.error());
  if (listed->exit_code != 0) {
    std::string why = listed->stderr_text.substr(0, listed->stderr_text.find('\n'));
    return fail(make_error(ErrorCode::io_error, job.path,
                           "--gtest_list_tests failed" + (why.empty() ? std::string() : ": " + why),
                           "run the binary by hand to see why; is it a GoogleTest binary?"));
  }
  std::size_t count = 0;
  std::size_t start = 0;
  const std::string& text = listed->stdout_text;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start + 2 && text.compare(start, 2, "  ") == 0) ++count;
    start = end + 1;
  }
  return count;
}

// The GoogleTest binaries of a ctest build directory: every executable named
// in a test's command that carries heapgate's plugin, once each.
Result<std::vector<std::string>> ctest_binaries(const std::string& dir) {
  // ctest on a missing directory fails with nothing on stderr: say it here.
  if (std::error_code ec; !fs::is_directory(dir, ec)) {
    return fail(make_error(ErrorCode::io_error, dir, "no such directory (--ctest-dir)",
                           "pass a configured CMake build directory with tests"));
  }
  sys::ProcessOptions options;
  options.timeout = std::chrono::minutes(2);
  auto shown = sys::run_process({"ctest", "--test-dir", dir, "--show-only=json-v1"}, options);
  if (!shown) return fail(shown.error());
  if (shown->exit_code != 0) {
    const std::string& said = shown->stderr_text.empty() ? shown->stdout_text : shown->stderr_text;
    const std::string first_line = said.substr(0, said.find('\n')).substr(0, 200);
    return fail(make_error(ErrorCode::io_error, dir, "ctest --show-only failed: " + first_line,
                           "pass a configured CMake build directory with tests"));
  }
  auto json = nlohmann::json::parse(shown->stdout_text, nullptr, false);
  if (json.is_discarded() || !json.contains("tests") || !json["tests"].is_array()) {
    return fail(make_error(ErrorCode::parse_error, dir, "ctest --show-only=json-v1 gave no test list",
                           "use CMake 3.14 or newer"));
  }
  std::vector<std::string> binaries;
  std::set<std::string> seen;
  for (const auto& test : json["tests"]) {
    if (!test.contains("command") || !test["command"].is_array()) continue;
    for (const auto& item : test["command"]) {
      if (!item.is_string()) continue;
      std::string path = item.get<std::string>();
      std::error_code ec;
      if (!fs::is_regular_file(path, ec) || ::access(path.c_str(), X_OK) != 0) continue;
      if (!has_heapgate_plugin(path)) continue;
      if (seen.insert(fs::weakly_canonical(path, ec).string()).second) binaries.push_back(path);
      break;
    }
  }
  if (binaries.empty()) {
    return fail(make_error(ErrorCode::invalid_argument, dir,
                           "no ctest test runs a binary with heapgate's GoogleTest plugin",
                           "link the test binaries with heapgate::gtest_main (see README)"));
  }
  return binaries;
}

// Set by SIGINT or SIGTERM to `heapgate run` itself: the shards are
// stopped (their guards name the test that was running), what finished is
// reported, and the run exits incomplete.
std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_signal{0};

void request_stop(int signo) {
  g_stop_signal.store(signo);
  g_stop_requested.store(true);
}

// Installs request_stop for SIGINT and SIGTERM while alive.
class StopOnSignals {
 public:
  StopOnSignals() {
    struct sigaction action {};
    action.sa_handler = request_stop;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_int_);
    ::sigaction(SIGTERM, &action, &previous_term_);
  }
  ~StopOnSignals() {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

// The test a shard's log shows started but not ended: GoogleTest prints
// "[ RUN      ] Name" before a test and "[       OK ] Name", "[  FAILED  ]
// Name" or "[  SKIPPED ] Name" after it. Only for a shard whose test binary
// could not say so itself (SIGKILL).
std::string unfinished_test_in_log(const std::string& log_path) {
  auto log = sys::read_file(log_path, sys::kProfileSizeLimit);
  if (!log) return {};
  const std::string run_tag = "[ RUN      ] ";
  const std::size_t at = log->rfind(run_tag);
  if (at == std::string::npos) return {};
  const std::size_t name_end = log->find_first_of(" \n", at + run_tag.size());
  const std::string name = log->substr(at + run_tag.size(), name_end - at - run_tag.size());
  for (const char* end_tag : {"[       OK ] ", "[  FAILED  ] ", "[  SKIPPED ] "}) {
    if (log->find(end_tag + name, at) != std::string::npos) return {};
  }
  return name;
}

// A shard that did not finish: its report becomes incomplete and names the
// test that was running, from the binary's own journal line when it could
// write one, else from its log. A run that timed out calls that test hung.
void name_interrupted_test(Report& report, const sys::ProcessResult& result, const std::string& log_path,
                           const RunOptions& options) {
  report.run.complete = false;
  Interruption how = Interruption::exited;
  std::string detail;
  if (result.timed_out) {
    how = Interruption::hung;
    detail = "still running when heapgate run's --timeout of " + std::to_string(options.timeout_seconds) + " s ran out";
  } else if (result.stopped) {
    how = Interruption::killed;
    detail = "heapgate run was interrupted by " + sys::describe_signal(g_stop_signal.load());
  } else if (result.term_signal == SIGKILL || result.term_signal == SIGTERM || result.term_signal == SIGINT) {
    how = Interruption::killed;
    detail = sys::describe_signal(result.term_signal);
  } else if (result.term_signal != 0) {
    how = Interruption::crashed;
    detail = sys::describe_signal(result.term_signal);
  } else {
    detail = "exit status " + std::to_string(result.exit_code);
  }
  for (TestRecord& record : report.tests) {
    if (record.interrupted == Interruption::none) continue;
    // The binary named it; only heapgate run knows that a timeout or an
    // interruption was what stopped it.
    if (result.timed_out || result.stopped) {
      TestRecord relabelled = interrupted_record(record.name, how, detail);
      relabelled.file = record.file;
      relabelled.line = record.line;
      record = std::move(relabelled);
    }
    return;
  }
  const std::string running = unfinished_test_in_log(log_path);
  if (!running.empty()) report.tests.push_back(interrupted_record(running, how, detail));
}

// Runs one binary's shards; returns its merged report, or an exit code.
Result<Report> run_job(const RunOptions& options, Job& job, ProgressDisplay& display, bool& crashed) {
  const std::string shards_dir = options.report + "/shards";
  const int shards =
      std::max(1, std::min<int>(options.jobs, static_cast<int>(std::max<std::size_t>(job.total_tests, 1))));
  std::vector<ShardProgress> progress(static_cast<std::size_t>(shards));
  std::vector<std::optional<Result<sys::ProcessResult>>> outcomes(static_cast<std::size_t>(shards));
  // Outputs of an earlier run of this binary must not be read as this run's.
  for (int i = 0; i < shards; ++i) {
    std::string stem = shards_dir + "/" + stem_of(job, i, shards);
    for (const char* suffix : {".json", ".junit.xml", ".md", ".partial.jsonl", ".log"}) {
      std::error_code ec;
      fs::remove(stem + suffix, ec);
    }
    progress[static_cast<std::size_t>(i)].journal = stem + ".partial.jsonl";
  }
  // So are the profiles an earlier run kept: the report names this run's.
  const std::string profiles_dir = options.report + "/profiles/" + job.name;
  {
    std::error_code ec;
    fs::remove_all(profiles_dir, ec);
  }

  // Each shard gets its own temporary directory (TMPDIR, and TEST_TMPDIR for
  // suites written for Bazel): suites that keep a fixed directory under it (a
  // database's test directory) would otherwise collide between shards. Its
  // path has the same length in every shard, in every run and for any --jobs,
  // because a path held in a std::string changes the bytes (and, as it grows,
  // the count) of allocations; the fingerprint records the length.
  auto scratch = sys::make_private_dir("heapgate-run.");
  if (!scratch) return fail(scratch.error());
  struct RemoveScratch {
    std::string dir;
    ~RemoveScratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_scratch{*scratch};
  auto shard_temp_dir = [&](int i) {
    char name[32];
    std::snprintf(name, sizeof name, "/shard-%03d", i);
    return *scratch + name;
  };
  for (int i = 0; i < shards; ++i) {
    std::error_code ec;
    fs::create_directory(shard_temp_dir(i), ec);
    if (ec) {
      return fail(make_error(ErrorCode::io_error, shard_temp_dir(i),
                             "cannot create the shard's temporary directory: " + ec.message(),
                             "check that TMPDIR (" + sys::temp_root() + ") is writable and has space"));
    }
  }

  std::vector<std::thread> threads;
  for (int i = 0; i < shards; ++i) {
    threads.emplace_back([&, i] {
      // The shards keep their profiles where the merged report names them.
      std::vector<std::string> argv{job.path, "--heapgate_mode=" + options.mode,
                                    "--heapgate_baselines=" + options.baselines, "--heapgate_report=" + shards_dir,
                                    "--heapgate_profiles=" + profiles_dir};
      if (options.strict) argv.push_back("--heapgate_strict");
      argv.push_back("--heapgate_test_timeout=" + std::to_string(options.test_timeout_seconds));
      if (!options.suppressions.empty()) argv.push_back("--heapgate_suppressions=" + options.suppressions);
      argv.push_back("--heapgate_fingerprint=" + options.fingerprint);
      argv.insert(argv.end(), options.plugin_flags.begin(), options.plugin_flags.end());
      argv.insert(argv.end(), job.args.begin(), job.args.end());
      sys::ProcessOptions process;
      process.extra_env = job.env;
      process.extra_env.push_back("GTEST_COLOR=no");
      process.extra_env.push_back("TMPDIR=" + shard_temp_dir(i));
      process.extra_env.push_back("TEST_TMPDIR=" + shard_temp_dir(i));
      if (shards > 1) {
        process.extra_env.push_back("GTEST_TOTAL_SHARDS=" + std::to_string(shards));
        process.extra_env.push_back("GTEST_SHARD_INDEX=" + std::to_string(i));
      } else {
        process.unset_env = {"GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
      }
      process.stdout_path = shards_dir + "/" + stem_of(job, i, shards) + ".log";
      process.timeout = std::chrono::seconds(options.timeout_seconds);
      process.stop = &g_stop_requested;
      outcomes[static_cast<std::size_t>(i)].emplace(sys::run_process(argv, process));
    });
  }
  // The progress line, every 200 ms until the shards are done; woken then,
  // so a short suite does not wait out the last interval.
  std::mutex finished_mutex;
  std::condition_variable finished_changed;
  bool finished = false;
  std::thread watcher([&] {
    std::unique_lock<std::mutex> lock(finished_mutex);
    while (!finished) {
      lock.unlock();
      std::size_t done = 0, failed = 0;
      for (auto& shard : progress) {
        poll(shard);
        done += shard.done;
        failed += shard.failed;
      }
      display.show(job.name, done, job.total_tests, failed, false);
      lock.lock();
      finished_changed.wait_for(lock, std::chrono::milliseconds(200), [&] { return finished; });
    }
  });
  for (auto& thread : threads) thread.join();
  {
    std::lock_guard<std::mutex> lock(finished_mutex);
    finished = true;
  }
  finished_changed.notify_all();
  watcher.join();

  std::vector<Report> reports;
  bool setup_failed = false;
  for (int i = 0; i < shards; ++i) {
    const std::string stem = stem_of(job, i, shards);
    auto& outcome = *outcomes[static_cast<std::size_t>(i)];
    if (!outcome) return fail(outcome.error());
    const sys::ProcessResult& result = *outcome;
    // The stderr of the shard goes beside its stdout, for the reader of the log.
    std::ofstream(shards_dir + "/" + stem + ".log", std::ios::app) << result.stderr_text;
    const std::string where = shards > 1 ? " (shard " + std::to_string(i) + " of " + std::to_string(shards) + ")" : "";
    if (result.exit_code == exit_status(GateExit::usage) && result.term_signal == 0 && !result.timed_out &&
        !result.stopped) {
      // The plugin's input or output was wrong: a bad flag, suppressions file
      // or baseline before any test, or a report or baseline it could not
      // write at the end. Say its own words: the line with a fix.
      const std::string& err = result.stderr_text;
      std::size_t at = err.rfind("; fix: ");
      at = at == std::string::npos ? err.rfind("heapgate: ") : err.rfind("heapgate: ", at);
      std::string why =
          at == std::string::npos ? err.substr(0, err.find('\n')) : err.substr(at, err.find('\n', at) - at);
      std::fprintf(stderr, "heapgate: %s%s exited 2 (bad input or output): %s\n", job.path.c_str(), where.c_str(),
                   why.c_str());
      setup_failed = true;
      continue;
    }
    // 0 and 1 are GoogleTest's; 5 is the plugin's own end of a run whose
    // test never finished (it wrote the report). Anything else did not finish.
    const bool ended_early =
        result.timed_out || result.stopped || result.term_signal != 0 ||
        (result.exit_code != 0 && result.exit_code != 1 && result.exit_code != exit_status(GateExit::incomplete));
    if (ended_early) {
      std::string how = result.timed_out          ? "timed out after " + std::to_string(options.timeout_seconds) + " s"
                        : result.stopped          ? "was stopped (heapgate run was interrupted)"
                        : result.term_signal != 0 ? "died of " + sys::describe_signal(result.term_signal)
                                                  : "exited with status " + std::to_string(result.exit_code);
      std::fprintf(stderr, "heapgate: %s%s %s; the tests it finished are in the report; log: %s/%s.log\n",
                   job.path.c_str(), where.c_str(), how.c_str(), shards_dir.c_str(), stem.c_str());
    }
    auto report = read_report(shards_dir + "/" + stem + ".json");
    if (!report) {
      crashed = true;
      std::fprintf(stderr, "heapgate: %s%s wrote no report (%s); log: %s/%s.log\n", job.path.c_str(), where.c_str(),
                   report.error().message().c_str(), shards_dir.c_str(), stem.c_str());
      continue;
    }
    if (ended_early || !report->run.complete) {
      name_interrupted_test(*report, result, shards_dir + "/" + stem + ".log", options);
    }
    reports.push_back(std::move(*report));
  }
  if (setup_failed) {
    return fail(make_error(ErrorCode::invalid_argument, job.path, "exited 2: its input or output was wrong",
                           "fix the error it printed (above), then run again"));
  }
  if (reports.empty()) {
    return fail(make_error(ErrorCode::io_error, job.path, "produced no report",
                           "see the logs in " + shards_dir + "; does the binary link heapgate::gtest_main?"));
  }
  // A shard without a report was named above (and makes the run exit 2); the
  // others' tests are still judged and reported.
  auto merged = merge_reports(reports, MissingShards::allow);
  if (!merged) return merged;
  // The final line counts from the merged report: the journals may have
  // been read for the last time before the shards' final lines.
  std::size_t failed = 0;
  for (const TestRecord& record : merged->tests) failed += record.gtest_failed || is_failure(record.verdict) ? 1 : 0;
  display.show(job.name, merged->tests.size(), job.total_tests, failed, true);
  return merged;
}

// The heap profiles that explain failures are kept by the shards in
// `<report>/profiles/<binary>/` (--heapgate_profiles), so they travel with
// the reports as one CI artifact; a profile named elsewhere (a plugin that
// kept it under $TMPDIR) is copied there. Paths in the report become
// relative to the report directory.
void collect_profiles(const std::string& report_dir, Report& report) {
  const std::string relative_dir = "profiles/" + report.run.binary;
  const std::string kept_prefix = report_dir + "/" + relative_dir + "/";
  for (TestRecord& record : report.tests) {
    for (std::string& profile : record.profiles) {
      if (profile.rfind(kept_prefix, 0) == 0) {
        profile = profile.substr(report_dir.size() + 1);
        continue;
      }
      std::error_code ec;
      if (!fs::is_regular_file(profile, ec)) continue;
      fs::create_directories(report_dir + "/" + relative_dir, ec);
      const std::string relative = relative_dir + "/" + fs::path(profile).filename().string();
      fs::copy_file(profile, report_dir + "/" + relative, fs::copy_options::overwrite_existing, ec);
      if (ec) continue;
      // Its symbols sidecar travels with it (symbols_sidecar.h).
      std::error_code sidecar_ec;
      if (fs::is_regular_file(symbols_sidecar_path(profile), sidecar_ec)) {
        fs::copy_file(symbols_sidecar_path(profile), report_dir + "/" + symbols_sidecar_path(relative),
                      fs::copy_options::overwrite_existing, sidecar_ec);
      }
      profile = relative;
    }
  }
}

int run_all(const RunOptions& options, std::vector<Report>* measured = nullptr) {
  if (options.jobs < 1)
    return bad("--jobs", std::to_string(options.jobs) + " is not a number of processes", "use --jobs 1 or more");
  // A timeout of 0 s or less would kill every shard before its first test.
  if (options.timeout_seconds < 1) {
    return bad("--timeout", std::to_string(options.timeout_seconds) + " is not a number of seconds",
               "use --timeout 1 or more (the default is 3600)");
  }
  std::vector<std::string> binaries;
  std::vector<std::string> args;
  if (!options.ctest_dir.empty()) {
    if (!options.command.empty()) {
      return bad("--ctest-dir", "given together with a test binary", "pass either --ctest-dir DIR or -- BINARY [ARGS]");
    }
    auto found = ctest_binaries(options.ctest_dir);
    if (!found) return bad_input(found.error());
    binaries = *found;
  } else {
    if (options.command.empty()) {
      // The usage style of the command line's own errors ("heapgate run: ..."), not "heapgate: heapgate run: ...".
      std::fprintf(stderr,
                   "heapgate run: no test binary; fix: heapgate run [OPTIONS] -- TEST_BINARY [GTEST_ARGS...], "
                   "or --ctest-dir DIR\n");
      return exit_status(GateExit::usage);
    }
    binaries.push_back(options.command.front());
    args.assign(options.command.begin() + 1, options.command.end());
  }

  std::error_code ec;
  fs::create_directories(options.report + "/shards", ec);
  if (ec || ::access((options.report + "/shards").c_str(), W_OK) != 0) {
    return bad_input(make_error(ErrorCode::io_error, options.report, "cannot create or write the report directory",
                                "pass a writable --report DIR"));
  }
  fs::create_directories(options.baselines, ec);

  std::vector<Job> jobs;
  for (const auto& path : binaries) {
    Job job;
    job.path = path;
    job.name = fs::path(path).filename().string();
    job.args = args;
    if (!sys::exists(path)) {
      return bad_input(make_error(ErrorCode::io_error, path, "no such test binary", "build it first, or fix the path"));
    }
    // A FIFO or a device is named as such, not as a binary without the plugin.
    if (auto regular = sys::open_regular_file(path); !regular) {
      return bad_input(regular.error());
    } else {
      ::close(*regular);
    }
    if (!has_heapgate_plugin(path)) {
      return bad_input(make_error(ErrorCode::invalid_argument, path, "does not contain heapgate's GoogleTest plugin",
                                  "link it with heapgate::gtest_main (or call heapgate::gtest::init), see README"));
    }
    auto env = environment_for(path, options.mode);
    if (!env) return bad_input(env.error());
    job.env = *env;
    for (const auto& arg : args) {
      if (arg.rfind("--gtest_filter", 0) == 0) job.whole_suite = false;
    }
    auto total = count_tests(job);
    if (!total) return bad_input(total.error());
    job.total_tests = *total;
    jobs.push_back(std::move(job));
  }

  std::vector<Report> reports;
  bool crashed = false;
  ProgressDisplay display(options.progress);
  StopOnSignals stop_on_signals;
  for (Job& job : jobs) {
    if (g_stop_requested.load()) break;
    // Read before the run: a malformed or newer baseline stops here, and
    // whether it existed decides who creates it.
    auto checked = baseline_path(options.baselines, job.name, job.path);
    if (!checked) return bad_input(checked.error());
    const std::string path = *checked;
    auto baseline = read_baseline(path);
    if (!baseline) return bad_input(baseline.error());
    auto merged = run_job(options, job, display, crashed);
    if (!merged) return bad_input(merged.error());
    Report& report = *merged;
    if (job.whole_suite && baseline->exists && report.run.complete) add_missing_tests(report, *baseline);
    // Unsharded, the plugin creates a missing baseline itself; shards must
    // not (each would overwrite the others), so the merged run does it here.
    if (run_records_baseline(baseline->exists, false) && options.jobs > 1 && report.run.complete) {
      Baseline created;
      created.binary = job.name;
      created.exists = true;
      BaselineWriteRules rules;
      rules.writer = BaselineWriter::first_run;
      const BaselineWrite write = write_run_into(created, report, rules);
      if (!created.tests.empty()) {
        if (auto written = write_baseline(path, created); !written) return bad_input(written.error());
        std::fprintf(stderr, "heapgate: %s\n", describe_baseline_write(path, false, write).c_str());
      }
    }
    collect_profiles(options.report, report);
    if (auto written = write_report_files(options.report, report, job.name); !written)
      return bad_input(written.error());
    reports.push_back(std::move(report));
  }
  print_summary(stdout, reports);
  std::printf("reports: %s/ (JSON, JUnit, Markdown); logs: %s/shards/\n", options.report.c_str(),
              options.report.c_str());
  std::fflush(stdout);
  if (measured != nullptr) *measured = reports;
  if (g_stop_requested.load()) {
    std::fprintf(stderr, "heapgate: interrupted by %s: the tests were stopped; the reports hold what finished\n",
                 sys::describe_signal(g_stop_signal.load()).c_str());
    return exit_status(GateExit::incomplete);
  }
  // A shard without a report: its tests are unaccounted for.
  if (crashed) return exit_status(GateExit::incomplete);
  const bool complete = std::all_of(reports.begin(), reports.end(), [](const Report& r) { return r.run.complete; });
  std::size_t changed = 0;
  if (options.ratchet && complete) {
    auto ratcheted = ratchet_improvements(options.baselines, reports);
    if (!ratcheted) return bad_input(ratcheted.error());
    changed = *ratcheted;
    std::fflush(stdout);
  }
  return ratchet_exit_code(gate_exit_code(reports, options.allow_unmeasured), changed);
}

// The widest relative spread of a noisy test, for the summary: "allocations 27701–29736 (7.3%)".
std::string widest_spread(const BaselineEntry& entry) {
  std::string text;
  double widest = -1;
  for (MetricName m : kMetricNames) {
    const std::uint64_t width = spread(*entry.noise, m);
    if (width == 0) continue;
    const std::uint64_t median = get(entry.metrics, m);
    const double relative = median == 0 ? 1.0 : static_cast<double>(width) / static_cast<double>(median);
    if (relative <= widest) continue;
    widest = relative;
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%", 100 * relative);
    text = std::string(to_string(m)) + " " + std::to_string(get(entry.noise->low, m)) + "–" +
           std::to_string(get(entry.noise->high, m)) + (median == 0 ? "" : " (" + std::string(percent) + ")");
  }
  return text;
}

// The tests whose counts the calibration runs so far showed to follow timing
// (timing_bound()), every binary's, as a GoogleTest filter: "A.B:C.D".
std::string timing_bound_tests(const std::map<std::string, std::vector<Report>>& runs_of) {
  std::string names;
  for (const auto& [binary, runs] : runs_of) {
    if (runs.size() < 2) continue;
    for (const auto& [name, entry] : calibrated_entries(runs)) {
      if (entry.noise && timing_bound(*entry.noise)) names += (names.empty() ? "" : ":") + name;
    }
  }
  // One argument must stay well below the kernel's 128 KiB limit; past that,
  // measuring them alone costs time, not correctness.
  return names.size() <= 64 * 1024 ? names : std::string();
}

// --calibrate N: N runs of the same build, each recording into a baseline of
// its own (so no run judges against another), then one baseline per binary
// with each test's median and, where the runs disagreed, its noise band.
int run_calibration(const RunOptions& options) {
  if (options.calibrate < 2) {
    return bad("--calibrate", std::to_string(options.calibrate) + " runs cannot show a spread",
               "use --calibrate 2 or more (5 is a good start)");
  }
  std::map<std::string, std::vector<Report>> runs_of;
  for (int i = 1; i <= options.calibrate; ++i) {
    RunOptions once = options;
    once.calibrate = 0;
    once.report = options.report + "/calibrate-" + std::to_string(i);
    once.baselines = once.report + "/baselines";
    once.allow_unmeasured = true;
    // Call sites, explanations and each test alone once are enough: later
    // runs only count. None learns a test's spread in runs of its own: the
    // calibration's runs are the samples. The last run measures each test
    // alone, except those the runs before it showed to follow timing: only
    // their leaks are gated, so a run alone tells nothing, and such a test
    // works for as long as it is given (LevelDB's DBTest.MultiThreaded, 40 s
    // twice over in a fresh process).
    once.plugin_flags.push_back("--heapgate_learn_spread=false");
    if (i > 1) once.plugin_flags.push_back("--heapgate_explain=false");
    if (i == options.calibrate) {
      once.plugin_flags.push_back("--heapgate_measure_alone");
      const std::string skip = timing_bound_tests(runs_of);
      if (!skip.empty()) once.plugin_flags.push_back("--heapgate_measure_alone_skip=" + skip);
    }
    std::printf("heapgate: calibration run %d of %d\n", i, options.calibrate);
    std::fflush(stdout);
    std::vector<Report> reports;
    if (int code = run_all(once, &reports); code == exit_status(GateExit::usage)) return code;
    for (Report& report : reports) runs_of[report.run.binary].push_back(std::move(report));
  }
  for (const auto& [binary, runs] : runs_of) {
    auto checked = baseline_path(options.baselines, binary, "--calibrate");
    if (!checked) return bad_input(checked.error());
    const std::string& path = *checked;
    auto baseline = read_baseline(path);
    if (!baseline) return bad_input(baseline.error());
    baseline->binary = binary;
    BaselineWriteRules rules;
    rules.writer = BaselineWriter::calibrate;
    const BaselineWrite write = write_runs_into(*baseline, runs, rules);
    if (!write.blocked.empty()) {
      return bad_input(
          make_error(ErrorCode::invalid_argument, path, "not calibrated: " + write.blocked, write.blocked_fix));
    }
    const std::map<std::string, BaselineEntry> entries = calibrated_entries(runs);
    std::vector<std::pair<std::string, std::string>> noisy;
    for (const auto& [name, entry] : entries) {
      if (entry.noise) noisy.emplace_back(name, widest_spread(entry));
    }
    if (auto written = write_baseline(path, *baseline); !written) return bad_input(written.error());
    std::printf("%s: calibrated from %zu runs: %zu tests, %zu deterministic, %zu noisy\n", path.c_str(), runs.size(),
                entries.size(), entries.size() - noisy.size(), noisy.size());
    for (const auto& [name, text] : noisy) std::printf("  noisy %s: %s\n", name.c_str(), text.c_str());
  }
  std::fflush(stdout);
  return exit_status(GateExit::ok);
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Run GoogleTest binaries linked with heapgate::gtest_main under the gate: exact allocation counts per test,\n"
      "compared with the baselines; sharded over --jobs processes; reports merged into --report.");
  run->add_option("--mode", options->mode, "How tests are measured")
      ->check(parsed_by(parse_mode, "MODE"))
      ->capture_default_str();
  run->add_option("--baselines", options->baselines, "Directory of <binary>.json baselines (a missing one is created)")
      ->capture_default_str();
  run->add_option("--report", options->report, "Directory for <binary>.json, .junit.xml and .md; shard logs in shards/")
      ->capture_default_str();
  run->add_option("-j,--jobs", options->jobs, "Processes per binary (GoogleTest sharding)")->capture_default_str();
  run->add_flag("--strict", options->strict, "A test that cannot be measured fails in the test binary too");
  run->add_option("--suppressions", options->suppressions,
                  "Leak suppressions file (leak:<pattern> lines) for the tests");
  run->add_flag("--allow-unmeasured", options->allow_unmeasured,
                "Nothing measured (no jemalloc, no profiling) passes instead of exit 3");
  run->add_option("--timeout", options->timeout_seconds,
                  "Seconds before a shard is stopped (SIGTERM, then SIGKILL): its unfinished test is reported hung")
      ->capture_default_str();
  run->add_option("--test-timeout", options->test_timeout_seconds,
                  "Seconds one test may run before the test binary's watchdog stops the run and reports the\n"
                  "test hung, with its threads' stacks (--heapgate_test_timeout); 0: no limit")
      ->capture_default_str();
  run->add_option("--fingerprint", options->fingerprint,
                  "A baseline recorded in another environment (compiler, runtime, jemalloc, build): warn says so,\n"
                  "strict fails the run, ignore does not compare")
      ->check(parsed_by(parse_fingerprint_check, "CHECK"))
      ->capture_default_str();
  run->add_flag("--ratchet", options->ratchet,
                "Accept improvements into the baselines as they happen; exit 4 when a baseline was written\n"
                "(and the gate passed), so CI on the main branch can commit it");
  run->add_option("--calibrate", options->calibrate,
                  "Record the baselines from N runs instead of gating: each test's median, and for a test whose\n"
                  "counts vary between runs (thread timing) a noise band it is then judged within");
  run->add_option("--ctest-dir", options->ctest_dir,
                  "Run every heapgate-enabled binary of this CMake build directory's tests, once each");
  run->add_option("--progress", options->progress, "auto: a live line on a terminal, plain lines otherwise")
      ->check(CLI::IsMember({"auto", "tty", "plain", "none"}))
      ->capture_default_str();
  run->add_option("command", options->command, "-- TEST_BINARY [GTEST_ARGS...]");
  run->footer(
      "The binary is started with LD_PRELOAD of the system's libjemalloc.so.2 when its dynamic section does not\n"
      "need jemalloc and it does not define mallctl itself; exact and sampled modes set MALLOC_CONF.\n"
      "Exit codes: 0 pass, 1 regression, leak, budget or failed test, 2 bad usage or input, 3 nothing measured\n"
      "(--strict), 4 --ratchet wrote a baseline, 5 a test binary did not finish (crashed, hung, exited, killed).\n"
      "Example: heapgate run -j 4 --baselines baselines --report heapgate-report -- build/my_tests");
  run->callback(
      [options, &exit_code] { exit_code = options->calibrate != 0 ? run_calibration(*options) : run_all(*options); });
}

}  // namespace heapgate::runner
