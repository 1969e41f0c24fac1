// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A suite whose work runs on other threads, as a service's tests do
// (docs/design.md §6a, "A threaded test in two parts"): a pool per test, a
// service pool started once and shared by the tests, a detached thread, and
// an executor whose tasks post their continuations. Every request goes
// through handle_request(); WORKER_PLANT=1 makes it allocate one block more,
// on whichever thread runs it. worker_test.cpp finds the planted line by its
// marker, "planted: one more block per request".
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

void* volatile g_sink = nullptr;

const bool g_planted = std::getenv("WORKER_PLANT") != nullptr;

// One request's work: parse, build a reply. The same request makes the
// same blocks on whichever thread runs it.
std::size_t handle_request(int id) {
  std::vector<std::string> headers;
  headers.reserve(3);
  headers.emplace_back("x-request-id: " + std::to_string(id) + " (long enough to leave the small buffer)");
  headers.emplace_back("content-type: text/plain; charset=utf-8, long enough too");
  const std::string reply = "reply to request " + std::to_string(id) + " with a body that is not small";
  if (g_planted) {
    void* block = std::malloc(80);  // planted: one more block per request
    g_sink = block;
    std::free(block);
  }
  return reply.size() + headers.size();
}

// A fixed pool of workers taking tasks from one queue.
class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Waits until `count` requests are done.
class Countdown {
 public:
  explicit Countdown(int count) : left_(count) {}
  void done() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--left_ == 0) zero_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    zero_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable zero_;
  int left_;
};

void serve(Pool& pool, int requests) {
  Countdown all(requests);
  for (int i = 0; i < requests; ++i) {
    pool.submit([i, &all] {
      handle_request(i);
      all.done();
    });
  }
  all.wait();
}

// Started by the first test that needs it and serving every later one, as
// a server a suite starts once.
Pool& service() {
  static Pool* pool = new Pool(3);
  return *pool;
}

TEST(PoolPerTest, HandlesFiftyRequests) {
  Pool pool(4);
  serve(pool, 50);
}

TEST(SharedService, HandlesFortyRequests) { serve(service(), 40); }

TEST(SharedService, HandlesSixtyRequests) { serve(service(), 60); }

TEST(Detached, ThreadHandlesRequests) {
  std::promise<void> finished;
  std::future<void> done = finished.get_future();
  std::thread([&finished] {
    for (int i = 0; i < 40; ++i) handle_request(i);
    finished.set_value();
  }).detach();
  done.wait();
}

// Each step runs on the executor's thread and posts the next, as a
// continuation chain on an executor does.
TEST(Executor, ChainsContinuations) {
  Pool executor(1);
  std::promise<void> finished;
  std::function<void(int)> step = [&](int i) {
    handle_request(i);
    if (i + 1 == 40) {
      finished.set_value();
      return;
    }
    executor.submit([&step, i] { step(i + 1); });
  };
  executor.submit([&step] { step(0); });
  finished.get_future().wait();
}

// The same requests on the test's own thread.
TEST(OwnThread, HandlesFortyRequests) {
  for (int i = 0; i < 40; ++i) handle_request(i);
}

}  // namespace
