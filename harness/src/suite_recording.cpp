// SPDX-License-Identifier: MIT
// SuiteRun's part when the run records a baseline: the call sites of each
// test (one exact run in a child, or side by side with the growth checks
// when sharded), the spread of tests that may vary, and the baseline's write.
// The rest of SuiteRun, the run of the suite itself: suite_run.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "explainers.h"
#include "heapgate/baseline_merge.h"
#include "learned_spread.h"
#include "run_guard.h"
#include "suite_run.h"

namespace heapgate::harness {

bool SuiteRun::lacks_call_sites(const TestRecord& t) const {
  return t.call_sites.empty() && !t.gtest_failed && t.metrics.allocations > 0;
}

bool SuiteRun::wants_call_sites(const std::vector<const TestRecord*>& tests) const {
  if (!run_.options().explain || run_.mode() == Mode::off) return false;
  return std::any_of(tests.begin(), tests.end(), [this](const TestRecord* t) { return lacks_call_sites(*t); });
}

// The exact run that records call sites runs the tests that lack them and
// those it samples for their spread, not a test that allocated nothing: that
// one has no call site, and among tiny tests it may be the longest (one of
// RapidJSON's took 135 ms of its shard's 280 ms and allocated nothing).
ChildTests SuiteRun::call_sites_tests(const std::vector<const TestRecord*>& tests) const {
  std::vector<std::string> names;
  for (const TestRecord* t : tests) {
    if (lacks_call_sites(*t) || may_vary(*t)) names.push_back(t->name);
  }
  return child_tests(std::move(names));
}

// A baseline being recorded keeps each test's call sites, so a later
// regression is explained as the change at each site: one exact run of the
// same tests in a child (only when recording, never on an ordinary run).
// Tests it could not measure are named: a baseline without call sites
// explains a regression with this run's stacks only.
void SuiteRun::record_call_sites() {
  std::vector<const TestRecord*> tests;
  for (const TestRecord& t : records_.tests) tests.push_back(&t);
  if (!wants_call_sites(tests)) return;
  RerunExplainer explainer(run_.options(), run_.binary_path(), run_.symbolizer());
  const ChildTests sites = call_sites_tests(tests);
  take_call_sites(explainer.call_sites(sites.selection, sites.keep_shard, child_budget()));
}

// A sharded run being recorded starts the exact run that records call sites
// before its first test, so that it runs beside this shard's tests instead
// of after them: its tests are the shard's, all of them (which allocate is
// not known yet). It is the longest of the recording's children, a second
// run of every test; after the last test it used to add the shard's own
// time again. No thread of this process waits for it, so what this process
// measures sees no more threads or switches than before. An unsharded run
// starts it after its last test (record_call_sites()): two copies of a suite
// that binds fixed ports or paths must not run at once.
void SuiteRun::start_call_sites_beside_tests() {
  if (!accepting() || run_.mode() == Mode::off || !run_.options().explain || !run_is_sharded(run_.face())) return;
  call_sites_explainer_ = std::make_unique<RerunExplainer>(run_.options(), run_.binary_path(), run_.symbolizer());
  call_sites_explainer_->use_own_temp_dirs();
  auto started = call_sites_explainer_->start_call_sites(TestSelection{{}, true}, /*keep_shard=*/true);
  if (!started) {
    // After the last test instead, as an unsharded run does.
    std::fprintf(stderr, "heapgate: the call-sites run could not start beside the tests (%s); it runs after them\n",
                 started.error().message().c_str());
    call_sites_explainer_.reset();
    return;
  }
  call_sites_child_ = std::move(*started);
}

// The children of a baseline being recorded, side by side with each other
// and with the growth checks judge_deferred() runs next, when the run is
// sharded (recording_children.h says why only then). Their tests are those
// judged and those still waiting for their leak check.
void SuiteRun::start_recording_children() {
  if (recording_children_started_ || !accepting() || run_.mode() == Mode::off || !run_is_sharded(run_.face())) return;
  recording_children_started_ = true;
  std::vector<const TestRecord*> tests;
  for (const TestRecord& t : records_.tests) tests.push_back(&t);
  for (const DeferredLeakCheck& d : deferred_) tests.push_back(&d.record);
  const bool sites = !call_sites_child_ && wants_call_sites(tests);
  // The exact run counts each test it finishes as one of the spread's runs.
  std::optional<SpreadRequest> spread;
  if (run_.options().learn_spread) {
    spread = spread_request(tests, sites || call_sites_child_ ? 1 : 0);
  }
  if (!sites && !spread) return;
  recording_children_ = std::make_unique<RecordingChildren>(
      run_.options(), run_.binary_path(), run_.symbolizer(),
      sites ? std::optional<ChildTests>(call_sites_tests(tests)) : std::nullopt, std::move(spread), child_budget());
}

void SuiteRun::take_call_sites(Result<RerunExplainer::RecordedCallSites> sites) {
  std::string why;
  std::vector<std::string> lacking;
  if (!sites) {
    why = sites.error().message();
    for (const auto& t : records_.tests) {
      if (lacks_call_sites(t)) lacking.push_back(t.name);
    }
  } else {
    for (auto& t : records_.tests) {
      auto it = sites->tests.find(t.name);
      if (it == sites->tests.end()) {
        if (lacks_call_sites(t)) lacking.push_back(t.name);
      } else {
        if (t.call_sites.empty()) {
          t.call_sites = it->second.sites;
          t.call_sites_complete = it->second.complete;
        }
        // A second measurement of every test, in a fresh process, at no
        // extra cost: a test whose counts differ between the two varies by
        // itself (a buffer sized by timing, a random name), whether or not
        // another thread ran, and its entry keeps the band; one that repeats
        // is judged exactly (docs/design.md §6a, "Learned on the first run").
        if (it->second.metrics && !t.gtest_failed) t.samples.push_back(*it->second.metrics);
      }
    }
    why = "the exact run that records them " + (sites->cut_short.empty() ? "did not run them" : sites->cut_short);
  }
  if (lacking.empty()) return;
  std::string names;
  for (std::size_t i = 0; i < lacking.size() && i < 5; ++i) names += (i == 0 ? "" : ", ") + lacking[i];
  if (lacking.size() > 5) names += " and " + std::to_string(lacking.size() - 5) + " more";
  std::fprintf(stderr,
               "heapgate: the baseline records no call sites for %zu of %zu tests (%s): %s; a regression in them is "
               "explained by this run's stacks only; fix: record again (--heapgate_update_baselines)\n",
               lacking.size(), records_.tests.size(), names.c_str(), why.c_str());
}

// How long a child that runs the whole suite again may take: it only stops
// one that hangs.
std::chrono::seconds SuiteRun::child_budget() const {
  const auto suite_time = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_);
  return std::max(std::chrono::seconds(kCallSitesMinimumSeconds), kCallSitesBudgetFactor * suite_time);
}

