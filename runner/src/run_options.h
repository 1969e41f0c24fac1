// SPDX-License-Identifier: MIT
// `heapgate run`'s options, and its two ways to run: gating (cmd_run.cpp)
// and recording from several runs (--calibrate, run_calibration.cpp).
#pragma once

#include <string>
#include <vector>

#include "commands.h"
#include "heapgate/report.h"

namespace heapgate::runner {

/// The flags of `heapgate run`, as parsed.
struct RunOptions {
  std::string mode = "counters";
  std::string baselines = kDefaultBaselinesDir;
  std::string report = "heapgate-report";
  int jobs = 1;
  bool strict = false;
  bool allow_unmeasured = false;
  std::string suppressions;
  int timeout_seconds = 3600;
  int test_timeout_seconds = 600;  // --heapgate_test_timeout for every binary
  std::string ctest_dir;
  std::string progress = "auto";
  int calibrate = 0;                      // runs to learn noise bands from; 0: gate as usual
  bool ratchet = false;                   // accept improvements, exit 4 when a baseline changed
  std::string fingerprint = "warn";       // --heapgate_fingerprint for every binary
  std::string history;                    // a history store the merged reports are added to
  std::vector<std::string> plugin_flags;  // extra --heapgate_* flags for every binary
  std::vector<std::string> command;       // binary, then its arguments
};

/// Runs every binary the options name under the gate, writes the reports and
/// prints the summary; returns the exit code. `measured`, when given, receives
/// the reports (--calibrate learns from them).
int run_all(const RunOptions& options, std::vector<Report>* measured = nullptr);

/// --calibrate N: see run_calibration.cpp.
int run_calibration(const RunOptions& options);

/// A flag's value that cannot work: printed as an error with its fix; returns
/// the exit code of bad input.
int bad_option(const std::string& flag, const std::string& problem, const std::string& fix);

}  // namespace heapgate::runner
