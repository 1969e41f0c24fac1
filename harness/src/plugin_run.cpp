// SPDX-License-Identifier: MIT
// PluginRun: works out this process's role (suite run, re-run, growth or framework child), what
// it can measure, the framework's own cost per test and where profiles go; opens the report.
#include "plugin_run.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "explainers.h"
#include "heapgate/gate.h"
#include "heapgate/integration.h"
#include "heapgate/profile_scope.h"
#include "heapgate/sys.h"
#include "test_requests.h"

namespace heapgate::harness {
namespace {

std::string base_name(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

ProcessRole role_of(const Options& options, const Face& face) {
  if (face.is_framework_child()) return ProcessRole::death_test_child;
  if (options.growth_child > 0) return ProcessRole::growth_child;
  if (options.child_iteration > 0 || options.sample_runs > 0) return ProcessRole::rerun_child;
  return ProcessRole::suite_run;
}

// Where the profiles a report names go: --heapgate_profiles, else beside the
// report. A death test's child keeps none.
std::string keep_dir_of(const Options& options, ProcessRole role, const std::string& binary_name) {
  if (role == ProcessRole::death_test_child) return {};
  if (!options.profiles_dir.empty()) return options.profiles_dir;
  if (!options.report_dir.empty()) return options.report_dir + "/profiles/" + binary_name;
  return {};
}

// kDieWithParentVariable: this child ends with the process that started it.
void die_with_parent() {
  const char* parent = std::getenv(kDieWithParentVariable);
  if (parent == nullptr) return;
  const long expected = std::atol(parent);
  // Its own children (growth checks) end with it, not with its parent.
  ::unsetenv(kDieWithParentVariable);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have ended before the request above took effect.
  if (static_cast<long>(::getppid()) != expected) std::_Exit(exit_status(GateExit::usage));
}

}  // namespace

PluginRun::PluginRun(Options options, Face& face)
    : options_(std::move(options)), face_(face), role_(role_of(options_, face_)) {
  if (role_ == ProcessRole::rerun_child) die_with_parent();
  if (options_.call_sites_only) detail::limit_stack_depth(kCallSiteFrames);
  binary_path_ = sys::self_exe_path().value_or("");
  binary_name_ = base_name(binary_path_);
  keeper_ = ProfileKeeper(keep_dir_of(options_, role_, binary_name_));
  if (options_.mode == Mode::off) {
    unavailable_reason_ = "heapgate is switched off (--heapgate_mode=off)";
  } else if (auto usable = allocator_status().check(options_.mode); !usable) {
    unavailable_reason_ = usable.error().message();
  } else {
    mode_ = options_.mode;
  }
  if (mode_ != Mode::off) framework_overhead_ = face_.per_test_overhead(mode_);
  if (cannot_measure()) std::fprintf(stderr, "heapgate: nothing is measured: %s\n", unavailable_reason_.c_str());
  fingerprint_ = runtime_fingerprint();
  HEAPGATE_ADD_BUILD_FINGERPRINT(fingerprint_);
}

void PluginRun::open_report(bool accepting) {
  if (options_.report_dir.empty() || role_ == ProcessRole::death_test_child) return;
  RunInfo run;
  run.binary = binary_name_;
  run.mode = mode_;
  run.jemalloc_version = allocator_status().version;
  run.fingerprint = fingerprint_;
  run.strict = options_.strict;
  run.unavailable_reason = mode_ == Mode::off ? unavailable_reason_ : "";
  run.accepting = accepting;
  if (const std::optional<Shard> shard = face_.shard()) {
    run.total_shards = shard->total;
    run.shard_index = shard->index;
  }
  writer_.emplace(options_.report_dir, report_stem(binary_name_, run.shard_index, run.total_shards), run);
  // A CI job that asked for a report must not pass without one.
  if (writer_->error()) report_error_ = writer_->error()->message();
}

bool PluginRun::cannot_measure() const noexcept {
  return options_.mode != Mode::off && mode_ == Mode::off && role_ == ProcessRole::suite_run;
}

bool PluginRun::records_iteration(int iteration) const noexcept {
  switch (role_) {
    case ProcessRole::growth_child:
      return iteration < options_.growth_child;
    case ProcessRole::rerun_child:
      return options_.sample_runs > 0 ? iteration < options_.sample_runs : iteration + 1 == options_.child_iteration;
    case ProcessRole::suite_run:
      return iteration == 0;
    case ProcessRole::death_test_child:
      return false;
  }
  return false;
}

Symbolizer& PluginRun::symbolizer() {
  if (!symbolizer_) symbolizer_.emplace();
  return *symbolizer_;
}

ProfileNormalizer& PluginRun::normalizer() {
  if (!normalizer_) normalizer_ = std::make_unique<ProfileNormalizer>(symbolizer(), with_lines());
  return *normalizer_;
}

void PluginRun::say_report_error(const std::string& message) {
  if (!said_report_errors_.insert(message).second) return;
  if (message == report_error_) return;  // the run's failure already says it
  std::fprintf(stderr, "heapgate: %s\n", message.c_str());
}

void PluginRun::record_properties(const TestRecord& record, bool with_verdict) {
  // In GoogleTest's own XML, metrics become <property> elements of the
  // <testcase> (GoogleTest 1.12 on Debian 12; older versions wrote
  // attributes; docs/platform-facts.md §1).
  if (record.verdict != Verdict::unavailable || !with_verdict) {
    for (std::size_t i = 0; i < kMetricCount; ++i) {
      auto metric = static_cast<MetricName>(i);
      if (!is_measured(record.not_measured, metric)) continue;
      face_.record_property("heapgate." + std::string(to_string(metric)), std::to_string(get(record.metrics, metric)));
    }
  }
  if (with_verdict) face_.record_property("heapgate.verdict", std::string(to_string(record.verdict)));
}

void PluginRun::add_record(TestRecord record) {
  record_properties(record, /*with_verdict=*/true);
  if (writer_) {
    if (auto added = writer_->add(std::move(record)); !added) say_report_error(added.error().message());
  }
}

}  // namespace heapgate::harness
