// SPDX-License-Identifier: MIT
// `heapgate compare`: the gate's verdicts again, from saved reports and the
// baselines as they are now, without running anything.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "report_gate.h"
#include "heapgate/baseline.h"
#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "output.h"

namespace heapgate::runner {
namespace {

struct CompareOptions {
  std::string baselines = kDefaultBaselinesDir;
  std::string report = "heapgate-report";
  std::string output;
  bool ratchet = false;
};

int run_compare(const CompareOptions& options) {
  auto reports = read_reports(options.report);
  if (!reports) return bad_input(reports.error());
  for (Report& report : *reports) {
    auto path = baseline_path(options.baselines, report.run.binary, options.report);
    if (!path) return bad_input(path.error());
    auto baseline = read_baseline(*path);
    if (!baseline) return bad_input(baseline.error());
    rejudge(report, *baseline);
  }
  if (!options.output.empty()) {
    for (const Report& report : *reports) {
      if (auto written = write_report_files(options.output, report, report.run.binary); !written) {
        return bad_input(written.error());
      }
    }
  }
  print_summary(stdout, *reports);
  std::size_t changed = 0;
  if (options.ratchet) {
    auto ratcheted = ratchet_improvements(options.baselines, *reports);
    if (!ratcheted) return bad_input(ratcheted.error());
    changed = *ratcheted;
  }
  std::fflush(stdout);
  return ratchet_exit_code(gate_exit_code(*reports), changed);
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* compare = app.add_subcommand(
      "compare", "Judge saved reports again against the baselines as they are now, without running anything.");
  compare->add_option("--baselines", options->baselines, "Directory of <binary>.json baselines")->capture_default_str();
  compare->add_option("--report", options->report, "Directory of the reports of a heapgate run")->capture_default_str();
  compare->add_option("-o,--output", options->output,
                      "Also write the re-judged reports (JSON, JUnit, Markdown) into this directory");
  compare->add_flag("--ratchet", options->ratchet,
                    "Accept improvements into the baselines (exit 4 when one was written, for CI on the main branch)");
  compare->footer(
      "Leaks, budgets and tests that failed their own assertions keep their verdicts; pass, regressed, improved\n"
      "and new are decided again. Exit codes as heapgate run.");
  compare->callback([options, &exit_code] { exit_code = run_compare(*options); });
}

}  // namespace heapgate::runner
