// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A suite with what suites heapgate was never tuned on do (docs/design.md
// §6a, "Learned on the first run"): memory the C library keeps by contract
// (setenv keeps every value ever set), threads a test detaches that finish
// after it returns, and a test whose own thread allocates a little
// differently in every process (a buffer sized by timing, a random name).
// The variation is scripted through UNTUNED_COUNTER_FILE so the test of it
// is not itself flaky. Planted changes, each under its own variable:
//   UNTUNED_EXTRA=1          one more allocation in Own.Repeats
//   UNTUNED_DETACHED_LEAK=1  each detached thread of Detached.ShortLived leaks a block
//   UNTUNED_VARIES_MORE=1    Own.VariesByProcess allocates 40 blocks more (beyond its band)
//   UNTUNED_POOL_LEAK=1      the shared worker keeps every block Pool.HandsABlockOver gives it
// UNTUNED_POOL_LATE=1 is timing, not a change: Pool.HandsABlockOver returns
// before the worker frees its block, which a later test's wait lets happen.
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scripted_counts.h"

namespace {

using heapgate::sample::allocate_and_free;
using heapgate::sample::g_sink;

bool planted(const char* variable) { return std::getenv(variable) != nullptr; }

// A worker shared by the suite's tests, as a library's global pool is: it
// frees the block a test hands it when told to.
class SharedWorker {
 public:
  SharedWorker() {
    std::thread([this] { serve(); }).detach();
  }

  void hand_over(char* block) {
    std::lock_guard<std::mutex> lock(mutex_);
    block_ = block;
  }
  // Lets the worker free what it was handed, and waits until it has.
  void free_now() {
    std::unique_lock<std::mutex> lock(mutex_);
    go_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !go_; });
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      changed_.wait(lock, [this] { return go_; });
      if (!planted("UNTUNED_POOL_LEAK")) delete[] block_;
      block_ = nullptr;
      go_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  char* block_ = nullptr;
  bool go_ = false;
};

SharedWorker& shared_worker() {
  static SharedWorker* const worker = new SharedWorker;  // never destroyed: its thread outlives main
  return *worker;
}

// Started before main, outside every test, as a library's global pool often is.
SharedWorker& g_started_before_tests = shared_worker();

// Recorded, the worker frees the block before the test returns; with
// UNTUNED_POOL_LATE it frees it during the next test: live at this test's
// end, then freed by another thread.
TEST(Pool, HandsABlockOver) {
  shared_worker().hand_over(new char[96]);
  if (!planted("UNTUNED_POOL_LATE")) shared_worker().free_now();
}

TEST(Pool, Later) {
  if (planted("UNTUNED_POOL_LATE")) shared_worker().free_now();
}

// Each run sets a fresh value, as a suite that points a variable at a new
// temporary file per test does: glibc's setenv keeps every value it was
// given allocated for the life of the process.
TEST(Env, SetsAFreshValue) {
  static std::atomic<int> runs{0};
  const std::string value = "/tmp/untuned-" + std::to_string(::getpid()) + "-" + std::to_string(runs++);
  ASSERT_EQ(::setenv("HEAPGATE_UNTUNED_VALUE", value.c_str(), 1), 0);
  allocate_and_free(2);
}

// Four joined and four detached threads; the detached ones free their block
// after a short sleep, after the test has returned.
TEST(Detached, ShortLived) {
  std::vector<std::thread> joined;
  for (int i = 0; i < 4; ++i) joined.emplace_back([] { allocate_and_free(3); });
  for (int i = 0; i < 4; ++i) {
    std::thread([] {
      char* block = new char[200];
      g_sink = block;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!planted("UNTUNED_DETACHED_LEAK")) delete[] block;
    }).detach();
  }
  for (std::thread& t : joined) t.join();
}

TEST(Own, Repeats) {
  allocate_and_free(4);
  if (planted("UNTUNED_EXTRA")) {
    g_sink = std::malloc(48);  // the planted +1 allocation
    std::free(g_sink);
  }
}

// Its own thread's bytes differ from process to process (one block of 64 or
// of 640 bytes, by the scripted counter), as a read buffer sized by how much
// a socket had ready does.
TEST(Own, VariesByProcess) {
  const int count = heapgate::sample::next_count("UNTUNED_COUNTER_FILE");
  g_sink = std::malloc(count % 2 == 0 ? 64 : 640);
  std::free(g_sink);
  allocate_and_free(planted("UNTUNED_VARIES_MORE") ? 50 : 10);
}

}  // namespace
