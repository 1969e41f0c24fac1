// SPDX-License-Identifier: MIT
// What a run adds up to: which records fail it (fails_run()), how many got
// each verdict, and the process exit code (gate_exit(), the GateExit table
// in heapgate/gate.h, and its help text, exit_codes_text()).
#include "heapgate/gate.h"

namespace heapgate {

std::string exit_codes_text(std::initializer_list<GateExit> codes) {
  std::string text = "Exit codes:";
  for (GateExit code : codes) {
    text += "\n  " + std::to_string(exit_status(code)) + " ";
    text += word_of(kGateExitMeanings, code, "(no meaning recorded)");
  }
  return text;
}

bool fails_run(const TestRecord& record, bool strict) noexcept {
  return record.gtest_failed || record.interrupted != Interruption::none || is_failure(record.verdict, strict);
}

VerdictCounts count_verdicts(const Report& report) {
  VerdictCounts c;
  for (const auto& t : report.tests) {
    ++c.by_verdict[static_cast<std::size_t>(t.verdict)];
    ++c.total;
    if (fails_run(t, report.run.strict)) ++c.failures;
    if (t.gtest_failed) ++c.own_failures;
  }
  return c;
}

GateExit gate_exit(const std::vector<Report>& reports, bool allow_unmeasured) {
  bool failed = false;
  bool unavailable = false;
  for (const Report& report : reports) {
    if (!report.run.complete) return GateExit::incomplete;
    for (const TestRecord& record : report.tests) {
      if (record.interrupted != Interruption::none) return GateExit::incomplete;
      if (fails_run(record, /*strict=*/false)) failed = true;
      if (record.verdict == Verdict::unavailable && (report.run.strict || !allow_unmeasured)) unavailable = true;
    }
  }
  if (failed) return GateExit::failed;
  return unavailable ? GateExit::unavailable : GateExit::ok;
}

}  // namespace heapgate
