// SPDX-License-Identifier: MIT
// The HTTP face: Mesos' /memory-profiler/* served by libmicrohttpd in the
// process under test. Implemented in lib/http/src/: server.cpp (HttpServer,
// its options), front_end.cpp (the listening socket), routes.cpp and
// memory_profiler.cpp (what each endpoint does).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "heapgate/error.h"

namespace heapgate {

/// How an HttpServer listens and profiles.
struct HttpOptions {
  /// The address to bind. Loopback by default: the endpoints can dump the heap
  /// and spawn jeprof, so exposing them is an explicit decision.
  std::string host = "127.0.0.1";
  /// The TCP port; 0 picks a free one (read it back with HttpServer::port()).
  int port = 5050;
  /// If not empty, every request must carry `Authorization: Bearer <token>`
  /// (compared in constant time); others get 401. Empty: no authentication,
  /// as Mesos without an authenticator.
  std::string bearer_token;
  /// The bounds and default of `/memory-profiler/start?duration=`, Mesos'
  /// values (1secs, 1days, 5mins). Tests may lower `minimum_duration` to run
  /// sub-second profiles; the error text then names the lowered bound.
  std::chrono::nanoseconds minimum_duration = std::chrono::seconds(1);
  std::chrono::nanoseconds maximum_duration = std::chrono::hours(24);
  std::chrono::nanoseconds default_duration = std::chrono::minutes(5);
  /// The jeprof program for /download/text and /download/graph: a name looked
  /// up in $PATH, or a path.
  std::string jeprof_program = "jeprof";
  /// jeprof is killed after this long (the download then fails with Mesos' 400).
  std::chrono::milliseconds jeprof_timeout = std::chrono::minutes(5);

