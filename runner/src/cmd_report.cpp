// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate report merge|junit|markdown`: shard reports into one, and one
// report into the formats CI systems read.
#include "heapgate/report.h"
#include "options.h"
#include "output.h"

namespace heapgate::runner {

int run_report(const ReportOptions& options) {
  std::vector<Report> reports;
  for (const auto& input : options.inputs) {
    auto report = read_report(input);
    if (!report) return bad_input(report.error());
    reports.push_back(std::move(*report));
  }
  if (options.action != "merge" && reports.size() != 1) {
    return bad_input(make_error(ErrorCode::invalid_argument, "heapgate report " + options.action,
                                "expected one report, got " + std::to_string(reports.size()),
                                "merge shard reports first: heapgate report merge -o all.json A.json B.json"));
  }
  auto merged = merge_reports(reports);
  if (!merged) return bad_input(merged.error());
  std::string text;
  if (options.action == "merge") {
    text = to_json(*merged);
  } else if (options.action == "junit") {
    text = to_junit_xml(*merged);
  } else {
    text = to_markdown(*merged);
  }
  auto written = emit(options.output, text);
  if (!written) return bad_input(written.error());
  return kExitOk;
}

}  // namespace heapgate::runner
