// SPDX-License-Identifier: MIT
// The whole-request deadline. libmicrohttpd closes a connection that stays
// silent for its timeout, but a client that drips a header line every few
// seconds is never silent (slowloris). Here a request must arrive whole
// within request_timeout of its request line, and the request line within
// idle_timeout + request_timeout of the connection opening or of the
// previous answer; past that the client gets a 408 and the connection ends.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

namespace heapgate::detail {

class RequestDeadlines {
 public:
  using Clock = std::chrono::steady_clock;

  /// One connection's deadline. Owned by the caller; registered from
  /// opened() to closed().
  struct Entry {
    int fd = -1;
    Clock::time_point deadline;
    /// Between the previous answer and the whole next request.
    bool receiving = true;
    /// The 408 was sent: the request must not be answered.
    bool expired = false;
  };

  RequestDeadlines(std::chrono::milliseconds request_timeout, std::chrono::milliseconds idle_timeout);
  /// stop().
  ~RequestDeadlines();
  RequestDeadlines(const RequestDeadlines&) = delete;
  RequestDeadlines& operator=(const RequestDeadlines&) = delete;

  void opened(Entry& entry, int fd);
  /// Before the socket closes: the 408 is never written to a reused descriptor.
  void closed(Entry& entry);
  void request_line(Entry& entry);
  /// The request arrived whole and is to be answered. False when its 408 was
  /// already sent: close the connection instead.
  bool arrived(Entry& entry);
  /// The answer was sent: the next request's time starts.
  void answered(Entry& entry);
  /// Joins the thread. Idempotent.
  void stop();

 private:
  void run();

  const std::chrono::milliseconds request_timeout_;
  const std::chrono::milliseconds idle_timeout_;
  const std::string answer_408_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::unordered_set<Entry*> entries_;
  std::thread thread_;
};

}  // namespace heapgate::detail
