// SPDX-License-Identifier: MIT
// FrontEnd (front_end.h): the libmicrohttpd daemon on a socket of its own, checking each request's
// head against the protocol's bounds and answering it through Routes, on a worker or inline.
#include "front_end.h"

#include <netdb.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>
#include <vector>

#include <microhttpd.h>

#include "raw_answer.h"

namespace heapgate::detail {

struct FrontEnd::Socket {
  RequestDeadlines::Entry deadline;
  std::size_t served = 0;
  /// Over max_connections: answered 503 as it opened.
  bool refused = false;
};

// One request, from its request line (request_line) to its end (completed).
struct FrontEnd::Exchange {
  Socket* socket = nullptr;
  /// The request target as sent (before percent-decoding), for the 414.
  std::size_t target_length = 0;
  bool head_checked = false;
  bool with_handler = false;
  /// Set by the handler thread before it resumes the connection.
  std::optional<Reply> reply;
};

namespace {

// One header line, CRLF included (docs/mesos-protocol.md §7).
constexpr std::size_t kMaxHeaderLineBytes = 8192;

Reply plain(int status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

bool known_method(std::string_view method) {
  for (std::string_view m : {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}) {
    if (m == method) return true;
  }
  return false;
}

// libmicrohttpd keeps one Content-Length (the first) and Transfer-Encoding
// over it; the bounds need them all.
struct HeadFacts {
  std::vector<std::string> content_lengths;
  bool transfer_encoding = false;
  std::size_t longest_line = 0;
};

MHD_Result collect_head_facts(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto& facts = *static_cast<HeadFacts*>(cls);
  const char* name = key != nullptr ? key : "";
  const char* text = value != nullptr ? value : "";
  // "Name: value" and its CRLF; libmicrohttpd dropped the blanks around the value.
  facts.longest_line = std::max(facts.longest_line, std::strlen(name) + 2 + std::strlen(text) + 2);
  if (::strcasecmp(name, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) facts.content_lengths.emplace_back(text);
  if (::strcasecmp(name, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) facts.transfer_encoding = true;
  return MHD_YES;
}

MHD_Result collect_query(void* cls, MHD_ValueKind, const char* key, const char* value) {
  // Repeated keys come in order; the multimap keeps the first one first.
  static_cast<QueryParams*>(cls)->emplace(key != nullptr ? key : "", value != nullptr ? value : "");
  return MHD_YES;
}

// The refusals decided from the head alone, before any of the body is read
// (docs/mesos-protocol.md §7).
std::optional<Reply> check_head(MHD_Connection* connection, const char* method, const char* version,
                                std::size_t target_length) {
  const std::size_t line = std::strlen(method) + 1 + target_length + 1 + std::strlen(version) + 2;
  if (line > HttpServer::kMaxRequestLineBytes) {
    return plain(414, "URI too long: the request line exceeds " + std::to_string(HttpServer::kMaxRequestLineBytes) +
                          " bytes; shorten the path and query.\n");
  }
  if (!known_method(method)) {
    return plain(501, one_line("Method '" + std::string(method) + "' is not implemented: use GET or POST.") + "\n");
  }
  HeadFacts facts;
  MHD_get_connection_values(connection, MHD_HEADER_KIND, &collect_head_facts, &facts);
  const MHD_ConnectionInfo* size = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
  if ((size != nullptr && size->header_size > HttpServer::kMaxHeadBytes) || facts.longest_line > kMaxHeaderLineBytes) {
    return plain(431, "Request header fields too large: the request line and headers exceed " +
                          std::to_string(HttpServer::kMaxHeadBytes) + " bytes, or one header line " +
                          std::to_string(kMaxHeaderLineBytes) + "; send fewer or shorter headers.\n");
  }
  // Refused rather than decoded: the endpoints take no body, and a body
  // framed two ways is how requests are smuggled past proxies.
  if (facts.transfer_encoding) {
    return plain(411, "Transfer-Encoding is not accepted: send the body with Content-Length (at most " +
                          std::to_string(HttpServer::kMaxBodyBytes) + " bytes).\n");
  }
  for (const std::string& length : facts.content_lengths) {
    if (length != facts.content_lengths.front()) {
      return plain(400, "Conflicting Content-Length headers: send exactly one.\n");
    }
  }
  if (!facts.content_lengths.empty()) {
    // libmicrohttpd has checked that it is digits and fits 64 bits.
    const unsigned long long length = std::strtoull(facts.content_lengths.front().c_str(), nullptr, 10);
    if (length > HttpServer::kMaxBodyBytes) {
      return plain(413, "Request body too large: Content-Length is " + std::to_string(length) +
                            " bytes, the limit is " + std::to_string(HttpServer::kMaxBodyBytes) +
                            " (these endpoints take their parameters in the query).\n");
    }
  }
  return std::nullopt;
}

RouteRequest route_request(MHD_Connection* connection, const char* url, const char* method) {
  RouteRequest request;
  request.method = method;
  request.path = url != nullptr ? url : "";
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect_query, &request.query);
  if (const char* authorization = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Authorization")) {
    request.authorization = authorization;
  }
  return request;
}

Reply run_handler(const Routes& routes, const RouteRequest& request) {
  try {
    return routes.run(request);
  } catch (const std::exception& e) {
    return plain(500, one_line(std::string("Internal error: ") + e.what()) + "\n");
  }
}

std::optional<Reply> run_quick_handler(const Routes& routes, const RouteRequest& request) {
  try {
    return routes.run_if_quick(request);
  } catch (const std::exception&) {
    return std::nullopt;  // run() on a handler thread answers it, 500 if it throws again
  }
}

unsigned int whole_seconds(std::chrono::milliseconds d) {
  // libmicrohttpd counts timeouts in whole seconds; 0 would mean none.
  return static_cast<unsigned int>(std::max<long long>(1, (d.count() + 999) / 1000));
}

FrontEnd::Socket* socket_of(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info != nullptr ? static_cast<FrontEnd::Socket*>(info->socket_context) : nullptr;
}

// The listening socket is made here, not by libmicrohttpd: SO_REUSEADDR
// without SO_REUSEPORT (under which a second server would bind the same port
// and silently take half of the requests), and the system's largest backlog,
// so a burst of connections is not dropped and retried a second later.
Result<int> listen_on(const std::string& host, int port, int& family) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  const std::string fix = "pick another port (HEAPGATE_HTTP=127.0.0.1:PORT), or 0 for any free one";
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return fail(make_error(ErrorCode::io_error, where,
                           std::string("cannot resolve the host: ") + ::gai_strerror(rc) + " (not a local address?)",
                           "listen on a local address, e.g. 127.0.0.1"));
  }
  std::string reason = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      reason = std::strerror(errno);
      ::close(fd);
      fd = -1;
      continue;
    }
    family = a->ai_family;
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return fail(make_error(ErrorCode::io_error, where,
                           "cannot listen on this address (" + reason + "; in use, or not a local address)", fix));
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in&>(address).sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6&>(address).sin6_port);
  return -1;
}