  // ---- The HTTP front end (docs/mesos-protocol.md §7), GNU libmicrohttpd. A
  // connection waits for its next request without holding a thread; a
  // request reaches a handler only once it has arrived whole, so slow
  // clients cannot starve the others.
  /// From a request's first byte to its last (head and body); a request
  /// still incomplete then is answered 408 and its connection closed.
  std::chrono::milliseconds request_timeout = std::chrono::seconds(10);
  /// How long a connection, new, kept alive or mid-request, may stay silent
  /// before it is closed. libmicrohttpd counts whole seconds: rounded up.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(5);
  /// An answer whose writing makes no progress for this long is abandoned
  /// and its connection closed (whole seconds, rounded up).
  std::chrono::milliseconds write_timeout = std::chrono::seconds(5);
  /// Threads that run handlers. A jeprof download holds one while it runs.
  std::size_t worker_threads = 8;
  /// Open connections beyond this are answered 503 and closed; beyond this
  /// + 64, closed at once.
  std::size_t max_connections = 256;
};

/// Reads the options of HttpServer::from_environment():
/// - `HEAPGATE_HTTP`: `host:port`, or a bare `port` (bound to 127.0.0.1).
///   Unset or empty: 127.0.0.1:5050 (Mesos' master port).
/// - `HEAPGATE_HTTP_TOKEN`: the bearer token, if set and not empty.
/// Errors: `invalid_argument` naming HEAPGATE_HTTP when it does not parse
/// (port not a number in 0..65535, empty host).
Result<HttpOptions> http_options_from_environment();

/// An embedded HTTP server with Apache Mesos' memory-profiler endpoints, so
/// tools and scripts written for Mesos work unchanged:
///
/// - `/memory-profiler/start?duration=D` (Mesos duration syntax, e.g. `30secs`,
///   `5mins`; a bare number means seconds), `/stop`, `/state`, `/statistics`,
///   `/download/raw`, `/download/text` (jeprof --text), `/download/graph`
///   (jeprof --svg), each download with an optional run `id`. Same status
///   codes, JSON fields and error texts as Mesos (docs/mesos-protocol.md). One run at
///   a time; a run ends by itself when its duration elapses; only the latest
///   finished run is served.
/// - heapgate's own extensions, under `/heapgate/`:
///   `heap_profile?active=true|false`, `heap_profile?trigger_dump=true` and
///   `heap_profile` (status), as libmtev's `/mtev/heap_profile` (a value other
///   than true or false is a 400 naming the parameter, where libmtev reads it
///   as false);
///   `download/folded?id=&metric=` (flame-graph lines symbolized by heapgate);
///   `download/flamegraph?id=&metric=` (the same stacks drawn as an SVG flame
///   graph by heapgate itself, `image/svg+xml`; no jeprof or Perl needed; the
///   `id` and `metric` errors as for `download/folded`);
///   `download/pprof?id=` (the run as a gzipped pprof profile,
///   `profile.<id>.pb.gz`, heapgate/pprof.h; 501 when built without pprof);
///   `diff?metric=&format=text|folded` (the latest run against the one before).
///
/// Downloads name a plain file in `Content-Disposition` (never the server's
/// directory); `download/graph` is `image/svg+xml`. jeprof makes text and
/// graph from the run's profile without the allocator's own frames
/// (heapgate/allocator_frames.h).
///
/// A run starts with `prof.reset`, so its profile holds only what was allocated
/// during the run and is still live. Runs and exact/sampled ProfileScopes
/// exclude each other (jemalloc's profiling is process-wide): a scope opened
/// during a run measures counters only, and `/start` during a profiling scope
/// answers 409 as for profiling started externally.
///
/// Without jemalloc, or with profiling unusable (no `MALLOC_CONF=prof:true`),
/// the server still runs and the endpoints answer with Mesos' 400 errors.
///
/// Every route takes GET and POST (as Mesos); HEAD only where GET changes
/// nothing (not `start`, `stop`, `heap_profile`: 405 with an Allow header).
/// Requests are bounded (the constants below and HttpOptions' timeouts) and
/// served on a small thread pool once they have arrived whole; jeprof runs
/// never block other endpoints. Every error answer has a one-line body
/// (heapgate's text, or libmicrohttpd's HTML for what its parser refuses).
/// Not copyable or movable; destroy it to stop serving.
class HttpServer {
 public:
  /// The request line, CRLF included; longer is 414 (decided once the line
  /// has ended, or once it fills the connection's 24 KiB buffer).
  static constexpr std::size_t kMaxRequestLineBytes = 8192;
  /// The request line and headers; longer (or one header line over 8192) is 431.
  static constexpr std::size_t kMaxHeadBytes = 16384;
  /// A request body (Content-Length); larger is 413, answered before the body
  /// is read. The endpoints take their parameters in the query.
  static constexpr std::size_t kMaxBodyBytes = 64 * 1024;
  /// Requests on one kept-alive connection.
  static constexpr std::size_t kMaxRequestsPerConnection = 100;

  /// Binds and starts serving on a background thread. Errors: `io_error` when
  /// the address cannot be bound (in use, bad host), `invalid_argument` for a
  /// port outside 0..65535 or inconsistent duration bounds.
  static Result<std::unique_ptr<HttpServer>> start(const HttpOptions& options);

  /// The few lines a process needs: if `HEAPGATE_MEMORY_PROFILING=true`, starts
  /// a server with http_options_from_environment(); otherwise returns nullptr
  /// (the endpoints do not exist, as in Mesos without `--memory_profiling`).
  /// ```
  /// auto profiler = heapgate::HttpServer::from_environment();
  /// if (!profiler) std::fprintf(stderr, "%s\n", profiler.error().message().c_str());
  /// ```
  static Result<std::unique_ptr<HttpServer>> from_environment();

  /// Stops serving: finishes an active run (its profile is dumped, as /stop
  /// does), closes the listener and joins the threads. Idempotent.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// The bound port (the chosen one when HttpOptions::port was 0).
  int port() const noexcept;
  /// `host:port` as bound, for URLs and logs.
  std::string address() const;
  /// Stops serving now (see the destructor). Idempotent; thread-safe.
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapgate
