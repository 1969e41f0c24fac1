// SPDX-License-Identifier: MIT
// `heapgate history add|show|report|import-git`: every run's numbers kept
// over commits (docs/design.md §13). Adding: history_add.cpp; import-git:
// history_import.cpp.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "heapgate/run_context.h"
#include "heapgate/sys.h"
#include "heapgate/trend.h"
#include "history_add.h"
#include "history_import.h"
#include "output.h"
#include "report_gate.h"

namespace heapgate::runner {
namespace {

struct AddOptions {
  HistoryFlags store;
  RunContext given;
  bool skip_known = false;
  std::vector<std::string> reports;
};

struct ReadOptions {
  HistoryFlags store;
  HistoryQuery query;
  std::string metric = "allocations";
  std::size_t confirm = 3;
  std::string output;
  std::string commit_url;
  std::size_t top = 50;
};

int run_history_add(const AddOptions& options) {
  if (options.reports.empty()) {
    std::fprintf(stderr,
                 "heapgate history add: no report given; fix: heapgate history add REPORT.json... (a file, "
                 "or the --report directory of heapgate run)\n");
    return exit_status(GateExit::usage);
  }
  // Every report is read before the store is touched: one that is not a
  // heapgate report adds nothing.
  const RunContext context = detect_run_context(options.given, process_environment());
  std::vector<StoredRun> runs;
  for (const std::string& path : options.reports) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      auto reports = read_reports(path);
      if (!reports) return bad_input(reports.error());
      for (const Report& report : *reports) {
        runs.push_back(stored_run_from_report(report, context, path + "/" + report.run.binary + ".json"));
      }
      continue;
    }
    auto report = read_report(path);
    if (!report && report.error().code == ErrorCode::parse_error) {
      return bad_input(make_error(ErrorCode::parse_error, report.error().where,
                                  "not a heapgate report (" + report.error().what + "); nothing was added",
                                  "give the reports heapgate run writes (its --report directory) or a test binary's "
                                  "--heapgate_report files"));
    }
    if (!report) return bad_input(report.error());
    runs.push_back(stored_run_from_report(*report, context, path));
  }
  auto store = open_history_store(options.store, true);
  if (!store) return bad_input(store.error());
  auto added = add_runs(**store, runs, options.skip_known ? KnownRuns::skip : KnownRuns::refuse);
  if (!added) return bad_input(added.error());
  return exit_status(GateExit::ok);
}

int run_history_show(const ReadOptions& options) {
  auto metric = parse_metric_name(options.metric);
  if (!metric)
    return bad_input(make_error(ErrorCode::invalid_argument, "--metric", metric.error().what, metric.error().fix));
  auto store = open_history_store(options.store, false);
  if (!store) return bad_input(store.error());
  auto runs = (*store)->runs(options.query);
  if (!runs) return bad_input(runs.error());
  std::vector<std::string> steps;
  std::size_t tests = 0;
  ChangePointOptions change_points;
  change_points.confirm = options.confirm;
  auto read = for_each_trend(**store, options.query, *runs, [&](const TestTrend& trend) {
    ++tests;
    std::printf("%s (%s), %s\n", trend.test.c_str(), trend.binary.c_str(), std::string(to_string(*metric)).c_str());
    std::printf("  %-10s  %-20s  %-12s  %-12s  %14s  %-23s  %s\n", "commit", "time", "branch", "job",
                std::string(to_string(*metric)).c_str(), "band", "verdict");
    for (const TrendPoint& point : trend.points) {
      const RunRow& run = (*runs)[point.run];
      std::string band = "-";
      if (point.band) {
        band = std::to_string(get(point.band->low, *metric)) + ".." + std::to_string(get(point.band->high, *metric));
      }
      std::printf("  %-10s  %-20s  %-12s  %-12s  %14llu  %-23s  %s\n", run.context.commit.substr(0, 10).c_str(),
                  run.context.time.c_str(), run.context.branch.c_str(), run.context.job.c_str(),
                  static_cast<unsigned long long>(get(point.metrics, *metric)), band.c_str(), point.verdict.c_str());
    }
    for (const ChangePoint& change : find_change_points(series_of(trend, *metric), change_points)) {
      MetricStep step{trend.binary, trend.test, *metric, change, trend.points[change.index].run};
      steps.push_back(describe_step(step, *runs));
    }
  });
  if (!read) return bad_input(read.error());
  if (tests == 0) {
    std::printf("no points in %s for these filters (%zu runs)\n", (*store)->location().c_str(), runs->size());
  } else {
    std::printf("\nchange points (%s):\n", std::string(to_string(*metric)).c_str());
    for (const std::string& step : steps) std::printf("  %s\n", step.c_str());
    if (steps.empty()) std::printf("  none\n");
  }
  std::fflush(stdout);
  return exit_status(GateExit::ok);
}

