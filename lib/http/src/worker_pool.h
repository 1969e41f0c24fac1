// SPDX-License-Identifier: MIT
// The handler threads. libmicrohttpd serves every connection from one thread;
// a handler that takes long (a jeprof download, a heap dump) runs here while
// its connection is suspended, so it never stalls the other connections.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace heapgate::detail {

class WorkerPool {
 public:
  explicit WorkerPool(std::size_t threads);
  /// stop().
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues `job`; false once stop() has begun (the job is not run).
  bool submit(std::function<void()> job);
  /// Runs the jobs already queued, then joins the threads. Idempotent.
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace heapgate::detail
