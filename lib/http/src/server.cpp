// SPDX-License-Identifier: MIT
// heapgate::HttpServer: the memory-profiler endpoints (routes.cpp) behind
// libmicrohttpd (front_end.cpp).
#include "heapgate/http.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "front_end.h"
#include "memory_profiler.h"
#include "routes.h"

namespace heapgate {
namespace {

bool positive(std::chrono::milliseconds d) { return d.count() > 0; }

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

// What HttpServer::start refuses.
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
  std::unique_ptr<detail::MemoryProfiler> profiler;
  std::unique_ptr<detail::Routes> routes;
  std::unique_ptr<detail::FrontEnd> front_end;
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
  impl->profiler = std::make_unique<detail::MemoryProfiler>(options);
  impl->routes = std::make_unique<detail::Routes>(*impl->profiler, options.bearer_token);
  auto front_end = detail::FrontEnd::start(options, *impl->routes);
  if (!front_end) return fail(front_end.error());
  impl->front_end = std::move(*front_end);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const noexcept { return impl_->front_end->port(); }

std::string HttpServer::address() const { return impl_->options.host + ":" + std::to_string(port()); }

void HttpServer::stop() {
  if (impl_->stopped.exchange(true)) return;
  // Answers the requests already with a handler and closes the connections.
  impl_->front_end->stop();
  // After the handlers: finishes an active run, dumping it.
  impl_->profiler.reset();
}

}  // namespace heapgate