// ---- libmicrohttpd's callbacks, forwarded to the FrontEnd.

void on_connection(void* cls, MHD_Connection* connection, void** socket_context, MHD_ConnectionNotificationCode code) {
  auto& self = *static_cast<FrontEnd*>(cls);
  auto*& socket = reinterpret_cast<FrontEnd::Socket*&>(*socket_context);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    self.connection_opened(connection, socket);
  } else {
    self.connection_closed(socket);
    socket = nullptr;
  }
}

void* on_request_line(void* cls, const char* target, MHD_Connection* connection) {
  return static_cast<FrontEnd*>(cls)->request_line(connection, target);
}

MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url, const char* method, const char* version,
                      const char*, std::size_t* upload_size, void** con_cls) {
  auto*& exchange = reinterpret_cast<FrontEnd::Exchange*&>(*con_cls);
  return static_cast<MHD_Result>(
      static_cast<FrontEnd*>(cls)->request(connection, url, method, version, upload_size, exchange));
}

void on_completed(void* cls, MHD_Connection* connection, void** con_cls, MHD_RequestTerminationCode) {
  static_cast<FrontEnd*>(cls)->completed(connection, static_cast<FrontEnd::Exchange*>(*con_cls));
  *con_cls = nullptr;
}

}  // namespace

