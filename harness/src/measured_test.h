// SPDX-License-Identifier: MIT
// A test's record as every role starts it: its framework's facts about the
// test, then what its scope measured, less what the framework allocated for it.
#pragma once

#include <chrono>
#include <cstdint>

#include "heapgate/face.h"
#include "heapgate/profile_scope.h"
#include "heapgate/report.h"

namespace heapgate::harness {

/// The record of a finished test before anything is measured: its names,
/// place, time, budgets and whether its framework failed it.
TestRecord test_record_of(const TestCase& test, const TestEnd& end, Mode mode, double duration_ms);

/// Context switches so far, from two getrusage() calls.
struct ContextSwitches {
  /// Threads other than the calling one switched in or out (the process'
  /// switches, finished threads included, less the calling thread's): when
  /// it grows across a test, other threads ran during it.
  std::uint64_t other_threads = 0;
  /// The calling thread gave up the processor to wait (its voluntary
  /// switches): when it grows across a test, the test waited (a timer, I/O,
  /// a lock) and its timing reached what it did.
  std::uint64_t own_waits = 0;
};
ContextSwitches context_switches() noexcept;

/// The threads the process has now (/proc/self/stat), 0 when unknown. Reads
/// with a buffer on the stack: safe inside a measured window.
int process_threads() noexcept;

/// How long a test's end waits for the threads it started to end.
inline constexpr std::chrono::milliseconds kStartedThreadsWait{1000};

/// Waits, at most `budget`, until the process has no more threads than
/// `threads_at_start`: threads a test started and detached free what they
/// hold as they end, after the test returned, and those blocks are not its
/// leak. Returns at once when the count is not known or did not grow; a
/// thread that outlives the wait is judged by what it left (a long-lived
/// pool's blocks are setup, one that keeps leaking grows).
void wait_for_started_threads(int threads_at_start, std::chrono::milliseconds budget = kStartedThreadsWait) noexcept;

/// The record of a test that skipped itself: verdict `skipped`, nothing
/// measured, the framework's skip reason in the message.
TestRecord skipped_record(const TestEnd& end, TestRecord record);

/// Adds what the test's scope measured. The framework's own per-test
/// allocations (`framework_overhead`, Face::per_test_overhead()) are not the test's (docs/design.md §6); nor
/// is the fixture object (`fixture_bytes`), which the counters skipped but a
/// heap profile recorded.
void add_measurement(TestRecord& record, const ScopeResult& scope, const Metrics& framework_overhead,
                     std::uint64_t fixture_bytes);

/// Takes the blocks the framework allocated in the window on its own behalf
/// (TestEnd::framework_allocations) off the test's counts, and those still
/// live (TestEnd::framework_live_allocations) off what it left live.
void take_framework_blocks(TestRecord& record, const TestEnd& end) noexcept;

}  // namespace heapgate::harness
