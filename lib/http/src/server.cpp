// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// heapgate::HttpServer: the memory-profiler endpoints on cpp-httplib.
#include "heapgate/http.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include <httplib.h>

#include "connections.h"
#include "in_memory_server.h"
#include "heapgate/memory_profiler_protocol.h"
#include "memory_profiler.h"

namespace heapgate {
namespace {

using detail::MemoryProfiler;
using detail::QueryParams;
using detail::Reply;

// Constant time in the token's content: an attacker timing answers learns at
// most the expected length.
bool equal_constant_time(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

QueryParams query_of(const httplib::Request& req) {
  // httplib keeps repeated keys in order; emplace keeps the first one first.
  QueryParams params;
  for (const auto& [key, value] : req.params) params.emplace(key, value);
  return params;
}

void send(const Reply& reply, httplib::Response& res) {
  res.status = reply.status;
  for (const auto& [name, value] : reply.headers) res.set_header(name, value);
  if (!reply.file) {
    res.set_content(reply.body, reply.content_type.c_str());
    return;
  }
  // Streamed from the descriptor opened while the state was locked. A client
  // that goes away makes sink.write fail; the provider then stops, and the
  // descriptor closes with the last reference.
  std::shared_ptr<detail::OpenFile> file = reply.file;
  res.set_content_provider(static_cast<std::size_t>(file->size), reply.content_type.c_str(),
                           [file](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                             char buffer[64 * 1024];
                             std::size_t want = std::min(length, sizeof buffer);
                             ssize_t got = ::pread(file->fd, buffer, want, static_cast<off_t>(offset));
                             if (got <= 0) return false;
                             return sink.write(buffer, static_cast<std::size_t>(got));
                           });
}

Result<int> parse_port(const std::string& text, const std::string& where) {
  char* end = nullptr;
  errno = 0;
  long port = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || end != text.c_str() + text.size() || port < 0 || port > 65535) {
    return fail(make_error(ErrorCode::invalid_argument, where, "port \"" + text + "\" is not a number in 0..65535",
                           "write HOST:PORT or PORT, e.g. 127.0.0.1:5050"));
  }
  return static_cast<int>(port);
}

// cpp-httplib's listener, accepting for detail::Connections: every accepted
// socket goes there (process_and_close_socket is the hook cpp-httplib calls
// per connection), and Connections calls back with whole requests.
class FrontServer final : public httplib::Server {
 public:
  FrontServer() {
    // The listener hands each socket over without waiting on the client, so
    // it may do so itself: no pool of its own.
    new_task_queue = [] { return new InlineQueue; };
  }
  void attach(detail::Connections* connections) { connections_ = connections; }
  bool serve(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }
  // cpp-httplib listens with a backlog of 5 (compiled in): a burst of
  // connections, say 64 slow clients and then a real one, overflows it and
  // the kernel drops SYNs, which clients retry only after 1 s. Calling
  // listen() again on the bound socket raises the backlog.
  void raise_backlog() { ::listen(svr_sock_, SOMAXCONN); }

 private:
  class InlineQueue final : public httplib::TaskQueue {
    void enqueue(std::function<void()> task) override { task(); }
    void shutdown() override {}
  };

  bool process_and_close_socket(socket_t sock) override {
    connections_->adopt(sock);
    return true;
  }

