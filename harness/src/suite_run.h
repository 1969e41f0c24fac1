// SPDX-License-Identifier: MIT
// The suite run: the process a user started. It judges each test against
// budgets, leaks and the stored baseline (the gate decides, heapgate/explain.h;
// this role asks and reports), guards the run against tests that crash or
// hang, and at the end writes the report and, when recording, the baseline
// (its recording part: suite_recording.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/gate.h"
#include "heapgate/report.h"
#include "heapgate/suppressions.h"
#include "explainers.h"
#include "plugin_run.h"
#include "recording_children.h"

namespace heapgate::harness {

/// Whether this process runs one shard of a sharded run (Face::shard()).
bool run_is_sharded(const Face& face);

class SuiteRun {
 public:
  /// Reads the suppressions and the baseline, and compares this run's
  /// environment with the baseline's. A setup error stops the run before any
  /// test (exit 2): a gate that cannot read its suppressions or baseline must
  /// not pass or fail tests for the wrong reason.
  explicit SuiteRun(PluginRun& run);
  SuiteRun(const SuiteRun&) = delete;
  SuiteRun& operator=(const SuiteRun&) = delete;

  /// This run records its tests as the baseline while it judges them.
  bool accepting() const;
  /// Installs the run guard; after the report is open (its journal). A
  /// sharded run being recorded then starts its call-sites child.
  void guard();

  void test_started(const std::string& name);
  void test_ended();
  /// A measured test's verdict: the record gets it, and a failure becomes
  /// GoogleTest's failure of the test. Then the record goes to the report.
  /// A test that ends with live blocks (and no baseline says they are setup)
  /// in a run that records the baseline is judged after the last test
  /// instead, from whether later tests freed them (`counting_window`:
  /// ScopeResult::counting_window, 0 for none). So is a gated test whose live
  /// blocks went beyond the baseline's while other threads were alive: the
  /// blocks those threads freed after it ended do not count as live.
  void judge(TestRecord record, std::uint32_t counting_window = 0);
  /// A record the gate has already judged (nothing could be measured).
  void add(TestRecord record);
  /// After the suite's first run: failures of the run, not of a test.
  void iteration_end();
  /// The end of the program: missing tests, call sites for a baseline being
  /// recorded, the report, then the baseline.
  void end();

 private:
  struct DeferredLeakCheck {
    TestRecord record;
    Observation observation;  // taken at the test's end: its requests are gone after it
    std::uint32_t counting_window = 0;
    // A gated run's test whose live blocks went beyond the baseline's while
    // other threads were alive: what they freed after it ended is not live.
    bool settle = false;
  };
  const BaselineEntry* baseline_entry(const std::string& test) const;
  GatePolicy policy() const;
  void judge_deferred();
  // The gate's verdict for one test; `journaled`: its pending record is in the report already.
  // `note`: a line the message gets after the gate's.
  void finish_judging(TestRecord record, Observation observation, bool journaled, const std::string& note = {});
  void defer(TestRecord record, Observation observation, std::uint32_t counting_window, bool settle);
  void finish_interrupted(TestRecord record);
  // The tests a baseline being recorded takes call sites for: those that
  // allocated, passed, and have none yet.
  bool lacks_call_sites(const TestRecord& t) const;
  bool wants_call_sites(const std::vector<const TestRecord*>& tests) const;
  ChildTests call_sites_tests(const std::vector<const TestRecord*>& tests) const;
  void record_call_sites();
  void take_call_sites(Result<RerunExplainer::RecordedCallSites> sites);
  void start_call_sites_beside_tests();
  void start_recording_children();
  std::chrono::seconds child_budget() const;
  void record_baseline();
  void say_where_time_went(std::chrono::steady_clock::duration suite, std::chrono::steady_clock::duration sites,
                           std::chrono::steady_clock::duration spread, bool side_by_side) const;

  PluginRun& run_;
  std::string baseline_path_;  // "" without --heapgate_baselines
  Baseline baseline_;
  Suppressions suppressions_;
  Report records_;                  // this run's records, for the baseline and the missing tests
  std::string environment_change_;  // how this run's environment differs from the baseline's, "" when it does not
  std::chrono::steady_clock::time_point started_;
  // Time spent in gate_test() (re-runs that explain, growth checks, confirmations).
  std::chrono::steady_clock::duration judging_{};
  std::vector<DeferredLeakCheck> deferred_;
  // The first test that started in this process: it paid what the process
  // sets up once, as only a fresh process's first run of it does.
  std::string first_test_;
  // A sharded run being recorded: the exact child that records call sites,
  // started before the first test and taken by end().
  std::unique_ptr<RerunExplainer> call_sites_explainer_;
  std::optional<RerunExplainer::StartedCallSites> call_sites_child_;
  // Started after the last test of a sharded run being recorded; taken by end().
  std::unique_ptr<RecordingChildren> recording_children_;
  bool recording_children_started_ = false;
};

}  // namespace heapgate::harness
