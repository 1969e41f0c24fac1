// SPDX-License-Identifier: MIT
// The guard of a gated run: a test that crashes, hangs, exits or is killed
// never takes the run's record with it (docs/design.md §7, "A run that does
// not finish"). One per process; the listener drives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "heapgate/report.h"

namespace heapgate::harness {

/// What the guard does, once a test is running:
/// - a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) or a
///   terminating one (SIGTERM, SIGINT, SIGHUP): one line naming the test
///   (interruption_line_prefix()) is appended to the journal with write(2),
///   and the signal goes on as before (previous handler, or the default);
/// - exit() while a test runs: the test's interrupted record, the report
///   finished as incomplete, and exit status 5 (GateExit::incomplete);
/// - a test still running after `timeout` (the watchdog): the journal line
///   first, then the stacks of every thread in the test's record, the
///   report finished as incomplete, exit status 5. If writing the report
///   itself hangs (a lock held by the hung test), exit status 5 after 60 s.
struct RunGuardOptions {
  /// The report journal (ReportWriter::journal_fd()), -1 without a report.
  int journal_fd = -1;
  /// The watchdog's limit per test; zero: no watchdog.
  std::chrono::seconds timeout{0};
  /// Adds the interrupted test's record to the report and finishes it as
  /// incomplete; runs on the watchdog's thread or inside exit(), never in a
  /// signal handler. The guard ends the process afterwards.
  std::function<void(TestRecord)> finish_interrupted;
};

/// Installs the signal handlers, the exit hook and the watchdog. Once per
/// process; later calls do nothing.
void start_run_guard(RunGuardOptions options);
/// A test starts (before its fixture exists): the guard now names it.
void guard_test_started(const std::string& name);
/// The test ended. If the watchdog is already finishing the run, this
/// waits for the process to end.
void guard_test_ended();
/// When the process exits normally (main returns, after every listener has
/// finished), its status is `code` instead of GoogleTest's: for what the
/// listener finds only at the end of the program, e.g. a report or baseline
/// that could not be written (GateExit::usage).
void guard_exit_status(int code);

/// The watchdog thread's own context switches so far (0 without one), the
/// sleep it is in or about to enter included: what context_switches()
/// leaves out, since the watchdog wakes every 250 ms whatever the test does.
std::uint64_t guard_thread_switches() noexcept;
/// The threads the guard runs: 1 while its watchdog runs, else 0.
int guard_threads() noexcept;

}  // namespace heapgate::harness