FrontEnd::FrontEnd(const HttpOptions& options, const Routes& routes)
    : options_(options),
      routes_(routes),
      deadlines_(options.request_timeout, options.idle_timeout),
      workers_(options.worker_threads) {}

Result<std::unique_ptr<FrontEnd>> FrontEnd::start(const HttpOptions& options, const Routes& routes) {
  int family = AF_INET;
  auto listener = listen_on(options.host, options.port, family);
  if (!listener) return fail(listener.error());
  std::unique_ptr<FrontEnd> self(new FrontEnd(options, routes));
  self->port_ = bound_port(*listener);
  unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
  if (family == AF_INET6) flags |= MHD_USE_IPv6;
  // The cap libmicrohttpd enforces by closing at once; connection_opened
  // answers 503 below it, so a client learns why.
  const auto hard_cap = static_cast<unsigned int>(options.max_connections + 64);
  // Request line, headers and the read buffer of one connection, allocated
  // whole as it opens: what an idle kept-alive client costs. It holds a head
  // well past kMaxHeadBytes with its header records, so check_head() names
  // the bounds; beyond it libmicrohttpd answers 414 or 431 itself.
  const std::size_t connection_memory = 24 * 1024;
  FrontEnd* raw = self.get();
  self->daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &on_request, raw, MHD_OPTION_LISTEN_SOCKET, *listener, MHD_OPTION_CONNECTION_TIMEOUT,
      whole_seconds(options.idle_timeout), MHD_OPTION_CONNECTION_LIMIT, hard_cap, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      connection_memory, MHD_OPTION_NOTIFY_CONNECTION, &on_connection, raw, MHD_OPTION_NOTIFY_COMPLETED, &on_completed,
      raw, MHD_OPTION_URI_LOG_CALLBACK, &on_request_line, raw,
      // Whitespace before a header's colon is a 400 (RFC 9112 §5.1), not a
      // header of another name; a missing Host is tolerated.
      MHD_OPTION_STRICT_FOR_CLIENT, -1, MHD_OPTION_END);
  if (self->daemon_ == nullptr) {
    ::close(*listener);
    self->workers_.stop();
    self->deadlines_.stop();
    return fail(make_error(ErrorCode::io_error, options.host + ":" + std::to_string(self->port_),
                           "libmicrohttpd did not start (out of threads or descriptors?)",
                           "raise the open-file limit (ulimit -n) or lower HttpOptions::worker_threads"));
  }
  return self;
}

FrontEnd::~FrontEnd() { stop(); }

void FrontEnd::stop() {
  std::call_once(stopped_, [this] {
    // First the handlers, while the daemon still runs: each resumes its
    // connection. Requests that arrive meanwhile are answered 503.
    workers_.stop();
    if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
    deadlines_.stop();
  });
}

void FrontEnd::connection_opened(MHD_Connection* connection, Socket*& socket) {
  socket = new Socket;
  const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  const int fd = info != nullptr ? info->connect_fd : -1;
  if (open_.fetch_add(1) >= options_.max_connections) {
    socket->refused = true;
    socket->deadline.receiving = false;
    if (fd >= 0) {
      send_and_shut_down(fd, plain_answer(503, "Service Unavailable",
                                          "Too many connections: " + std::to_string(options_.max_connections) +
                                              " are open; retry shortly.\n"));
    }
    return;
  }
  deadlines_.opened(socket->deadline, fd);
}

void FrontEnd::connection_closed(Socket* socket) {
  if (socket == nullptr) return;
  if (!socket->refused) deadlines_.closed(socket->deadline);
  open_.fetch_sub(1);
  delete socket;
}

