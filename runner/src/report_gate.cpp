// SPDX-License-Identifier: MIT
// The gate over saved reports (report_gate.h): read_reports() of a directory, rejudge() against a
// baseline, gate_exit_code(), ratchet_improvements() and the print_summary() table.
#include "report_gate.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "commands.h"
#include "heapgate/baseline_merge.h"
#include "heapgate/gate.h"
#include "heapgate/journal.h"

namespace heapgate::runner {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string first_line(const std::string& text) {
  auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

}  // namespace

Result<std::vector<Report>> read_reports(const std::string& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
    // One report file where a directory was expected: read just that one.
    auto report = read_report(dir);
    if (!report) return fail(report.error());
    return std::vector<Report>{std::move(*report)};
  }
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) {
    return fail(make_error(ErrorCode::io_error, dir,
                           std::string("cannot list the report directory: ") + std::strerror(errno),
                           "pass the --report directory of a heapgate run"));
  }
  std::vector<std::string> files;
  while (dirent* entry = ::readdir(handle)) {
    std::string name = entry->d_name;
    if (ends_with(name, ".json") && !is_shard_report(name)) files.push_back(dir + "/" + name);
  }
  ::closedir(handle);
  if (files.empty()) {
    return fail(make_error(ErrorCode::io_error, dir, "holds no heapgate report (*.json)",
                           "run the tests first: heapgate run --report " + dir + " -- TEST_BINARY"));
  }
  std::sort(files.begin(), files.end());
  std::vector<Report> reports;
  for (const auto& file : files) {
    auto report = read_report(file);
    if (!report) return fail(report.error());
    reports.push_back(std::move(*report));
  }
  return reports;
}

void rejudge(Report& report, const Baseline& baseline) {
  GatePolicy policy;
  policy.strict = report.run.strict;
  policy.environment_change =
      describe_fingerprint_change(fingerprint_differences(baseline.fingerprint, report.run.fingerprint));
  judge_run(report, baseline, policy, /*whole_run=*/false);
}

int gate_exit_code(const std::vector<Report>& reports, bool allow_unmeasured) {
  return static_cast<int>(gate_exit(reports, allow_unmeasured));
}

Result<std::size_t> ratchet_improvements(const std::string& baselines_dir, const std::vector<Report>& reports) {
  std::size_t changed = 0;
  for (const Report& report : reports) {
    std::set<std::string> improved;
    for (const TestRecord& record : report.tests) {
      if (record.verdict == Verdict::improved) improved.insert(record.name);
    }
    if (improved.empty()) continue;
    auto checked = baseline_path(baselines_dir, report.run.binary, "--ratchet");
    if (!checked) return fail(checked.error());
    const std::string& path = *checked;
    auto baseline = read_baseline(path);
    if (!baseline) return fail(baseline.error());
    const Baseline before = *baseline;
    BaselineMergeRules rules;
    rules.author = BaselineAuthor::ratchet;
    rules.select = improved;
    const BaselineMerge write = merge_run_into(*baseline, report, rules);
    if (!write.blocked.empty()) {
      return fail(make_error(ErrorCode::invalid_argument, path, "not ratcheted: " + write.blocked, write.blocked_fix));
    }
    if (*baseline == before) continue;
    if (auto written = write_baseline(path, *baseline); !written) return fail(written.error());
    ++changed;
    for (const std::string& name : improved) {
      const TestRecord* record = nullptr;
      for (const TestRecord& r : report.tests) {
        if (r.name == name) record = &r;
      }
      std::string moved;
      for (const MetricDelta& d : record->deltas) {
        if (d.delta == 0) continue;
        moved += (moved.empty() ? "" : ", ") + std::string(to_string(d.metric)) + " " + std::to_string(d.baseline) +
                 " → " + std::to_string(d.current);
      }
      std::printf("ratcheted %s: %s\n", name.c_str(), moved.c_str());
    }
    std::printf("heapgate: %s: %zu improved tests accepted (--ratchet); commit it\n", path.c_str(), improved.size());
  }
  return changed;
}

int ratchet_exit_code(int gate_exit, std::size_t changed_baselines) {
  if (gate_exit != 0) return gate_exit;
  return changed_baselines > 0 ? exit_status(GateExit::baseline_changed) : 0;
}

void print_summary(std::FILE* out, const std::vector<Report>& reports) {
  std::size_t width = 6;
  for (const Report& report : reports) width = std::max(width, report.run.binary.size());
  std::fprintf(out, "%-*s %6s", static_cast<int>(width), "binary", "tests");
  for (Verdict verdict : kVerdicts) std::fprintf(out, " %11s", std::string(to_string(verdict)).c_str());
  std::fprintf(out, " %11s\n", "gtest_fail");
  for (const Report& report : reports) {
    VerdictCounts counts = count_verdicts(report);
    std::size_t gtest_failed = static_cast<std::size_t>(
        std::count_if(report.tests.begin(), report.tests.end(), [](const TestRecord& r) { return r.gtest_failed; }));
    std::fprintf(out, "%-*s %6zu", static_cast<int>(width), report.run.binary.c_str(), counts.total);
    for (Verdict verdict : kVerdicts) std::fprintf(out, " %11zu", counts[verdict]);
    std::fprintf(out, " %11zu%s\n", gtest_failed,
                 report.run.complete ? "" : "  (incomplete: the binary did not finish)");
  }
  for (const Report& report : reports) {
    if (report.run.mode == Mode::off && !report.run.unavailable_reason.empty()) {
      std::fprintf(out, "%s: nothing measured: %s\n", report.run.binary.c_str(), report.run.unavailable_reason.c_str());
    }
    for (const TestRecord& record : report.tests) {
      // New tests are counted in the table; listing each would bury the failures.
      if ((record.verdict == Verdict::pass || record.verdict == Verdict::new_test) && !record.gtest_failed) continue;
      const bool interrupted = record.interrupted != Interruption::none;
      std::string why = interrupted           ? first_line(record.message)
                        : record.gtest_failed ? "failed its own assertions"
                                              : first_line(record.message);
      const std::string_view label = interrupted ? to_string(record.interrupted) : to_string(record.verdict);
      std::fprintf(out, "  %-11s %s%s%s\n", std::string(label).c_str(), record.name.c_str(), why.empty() ? "" : ": ",
                   why.c_str());
    }
  }
}

}  // namespace heapgate::runner
