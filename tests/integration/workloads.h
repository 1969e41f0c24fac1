// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Allocation workloads with known counts and sizes, shared by the core tests.
// Sizes are jemalloc size classes, so usable bytes equal requested bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/profile_scope.h"

namespace heapgate::testing {

/// Keeps the compiler from eliding an allocation whose result is unused.
inline void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

/// Makes `count` allocations of `size` bytes and stores them in `out` (which
/// must have capacity already, so the vector itself does not allocate).
__attribute__((noinline)) inline void allocate_blocks(std::vector<void*>& out, std::size_t count, std::size_t size) {
  for (std::size_t i = 0; i < count; ++i) {
    void* p = std::malloc(size);
    escape(p);
    out.push_back(p);
  }
}

__attribute__((noinline)) inline void free_blocks(std::vector<void*>& blocks) {
  for (void* p : blocks) std::free(p);
  blocks.clear();
}

/// What a scope of `mode` measured around `body`; a scope that runs in
/// another mode or fails to finish fails the calling test.
inline ScopeResult measure_scope(Mode mode, const std::function<void()>& body) {
  ProfileScope scope{"t", ScopeOptions{mode}};
  EXPECT_EQ(scope.mode(), mode);
  body();
  auto result = scope.finish();
  EXPECT_TRUE(result) << (result ? "" : result.error().message());
  return result ? *result : ScopeResult{};
}

/// Threads created up front and parked, so thread creation's own allocations
/// (glibc's TLS, std::thread state) fall outside the measured scope.
class ParkedThreads {
 public:
  ParkedThreads(int threads, std::size_t per_thread, std::size_t size) : blocks_(static_cast<std::size_t>(threads)) {
    for (auto& b : blocks_) b.reserve(per_thread);
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, t, per_thread, size] {
        while (!go_.load(std::memory_order_acquire)) std::this_thread::yield();
        allocate_blocks(blocks_[static_cast<std::size_t>(t)], per_thread, size);
        done_.fetch_add(1, std::memory_order_release);
      });
    }
  }
  /// Releases the threads and waits until all have allocated.
  void run() {
    go_.store(true, std::memory_order_release);
    while (done_.load(std::memory_order_acquire) != static_cast<int>(threads_.size())) std::this_thread::yield();
  }
  void free_all() {
    for (auto& b : blocks_) free_blocks(b);
  }
  ~ParkedThreads() {
    go_.store(true);
    for (auto& t : threads_) t.join();
    free_all();
  }

 private:
  std::vector<std::vector<void*>> blocks_;
  std::vector<std::thread> threads_;
  std::atomic<bool> go_{false};
  std::atomic<int> done_{0};
};

}  // namespace heapgate::testing
