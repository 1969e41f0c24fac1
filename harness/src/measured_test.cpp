// SPDX-License-Identifier: MIT
// test_record_of() and add_measurement(): a TestRecord from the face's TestCase and TestEnd and
// the scope's result less the framework's own cost; context_switches(), process_threads().
#include "measured_test.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include <string>

#include "heapgate/gate.h"
#include "run_guard.h"
#include "test_requests.h"

namespace heapgate::harness {
namespace {

std::uint64_t minus(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

TestRecord test_record_of(const TestCase& test, const TestEnd& end, Mode mode, double duration_ms) {
  TestRecord record;
  record.name = test.name;
  record.suite = test.suite;
  record.test = test.test;
  record.file = test.file;
  record.line = test.line;
  record.mode = mode;
  record.duration_ms = duration_ms;
  // The report's field keeps GoogleTest's name; it is any framework's own failure.
  record.gtest_failed = end.failed;
  for (std::size_t i = 0; i < kMetricCount; ++i) {
    if (test_requests().limited[i]) {
      record.budgets[std::string(to_string(static_cast<MetricName>(i)))] = test_requests().limits[i];
    }
  }
  return record;
}

ContextSwitches context_switches() noexcept {
  struct rusage process {};
  struct rusage thread {};
  if (::getrusage(RUSAGE_SELF, &process) != 0 || ::getrusage(RUSAGE_THREAD, &thread) != 0) return {};
  const auto all = static_cast<std::uint64_t>(process.ru_nvcsw) + static_cast<std::uint64_t>(process.ru_nivcsw);
  const auto own = static_cast<std::uint64_t>(thread.ru_nvcsw) + static_cast<std::uint64_t>(thread.ru_nivcsw) +
                   guard_thread_switches();
  return ContextSwitches{all > own ? all - own : 0, static_cast<std::uint64_t>(thread.ru_nvcsw)};
}

int process_threads() noexcept {
  // "pid (comm) state ppid ..." with num_threads the 20th field; comm may
  // hold spaces and parentheses, so fields are counted from its last ')'.
  char buffer[1024];
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buffer[n] = '\0';
  const char* p = std::strrchr(buffer, ')');
  if (p == nullptr) return 0;
  // After ')' comes field 3 (state); num_threads is 17 fields further.
  for (int field = 2; field < 20; ++field) {
    p = std::strchr(p + 1, ' ');
    if (p == nullptr) return 0;
  }
  int threads = 0;
  for (++p; *p >= '0' && *p <= '9'; ++p) threads = threads * 10 + (*p - '0');
  return threads;
}

void wait_for_started_threads(int threads_at_start, std::chrono::milliseconds budget) noexcept {
  if (threads_at_start <= 0) return;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until = Clock::now() + budget;
  while (true) {
    const int now = process_threads();
    if (now == 0 || now <= threads_at_start || Clock::now() >= until) return;
    const struct timespec pause { 0, 1000 * 1000 };
    ::nanosleep(&pause, nullptr);
  }
}

TestRecord skipped_record(const TestEnd& end, TestRecord record) {
  record.verdict = Verdict::skipped;
  record.message = "skipped: " + end.skip_reason + "; nothing was measured or judged";
  if (!end.skip_message.empty()) record.message += ": " + end.skip_message;
  return record;
}

void add_measurement(TestRecord& record, const ScopeResult& scope, const Metrics& framework_overhead,
                     std::uint64_t fixture_bytes) {
  record.metrics = from_scope(scope);
  record.not_measured = not_measured_by(scope);
  record.metrics.allocations = minus(record.metrics.allocations, framework_overhead.allocations);
  record.metrics.allocated_bytes = minus(record.metrics.allocated_bytes, framework_overhead.allocated_bytes);
  record.metrics.peak_bytes = minus(record.metrics.peak_bytes, framework_overhead.allocated_bytes);
  const bool profiled = !scope.profile_path.empty() || scope.profile != nullptr;
  if (profiled && fixture_bytes > 0) {
    record.metrics.allocations = minus(record.metrics.allocations, 1);
    record.metrics.allocated_bytes = minus(record.metrics.allocated_bytes, fixture_bytes);
  }
  record.estimated = scope.estimated;
  record.other_threads.allocations = scope.other_thread_allocations;
  record.other_threads.bytes = scope.other_thread_bytes;
  record.standard_errors = standard_errors_of(scope);
  if (!scope.profile_path.empty()) record.profiles.push_back(scope.profile_path);
}

void take_framework_blocks(TestRecord& record, const TestEnd& end) noexcept {
  record.metrics.allocations = minus(record.metrics.allocations, end.framework_allocations);
  record.metrics.allocated_bytes = minus(record.metrics.allocated_bytes, end.framework_bytes);
  record.metrics.live_allocations = minus(record.metrics.live_allocations, end.framework_live_allocations);
  record.metrics.live_bytes = minus(record.metrics.live_bytes, end.framework_live_bytes);
  record.metrics.peak_bytes = minus(record.metrics.peak_bytes, end.framework_peak_bytes);
}

}  // namespace heapgate::harness
