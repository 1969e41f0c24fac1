// SPDX-License-Identifier: MIT
// run_job() (run_shards.h): one binary's GoogleTest shards as parallel processes, each with its
// own equal-length temp dir, progress read from their journals, and their reports merged.
#include "run_shards.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "heapgate/gate.h"
#include "heapgate/sys.h"
#include "run_interruption.h"

namespace heapgate::runner {
namespace {

namespace fs = std::filesystem;

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

// Where one binary's shards write: their reports and logs, and the profiles
// that explain failures (kept where the merged report names them).
struct ShardPlan {
  std::string shards_dir;
  std::string profiles_dir;
  int count = 1;
};

ShardPlan plan_shards(const RunOptions& options, const Job& job) {
  ShardPlan plan;
  plan.shards_dir = options.report + "/shards";
  plan.profiles_dir = options.report + "/profiles/" + job.name;
  // Catch2's and doctest's faces read GoogleTest's sharding variables too.
  plan.count = std::max(1, std::min<int>(options.jobs, static_cast<int>(std::max<std::size_t>(job.total_tests, 1))));
  return plan;
}

// Outputs of an earlier run of this binary must not be read as this run's,
// nor the profiles it kept: the report names this run's.
void remove_earlier_outputs(const ShardPlan& plan, const Job& job) {
  for (int i = 0; i < plan.count; ++i) {
    const std::string stem = plan.shards_dir + "/" + stem_of(job, i, plan.count);
    for (const char* suffix : {".json", ".junit.xml", ".md", ".partial.jsonl", ".log"}) {
      std::error_code ec;
      fs::remove(stem + suffix, ec);
    }
  }
  std::error_code ec;
  fs::remove_all(plan.profiles_dir, ec);
}

// Each shard gets its own temporary directory (TMPDIR, and TEST_TMPDIR for
// suites written for Bazel): suites that keep a fixed directory under it (a
// database's test directory) would otherwise collide between shards. Its
// path has the same length in every shard, in every run and for any --jobs,
// because a path held in a std::string changes the bytes (and, as it grows,
// the count) of allocations; the fingerprint records the length. Removed
// with the object.
class ShardTempDirs {
 public:
  static Result<std::unique_ptr<ShardTempDirs>> make(int count) {
    auto scratch = sys::make_private_dir("heapgate-run.");
    if (!scratch) return fail(scratch.error());
    std::unique_ptr<ShardTempDirs> dirs(new ShardTempDirs(*scratch));
    for (int i = 0; i < count; ++i) {
      std::error_code ec;
      fs::create_directory(dirs->dir(i), ec);
      if (ec) {
        return fail(make_error(ErrorCode::io_error, dirs->dir(i),
                               "cannot create the shard's temporary directory: " + ec.message(),
                               "check that TMPDIR (" + sys::temp_root() + ") is writable and has space"));
      }
    }
    return dirs;
  }
  ~ShardTempDirs() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  ShardTempDirs(const ShardTempDirs&) = delete;
  ShardTempDirs& operator=(const ShardTempDirs&) = delete;

  std::string dir(int i) const {
    char name[32];
    std::snprintf(name, sizeof name, "/shard-%03d", i);
    return root_ + name;
  }

 private:
  explicit ShardTempDirs(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

// Runs the shards, one process each, in parallel, and draws the progress
// line from their journals every 200 ms until they are done (woken then, so
// a short suite does not wait out the last interval). Returns each shard's
// outcome, in shard order.
std::vector<Result<sys::ProcessResult>> run_shard_processes(const RunOptions& options, const ShardPlan& plan,
                                                            const Job& job, const ShardTempDirs& temp_dirs,
                                                            ProgressDisplay& display) {
  const std::string& shards_dir = plan.shards_dir;
  const std::string& profiles_dir = plan.profiles_dir;
  const int shards = plan.count;
  std::vector<ShardProgress> progress(static_cast<std::size_t>(shards));
  for (int i = 0; i < shards; ++i) {
    progress[static_cast<std::size_t>(i)].journal = shards_dir + "/" + stem_of(job, i, shards) + ".partial.jsonl";
  }
  std::vector<std::optional<Result<sys::ProcessResult>>> outcomes(static_cast<std::size_t>(shards));
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
      process.extra_env.push_back("TMPDIR=" + temp_dirs.dir(i));
      process.extra_env.push_back("TEST_TMPDIR=" + temp_dirs.dir(i));
      if (shards > 1) {
        process.extra_env.push_back("GTEST_TOTAL_SHARDS=" + std::to_string(shards));
        process.extra_env.push_back("GTEST_SHARD_INDEX=" + std::to_string(i));
      } else {
        process.unset_env = {"GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
      }
      process.stdout_path = shards_dir + "/" + stem_of(job, i, shards) + ".log";
      process.timeout = std::chrono::seconds(options.timeout_seconds);
      process.stop = &stop_requested();
      outcomes[static_cast<std::size_t>(i)].emplace(sys::run_process(argv, process));
    });
  }
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
  std::vector<Result<sys::ProcessResult>> results;
  for (auto& outcome : outcomes) results.push_back(std::move(*outcome));
  return results;
}

}  // namespace

Result<Report> run_job(const RunOptions& options, Job& job, ProgressDisplay& display, bool& crashed) {
  const ShardPlan plan = plan_shards(options, job);
  const std::string& shards_dir = plan.shards_dir;
  const int shards = plan.count;
  remove_earlier_outputs(plan, job);
  auto temp_dirs = ShardTempDirs::make(shards);
  if (!temp_dirs) return fail(temp_dirs.error());
  std::vector<Result<sys::ProcessResult>> outcomes = run_shard_processes(options, plan, job, **temp_dirs, display);

  std::vector<Report> reports;
  bool setup_failed = false;
  for (int i = 0; i < shards; ++i) {
    const std::string stem = stem_of(job, i, shards);
    auto& outcome = outcomes[static_cast<std::size_t>(i)];
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
      name_interrupted_test(*report, result, shards_dir + "/" + stem + ".log", options.timeout_seconds);
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

}  // namespace heapgate::runner
