// SPDX-License-Identifier: MIT
// may_vary(), spread_request(), run_spread(), take_spread(), learn_spread(): which tests other
// threads allocated in, running them again in a counters child, and keeping the samples.
#include "learned_spread.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace heapgate::harness {
namespace {

// An argument this long still passes exec (Linux allows 128 KiB a string);
// a longer list of names runs the run's own selection instead.
constexpr std::size_t kMostFilterBytes = 64 * 1024;

bool sampled_measurement(const TestRecord& r) {
  return !r.gtest_failed && r.verdict != Verdict::unavailable && r.interrupted == Interruption::none &&
         r.mode != Mode::off;
}

}  // namespace

ChildTests child_tests(std::vector<std::string> names) {
  std::size_t bytes = 0;
  for (const std::string& name : names) bytes += name.size() + 1;
  if (bytes <= kMostFilterBytes) return ChildTests{TestSelection{std::move(names), false}, false};
  return ChildTests{TestSelection{{}, true}, true};
}

bool may_vary(const TestRecord& record) {
  // A test whose only company was its own thread's waits and that allocated
  // nothing has no count the timing moved: it is not run again for it.
  const ThreadShare& share = record.other_threads;
  const bool only_waited = share.allocations == 0 && share.switches == 0;
  if (only_waited && record.metrics.allocations == 0) return false;
  return !share.empty() && record.mode != Mode::sampled && record.mode != Mode::off && !record.gtest_failed &&
         record.interrupted == Interruption::none;
}

std::optional<SpreadRequest> spread_request(const std::vector<const TestRecord*>& tests, int runs_elsewhere) {
  std::vector<std::string> names;
  std::size_t learned = 0;
  // The runs each test still lacks: the exact run that recorded the call
  // sites may have counted the tests it finished (record_call_sites()).
  std::size_t have = static_cast<std::size_t>(kLearnedRuns);
  double milliseconds = 0;
  for (const TestRecord* t : tests) {
    if (!may_vary(*t)) continue;
    names.push_back(t->name);
    ++learned;
    have = std::min(have, t->samples.size());
    milliseconds += t->duration_ms;
  }
  if (learned == 0) return std::nullopt;
  const int wanted = learned_runs_wanted(milliseconds);
  const int runs = wanted - static_cast<int>(have) - runs_elsewhere;
  if (runs <= 0) return std::nullopt;
  SpreadRequest request;
  ChildTests child = child_tests(std::move(names));
  request.selection = std::move(child.selection);
  request.keep_shard = child.keep_shard;
  request.runs = runs;
  request.tests = learned;
  request.runs_elsewhere = static_cast<int>(have) + runs_elsewhere;
  request.wanted = wanted;
  return request;
}

SpreadSamples run_spread(RerunExplainer& explainer, const SpreadRequest& request, std::chrono::seconds budget) {
  sys::ProcessResult outcome;
  Result<Report> report = explainer.samples(request.selection, request.keep_shard, request.runs, budget, &outcome);
  return SpreadSamples{std::move(report), std::move(outcome)};
}

void take_spread(Report& run, const SpreadRequest& request, const SpreadSamples& samples, std::chrono::seconds budget) {
  if (!samples.report) {
    std::fprintf(stderr,
                 "heapgate: the spread of %zu tests other threads allocated in or ran during (or that waited) was not "
                 "learned: %s\n",
                 request.tests, samples.report.error().message().c_str());
    return;
  }
  std::map<std::string, std::vector<const TestRecord*>> by_test;
  for (const TestRecord& s : samples.report->tests) by_test[s.name].push_back(&s);

  std::size_t varied = 0;
  std::size_t short_of_runs = 0;
  for (TestRecord& t : run.tests) {
    if (!may_vary(t)) continue;
    auto it = by_test.find(t.name);
    if (it != by_test.end()) {
      for (const TestRecord* s : it->second) {
        if (sampled_measurement(*s)) t.samples.push_back(Measurement{s->metrics, s->other_threads});
      }
    }
    if (t.samples.size() < static_cast<std::size_t>(request.wanted)) ++short_of_runs;
    for (const Measurement& m : t.samples) {
      if (m.metrics != t.metrics) {
        ++varied;
        break;
      }
    }
  }
  std::fprintf(stderr,
               "heapgate: learned the spread of %zu tests other threads allocated in or ran during, or that waited (%d "
               "more runs each%s): "
               "%zu varied, and their baseline entries keep the band\n",
               request.tests, request.wanted,
               request.runs_elsewhere > 0 ? ", one of them the exact run that recorded the call sites" : "", varied);
  if (short_of_runs > 0) {
    const sys::ProcessResult& outcome = samples.outcome;
    std::string why = outcome.timed_out ? "stopped after its budget of " + std::to_string(budget.count()) + " s"
                      : outcome.term_signal != 0 ? "crashed (signal " + std::to_string(outcome.term_signal) + ")"
                                                 : "ended before them or they failed in it";
    std::fprintf(stderr,
                 "heapgate: %zu of them have fewer than %d more runs (the child that ran them %s); their bands "
                 "are narrower; fix: record again (--heapgate_update_baselines)\n",
                 short_of_runs, request.wanted, why.c_str());
  }
}

void learn_spread(Report& run, RerunExplainer& explainer, std::chrono::seconds budget) {
  std::vector<const TestRecord*> tests;
  for (const TestRecord& t : run.tests) tests.push_back(&t);
  const std::optional<SpreadRequest> request = spread_request(tests, /*runs_elsewhere=*/0);
  if (!request) return;
  const SpreadSamples samples = run_spread(explainer, *request, budget);
  take_spread(run, *request, samples, budget);
}

}  // namespace heapgate::harness
