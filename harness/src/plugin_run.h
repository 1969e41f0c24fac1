// SPDX-License-Identifier: MIT
// What every process of a gated run shares, whichever role it plays: the
// options, what can be measured here, the framework's own cost per test, where
// profiles are kept, and the report being written.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "heapgate/fingerprint.h"
#include "heapgate/face.h"
#include "heapgate/harness.h"
#include "heapgate/metrics.h"
#include "heapgate/report_files.h"
#include "heapgate/normalize.h"
#include "heapgate/symbolizer.h"
#include "kept_profiles.h"

namespace heapgate::harness {

/// Which of a gated run's processes this is. Each role has its own file.
/// The innermost frames the exact run that records call sites keeps of each
/// stack (detail::limit_stack_depth()): a site is a stack's innermost frame
/// of the program's own, well within them.
inline constexpr int kCallSiteFrames = 48;

/// Set in the environment of a child that runs beside this process's tests
/// (RerunExplainer::start_call_sites()) to this process's id: the child ends
/// when this process does, instead of re-running the suite as an orphan.
inline constexpr const char* kDieWithParentVariable = "HEAPGATE_INTERNAL_DIE_WITH_PARENT";

enum class ProcessRole {
  /// The run a user started: judges each test, writes the report and the
  /// baseline (suite_run.cpp).
  suite_run,
  /// `--heapgate_internal_child=N`, started by the suite run to re-run tests
  /// in exact mode: records their stacks for the parent (rerun_child.cpp);
  /// or `--heapgate_internal_samples=K`: records every run of K, samples of
  /// the tests' spread for a baseline being recorded (learned_spread.cpp).
  rerun_child,
  /// `--heapgate_internal_growth=N`: one scope across N runs of one test,
  /// the live blocks after each (growth_child.cpp).
  growth_child,
  /// A process the framework started to run part of a test (a GoogleTest
  /// death test's child, Face::is_framework_child()): runs this binary's
  /// tests too, so it must neither write reports nor touch baselines.
  death_test_child,
};

class PluginRun {
 public:
  /// Decides the role, the mode that can be measured, and the framework's
  /// own cost per test. Says so when nothing can be measured. `face` must
  /// outlive this object.
  PluginRun(Options options, Face& face);

  /// Opens the report (when --heapgate_report asked for one and this process
  /// writes one). `accepting`: this run records its tests as the baseline.
  void open_report(bool accepting);

  const Options& options() const noexcept { return options_; }
  ProcessRole role() const noexcept { return role_; }
  /// The mode this process measures in: off when measuring is impossible.
  Mode mode() const noexcept { return mode_; }
  const std::string& unavailable_reason() const noexcept { return unavailable_reason_; }
  /// Measuring was asked for but is impossible (no jemalloc, no profiling).
  bool cannot_measure() const noexcept;
  /// The suite run records the suite's first run; a child the runs it was asked for.
  bool records_iteration(int iteration) const noexcept;

  const std::string& binary_path() const noexcept { return binary_path_; }
  const std::string& binary_name() const noexcept { return binary_name_; }
  const Fingerprint& fingerprint() const noexcept { return fingerprint_; }
  /// What the framework allocates for every test (docs/design.md §6).
  const Metrics& framework_overhead() const noexcept { return framework_overhead_; }
  Face& face() noexcept { return face_; }
  ProfileKeeper& keeper() noexcept { return keeper_; }
  Symbolizer& symbolizer();
  /// Names this process's profiles' frames with file and line, each once.
  ProfileNormalizer& normalizer();

  ReportWriter* report() noexcept { return writer_ ? &*writer_ : nullptr; }
  /// Why the report that was asked for cannot be written, "" when it can.
  const std::string& report_error() const noexcept { return report_error_; }
  /// Says a report error once per distinct message.
  void say_report_error(const std::string& message);
  /// The record into the framework's own report (Face::record_property()) and into heapgate's.
  void add_record(TestRecord record);
  /// The record's metrics (and verdict) as properties of the current test in
  /// the framework's own report; add_record() does this. Only while a test is current.
  void record_properties(const TestRecord& record, bool with_verdict);

 private:
  Options options_;
  Face& face_;
  ProcessRole role_ = ProcessRole::suite_run;
  Mode mode_ = Mode::off;
  std::string unavailable_reason_;
  std::string binary_path_;
  std::string binary_name_;
  Fingerprint fingerprint_;
  Metrics framework_overhead_;
  ProfileKeeper keeper_;
  std::optional<Symbolizer> symbolizer_;
  std::unique_ptr<ProfileNormalizer> normalizer_;  // after symbolizer_: goes first
  std::optional<ReportWriter> writer_;
  std::string report_error_;
  std::set<std::string> said_report_errors_;
};

}  // namespace heapgate::harness
