// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The report data model: equality, merging shards, baseline entries, writing
// the three report files, and the crash-safe ReportWriter.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "heapgate/report.h"
#include "report_json.h"
#include "sys/sys.h"

namespace heapgate {

bool operator==(const RunInfo& a, const RunInfo& b) noexcept {
  return a.binary == b.binary && a.build_id == b.build_id && a.mode == b.mode &&
         a.jemalloc_version == b.jemalloc_version && a.host == b.host && a.started_at == b.started_at &&
         a.shard_index == b.shard_index && a.total_shards == b.total_shards && a.strict == b.strict &&
         a.unavailable_reason == b.unavailable_reason && a.complete == b.complete;
}
bool operator!=(const RunInfo& a, const RunInfo& b) noexcept { return !(a == b); }

bool operator==(const StackSummary& a, const StackSummary& b) noexcept {
  return a.frames == b.frames && a.delta_live_objects == b.delta_live_objects &&
         a.delta_live_bytes == b.delta_live_bytes && a.delta_accum_objects == b.delta_accum_objects &&
         a.delta_accum_bytes == b.delta_accum_bytes;
}
bool operator!=(const StackSummary& a, const StackSummary& b) noexcept { return !(a == b); }

bool operator==(const TestRecord& a, const TestRecord& b) noexcept {
  return a.name == b.name && a.suite == b.suite && a.test == b.test && a.file == b.file && a.line == b.line &&
         a.mode == b.mode && a.estimated == b.estimated && a.metrics == b.metrics && a.baseline == b.baseline &&
         a.deltas == b.deltas && a.verdict == b.verdict && a.message == b.message && a.stacks == b.stacks &&
         a.profiles == b.profiles && a.duration_ms == b.duration_ms && a.gtest_failed == b.gtest_failed &&
         a.budgets == b.budgets;
}
bool operator!=(const TestRecord& a, const TestRecord& b) noexcept { return !(a == b); }

bool operator==(const Report& a, const Report& b) noexcept { return a.run == b.run && a.tests == b.tests; }
bool operator!=(const Report& a, const Report& b) noexcept { return !(a == b); }

void sort_tests(Report& report) {
  std::stable_sort(report.tests.begin(), report.tests.end(),
                   [](const TestRecord& a, const TestRecord& b) { return a.name < b.name; });
}

namespace {

Result<void> agree(const char* field, const std::string& a, const std::string& b, std::size_t index) {
  if (a == b) return {};
  return fail(make_error(ErrorCode::conflict, std::string("run.") + field,
                         "the reports are of different runs: report 1 has \"" + a + "\", report " +
                             std::to_string(index + 1) + " has \"" + b + "\"",
                         "merge only the shards of one run of one binary"));
}

}  // namespace

Result<Report> merge_reports(const std::vector<Report>& reports) {
  if (reports.empty()) {
    return fail(make_error(ErrorCode::invalid_argument, "reports", "nothing to merge", "pass at least one report"));
  }
  Report merged;
  merged.run = reports.front().run;
  std::set<std::string> hosts;
  std::set<std::string> reasons;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const RunInfo& run = reports[i].run;
    for (auto check : {agree("binary", merged.run.binary, run.binary, i),
                       agree("build_id", merged.run.build_id, run.build_id, i),
                       agree("mode", merged.run.mode, run.mode, i),
                       agree("jemalloc_version", merged.run.jemalloc_version, run.jemalloc_version, i),
                       agree("total_shards", std::to_string(merged.run.total_shards), std::to_string(run.total_shards),
                             i)}) {
      if (!check) return fail(check.error());
    }
    if (!run.host.empty()) hosts.insert(run.host);
    if (!run.unavailable_reason.empty()) reasons.insert(run.unavailable_reason);
    if (!run.started_at.empty() && (merged.run.started_at.empty() || run.started_at < merged.run.started_at)) {
      merged.run.started_at = run.started_at;  // ISO-8601 UTC strings order by time
    }
    merged.run.strict = merged.run.strict || run.strict;
    merged.run.complete = merged.run.complete && run.complete;
  }
  merged.run.host.clear();
  for (const auto& h : hosts) merged.run.host += (merged.run.host.empty() ? "" : ", ") + h;
  merged.run.unavailable_reason.clear();
  for (const auto& r : reasons) merged.run.unavailable_reason += (merged.run.unavailable_reason.empty() ? "" : "; ") + r;
  merged.run.shard_index = -1;
  merged.run.total_shards = 0;

  std::map<std::string, const TestRecord*> by_name;
  for (const auto& report : reports) {
    for (const auto& t : report.tests) {
      auto [it, inserted] = by_name.emplace(t.name, &t);
      if (inserted || *it->second == t) continue;
      return fail(make_error(ErrorCode::conflict, t.name,
                             "the test has different records in two reports (verdicts " +
                                 std::string(to_string(it->second->verdict)) + " and " +
                                 std::string(to_string(t.verdict)) + ")",
                             "a test must run in one shard only; check GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS, or "
                             "do not merge reports of different runs"));
    }
  }
  for (const auto& [name, record] : by_name) merged.tests.push_back(*record);
  return merged;
}