// What this run writes into the baseline: the one baseline writer decides
// (heapgate/baseline_merge.h); this says what it did.
void SuiteRun::record_baseline() {
  const bool existed = baseline_.exists;
  if (baseline_entries(records_).empty()) return;
  if (run_is_sharded(run_.face())) {
    // Shards write one baseline file concurrently, each with its own tests:
    // the last rename would win and drop the others' entries.
    std::fprintf(stderr,
                 "heapgate: sharded run: %s not %s; accept the merged report with "
                 "`heapgate accept` (heapgate run does this for a new baseline)\n",
                 baseline_path_.c_str(), existed ? "updated" : "created");
    return;
  }
  BaselineMergeRules rules;
  rules.author = existed ? BaselineAuthor::update : BaselineAuthor::first_run;
  const BaselineMerge write = merge_run_into(baseline_, records_, rules);
  if (write.blocked.empty()) {
    if (auto written = write_baseline(baseline_path_, baseline_); !written) {
      std::fprintf(stderr, "heapgate: %s\n", written.error().message().c_str());
      guard_exit_status(exit_status(GateExit::usage));
      return;
    }
  }
  std::fprintf(stderr, "heapgate: %s\n", describe_baseline_write(baseline_path_, existed, write).c_str());
}

}  // namespace heapgate::harness
