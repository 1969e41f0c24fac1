// SPDX-License-Identifier: MIT
// Judging a saved run again (`heapgate compare`, the rejudge property): each
// record back into the Observation it stands for, through judge(), and the
// baseline's tests that did not run.
#include "heapgate/gate.h"

#include <set>
#include <utility>

namespace heapgate {

Observation observation_of(const TestRecord& record) {
  Observation o;
  o.mode = record.mode;
  if (record.verdict != Verdict::unavailable && record.mode != Mode::off) {
    o.metrics = record.metrics;
    o.standard_errors = record.standard_errors;
    o.other_threads = record.other_threads;
  } else {
    o.unavailable_reason = record.message;
  }
  o.own_failure = record.gtest_failed;
  // Complete call sites were measured because the test gates them.
  if (record.call_sites_complete) {
    o.gate_call_sites = true;
    o.call_sites = record.call_sites;
  }
  for (const auto& [name, limit] : record.budgets) {
    if (auto metric = parse_metric_name(name)) o.budgets[*metric] = limit;
  }
  o.leak.growth = record.growth;
  o.not_measured = record.not_measured;
  if (record.legacy_evidence) {
    // A version 1 report kept no evidence: a leak stays a leak, live blocks
    // that were not one stay out of the leak rule, and a regression cleared
    // by a fresh run cannot be told from one that was not.
    if (record.verdict == Verdict::leaked) {
      o.leak.residue = LeakResidue::grows;
    } else {
      o.check_leaks = false;
    }
    return o;
  }
  o.check_leaks = record.leaks_checked;
  if (record.suppressed) {
    o.leak.suppressed = true;
    o.leak.suppressed_allocations = record.suppressed->allocations;
    o.leak.suppressed_bytes = record.suppressed->bytes;
    o.leak.suppressions_source = record.suppressed->source;
  }
  if (record.setup_residue) {
    o.leak.residue = LeakResidue::constant;
    o.leak.released_later = record.released_later;
    o.leak.from_baseline = record.growth.empty() && !record.released_later;  // judged from the baseline, not repeated
  } else if (!record.growth.empty()) {
    o.leak.residue = grows(record.growth) ? LeakResidue::grows : LeakResidue::constant;
  }
  o.confirmations = record.confirmations;
  return o;
}

void judge_run(Report& report, const Baseline& baseline, const GatePolicy& policy, bool whole_run) {
  std::vector<TestRecord> kept;
  for (TestRecord& record : report.tests) {
    auto entry = baseline.tests.find(record.name);
    const BaselineEntry* base = entry == baseline.tests.end() ? nullptr : &entry->second;
    if (record.verdict == Verdict::missing) {
      if (base == nullptr) continue;  // the entry left the baseline too
      record.baseline = base->metrics;
      kept.push_back(std::move(record));
      continue;
    }
    if (record.verdict == Verdict::unavailable || record.verdict == Verdict::skipped) {
      kept.push_back(std::move(record));
      continue;
    }
    const std::string explained = record.message;
    const Verdict before = record.verdict;
    apply(judge(observation_of(record), base, policy), record);
    // A leak's message may carry what the re-run found; keep it.
    if (before == Verdict::leaked && record.verdict == Verdict::leaked) record.message = explained;
    kept.push_back(std::move(record));
  }
  report.tests = std::move(kept);
  if (whole_run) {
    add_missing_tests(report, baseline);
  } else {
    sort_tests(report);
  }
}

std::vector<TestRecord> missing_tests(const Report& report, const Baseline& baseline) {
  std::set<std::string> ran;
  for (const auto& t : report.tests) ran.insert(t.name);
  std::vector<TestRecord> out;
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
    out.push_back(std::move(t));
  }
  return out;
}

void add_missing_tests(Report& report, const Baseline& baseline) {
  for (TestRecord& t : missing_tests(report, baseline)) report.tests.push_back(std::move(t));
  sort_tests(report);
}

}  // namespace heapgate
