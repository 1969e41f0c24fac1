// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate report merge|junit|markdown|html`: shard reports into one, and one
// report into the formats CI systems read (html: a page with flame graphs).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "commands.h"
#include "output.h"

namespace heapgate::runner {
namespace {

struct ReportOptions {
  std::string action;
  std::vector<std::string> inputs;
  std::string output;
};

int run_report(const ReportOptions& options) {
  std::vector<Report> reports;
  for (const auto& input : options.inputs) {
    auto report = read_report(input);
    if (!report) return bad_input(report.error());
    reports.push_back(std::move(*report));
  }
  if (options.action != "merge" && reports.size() != 1) {
    // The usage style ("heapgate report junit: ..."), not "heapgate: heapgate report junit: ...".
    std::fprintf(stderr,
                 "heapgate report %s: expected one report, got %zu; fix: merge shard reports first: heapgate report "
                 "merge -o all.json A.json B.json\n",
                 options.action.c_str(), reports.size());
    return kExitBadInput;
  }
  auto merged = merge_reports(reports);
  if (!merged) return bad_input(merged.error());
  std::string text;
  if (options.action == "merge") {
    text = to_json(*merged);
  } else if (options.action == "junit") {
    text = to_junit_xml(*merged);
  } else if (options.action == "html") {
    text = to_html(*merged);
  } else {
    text = to_markdown(*merged);
  }
  auto written = emit(options.output, text);
  if (!written) return bad_input(written.error());
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand(
      "report", "Turn heapgate.report/1 JSON into one merged report, JUnit XML, a Markdown CI summary or an HTML page.");
  report->add_option("action", options->action, "merge, junit, markdown or html (one page, flame graphs inline)")
      ->required()
      ->check(CLI::IsMember({"merge", "junit", "markdown", "html"}));
  report->add_option("reports", options->inputs, "Report files (.json or a report directory)")->required();
  report->add_option("-o,--output", options->output, "Write to FILE (atomically) instead of stdout");
  report->callback([options, &exit_code] { exit_code = run_report(*options); });
}

}  // namespace heapgate::runner
