// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A suite whose tests start threads, for the spread a recorded baseline
// learns (docs/design.md §6a, "Learned spread"). The variation is scripted so
// the test of it is not itself flaky: each run of Threaded.Varies bumps a
// counter in THREADED_COUNTER_FILE, and its worker thread allocates
// 1 + (counter % 3) blocks, as a thread pool's work depends on timing.
// THREADED_EXTRA=1 plants three more allocations, on the test's own thread,
// in Threaded.Steady: the regression a learned band must not hide (two more
// would be within the allowance for scheduling every test with other
// threads gets, docs/design.md §6a).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "scripted_counts.h"

namespace {

using heapgate::sample::allocate_and_free;

int next_count() { return heapgate::sample::next_count("THREADED_COUNTER_FILE"); }

}  // namespace

TEST(Threaded, Varies) {
  const int count = next_count();
  std::thread worker([count] { allocate_and_free(1 + count % 3); });
  worker.join();
}

TEST(Threaded, Steady) {
  std::thread worker([] { allocate_and_free(2); });
  worker.join();
  allocate_and_free(std::getenv("THREADED_EXTRA") != nullptr ? 6 : 3);
}

TEST(Single, Fixed) { allocate_and_free(3); }

// No other thread, but its own thread waits (a sleep): as exposed to timing
// as a test with company, and recorded so (other_threads.own_waits).
TEST(Single, Sleeps) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  allocate_and_free(2);
}

// Allocates nothing, and appends a byte to QUIET_RUNS_FILE each time it runs
// (with write(2), which allocates nothing either): a test without
// allocations has no call sites to record, so the exact run that records
// them runs it again only when it starts before the tests did (a sharded run).
TEST(Single, AllocatesNothing) {
  const char* path = std::getenv("QUIET_RUNS_FILE");
  if (path == nullptr) return;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::write(fd, "x", 1), 1);
  ::close(fd);
}
