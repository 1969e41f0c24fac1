// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// heapgate::HttpServer without its sockets: the same routes, handlers and
// request framing (answer_request_bytes, connections.h), fed the raw bytes of
// requests in process. The HTTP fuzz target (tests/fuzz/http_request_fuzz.cpp)
// and the tests that pin it to the real server use it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "heapgate/error.h"
#include "heapgate/http.h"

namespace heapgate::detail {

class InMemoryServer {
 public:
  /// The endpoints HttpServer::start(options) would serve; `options`' host
  /// and port are not used. Errors: `invalid_argument` as HttpServer::start
  /// for inconsistent durations, timeouts or thread counts.
  static Result<std::unique_ptr<InMemoryServer>> create(const HttpOptions& options);
  /// Finishes an active profiling run, as ~HttpServer does.
  ~InMemoryServer();
  InMemoryServer(const InMemoryServer&) = delete;
  InMemoryServer& operator=(const InMemoryServer&) = delete;

  /// The bytes a client reads back after sending `request_bytes` on one
  /// connection: every answer, in order (answer_request_bytes). Handlers run
  /// on the calling thread. Not thread-safe.
  std::string answer(std::string_view request_bytes);

 private:
  struct State;
  explicit InMemoryServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace heapgate::detail