FrontEnd::Exchange* FrontEnd::request_line(MHD_Connection* connection, const char* target) {
  auto* exchange = new Exchange;
  exchange->socket = socket_of(connection);
  exchange->target_length = target != nullptr ? std::strlen(target) : 0;
  if (exchange->socket != nullptr && !exchange->socket->refused) deadlines_.request_line(exchange->socket->deadline);
  return exchange;
}

void FrontEnd::completed(MHD_Connection* connection, Exchange* exchange) {
  // queue() set the write timeout; the wait for the next request is idle time.
  if (options_.write_timeout != options_.idle_timeout) {
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, whole_seconds(options_.idle_timeout));
  }
  if (exchange == nullptr) return;
  if (exchange->socket != nullptr && !exchange->socket->refused) deadlines_.answered(exchange->socket->deadline);
  delete exchange;
}

int FrontEnd::request(MHD_Connection* connection, const char* url, const char* method, const char* version,
                      std::size_t* upload_size, Exchange*& exchange) {
  if (exchange == nullptr) {
    // libmicrohttpd always reports the request line first; kept for safety.
    exchange = request_line(connection, url);
  }
  Socket* socket = exchange->socket;
  if (socket == nullptr || socket->refused) return MHD_NO;
  if (!exchange->head_checked) {
    // The first call has the head only: refuse here and the body is never read.
    exchange->head_checked = true;
    if (auto refusal = check_head(connection, method, version, exchange->target_length)) {
      if (!deadlines_.arrived(socket->deadline)) return MHD_NO;
      return queue(connection, *exchange, *refusal, true);
    }
    return MHD_YES;
  }
  if (*upload_size != 0) {
    // No endpoint reads a body; its size is bounded by check_head().
    *upload_size = 0;
    return MHD_YES;
  }
  if (exchange->reply) return queue(connection, *exchange, *exchange->reply, false);
  if (exchange->with_handler) return MHD_YES;
  // The request is whole.
  if (!deadlines_.arrived(socket->deadline)) return MHD_NO;
  RouteRequest route = route_request(connection, url, method);
  if (auto refused = routes_.refuse(route)) return queue(connection, *exchange, *refused, false);
  if (auto quick = run_quick_handler(routes_, route)) return queue(connection, *exchange, *quick, false);
  exchange->with_handler = true;
  MHD_suspend_connection(connection);
  Exchange* x = exchange;
  const Routes& routes = routes_;
  const bool queued = workers_.submit([x, connection, &routes, route = std::move(route)] {
    x->reply = run_handler(routes, route);
    MHD_resume_connection(connection);
  });
  if (!queued) {
    x->reply = plain(503, "Shutting down: the server is stopping; retry against its successor.\n");
    MHD_resume_connection(connection);
  }
  return MHD_YES;
}

int FrontEnd::queue(MHD_Connection* connection, Exchange& exchange, const Reply& reply, bool close) {
  MHD_Response* response = nullptr;
  if (reply.file) {
    // libmicrohttpd closes its descriptor when the answer is done; the
    // duplicate shares the open file, so a newer run replacing the path
    // changes nothing for this download.
    const int fd = ::dup(reply.file->fd);
    if (fd >= 0) response = MHD_create_response_from_fd64(reply.file->size, fd);
    if (response == nullptr && fd >= 0) ::close(fd);
  } else {
    response =
        MHD_create_response_from_buffer(reply.body.size(), const_cast<char*>(reply.body.data()), MHD_RESPMEM_MUST_COPY);
  }
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type.c_str());
  for (const auto& [name, value] : reply.headers) MHD_add_response_header(response, name.c_str(), value.c_str());
  if (close || ++exchange.socket->served >= HttpServer::kMaxRequestsPerConnection) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
  }
  if (options_.write_timeout != options_.idle_timeout) {
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, whole_seconds(options_.write_timeout));
  }
  const MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned int>(reply.status), response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace heapgate::detail
