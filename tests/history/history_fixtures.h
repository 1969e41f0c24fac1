// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What the history tests share: reports to store, and the real `heapgate`
// run as a user runs it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/history.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"

namespace heapgate::testing {

/// A report of `binary` with `tests` tests "Suite<i/50>.Test<i>", whose
/// allocations are `base + i` (peak and bytes derived), the noise band
/// `band` wide when given.
inline Report history_report(const std::string& binary, std::size_t tests, std::uint64_t base,
                             std::optional<std::uint64_t> band = std::nullopt) {
  Report report;
  report.run.binary = binary;
  report.run.mode = Mode::counters;
  report.run.started_at = "2026-12-01T00:00:00Z";
  report.run.fingerprint = {{"compiler", "gcc 12.2"}};
  for (std::size_t i = 0; i < tests; ++i) {
    TestRecord record;
    record.suite = "Suite" + std::to_string(i / 50);
    record.test = "Test" + std::to_string(i);
    record.name = record.suite + "." + record.test;
    record.mode = Mode::counters;
    record.metrics = Metrics{base + i, 64 * (base + i), 0, 0, 32 * (base + i)};
    record.baseline = record.metrics;
    if (band) {
      NoiseBand noise;
      noise.runs = 5;
      noise.low = record.metrics;
      noise.high = Metrics{base + i + *band, 64 * (base + i + *band), 0, 0, 32 * (base + i + *band)};
      record.baseline_noise = noise;
    }
    record.verdict = Verdict::pass;
    report.tests.push_back(record);
  }
  return report;
}

/// Writes `report` to `path` (creating its directory).
inline std::string write_report_file(const std::string& path, const Report& report) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  auto written = write_report(path, report);
  EXPECT_TRUE(written) << written.error().message();
  return path;
}

/// The environment a child must not inherit: the CI variables history add
/// reads (the tests give the context by flags) and heapgate's settings.
inline const std::vector<std::string> kHistoryCleanEnvironment = {
    "GITHUB_SHA",         "GITHUB_HEAD_REF",  "GITHUB_REF_NAME",
    "GITHUB_RUN_ID",      "GITHUB_JOB",       "CI_COMMIT_SHA",
    "CI_COMMIT_REF_NAME", "CI_JOB_ID",        "GIT_COMMIT",
    "BRANCH_NAME",        "GIT_BRANCH",       "BUILD_TAG",
    "BUILDKITE_COMMIT",   "BUILDKITE_BRANCH", "BUILDKITE_JOB_ID",
    "CIRCLE_SHA1",        "CIRCLE_BRANCH",    "CIRCLE_WORKFLOW_JOB_ID",
    "HEAPGATE_HISTORY",   "MALLOC_CONF",      "LD_PRELOAD"};

/// Runs the real `heapgate` with `args`.
inline sys::ProcessResult heapgate(std::vector<std::string> args, std::vector<std::string> env = {},
                                   const std::optional<std::string>& stdout_path = std::nullopt) {
  args.insert(args.begin(), HEAPGATE_CLI_PATH);
  sys::ProcessOptions options;
  options.unset_env = kHistoryCleanEnvironment;
  options.extra_env = std::move(env);
  options.timeout = std::chrono::minutes(2);
  options.stdout_path = stdout_path;
  auto ran = sys::run_process(args, options);
  EXPECT_TRUE(ran) << ran.error().message();
  return ran ? *ran : sys::ProcessResult{};
}

/// Every point of every run in `store`: "binary/test@commit=allocations", in store order.
inline std::vector<std::string> stored_points(HistoryStore& store) {
  std::vector<std::string> out;
  auto runs = store.runs({});
  EXPECT_TRUE(runs) << runs.error().message();
  if (!runs) return out;
  std::map<std::int64_t, std::string> commits;
  for (const RunRow& r : *runs) commits[r.id] = r.context.commit;
  auto read = store.for_each_point({}, [&](const PointRow& p) {
    out.push_back(p.binary + "/" + p.test + "@" + commits[p.run_id] + "=" + std::to_string(p.metrics.allocations));
  });
  EXPECT_TRUE(read) << read.error().message();
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace heapgate::testing
