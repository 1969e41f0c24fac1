// SPDX-License-Identifier: MIT
// RequestDeadlines (request_deadlines.h): a thread that ticks every 20 ms and sends 408 to each
// connection whose request did not arrive whole by its deadline.
#include "request_deadlines.h"

#include <algorithm>

#include "raw_answer.h"

namespace heapgate::detail {
namespace {

// How late a 408 may be. A timer per deadline would be exact, but a request
// is answered within microseconds of arriving and deadlines are seconds long.
constexpr auto kTick = std::chrono::milliseconds(20);

std::string duration_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

}  // namespace

RequestDeadlines::RequestDeadlines(std::chrono::milliseconds request_timeout, std::chrono::milliseconds idle_timeout)
    : request_timeout_(request_timeout),
      idle_timeout_(idle_timeout),
      answer_408_(plain_answer(408, "Request Timeout",
                               "Request timeout: the request did not arrive whole within " +
                                   duration_text(request_timeout) + " of its first byte; send it at once.\n")),
      thread_([this] { run(); }) {}

RequestDeadlines::~RequestDeadlines() { stop(); }

void RequestDeadlines::opened(Entry& entry, int fd) {
  std::lock_guard<std::mutex> lock(mutex_);
  entry.fd = fd;
  entry.deadline = Clock::now() + idle_timeout_ + request_timeout_;
  entry.receiving = true;
  entries_.insert(&entry);
}

void RequestDeadlines::closed(Entry& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(&entry);
}

void RequestDeadlines::request_line(Entry& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  entry.deadline = std::min(entry.deadline, Clock::now() + request_timeout_);
}

bool RequestDeadlines::arrived(Entry& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  entry.receiving = false;
  return !entry.expired;
}

void RequestDeadlines::answered(Entry& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entry.expired) return;
  entry.deadline = Clock::now() + idle_timeout_ + request_timeout_;
  entry.receiving = true;
}

void RequestDeadlines::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RequestDeadlines::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kTick);
    const Clock::time_point now = Clock::now();
    for (Entry* entry : entries_) {
      if (!entry->receiving || entry->expired || entry->deadline > now) continue;
      // Under the lock: closed() cannot run meanwhile, so the descriptor is
      // still this connection's.
      entry->expired = true;
      send_and_shut_down(entry->fd, answer_408_);
    }
  }
}

}  // namespace heapgate::detail
