// SPDX-License-Identifier: MIT
// One binary's run in `heapgate run`: its shards (GoogleTest sharding, one
// process each, each with its own temporary directory), the progress line
// read from their journals, and their reports merged.
#pragma once

#include <cstddef>
#include <string>

#include "heapgate/error.h"
#include "heapgate/report.h"
#include "progress.h"
#include "run_options.h"
#include "run_targets.h"

namespace heapgate::runner {

/// One progress line: a rewritten line on a terminal, plain lines in CI logs.
class ProgressDisplay {
 public:
  explicit ProgressDisplay(const std::string& setting)
      : line_(ProgressLine::style_for(setting), std::chrono::seconds(5)) {}
  void show(const std::string& binary, std::size_t done, std::size_t total, std::size_t failed, bool final) {
    // A plain line only when a test finished since the last one.
    if (!line_.live() && !final && done == last_done_) return;
    char line[512];
    std::snprintf(line, sizeof line, "heapgate: %s: %zu/%zu tests, %zu failing", binary.c_str(), done, total, failed);
    if (line_.show(line, final)) last_done_ = done;
    if (final) line_.end();
  }

 private:
  ProgressLine line_;
  std::size_t last_done_ = static_cast<std::size_t>(-1);
};

/// Runs one binary's shards and returns its merged report; `crashed` is set
/// when a shard wrote no report (its tests are unaccounted for).
Result<Report> run_job(const RunOptions& options, Job& job, ProgressDisplay& display, bool& crashed);

}  // namespace heapgate::runner
