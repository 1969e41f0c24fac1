// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The HTTP front end between cpp-httplib's listener and its request parser.
// cpp-httplib gives every connection a pool thread for its whole life and
// reads each request with a per-receive timeout only, so a handful of clients
// that drip a header line every few seconds hold the whole pool forever
// (slowloris). Here a connection waits for its next request in one epoll
// thread, without a thread of its own; the request is framed and bounded
// there (request line, head, body, whole-request deadline) and handed to a
// worker only once it has arrived whole. cpp-httplib still parses, routes
// and writes the answer, reading the request from memory.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <httplib.h>

#include "heapgate/error.h"

namespace heapgate::detail {

struct ConnectionLimits {
  /// The request line, CRLF included; longer is 414. cpp-httplib's own
  /// compiled-in bound (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) is 8192.
  std::size_t max_request_line = 8192;
  /// The request line and headers up to the blank line; longer, or one header
  /// line longer than cpp-httplib's 8192, is 431.
  std::size_t max_head = 16384;
  /// Content-Length above this is 413, answered before any of the body is read.
  std::size_t max_body = 64 * 1024;
  /// Open connections; the next one is answered 503 and closed.
  std::size_t max_connections = 256;
  /// Requests on one connection; the answer to the last says Connection: close.
  std::size_t max_requests_per_connection = 100;
  /// Threads that run handlers.
  std::size_t workers = 8;
  /// How long a connection may wait, silent, for its next request.
  std::chrono::milliseconds idle_timeout{5000};
  /// From a request's first byte to its last (head and body); then 408.
  std::chrono::milliseconds request_timeout{10000};
  /// An answer whose writing makes no progress for this long is abandoned.
  std::chrono::milliseconds write_timeout{5000};
};

/// Answers one request that `stream` holds whole (cpp-httplib's
/// Server::process_request). Returns false when the connection must close.
using ServeRequest = std::function<bool(httplib::Stream& stream, bool close_connection, bool& connection_closed)>;

/// Answers `bytes` as the server answers one connection that sent them
/// (pipelined requests included) and kept its side open: the same framing and
/// limits (a refused request gets the error answer that closes the
/// connection), each whole request handed to `serve` in order, up to
/// `limits.max_requests_per_connection`. Returns every byte written back; a
/// request cut short gets no answer. No sockets, no threads, no timeouts: how
/// the HTTP fuzz target feeds requests in process (docs/fuzzing.md).
std::string answer_request_bytes(std::string_view bytes, const ConnectionLimits& limits, const ServeRequest& serve);

class Connections {
 public:
  /// Starts the epoll thread and the workers. Errors: io_error when epoll or
  /// eventfd cannot be created (out of descriptors).
  static Result<std::unique_ptr<Connections>> start(ConnectionLimits limits, ServeRequest serve);
  /// stop().
  ~Connections();
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;

  /// Takes an accepted socket. Never blocks on the client: the listener
  /// thread calls it.
  void adopt(int fd);
  /// Answers the requests that already arrived whole, closes every
  /// connection and joins the threads. Idempotent.
  void stop();

 private:
  struct Connection;
  struct Job {
    std::unique_ptr<Connection> connection;
    std::size_t request_end = 0;
  };

  Connections(ConnectionLimits limits, ServeRequest serve, int epoll_fd, int wake_fd);
  void wake();
  // The epoll thread: owns every connection that is not with a worker.
  void reader_loop();
  void take_handovers();
  void watch(std::unique_ptr<Connection> connection);
  void on_readable(int fd);
  // Frames what `connection` holds: dispatches a whole request, answers an
  // error, or leaves it waiting for more bytes.
  void evaluate(int fd);
  void expire_deadlines();
  void answer_error(Connection& connection, int status, const std::string& message);
  void forget(int fd);
  void worker_loop();
  void serve(Job job);

  const ConnectionLimits limits_;
  const ServeRequest serve_;
  const int epoll_fd_;
  const int wake_fd_;
  std::atomic<std::size_t> open_{0};
  std::atomic<bool> stopping_{false};

  std::mutex handover_mutex_;
  std::vector<int> adopted_;                                    // listener → reader
  std::vector<std::unique_ptr<Connection>> returned_;           // worker → reader
  std::unordered_map<int, std::unique_ptr<Connection>> owned_;  // reader only

  std::mutex jobs_mutex_;
  std::condition_variable jobs_ready_;
  std::deque<Job> jobs_;

  std::thread reader_;
  std::vector<std::thread> workers_;
  std::once_flag stopped_;
};

}  // namespace heapgate::detail
