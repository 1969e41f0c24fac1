// SPDX-License-Identifier: MIT
// Raw HTTP requests, pipelined on one connection, sent to heapgate::HttpServer
// on loopback: libmicrohttpd's request path as in production, the bounds
// heapgate checks on each head (front_end.cpp) and the memory-profiler
// routes. Without jemalloc the profiling endpoints answer Mesos' errors, so
// a run is deterministic. Properties: no crash; every answer that comes back
// is a whole HTTP/1.1 response (http_exchange.h). libmicrohttpd itself is
// not instrumented: coverage steers by heapgate's side of each request.
#include <memory>
#include <string>

#include "fuzz_check.h"
#include "heapgate/http.h"
#include "http_exchange.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::unique_ptr<heapgate::HttpServer> server = [] {
    heapgate::HttpOptions options;
    options.port = 0;
    options.jeprof_program = "/nonexistent/jeprof";  // never spawn a process while fuzzing
    // An input that leaves a request unfinished ends with its connection.
    options.request_timeout = std::chrono::seconds(2);
    options.idle_timeout = std::chrono::seconds(1);
    auto started = heapgate::HttpServer::start(options);
    HEAPGATE_FUZZ_CHECK(started.has_value());
    return std::move(*started);
  }();
  const std::string problem =
      heapgate::fuzz::check_answers(heapgate::fuzz::exchange(server->port(), heapgate::fuzz::text_of(data, size)));
  HEAPGATE_FUZZ_CHECK(problem.empty());
  return 0;
}
