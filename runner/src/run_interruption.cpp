// SPDX-License-Identifier: MIT
// StopOnSignals and stop_requested() for SIGINT/SIGTERM during `heapgate run`; and
// name_interrupted_test(): an unfinished shard's report names the test that was running.
#include "run_interruption.h"

#include <string>
#include <utility>

namespace heapgate::runner {
namespace {

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_signal{0};

void request_stop(int signo) {
  g_stop_signal.store(signo);
  g_stop_requested.store(true);
}

// The test a shard's log shows started but not ended: GoogleTest prints
// "[ RUN      ] Name" before a test and "[       OK ] Name", "[  FAILED  ]
// Name" or "[  SKIPPED ] Name" after it. Only for a shard whose test binary
// could not say so itself (SIGKILL).
std::string unfinished_test_in_log(const std::string& log_path) {
  auto log = sys::read_file(log_path, sys::kProfileSizeLimit);
  if (!log) return {};
  const std::string run_tag = "[ RUN      ] ";
  const std::size_t at = log->rfind(run_tag);
  if (at == std::string::npos) return {};
  const std::size_t name_end = log->find_first_of(" \n", at + run_tag.size());
  const std::string name = log->substr(at + run_tag.size(), name_end - at - run_tag.size());
  for (const char* end_tag : {"[       OK ] ", "[  FAILED  ] ", "[  SKIPPED ] "}) {
    if (log->find(end_tag + name, at) != std::string::npos) return {};
  }
  return name;
}

}  // namespace

const std::atomic<bool>& stop_requested() { return g_stop_requested; }

int stop_signal() { return g_stop_signal.load(); }

StopOnSignals::StopOnSignals() {
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &previous_int_);
  ::sigaction(SIGTERM, &action, &previous_term_);
}

StopOnSignals::~StopOnSignals() {
  ::sigaction(SIGINT, &previous_int_, nullptr);
  ::sigaction(SIGTERM, &previous_term_, nullptr);
}

void name_interrupted_test(Report& report, const sys::ProcessResult& result, const std::string& log_path,
                           int timeout_seconds) {
  report.run.complete = false;
  Interruption how = Interruption::exited;
  std::string detail;
  if (result.timed_out) {
    how = Interruption::hung;
    detail = "still running when heapgate run's --timeout of " + std::to_string(timeout_seconds) + " s ran out";
  } else if (result.stopped) {
    how = Interruption::killed;
    detail = "heapgate run was interrupted by " + sys::describe_signal(stop_signal());
  } else if (result.term_signal == SIGKILL || result.term_signal == SIGTERM || result.term_signal == SIGINT) {
    how = Interruption::killed;
    detail = sys::describe_signal(result.term_signal);
  } else if (result.term_signal != 0) {
    how = Interruption::crashed;
    detail = sys::describe_signal(result.term_signal);
  } else {
    detail = "exit status " + std::to_string(result.exit_code);
  }
  for (TestRecord& record : report.tests) {
    if (record.interrupted == Interruption::none) continue;
    // The binary named it; only heapgate run knows that a timeout or an
    // interruption was what stopped it.
    if (result.timed_out || result.stopped) {
      TestRecord relabelled = interrupted_record(record.name, how, detail);
      relabelled.file = record.file;
      relabelled.line = record.line;
      record = std::move(relabelled);
    }
    return;
  }
  const std::string running = unfinished_test_in_log(log_path);
  if (!running.empty()) report.tests.push_back(interrupted_record(running, how, detail));
}

}  // namespace heapgate::runner
