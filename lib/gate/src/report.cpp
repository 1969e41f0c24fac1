// SPDX-License-Identifier: MIT
// The report data model: equality, sorting and merging shards.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "heapgate/report.h"
#include "report_json.h"
#include "heapgate/sys.h"

namespace heapgate {

bool operator==(const RunInfo& a, const RunInfo& b) noexcept {
  return a.binary == b.binary && a.build_id == b.build_id && a.mode == b.mode &&
         a.jemalloc_version == b.jemalloc_version && a.host == b.host && a.started_at == b.started_at &&
         a.shard_index == b.shard_index && a.total_shards == b.total_shards && a.strict == b.strict &&
         a.unavailable_reason == b.unavailable_reason && a.complete == b.complete && a.fingerprint == b.fingerprint &&
         a.accepting == b.accepting;
}
bool operator!=(const RunInfo& a, const RunInfo& b) noexcept { return !(a == b); }

std::string_view to_string(Interruption interruption) noexcept { return word_of(kInterruptionWords, interruption, ""); }

Result<Interruption> parse_interruption(std::string_view text) {
  return parse_word(kInterruptionWords, text, "interrupted", "value", "crashed");
}

TestRecord interrupted_record(std::string name, Interruption how, const std::string& detail) {
  TestRecord t;
  t.name = std::move(name);
  const std::size_t dot = t.name.find('.');
  t.suite = t.name.substr(0, dot);
  t.test = dot == std::string::npos ? std::string() : t.name.substr(dot + 1);
  t.interrupted = how;
  t.gtest_failed = true;
  t.verdict = Verdict::unavailable;
  switch (how) {
    case Interruption::crashed:
      t.message = "crashed: the test binary died while this test ran";
      break;
    case Interruption::hung:
      t.message = "hung: this test did not finish in time, and heapgate stopped the run";
      break;
    case Interruption::exited:
      t.message = "exited: the test binary exited while this test ran";
      break;
    case Interruption::killed:
      t.message = "killed: the test binary was killed while this test ran";
      break;
    case Interruption::none:
      break;
  }
  if (!detail.empty()) t.message += " (" + detail + ")";
  t.message += "; the tests that finished before it are in the report, and those after it did not run";
  return t;
}

bool operator==(const LiveGrowth& a, const LiveGrowth& b) noexcept {
  return a.live_allocations == b.live_allocations && a.live_bytes == b.live_bytes;
}
bool operator!=(const LiveGrowth& a, const LiveGrowth& b) noexcept { return !(a == b); }

bool operator==(const TestRecord& a, const TestRecord& b) noexcept {
  return a.name == b.name && a.suite == b.suite && a.test == b.test && a.file == b.file && a.line == b.line &&
         a.mode == b.mode && a.estimated == b.estimated && a.metrics == b.metrics && a.baseline == b.baseline &&
         a.baseline_noise == b.baseline_noise && a.thread_parts == b.thread_parts && a.deltas == b.deltas &&
         a.verdict == b.verdict && a.message == b.message && a.stacks == b.stacks && a.profiles == b.profiles &&
         a.duration_ms == b.duration_ms && a.gtest_failed == b.gtest_failed && a.budgets == b.budgets &&
         a.growth == b.growth && a.call_sites == b.call_sites && a.baseline_call_sites == b.baseline_call_sites &&
         a.setup_residue == b.setup_residue && a.released_later == b.released_later &&
         a.not_measured == b.not_measured && a.standard_errors == b.standard_errors &&
         a.call_sites_complete == b.call_sites_complete && a.other_threads == b.other_threads && a.alone == b.alone &&
         a.interrupted == b.interrupted && a.confirmations == b.confirmations && a.samples == b.samples &&
         a.leaks_checked == b.leaks_checked && a.suppressed == b.suppressed;
}

bool operator==(const SuppressedLeak& a, const SuppressedLeak& b) noexcept {
  return a.allocations == b.allocations && a.bytes == b.bytes && a.source == b.source;
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

// All reports agree on total_shards when this runs.
Result<void> check_shards(const std::vector<Report>& reports, MissingShards allow) {
  const int total = reports.front().run.total_shards;
  if (total <= 0) return {};
  const std::string of = " of " + std::to_string(total);
  std::map<int, std::size_t> seen;  // shard index -> report number (1-based)
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const int index = reports[i].run.shard_index;
    if (index < 0 || index >= total) {
      return fail(make_error(ErrorCode::conflict, "run.shard_index",
                             "report " + std::to_string(i + 1) + " is shard " + std::to_string(index) + of +
                                 ", which does not exist (shards count from 0)",
                             "merge the reports the shards of one run wrote"));
    }
    auto [it, inserted] = seen.emplace(index, i + 1);
    if (!inserted) {
      return fail(make_error(ErrorCode::conflict, "run.shard_index",
                             "shard " + std::to_string(index) + of + " is given twice (reports " +
                                 std::to_string(it->second) + " and " + std::to_string(i + 1) + ")",
                             "pass each shard's report once"));
    }
  }
  std::string missing;
  int missing_count = 0;
  for (int index = 0; index < total; ++index) {
    if (seen.count(index) != 0) continue;
    ++missing_count;
    if (missing_count <= 10) missing += (missing.empty() ? "" : ", ") + std::to_string(index);
  }
  if (missing_count == 0 || allow == MissingShards::allow) return {};
  if (missing_count > 10) missing += ", …";
  return fail(make_error(ErrorCode::conflict, "run.shard_index",
                         (missing_count == 1 ? "shard " : "shards ") + missing + of +
                             (missing_count == 1 ? " is" : " are") + " missing: their tests would not be gated",
                         "pass the reports of all " + std::to_string(total) +
                             " shards (did a shard's CI job fail before uploading its report?)"));
}

}  // namespace

Result<Report> merge_reports(const std::vector<Report>& reports, MissingShards missing) {
  if (reports.empty()) {
    return fail(make_error(ErrorCode::invalid_argument, "reports", "nothing to merge", "pass at least one report"));
  }
  Report merged;
  merged.run = reports.front().run;
  std::set<std::string> hosts;
  std::set<std::string> reasons;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const RunInfo& run = reports[i].run;
    for (auto check :
         {agree("binary", merged.run.binary, run.binary, i), agree("build_id", merged.run.build_id, run.build_id, i),
          agree("mode", std::string(to_string(merged.run.mode)), std::string(to_string(run.mode)), i),
          agree("jemalloc_version", merged.run.jemalloc_version, run.jemalloc_version, i),
          agree("total_shards", std::to_string(merged.run.total_shards), std::to_string(run.total_shards), i)}) {
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
  for (const auto& r : reasons)
    merged.run.unavailable_reason += (merged.run.unavailable_reason.empty() ? "" : "; ") + r;
  if (auto shards = check_shards(reports, missing); !shards) return fail(shards.error());
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

}  // namespace heapgate
