// SPDX-License-Identifier: MIT
// heapgate::HttpServer's HTTP side: a libmicrohttpd daemon, which alone reads
// and parses requests. One epoll thread holds every connection (a slow or
// idle client holds no thread); each whole request is checked against the
// bounds of docs/mesos-protocol.md §7 from its head alone, then answered by
// detail::Routes: on a WorkerPool thread while its connection is suspended,
// or, for /state with its lock free, on the connection thread itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "heapgate/error.h"
#include "heapgate/http.h"
#include "request_deadlines.h"
#include "routes.h"
#include "worker_pool.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace heapgate::detail {

class FrontEnd {
 public:
  /// Binds options.host:options.port and serves `routes`, which must outlive
  /// this. Errors: io_error when the address cannot be bound or the daemon
  /// does not start.
  static Result<std::unique_ptr<FrontEnd>> start(const HttpOptions& options, const Routes& routes);
  /// stop().
  ~FrontEnd();
  FrontEnd(const FrontEnd&) = delete;
  FrontEnd& operator=(const FrontEnd&) = delete;

  int port() const noexcept { return port_; }
  /// Answers the requests already with a handler, then closes every
  /// connection and joins the threads. Idempotent.
  void stop();

  // libmicrohttpd's callbacks (front_end.cpp), public for its C linkage.
  struct Socket;
  struct Exchange;
  void connection_opened(MHD_Connection* connection, Socket*& socket);
  void connection_closed(Socket* socket);
  Exchange* request_line(MHD_Connection* connection, const char* target);
  int request(MHD_Connection* connection, const char* url, const char* method, const char* version,
              std::size_t* upload_size, Exchange*& exchange);
  void completed(MHD_Connection* connection, Exchange* exchange);

 private:
  FrontEnd(const HttpOptions& options, const Routes& routes);
  int queue(MHD_Connection* connection, Exchange& exchange, const Reply& reply, bool close);

  const HttpOptions options_;
  const Routes& routes_;
  RequestDeadlines deadlines_;
  WorkerPool workers_;
  std::atomic<std::size_t> open_{0};
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  std::once_flag stopped_;
};

}  // namespace heapgate::detail