  detail::Connections* connections_ = nullptr;
};

// Which methods a route takes. Mesos serves GET and POST alike; HEAD runs
// the GET handler in cpp-httplib, so it is allowed only where GET changes
// nothing.
struct Route {
  bool head = false;
  const char* allow() const { return head ? "GET, HEAD, POST" : "GET, POST"; }
};

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return text;
}

// The answers cpp-httplib makes itself, with an empty body: requests that
// its parser refuses after detail::Connections let them through.
std::string default_error_body(int status) {
  switch (status) {
    case 400:
      return "Bad request: the request line does not parse; send 'METHOD /path?query HTTP/1.1' with one '?' at "
             "most.\n";
    case 413:
      return "Request body too large: these endpoints take their parameters in the query.\n";
    case 414:
      return "URI too long: shorten the path and query.\n";
    case 416:
      return "Range not satisfiable: drop the Range header or ask for bytes inside the body.\n";
    default:
      return "HTTP error " + std::to_string(status) + ".\n";
  }
}

bool positive(std::chrono::milliseconds d) { return d.count() > 0; }

// What every request meets, with or without a socket (HttpServer::start,
// detail::InMemoryServer): authentication, the routes and their handlers,
// the error bodies and cpp-httplib's own bounds. `routes` and `profiler`
// must outlive `server`.
void configure_server(FrontServer& server, MemoryProfiler& profiler, std::map<std::string, Route, std::less<>>& routes,
                      const HttpOptions& options) {
  // Before any handler: authentication, then 404 for an unknown path and 405
  // for a method the route does not take, each with a one-line body.
  server.set_pre_routing_handler([token = options.bearer_token, &routes](const httplib::Request& req,
                                                                         httplib::Response& res) {
    if (!token.empty()) {
      const std::string header = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      std::string given = header.compare(0, prefix.size(), prefix) == 0 ? header.substr(prefix.size()) : std::string();
      if (header.empty() || !equal_constant_time(given, token)) {
        res.status = 401;
        res.set_header("WWW-Authenticate", "Bearer realm=\"heapgate\"");
        res.set_content("Unauthorized: send 'Authorization: Bearer <token>'.\n", "text/plain; charset=utf-8");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    auto route = routes.find(req.path);
    if (route == routes.end()) {
      res.status = 404;
      res.set_content(one_line("Not found: '" + req.path +
                               "' is not an endpoint; use /memory-profiler/{start,stop,state,statistics,download/raw,"
                               "download/text,download/graph} or /heapgate/{heap_profile,download/folded,"
                               "download/flamegraph,download/pprof,diff}.") +
                          "\n",
                      "text/plain; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "GET" || req.method == "POST" || (req.method == "HEAD" && route->second.head)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 405;
    res.set_header("Allow", route->second.allow());
    res.set_content(
        one_line("Method " + req.method + " is not allowed on " + req.path + ": use " + route->second.allow() + ".") +
            "\n",
        "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  });
  // cpp-httplib's own refusals (a request line it cannot parse) come with an
  // empty body; give them one line. Handled: cpp-httplib then sets the length.
  server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
    res.set_content(default_error_body(res.status), "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  }));

  // libprocess routes ignore the method: GET and POST both work.
  auto route = [&server, &routes](std::string_view path, Route methods,
                                  std::function<Reply(const httplib::Request&)> handler) {
    auto serve = [handler](const httplib::Request& req, httplib::Response& res) { send(handler(req), res); };
    routes.emplace(std::string(path), methods);
    server.Get(std::string(path), serve);
    server.Post(std::string(path), serve);
  };
  const Route acts{false};
  const Route reads{true};
  namespace protocol = http::memory_profiler;
  route(protocol::kStartPath, acts, [&profiler](const httplib::Request& r) { return profiler.start(query_of(r)); });
  route(protocol::kStopPath, acts, [&profiler](const httplib::Request&) { return profiler.stop(); });
  route(protocol::kStatePath, reads, [&profiler](const httplib::Request&) { return profiler.state(); });
  route(protocol::kStatisticsPath, reads, [&profiler](const httplib::Request&) { return profiler.statistics(); });
  for (protocol::DownloadKind kind :
       {protocol::DownloadKind::raw, protocol::DownloadKind::text, protocol::DownloadKind::graph}) {
    route(protocol::download_path(kind), reads,
          [&profiler, kind](const httplib::Request& r) { return profiler.download(kind, query_of(r)); });
  }
  // heapgate's extensions, apart from Mesos' namespace. heap_profile toggles
  // profiling and dumps: no HEAD.
  route("/heapgate/heap_profile", acts,
        [&profiler](const httplib::Request& r) { return profiler.heap_profile(query_of(r)); });
  route("/heapgate/download/folded", reads,
        [&profiler](const httplib::Request& r) { return profiler.download_folded(query_of(r)); });
  route("/heapgate/download/flamegraph", reads,
        [&profiler](const httplib::Request& r) { return profiler.download_flamegraph(query_of(r)); });
  route("/heapgate/download/pprof", reads,
        [&profiler](const httplib::Request& r) { return profiler.download_pprof(query_of(r)); });
  route("/heapgate/diff", reads, [&profiler](const httplib::Request& r) { return profiler.diff(query_of(r)); });

  // Only what the Keep-Alive header advertises: Connections enforces both.
  server.set_keep_alive_max_count(HttpServer::kMaxRequestsPerConnection);
  server.set_keep_alive_timeout(
      std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(options.idle_timeout).count()));
  // cpp-httplib checks it too (a form body above its own 8 KiB gets 413).
  server.set_payload_max_length(HttpServer::kMaxBodyBytes);
}

detail::ConnectionLimits connection_limits(const HttpOptions& options) {
  detail::ConnectionLimits limits;
  limits.max_request_line = HttpServer::kMaxRequestLineBytes;
  limits.max_head = HttpServer::kMaxHeadBytes;
  limits.max_body = HttpServer::kMaxBodyBytes;
  limits.max_requests_per_connection = HttpServer::kMaxRequestsPerConnection;
  limits.max_connections = options.max_connections;
  limits.workers = options.worker_threads;
  limits.idle_timeout = options.idle_timeout;
  limits.request_timeout = options.request_timeout;
  limits.write_timeout = options.write_timeout;
  return limits;
}

// What HttpServer::start and detail::InMemoryServer::create refuse.
Result<void> check_options(const HttpOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return fail(make_error(ErrorCode::invalid_argument, "HttpOptions::port",
                           "port " + std::to_string(options.port) + " is not in 0..65535"));
  }
  if (options.minimum_duration.count() <= 0 || options.minimum_duration > options.maximum_duration ||
      options.default_duration < options.minimum_duration || options.default_duration > options.maximum_duration) {
    return fail(make_error(ErrorCode::invalid_argument, "HttpOptions",
                           "need 0 < minimum_duration <= default_duration <= maximum_duration"));
  }
  const std::pair<const char*, std::chrono::milliseconds> timeouts[] = {
      {"HttpOptions::request_timeout", options.request_timeout},
      {"HttpOptions::idle_timeout", options.idle_timeout},
      {"HttpOptions::write_timeout", options.write_timeout}};
  for (const auto& [name, value] : timeouts) {
    if (!positive(value)) {
      return fail(make_error(ErrorCode::invalid_argument, name, "must be positive", "e.g. std::chrono::seconds(5)"));
    }
  }
  if (options.worker_threads == 0) {
    return fail(make_error(ErrorCode::invalid_argument, "HttpOptions::worker_threads", "must be at least 1",
                           "leave the default, 8"));
  }
  if (options.max_connections == 0) {
    return fail(make_error(ErrorCode::invalid_argument, "HttpOptions::max_connections", "must be at least 1",
                           "leave the default, 256"));
  }
  return {};
}

}  // namespace

struct HttpServer::Impl {
  HttpOptions options;
  std::unique_ptr<MemoryProfiler> profiler;
  std::map<std::string, Route, std::less<>> routes;
  FrontServer server;
  std::unique_ptr<detail::Connections> connections;
  std::thread listener;
  int port = 0;
  std::atomic<bool> stopped{false};
};

Result<HttpOptions> http_options_from_environment() {
  HttpOptions options;
  const char* address = std::getenv("HEAPGATE_HTTP");
  if (address != nullptr && *address != '\0') {
    std::string text = address;
    auto colon = text.rfind(':');
    std::string port_text = colon == std::string::npos ? text : text.substr(colon + 1);
    if (colon != std::string::npos) {
      options.host = text.substr(0, colon);
      // [::1]:5050
      if (options.host.size() >= 2 && options.host.front() == '[' && options.host.back() == ']') {
        options.host = options.host.substr(1, options.host.size() - 2);
      }
      if (options.host.empty()) {
        return fail(make_error(ErrorCode::invalid_argument, "HEAPGATE_HTTP", "empty host in \"" + text + "\"",
                               "write HOST:PORT or PORT, e.g. 127.0.0.1:5050"));
      }
    }
    auto port = parse_port(port_text, "HEAPGATE_HTTP");
    if (!port) return fail(port.error());
    options.port = *port;
  }
  const char* token = std::getenv("HEAPGATE_HTTP_TOKEN");
  if (token != nullptr && *token != '\0') options.bearer_token = token;
  return options;
}

Result<std::unique_ptr<HttpServer>> HttpServer::from_environment() {
  const char* enabled = std::getenv("HEAPGATE_MEMORY_PROFILING");
  if (enabled == nullptr || std::strcmp(enabled, "true") != 0) return std::unique_ptr<HttpServer>();
  auto options = http_options_from_environment();
  if (!options) return fail(options.error());
  return start(*options);
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpOptions& options) {
  if (auto valid = check_options(options); !valid) return fail(valid.error());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->profiler = std::make_unique<MemoryProfiler>(options);
  MemoryProfiler& profiler = *impl->profiler;
  FrontServer& server = impl->server;
  auto& routes = impl->routes;

  configure_server(server, profiler, routes, options);
  const detail::ConnectionLimits limits = connection_limits(options);
  auto connections = detail::Connections::start(
      limits, [&server](httplib::Stream& stream, bool close_connection, bool& connection_closed) {
        return server.serve(stream, close_connection, connection_closed);
      });
  if (!connections) return fail(connections.error());
  impl->connections = std::move(*connections);
  server.attach(impl->connections.get());
  // httplib's default sets SO_REUSEPORT, under which a second process (or a
  // second server here) binds the same port and silently takes half of the
  // requests. SO_REUSEADDR alone still allows a restart over TIME_WAIT.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
    if (port < 0) port = -1;
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port < 0) {
    return fail(make_error(ErrorCode::io_error, options.host + ":" + std::to_string(options.port),
                           "cannot listen on this address (in use, or not a local address)",
                           "pick another port (HEAPGATE_HTTP=127.0.0.1:PORT), or 0 for any free one"));
  }
  impl->port = port;
  server.raise_backlog();
  impl->listener = std::thread([&server] { server.listen_after_bind(); });
  // httplib's stop() does nothing before the loop runs, so a server stopped
  // right after start would never return from listen: wait for the loop.
  while (!server.is_running()) std::this_thread::yield();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const noexcept { return impl_->port; }

std::string HttpServer::address() const { return impl_->options.host + ":" + std::to_string(impl_->port); }

void HttpServer::stop() {
  if (impl_->stopped.exchange(true)) return;
  impl_->server.stop();
  if (impl_->listener.joinable()) impl_->listener.join();
  // After the listener (nothing adopts any more); answers the requests that
  // arrived whole and joins the workers.
  impl_->connections->stop();
  // After the workers: no handler can reach the profiler any more.
  impl_->profiler.reset();
}

}  // namespace heapgate

namespace heapgate::detail {

struct InMemoryServer::State {
  std::unique_ptr<MemoryProfiler> profiler;
  std::map<std::string, Route, std::less<>> routes;
  FrontServer server;
  ConnectionLimits limits;
};

Result<std::unique_ptr<InMemoryServer>> InMemoryServer::create(const HttpOptions& options) {
  if (auto valid = check_options(options); !valid) return fail(valid.error());
  auto state = std::make_unique<State>();
  state->profiler = std::make_unique<MemoryProfiler>(options);
  configure_server(state->server, *state->profiler, state->routes, options);
  state->limits = connection_limits(options);
  return std::unique_ptr<InMemoryServer>(new InMemoryServer(std::move(state)));
}

InMemoryServer::InMemoryServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

InMemoryServer::~InMemoryServer() = default;

std::string InMemoryServer::answer(std::string_view request_bytes) {
  FrontServer& server = state_->server;
  return answer_request_bytes(request_bytes, state_->limits,
                              [&server](httplib::Stream& stream, bool close_connection, bool& connection_closed) {
                                return server.serve(stream, close_connection, connection_closed);
                              });
}

}  // namespace heapgate::detail
