// SPDX-License-Identifier: MIT
// `heapgate accept`: the reviewed way to accept an intended change: the
// measured numbers of a run's report go into the baselines, and what
// changed is printed per test.
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "report_gate.h"
#include "test_filter.h"
#include "heapgate/baseline.h"
#include "heapgate/baseline_merge.h"
#include "heapgate/report.h"
#include "heapgate/gate.h"
#include "output.h"

namespace heapgate::runner {
namespace {

struct AcceptOptions {
  std::string baselines = kDefaultBaselinesDir;
  std::string report = "heapgate-report";
  std::string tests;
  bool force = false;
  bool prune = false;
  bool dry_run = false;
};

std::string describe_change(const BaselineEntry& before, const BaselineEntry& after) {
  std::string text;
  for (MetricName metric : kMetricNames) {
    std::uint64_t old_value = get(before.metrics, metric);
    std::uint64_t new_value = get(after.metrics, metric);
    if (old_value == new_value) continue;
    if (!text.empty()) text += ", ";
    text += describe(compare_metric(metric, old_value, new_value, Tolerance{}));
  }
  if (before.mode != after.mode) {
    if (!text.empty()) text += ", ";
    text += "mode " + std::string(to_string(before.mode)) + " → " + std::string(to_string(after.mode));
  }
  return text;
}

// Accepts one report into its baseline; returns an exit code.
int accept_report(const AcceptOptions& options, const Report& report) {
  auto checked = baseline_path(options.baselines, report.run.binary, options.report);
  if (!checked) return bad_input(checked.error());
  const std::string path = *checked;
  auto baseline = read_baseline(path);
  if (!baseline) return bad_input(baseline.error());
  baseline->binary = report.run.binary;
  const Baseline before = *baseline;

  std::set<std::string> removed;
  std::set<std::string> selected;
  for (const TestRecord& record : report.tests) {
    if (!matches_test_filter(record.name, options.tests)) continue;
    selected.insert(record.name);
    if (record.verdict == Verdict::missing && options.prune) removed.insert(record.name);
    if (record.verdict == Verdict::missing && !options.prune) {
      std::printf("  %s: in the baseline but did not run; kept (--prune removes it)\n", record.name.c_str());
    }
  }
  Baseline after = before;
  BaselineMergeRules rules;
  rules.author = BaselineAuthor::accept;
  rules.select = selected;
  rules.force = options.force;
  const BaselineMerge write = merge_run_into(after, report, rules);
  if (!write.blocked.empty()) {
    return bad_input(make_error(ErrorCode::conflict, path, write.blocked, write.blocked_fix));
  }
  for (const BaselineRefusal& refused : write.refused) {
    std::printf("  %s: not accepted: %s\n", refused.test.c_str(), refused.reason.c_str());
  }
  const BaselineUpdate& update = write.update;
  for (const auto& name : removed) after.tests.erase(name);
  for (const auto& [name, entry] : after.tests) {
    auto old = before.tests.find(name);
    if (old == before.tests.end()) {
      std::printf("  %s: new\n", name.c_str());
    } else if (old->second != entry) {
      std::string change = describe_change(old->second, entry);
      std::printf("  %s: %s\n", name.c_str(), change.empty() ? "top stacks or tolerance changed" : change.c_str());
    }
  }
  for (const auto& name : removed) std::printf("  %s: removed (no longer runs)\n", name.c_str());
  std::printf("%s: %zu new, %zu changed, %zu unchanged, %zu removed%s\n", path.c_str(), update.added, update.changed,
              update.unchanged, removed.size(), options.dry_run ? " (dry run: nothing written)" : "");
  if (options.dry_run || (before.exists && after == before)) return exit_status(GateExit::ok);
  if (auto written = write_baseline(path, after); !written) return bad_input(written.error());
  return exit_status(GateExit::ok);
}

int run_accept(const AcceptOptions& options) {
  // Everything is read before anything is written: a bad report leaves
  // every baseline as it was.
  auto reports = read_reports(options.report);
  if (!reports) return bad_input(reports.error());
  for (const Report& report : *reports) {
    if (auto checked = baseline_path(options.baselines, report.run.binary, options.report); !checked) {
      return bad_input(checked.error());
    }
    if (!report.run.complete) {
      return bad_input(make_error(ErrorCode::invalid_argument, options.report + "/" + report.run.binary + ".json",
                                  "is the report of a run that crashed",
                                  "fix the crash and run again before accepting"));
    }
  }
  if (!options.tests.empty()) {
    // A filter that matches nothing is a typo, not "0 changed": say so, as
    // `git add` does for a pathspec that matches no file.
    std::vector<std::string> names;
    bool any = false;
    for (const Report& report : *reports) {
      for (const TestRecord& record : report.tests) {
        any = any || matches_test_filter(record.name, options.tests);
        if (names.size() < 5) names.push_back(record.name);
      }
    }
    if (!any) {
      std::string some;
      for (const auto& name : names) some += (some.empty() ? "" : ", ") + name;
      return bad_input(make_error(ErrorCode::invalid_argument, "--tests '" + options.tests + "'",
                                  "matches no test in " + options.report + "; nothing accepted",
                                  "check the filter (Suite.Test, Suite.*, A.*:B.*-*.Slow); tests there include " +
                                      (some.empty() ? std::string("none") : some)));
    }
  }
  for (const Report& report : *reports) {
    if (int code = accept_report(options, report); code != exit_status(GateExit::ok)) return code;
  }
  std::fflush(stdout);
  return exit_status(GateExit::ok);
}

}  // namespace

void add_accept_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AcceptOptions>();
  CLI::App* accept = app.add_subcommand(
      "accept", "Write the measured numbers of a run's reports into the baselines, printing what changed per test.");
  accept->add_option("--baselines", options->baselines, "Directory of <binary>.json baselines")->capture_default_str();
  accept->add_option("--report", options->report, "Directory of the reports of a heapgate run")->capture_default_str();
  accept->add_option("--tests", options->tests, "Only these tests: a GoogleTest filter (Suite.*:Other.Test-*.Slow)");
  accept->add_flag("--prune", options->prune, "Remove baseline entries of tests that no longer run");
  accept->add_flag("--force", options->force, "Accept sampled estimates over exact baselines");
  accept->add_flag("-n,--dry-run", options->dry_run, "Print what would change; write nothing");
  accept->footer(
      "Tests that failed their own assertions or measured nothing are never accepted; a hand-edited tolerance in\n"
      "the baseline is kept. Baselines are written atomically (temporary file, rename).\n"
      "Example: heapgate run -- build/my_tests; heapgate accept --tests 'Cache.*'; git diff baselines/");
  accept->callback([options, &exit_code] { exit_code = run_accept(*options); });
}

}  // namespace heapgate::runner