int run_history_report(const ReadOptions& options) {
  auto store = open_history_store(options.store, false);
  if (!store) return bad_input(store.error());
  TrendPageOptions pages;
  pages.dir = options.output;
  pages.commit_url = options.commit_url;
  pages.change_points.confirm = options.confirm;
  pages.top_steps = options.top;
  auto written = write_trend_pages(**store, options.query, pages);
  if (!written) return bad_input(written.error());
  std::fprintf(stderr, "heapgate history report: %zu runs, %zu tests, %zu change points; wrote %s\n", written->runs,
               written->tests, written->steps, written->index.c_str());
  return exit_status(GateExit::ok);
}

void add_query_options(CLI::App& command, ReadOptions& options) {
  add_store_options(command, options.store);
  command.add_option("--test", options.query.test_glob, "Only tests whose Suite.Test name matches this glob");
  command.add_option("--branch", options.query.branch, "Only runs of this branch");
  command.add_option("--since", options.query.since, "Only runs at or after this ISO-8601 time (2026-11, 2026-11-02)");
  command.add_option("--until", options.query.until,
                     "Only runs up to this ISO-8601 time, a prefix (2026-11 includes November)");
  command.add_option("--binary", options.query.binary, "Only this test binary");
  command
      .add_option("--confirm", options.confirm,
                  "A change point needs this many commits in a row outside the band (an outlier that comes "
                  "back is none)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
}

}  // namespace

void add_store_options(CLI::App& command, HistoryFlags& flags) {
  command
      .add_option("--history", flags.history,
                  "The store: a SQLite file (created when adding), or a postgresql://USER:PASSWORD@HOST/DB URL; "
                  "default $HEAPGATE_HISTORY, else heapgate-history.db")
      ->type_name("PATH|URL");
  command
      .add_option("--lock-timeout", flags.lock_timeout_seconds,
                  "Seconds to wait for another writer's lock before giving up")
      ->capture_default_str();
}

void add_history_command(CLI::App& app, int& exit_code) {
  CLI::App* history =
      app.add_subcommand("history",
                         "Keep every run's numbers over commits (a SQLite file, or PostgreSQL for a team), show them, "
                         "chart them with their change points.");
  history->require_subcommand(1);
  history->footer(
      "Example:\n  heapgate history add heapgate-report/   # in CI, after heapgate run (or heapgate run --history)\n"
      "  heapgate history show --test 'Cache.*' --metric allocations\n  heapgate history report -o trends/\n" +
      exit_codes_text({GateExit::ok, GateExit::usage}));

  auto add = std::make_shared<AddOptions>();
  CLI::App* add_command = history->add_subcommand(
      "add", "Store reports with their commit, branch, time and CI job (from git and CI variables unless given).");
  add_store_options(*add_command, add->store);
  add_command->add_option("--commit", add->given.commit,
                          "The commit measured (default: $GITHUB_SHA, "
                          "$CI_COMMIT_SHA, ..., else git's HEAD)");
  add_command->add_option("--branch", add->given.branch, "Its branch (default: CI variables, else git's)");
  add_command->add_option("--time", add->given.time,
                          "ISO-8601 time the points sort by (default: the commit's "
                          "author time, else now)");
  add_command->add_option("--job", add->given.job, "The CI job (default: $GITHUB_RUN_ID, $CI_JOB_ID, ..., else local)");
  add_command->add_flag("--skip-known", add->skip_known, "A report already stored is skipped, not an error");
  add_command->add_option("reports", add->reports, "Report files, or heapgate run --report directories");
  add_command->callback([add, &exit_code] { exit_code = run_history_add(*add); });

  auto show = std::make_shared<ReadOptions>();
  CLI::App* show_command = history->add_subcommand("show",
                                                   "Print each test's metric over commits, and its change "
                                                   "points.");
  add_query_options(*show_command, *show);
  show_command
      ->add_option("--metric", show->metric,
                   "allocations, allocated_bytes, live_allocations, live_bytes or "
                   "peak_bytes")
      ->capture_default_str();
  show_command->callback([show, &exit_code] { exit_code = run_history_show(*show); });

  auto report = std::make_shared<ReadOptions>();
  CLI::App* report_command = history->add_subcommand(
      "report",
      "Write HTML trend pages: an index with the largest steps, and a chart per test and metric over "
      "commits with its band and change points (works offline).");
  add_query_options(*report_command, *report);
  report_command->add_option("-o,--output", report->output, "Directory for index.html and the pages")->required();
  report_command->add_option("--commit-url", report->commit_url,
                             "Link commits: {commit} is replaced (https://github.com/OWNER/REPO/commit/{commit})");
  report_command->add_option("--top", report->top, "How many of the largest steps the index lists")
      ->capture_default_str();
  report_command->callback([report, &exit_code] { exit_code = run_history_report(*report); });

  add_import_git_command(*history, exit_code);
}

}  // namespace heapgate::runner
