// SPDX-License-Identifier: MIT
// SuiteRun: loads suppressions and the baseline, judges each test through gate_test(), defers
// some leak checks to the run's end, then finishes the report and, when recording, the baseline.
#include "suite_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "explainers.h"
#include "heapgate/baseline_merge.h"
#include "heapgate/explain.h"
#include "heapgate/gate.h"
#include "heapgate/integration.h"
#include "learned_spread.h"
#include "measured_test.h"
#include "run_guard.h"
#include "test_requests.h"

namespace heapgate::harness {
namespace {

[[noreturn]] void setup_failed(const Error& error) {
  std::fprintf(stderr, "heapgate: %s\n", error.message().c_str());
  std::fflush(stderr);
  std::exit(exit_status(GateExit::usage));
}

// Only an unfiltered, unsharded run can tell that a test is missing.
bool whole_suite_ran(const Face& face) { return face.runs_whole_suite() && !face.shard(); }

// What the test itself asked of the gate, with what it measured.
Observation observation_of_test(const TestRecord& record, const Options& options) {
  Observation observation;
  observation.mode = record.mode;
  observation.metrics = record.metrics;
  observation.standard_errors = record.standard_errors;
  observation.other_threads = record.other_threads;
  observation.not_measured = record.not_measured;
  observation.own_failure = record.gtest_failed;
  for (std::size_t i = 0; i < kMetricCount; ++i) {
    if (test_requests().limited[i]) observation.budgets[static_cast<MetricName>(i)] = test_requests().limits[i];
  }
  if (test_requests().leak_check != -1) observation.check_leaks = test_requests().leak_check == 1;
  observation.gate_call_sites = gates_call_sites(record.name, options);
  return observation;
}

// The test left more live than its baseline entry. Not "beyond tolerance":
// a block within the allowance other threads' activity earns the comparison
// is still what the leak check repeats the test for, and a block a worker
// frees just after the test returned must be seen freed before that
// (Untuned.BlocksAWorkerFreesAfterTheTestReturnedAreNotLive failed under
// load when two switches of other threads allowed the one live block).
bool live_beyond_baseline(const Observation& observation, const BaselineEntry* baseline) {
  if (baseline == nullptr || !observation.metrics) return false;
  return observation.metrics->live_allocations > baseline->metrics.live_allocations ||
         observation.metrics->live_bytes > baseline->metrics.live_bytes;
}

}  // namespace

bool run_is_sharded(const Face& face) { return face.shard().has_value(); }

SuiteRun::SuiteRun(PluginRun& run) : run_(run), started_(std::chrono::steady_clock::now()) {
  const Options& options = run_.options();
  if (options.libc_suppressions) suppressions_ = c_library_suppressions();
  if (!options.suppressions_path.empty()) {
    auto suppressions = read_suppressions(options.suppressions_path);
    if (!suppressions) setup_failed(suppressions.error());
    suppressions_ = combine(std::move(suppressions_), *suppressions);
  }
  if (!options.baselines_dir.empty()) {
    auto path = baseline_path(options.baselines_dir, run_.binary_name(), run_.binary_path());
    if (!path) setup_failed(path.error());
    baseline_path_ = std::move(*path);
    auto loaded = read_baseline(baseline_path_);
    if (!loaded) setup_failed(loaded.error());
    baseline_ = std::move(*loaded);
    baseline_.binary = run_.binary_name();
  }
  records_.run.fingerprint = run_.fingerprint();
  if (baseline_.exists && options.fingerprint != FingerprintCheck::ignore) {
    environment_change_ =
        describe_fingerprint_change(fingerprint_differences(baseline_.fingerprint, run_.fingerprint()));
    if (!environment_change_.empty()) {
      std::fprintf(stderr, "heapgate: %s: %s (--heapgate_fingerprint=%s)\n", baseline_path_.c_str(),
                   environment_change_.c_str(), std::string(to_string(options.fingerprint)).c_str());
    }
  }
}

bool SuiteRun::accepting() const {
  return !baseline_path_.empty() && run_records_baseline(baseline_.exists, run_.options().update_baselines);
}

void SuiteRun::guard() {
  // A test that crashes, hangs, exits or is killed ends the run, never its record.
  RunGuardOptions guard;
  guard.journal_fd = run_.report() != nullptr ? run_.report()->journal_fd() : -1;
  guard.timeout = std::chrono::seconds(run_.options().test_timeout_seconds);
  guard.finish_interrupted = [this](TestRecord record) { finish_interrupted(std::move(record)); };
  start_run_guard(std::move(guard));
  start_call_sites_beside_tests();
}

void SuiteRun::test_started(const std::string& name) {
  guard_test_started(name);
  if (first_test_.empty()) first_test_ = name;
  // Until the deferred checks read them (judge_deferred()).
  detail::follow_frees_between_windows(true);
}

void SuiteRun::test_ended() { guard_test_ended(); }

const BaselineEntry* SuiteRun::baseline_entry(const std::string& test) const {
  if (baseline_path_.empty()) return nullptr;
  auto it = baseline_.tests.find(test);
  return it == baseline_.tests.end() ? nullptr : &it->second;
}

GatePolicy SuiteRun::policy() const {
  const Options& options = run_.options();
  GatePolicy policy;
  policy.check_leaks = options.check_leaks;
  policy.strict = options.strict;
  policy.compare_baseline = !baseline_path_.empty();
  policy.environment_change = environment_change_;
  policy.accepting = accepting();
  return policy;
}

void SuiteRun::judge(TestRecord record, std::uint32_t counting_window) {
  Observation observation = observation_of_test(record, run_.options());
  const GatePolicy gate_policy = policy();
  // Live blocks at the end of a test are a leak only if nothing frees them:
  // blocks a later test frees (a fixture's shared object replaced, a
  // background thread's buffer recycled) were held. Judged after the last
  // test, the run itself tells, where repeating the test in a child would
  // cost its run time again (docs/design.md §6a, "Held or leaked").
  // Only while recording a baseline, where repeating every such test made the
  // first run cost several times the suite; later runs judge from the
  // baseline's setup record, and a failure found at the end of the run is
  // GoogleTest's failure of the run, not of the test.
  if (counting_window != 0 && accepting() && record.mode == Mode::counters &&
      leak_suspected(observation, gate_policy) && !setup_residue_known(observation, baseline_entry(record.name))) {
    defer(std::move(record), std::move(observation), counting_window, /*settle=*/false);
    return;
  }
  // A gated run: live blocks beyond the baseline's, while threads other than
  // the test's and heapgate's watchdog are alive, may be theirs to free. A pool's
  // worker that drops the test's last reference just after the test returned
  // frees it a moment later (two blocks live at the end in some runs, none in
  // others). Judged after the last test, from
  // what was freed by then; frees between tests are followed too.
  if (counting_window != 0 && !accepting() && record.mode == Mode::counters &&
      live_beyond_baseline(observation, baseline_entry(record.name)) && process_threads() > 1 + guard_threads()) {
    defer(std::move(record), std::move(observation), counting_window, /*settle=*/true);
    return;
  }
  finish_judging(std::move(record), std::move(observation), /*journaled=*/false);
}

void SuiteRun::finish_judging(TestRecord record, Observation observation, bool journaled, const std::string& note) {
  const Options& options = run_.options();
  const BaselineEntry* base = baseline_entry(record.name);
  const GatePolicy policy = this->policy();
  RerunExplainer explainer(options, run_.binary_path(), run_.symbolizer());
  const std::string own_profile = record.profiles.empty() ? std::string() : record.profiles.front();
  if (!own_profile.empty()) explainer.set_own_profile(own_profile);
  explainer.set_gate_call_sites(observation.gate_call_sites);
  explainer.set_first_in_process(record.name == first_test_, base);
  const auto judging_started = std::chrono::steady_clock::now();
  const std::string failure = gate_test(record, std::move(observation), base, policy, explainer, suppressions_,
                                        ExplainOptions{options.top_stacks, options.explain, options.leak_repetitions,
                                                       options.confirm_runs, measures_alone(record.name, options)});
  judging_ += std::chrono::steady_clock::now() - judging_started;
  if (!note.empty()) record.message += (record.message.empty() ? "" : "\n") + note;
  // Before the explainer goes, and its children's directories with it.
  run_.keeper().keep(record, own_profile);
  if (!failure.empty()) run_.face().add_failure(record.file.empty() ? "unknown" : record.file, record.line, failure);
  if (!journaled) {
    add(std::move(record));
    return;
  }
  // Its pending record is in the report already: replaced, not added twice.
  records_.tests.push_back(record);
  if (ReportWriter* report = run_.report()) {
    for (TestRecord& r : report->records()) {
      if (r.name == record.name && r.verdict == Verdict::unavailable) {
        r = std::move(record);
        break;
      }
    }
  }
}

void SuiteRun::add(TestRecord record) {
  records_.tests.push_back(record);
  run_.add_record(std::move(record));
}

// GoogleTest decides the exit status after each iteration: a failure added
// here, outside any test, fails the run (every face's add_failure() does).
void SuiteRun::iteration_end() {
  start_recording_children();
  judge_deferred();
  if (!run_.report_error().empty()) {
    run_.face().add_failure("", 0, "heapgate: no report: " + run_.report_error());
    // Also where `heapgate run` and a reader of stderr look for it.
    std::fprintf(stderr, "heapgate: no report: %s\n", run_.report_error().c_str());
  }
  if (run_.options().fingerprint == FingerprintCheck::strict && !environment_change_.empty()) {
    run_.face().add_failure("", 0,
                            "heapgate: " + environment_change_ +
                                "; fix: record the baselines in this environment (--heapgate_update_baselines or "
                                "heapgate accept), or run with --heapgate_fingerprint=warn");
  }
}

// The run guard's end of a run whose test never finished: that test's
// record, then the report as it stands, incomplete. Baselines stay as they are.
void SuiteRun::finish_interrupted(TestRecord record) {
  // Deferred leak checks stay as journaled: not judged.
  deferred_.clear();
  if (call_sites_child_) sys::kill_process_group(call_sites_child_->process);
  std::fprintf(stderr, "heapgate: %s: %s\n", record.name.c_str(), record.message.c_str());
  ReportWriter* report = run_.report();
  if (report == nullptr) return;
  // A journal that cannot be written keeps its error; finish() reports it.
  (void)report->add(std::move(record));
  if (auto done = report->finish(/*complete=*/false); !done) run_.say_report_error(done.error().message());
}

void SuiteRun::end() {
  // Said again last, where a reader of the log looks for the verdict.
  if (run_.cannot_measure()) {
    std::fprintf(stderr, "heapgate: nothing was measured: %s\n", run_.unavailable_reason().c_str());
  }
  ReportWriter* report = run_.report();
  if (report != nullptr && !baseline_path_.empty() && baseline_.exists && whole_suite_ran(run_.face())) {
    // Baseline entries of tests that no longer exist: reported, not failed,
    // so a removed test is noticed and its entry can be dropped on review.
    // (add()'s error is kept and reported by finish().)
    for (TestRecord& missing : missing_tests(records_, baseline_)) (void)report->add(std::move(missing));
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point tests_ended = Clock::now();
  Clock::duration recording_sites{};
  Clock::duration learning_spread{};
  bool side_by_side = false;
  if (accepting() && (recording_children_ || call_sites_child_)) {
    // Started before the first test (start_call_sites_beside_tests()) or
    // after the last (start_recording_children()): what is left of them is
    // waited for here.
    side_by_side = true;
    if (call_sites_child_) {
      take_call_sites(call_sites_explainer_->finish_call_sites(*call_sites_child_, child_budget()));
      recording_sites = Clock::now() - tests_ended;
      call_sites_child_.reset();
      call_sites_explainer_.reset();
    }
    if (recording_children_) {
      if (auto sites = recording_children_->call_sites()) {
        take_call_sites(std::move(sites->value));
        recording_sites = sites->took;
      }
      if (auto spread = recording_children_->spread()) {
        take_spread(records_, *recording_children_->spread_request(), spread->value, child_budget());
        learning_spread = spread->took;
      }
      recording_children_.reset();
    }
  } else if (accepting()) {
    // Also when sharded: the shards' reports then carry the call sites and
    // the samples into the baseline `heapgate run` or `heapgate accept`
    // writes from them.
    record_call_sites();
    recording_sites = Clock::now() - tests_ended;
    if (run_.mode() != Mode::off && run_.options().learn_spread) {
      RerunExplainer explainer(run_.options(), run_.binary_path(), run_.symbolizer());
      learn_spread(records_, explainer, child_budget());
    }
    learning_spread = Clock::now() - tests_ended - recording_sites;
  }
  if (accepting()) {
    if (report != nullptr) {
      std::map<std::string, const TestRecord*> by_name;
      for (const auto& t : records_.tests) by_name[t.name] = &t;
      for (auto& t : report->records()) {
        auto it = by_name.find(t.name);
        if (it == by_name.end()) continue;
        if (t.call_sites.empty()) {
          t.call_sites = it->second->call_sites;
          t.call_sites_complete = it->second->call_sites_complete;
        }
        t.samples = it->second->samples;
      }
    }
  }
  if (report != nullptr) {
    if (auto done = report->finish(); !done) {
      run_.say_report_error(done.error().message());
      // A run that asked for a report must not pass without one.
      guard_exit_status(exit_status(GateExit::usage));
    }
  }
  if (run_.keeper().kept() > 0) {
    std::fprintf(stderr, "heapgate: kept %zu heap profile%s (named in the report) in %s\n", run_.keeper().kept(),
                 run_.keeper().kept() == 1 ? "" : "s", run_.keeper().dir().c_str());
  }
  say_where_time_went(tests_ended - started_, recording_sites, learning_spread, side_by_side);
  if (accepting()) record_baseline();
}

// What the gate cost beyond the tests, so a slow first run says why.
void SuiteRun::say_where_time_went(std::chrono::steady_clock::duration suite, std::chrono::steady_clock::duration sites,
                                   std::chrono::steady_clock::duration spread, bool side_by_side) const {
  auto seconds = [](std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const double judging = seconds(judging_);
  if (judging + seconds(sites) + seconds(spread) < 1.0) return;
  std::string parts;
  auto part = [&](double s, const char* what) {
    if (s < 0.05) return;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%.1f s %s", parts.empty() ? "" : ", ", s, what);
    parts += buf;
  };
  part(judging, "re-running tests while judging (explanations, growth checks, confirmations)");
  part(seconds(sites), "recording call sites");
  part(seconds(spread), "learning the spread of tests with other threads");
  std::fprintf(stderr, "heapgate: the tests took %.1f s; beyond them: %s%s\n", seconds(suite) - judging, parts.c_str(),
               side_by_side ? " (these two side by side, while the tests were judged)" : "");
}

}  // namespace heapgate::harness
