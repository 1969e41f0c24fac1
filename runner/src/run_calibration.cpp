// SPDX-License-Identifier: MIT
// `heapgate run --calibrate N`: baselines recorded from several runs.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "heapgate/baseline.h"
#include "heapgate/baseline_merge.h"
#include "heapgate/gate.h"
#include "output.h"
#include "run_options.h"

namespace heapgate::runner {
namespace {

// The widest relative spread of a noisy test, for the summary: "allocations 27701–29736 (7.3%)".
std::string widest_spread(const BaselineEntry& entry) {
  std::string text;
  double widest = -1;
  for (MetricName m : kMetricNames) {
    const std::uint64_t width = spread(*entry.noise, m);
    if (width == 0) continue;
    const std::uint64_t median = get(entry.metrics, m);
    const double relative = median == 0 ? 1.0 : static_cast<double>(width) / static_cast<double>(median);
    if (relative <= widest) continue;
    widest = relative;
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%", 100 * relative);
    text = std::string(to_string(m)) + " " + std::to_string(get(entry.noise->low, m)) + "–" +
           std::to_string(get(entry.noise->high, m)) + (median == 0 ? "" : " (" + std::string(percent) + ")");
  }
  return text;
}

// The tests whose counts the calibration runs so far showed to follow timing
// (timing_bound()), every binary's, as a GoogleTest filter: "A.B:C.D".
std::string timing_bound_tests(const std::map<std::string, std::vector<Report>>& runs_of) {
  std::string names;
  for (const auto& [binary, runs] : runs_of) {
    if (runs.size() < 2) continue;
    for (const auto& [name, entry] : calibrated_entries(runs)) {
      if (entry.noise && timing_bound(*entry.noise)) names += (names.empty() ? "" : ":") + name;
    }
  }
  // One argument must stay well below the kernel's 128 KiB limit; past that,
  // measuring them alone costs time, not correctness.
  return names.size() <= 64 * 1024 ? names : std::string();
}

}  // namespace

// --calibrate N: N runs of the same build, each recording into a baseline of
// its own (so no run judges against another), then one baseline per binary
// with each test's median and, where the runs disagreed, its noise band.
int run_calibration(const RunOptions& options) {
  if (options.calibrate < 2) {
    return bad_option("--calibrate", std::to_string(options.calibrate) + " runs cannot show a spread",
                      "use --calibrate 2 or more (5 is a good start)");
  }
  std::map<std::string, std::vector<Report>> runs_of;
  for (int i = 1; i <= options.calibrate; ++i) {
    RunOptions once = options;
    once.calibrate = 0;
    once.report = options.report + "/calibrate-" + std::to_string(i);
    once.baselines = once.report + "/baselines";
    // Runs that record a baseline are not a commit's measurement: not history.
    once.history.clear();
    once.allow_unmeasured = true;
    // Call sites, explanations and each test alone once are enough: later
    // runs only count. None learns a test's spread in runs of its own: the
    // calibration's runs are the samples. The last run measures each test
    // alone, except those the runs before it showed to follow timing: only
    // their leaks are gated, so a run alone tells nothing, and such a test
    // works for as long as it is given (40 s twice over in a fresh process).
    once.plugin_flags.push_back("--heapgate_learn_spread=false");
    if (i > 1) once.plugin_flags.push_back("--heapgate_explain=false");
    if (i == options.calibrate) {
      once.plugin_flags.push_back("--heapgate_measure_alone");
      const std::string skip = timing_bound_tests(runs_of);
      if (!skip.empty()) once.plugin_flags.push_back("--heapgate_measure_alone_skip=" + skip);
    }
    std::printf("heapgate: calibration run %d of %d\n", i, options.calibrate);
    std::fflush(stdout);
    std::vector<Report> reports;
    if (int code = run_all(once, &reports); code == exit_status(GateExit::usage)) return code;
    for (Report& report : reports) runs_of[report.run.binary].push_back(std::move(report));
  }
  for (const auto& [binary, runs] : runs_of) {
    auto checked = baseline_path(options.baselines, binary, "--calibrate");
    if (!checked) return bad_input(checked.error());
    const std::string& path = *checked;
    auto baseline = read_baseline(path);
    if (!baseline) return bad_input(baseline.error());
    baseline->binary = binary;
    BaselineMergeRules rules;
    rules.author = BaselineAuthor::calibrate;
    const BaselineMerge write = merge_runs_into(*baseline, runs, rules);
    if (!write.blocked.empty()) {
      return bad_input(
          make_error(ErrorCode::invalid_argument, path, "not calibrated: " + write.blocked, write.blocked_fix));
    }
    const std::map<std::string, BaselineEntry> entries = calibrated_entries(runs);
    std::vector<std::pair<std::string, std::string>> noisy;
    for (const auto& [name, entry] : entries) {
      if (entry.noise) noisy.emplace_back(name, widest_spread(entry));
    }
    if (auto written = write_baseline(path, *baseline); !written) return bad_input(written.error());
    std::printf("%s: calibrated from %zu runs: %zu tests, %zu deterministic, %zu noisy\n", path.c_str(), runs.size(),
                entries.size(), entries.size() - noisy.size(), noisy.size());
    for (const auto& [name, text] : noisy) std::printf("  noisy %s: %s\n", name.c_str(), text.c_str());
  }
  std::fflush(stdout);
  return exit_status(GateExit::ok);
}

}  // namespace heapgate::runner
