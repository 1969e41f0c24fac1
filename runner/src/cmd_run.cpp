// SPDX-License-Identifier: MIT
// `heapgate run`: runs test binaries linked with a heapgate face
// under the allocator settings of the mode, sharded over N processes
// (run_shards.cpp), shows progress, merges the shard reports, judges and
// prints the summary. What it runs: run_targets.cpp; interruptions:
// run_interruption.cpp; --calibrate: run_calibration.cpp.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

#include "binary_inspect.h"
#include "commands.h"
#include "heapgate/allocator.h"
#include "heapgate/baseline.h"
#include "heapgate/baseline_merge.h"
#include "heapgate/fingerprint.h"
#include "heapgate/gate.h"
#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "heapgate/symbols_sidecar.h"
#include "heapgate/sys.h"
#include "history_add.h"
#include "output.h"
#include "report_gate.h"
#include "run_interruption.h"
#include "run_options.h"
#include "run_shards.h"
#include "run_targets.h"
#include "vocabulary_check.h"

namespace heapgate::runner {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

int bad_option(const std::string& flag, const std::string& problem, const std::string& fix) {
  return bad_input(make_error(ErrorCode::invalid_argument, flag, problem, fix));
}

int run_all(const RunOptions& options, std::vector<Report>* measured) {
  if (options.jobs < 1)
    return bad_option("--jobs", std::to_string(options.jobs) + " is not a number of processes", "use --jobs 1 or more");
  // A timeout of 0 s or less would kill every shard before its first test.
  if (options.timeout_seconds < 1) {
    return bad_option("--timeout", std::to_string(options.timeout_seconds) + " is not a number of seconds",
                      "use --timeout 1 or more (the default is 3600)");
  }
  std::vector<std::string> binaries;
  std::vector<std::string> args;
  if (!options.ctest_dir.empty()) {
    if (!options.command.empty()) {
      return bad_option("--ctest-dir", "given together with a test binary",
                        "pass either --ctest-dir DIR or -- BINARY [ARGS]");
    }
    auto found = ctest_binaries(options.ctest_dir);
    if (!found) return bad_input(found.error());
    binaries = *found;
  } else {
    if (options.command.empty()) {
      // The usage style of the command line's own errors ("heapgate run: ..."), not "heapgate: heapgate run: ...".
      std::fprintf(stderr,
                   "heapgate run: no test binary; fix: heapgate run [OPTIONS] -- TEST_BINARY [TEST_ARGS...], "
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
    job.framework = test_framework_of(path);
    for (const auto& arg : args) {
      if (arg.rfind("--gtest_filter", 0) == 0) job.whole_suite = false;
    }
    // A Catch2 or doctest binary's arguments are its test selection: with
    // any, a baseline test it did not run is not missing.
    if (job.framework != TestFramework::googletest && !args.empty()) job.whole_suite = false;
    auto total = count_tests(job);
    if (!total) return bad_input(total.error());
    job.total_tests = *total;
    jobs.push_back(std::move(job));
  }

  std::vector<Report> reports;
  std::vector<std::string> report_paths;
  bool crashed = false;
  ProgressDisplay display(options.progress);
  StopOnSignals stop_on_signals;
  for (Job& job : jobs) {
    if (stop_requested().load()) break;
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
      BaselineMergeRules rules;
      rules.author = BaselineAuthor::first_run;
      const BaselineMerge write = merge_run_into(created, report, rules);
      if (!created.tests.empty()) {
        if (auto written = write_baseline(path, created); !written) return bad_input(written.error());
        std::fprintf(stderr, "heapgate: %s\n", describe_baseline_write(path, false, write).c_str());
      }
    }
    collect_profiles(options.report, report);
    if (auto written = write_report_files(options.report, report, job.name); !written)
      return bad_input(written.error());
    report_paths.push_back(options.report + "/" + job.name + ".json");
    reports.push_back(std::move(report));
  }
  if (!options.history.empty()) {
    if (auto added = add_run_reports(options.history, reports, report_paths); !added) return bad_input(added.error());
  }
  print_summary(stdout, reports);
  std::printf("reports: %s/ (JSON, JUnit, Markdown); logs: %s/shards/\n", options.report.c_str(),
              options.report.c_str());
  std::fflush(stdout);
  if (measured != nullptr) *measured = reports;
  if (stop_requested().load()) {
    std::fprintf(stderr, "heapgate: interrupted by %s: the tests were stopped; the reports hold what finished\n",
                 sys::describe_signal(stop_signal()).c_str());
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

void add_run_command(CLI::App& app, int& exit_code, const std::vector<std::string>& program) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Run test binaries linked with heapgate's GoogleTest, Catch2 or doctest main under the gate: exact allocation\n"
      "counts per test, compared with the baselines; GoogleTest binaries sharded over --jobs processes; reports\n"
      "merged into --report.");
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
  run->add_option("--history", options->history,
                  "Also add the merged reports to this history store (a SQLite file or a postgresql:// URL),\n"
                  "with the commit, branch and CI job (heapgate history --help); --calibrate's runs are not added");
  run->add_option("--progress", options->progress, "auto: a live line on a terminal, plain lines otherwise")
      ->check(CLI::IsMember({"auto", "tty", "plain", "none"}))
      ->capture_default_str();
  run->add_option("command", options->command, "-- TEST_BINARY [TEST_ARGS...]");
  run->footer(
      "The binary is started with LD_PRELOAD of the system's libjemalloc.so.2 when its dynamic section does not\n"
      "need jemalloc and it does not define mallctl itself; exact and sampled modes set MALLOC_CONF.\n" +
      exit_codes_text({GateExit::ok, GateExit::failed, GateExit::usage, GateExit::unavailable,
                       GateExit::baseline_changed, GateExit::incomplete}) +
      "\nExample: heapgate run -j 4 --baselines baselines --report heapgate-report -- build/my_tests");
  run->callback([options, &exit_code, &program] {
    options->command.insert(options->command.end(), program.begin(), program.end());
    exit_code = options->calibrate != 0 ? run_calibration(*options) : run_all(*options);
  });
}

}  // namespace heapgate::runner
