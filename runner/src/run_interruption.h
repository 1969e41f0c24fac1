// SPDX-License-Identifier: MIT
// `heapgate run` interrupted (SIGINT, SIGTERM) and shards that did not
// finish: the shards are stopped (their guards name the test that was
// running), what finished is reported, and the run exits incomplete.
#pragma once

#include <signal.h>

#include <atomic>
#include <string>

#include "heapgate/report.h"
#include "heapgate/sys.h"

namespace heapgate::runner {

/// Turns true when SIGINT or SIGTERM reached `heapgate run` while a
/// StopOnSignals was alive; the shards' processes watch it.
const std::atomic<bool>& stop_requested();

/// The signal that turned stop_requested() true.
int stop_signal();

/// Sets stop_requested() on SIGINT and SIGTERM while alive.
class StopOnSignals {
 public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

/// A shard that did not finish: its report becomes incomplete and names the
/// test that was running, from the binary's own journal line when it could
/// write one, else from its log at `log_path`. A shard that ran out of
/// `timeout_seconds` calls that test hung.
void name_interrupted_test(Report& report, const sys::ProcessResult& result, const std::string& log_path,
                           int timeout_seconds);

}  // namespace heapgate::runner