void add_missing_tests(Report& report, const Baseline& baseline) {
  std::set<std::string> ran;
  for (const auto& t : report.tests) ran.insert(t.name);
  for (const auto& [name, entry] : baseline.tests) {
    if (ran.count(name) != 0) continue;
    TestRecord t;
    t.name = name;
    std::size_t dot = name.find('.');
    t.suite = name.substr(0, dot);
    t.test = dot == std::string::npos ? std::string() : name.substr(dot + 1);
    t.mode = entry.mode;
    t.baseline = entry.metrics;
    t.verdict = Verdict::missing;
    t.message = "the baseline has an entry for " + name +
                ", but the test did not run; if it was deleted or renamed, prune its baseline entry";
    report.tests.push_back(std::move(t));
  }
  sort_tests(report);
}

std::map<std::string, BaselineEntry> baseline_entries(const Report& report) {
  std::map<std::string, BaselineEntry> out;
  for (const auto& t : report.tests) {
    if (t.verdict == Verdict::unavailable || t.verdict == Verdict::missing || t.mode == Mode::off || t.gtest_failed) {
      continue;
    }
    BaselineEntry e;
    e.metrics = t.metrics;
    e.mode = t.mode;
    for (const auto& s : t.stacks) e.top_stacks.push_back(join_stack(s.frames));
    out[t.name] = std::move(e);
  }
  return out;
}

VerdictCounts count_verdicts(const Report& report) {
  VerdictCounts c;
  for (const auto& t : report.tests) {
    ++c.by_verdict[static_cast<std::size_t>(t.verdict)];
    ++c.total;
    if (is_failure(t.verdict, report.run.strict)) ++c.failures;
  }
  return c;
}

namespace {

Error dir_error(const std::string& dir, const std::string& what) {
  return make_error(ErrorCode::io_error, dir, what,
                    "make the directory writable, or choose another report directory (--heapgate_report=<dir>)");
}

Result<void> ensure_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return {};
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(dir_error(dir, "cannot create the report directory: " + ec.message()));
  return {};
}

Result<void> write_in(const std::string& dir, const std::string& name, const std::string& content) {
  auto written = sys::write_file_atomic(dir + "/" + name, content);
  if (!written) return fail(dir_error(dir, "cannot write " + name + ": " + written.error().what));
  return {};
}

}  // namespace

Result<void> write_report_files(const std::string& dir, const Report& report, const std::string& stem) {
  if (auto ok = ensure_dir(dir); !ok) return ok;
  if (auto ok = write_in(dir, stem + ".json", to_json(report)); !ok) return ok;
  if (auto ok = write_in(dir, stem + ".junit.xml", to_junit_xml(report)); !ok) return ok;
  return write_in(dir, stem + ".md", to_markdown(report));
}

ReportWriter::ReportWriter(std::string dir, std::string stem, RunInfo run)
    : dir_(std::move(dir)), stem_(std::move(stem)), journal_path_(dir_ + "/" + stem_ + ".partial.jsonl") {
  report_.run = std::move(run);
  if (auto ok = ensure_dir(dir_); !ok) {
    error_ = ok.error();
    return;
  }
  // A crash of this run must not leave an earlier run's report looking current.
  for (const char* suffix : {".json", ".junit.xml", ".md"}) {
    std::error_code ec;
    std::filesystem::remove(dir_ + "/" + stem_ + suffix, ec);
  }
  journal_ = std::fopen(journal_path_.c_str(), "w");
  if (journal_ == nullptr) {
    error_ = dir_error(dir_, "cannot create the journal " + journal_path_ + ": " + std::strerror(errno));
    return;
  }
  std::string header = detail::journal_header(report_.run) + "\n";
  if (std::fwrite(header.data(), 1, header.size(), journal_) != header.size() || std::fflush(journal_) != 0) {
    error_ = dir_error(dir_, "cannot write the journal " + journal_path_ + ": " + std::strerror(errno));
  }
}

ReportWriter::~ReportWriter() {
  if (journal_ != nullptr) std::fclose(journal_);
}

Result<void> ReportWriter::add(TestRecord record) {
  std::string line = detail::dump_json(detail::record_to_json(record), -1) + "\n";
  report_.tests.push_back(std::move(record));
  if (error_) return fail(*error_);
  if (finished_) {
    return fail(make_error(ErrorCode::conflict, journal_path_, "add() after finish()",
                           "add every record before finishing the report"));
  }
  // One fwrite of a whole line, then fflush: the line reaches the kernel at
  // once, so a crash of the process afterwards cannot lose it.
  if (std::fwrite(line.data(), 1, line.size(), journal_) != line.size() || std::fflush(journal_) != 0) {
    return fail(dir_error(dir_, "cannot append to the journal " + journal_path_ + ": " + std::strerror(errno)));
  }
  return {};
}

Result<void> ReportWriter::finish() {
  if (finished_) {
    return fail(make_error(ErrorCode::conflict, journal_path_, "finish() called twice", "call finish() once"));
  }
  finished_ = true;
  if (error_) return fail(*error_);
  report_.run.complete = true;
  if (auto ok = write_report_files(dir_, report_, stem_); !ok) return ok;
  std::fclose(journal_);
  journal_ = nullptr;
  std::error_code ec;
  std::filesystem::remove(journal_path_, ec);
  return {};
}

}  // namespace heapgate
