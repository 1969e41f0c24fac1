// SPDX-License-Identifier: MIT
// Routes (routes.h): the endpoint table, bearer-token check in constant time, 404 and 405 answers,
// and dispatch of each path to its MemoryProfiler handler.
#include "routes.h"

#include "heapgate/memory_profiler_protocol.h"

namespace heapgate::detail {
namespace {

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

Reply text_reply(int status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

}  // namespace

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return text;
}

Routes::Routes(MemoryProfiler& profiler, std::string bearer_token)
    : profiler_(profiler), token_(std::move(bearer_token)) {
  namespace protocol = http::memory_profiler;
  // start, stop and heap_profile act (start or stop a run, toggle, dump): no HEAD.
  routes_ = {
      {std::string(protocol::kStartPath), {Handler::start, false}},
      {std::string(protocol::kStopPath), {Handler::stop, false}},
      {std::string(protocol::kStatePath), {Handler::state, true}},
      {std::string(protocol::kStatisticsPath), {Handler::statistics, true}},
      {std::string(protocol::download_path(protocol::DownloadKind::raw)), {Handler::raw, true}},
      {std::string(protocol::download_path(protocol::DownloadKind::text)), {Handler::text, true}},
      {std::string(protocol::download_path(protocol::DownloadKind::graph)), {Handler::graph, true}},
      {"/heapgate/heap_profile", {Handler::heap_profile, false}},
      {"/heapgate/download/folded", {Handler::folded, true}},
      {"/heapgate/download/flamegraph", {Handler::flamegraph, true}},
      {"/heapgate/download/pprof", {Handler::pprof, true}},
      {"/heapgate/diff", {Handler::diff, true}},
  };
}

std::optional<Reply> Routes::refuse(const RouteRequest& request) const {
  if (!token_.empty()) {
    const std::string prefix = "Bearer ";
    const std::string& header = request.authorization ? *request.authorization : std::string();
    std::string given = header.compare(0, prefix.size(), prefix) == 0 ? header.substr(prefix.size()) : std::string();
    if (header.empty() || !equal_constant_time(given, token_)) {
      Reply reply = text_reply(401, "Unauthorized: send 'Authorization: Bearer <token>'.\n");
      reply.headers.emplace("WWW-Authenticate", "Bearer realm=\"heapgate\"");
      return reply;
    }
  }
  auto route = routes_.find(request.path);
  if (route == routes_.end()) {
    return text_reply(404, one_line("Not found: '" + request.path +
                                    "' is not an endpoint; use /memory-profiler/{start,stop,state,statistics,"
                                    "download/raw,download/text,download/graph} or /heapgate/{heap_profile,"
                                    "download/folded,download/flamegraph,download/pprof,diff}.") +
                               "\n");
  }
  // libprocess routes ignore the method: GET and POST both work.
  const bool head = route->second.head;
  if (request.method == "GET" || request.method == "POST" || (request.method == "HEAD" && head)) return std::nullopt;
  const char* allow = head ? "GET, HEAD, POST" : "GET, POST";
  Reply reply = text_reply(
      405, one_line("Method " + request.method + " is not allowed on " + request.path + ": use " + allow + ".") + "\n");
  reply.headers.emplace("Allow", allow);
  return reply;
}

std::optional<Reply> Routes::run_if_quick(const RouteRequest& request) const {
  if (routes_.find(request.path)->second.handler != Handler::state) return std::nullopt;
  return profiler_.state_if_free();
}

Reply Routes::run(const RouteRequest& request) const {
  namespace protocol = http::memory_profiler;
  const Route& route = routes_.find(request.path)->second;
  const QueryParams& q = request.query;
  switch (route.handler) {
    case Handler::start:
      return profiler_.start(q);
    case Handler::stop:
      return profiler_.stop();
    case Handler::state:
      return profiler_.state();
    case Handler::statistics:
      return profiler_.statistics();
    case Handler::raw:
      return profiler_.download(protocol::DownloadKind::raw, q);
    case Handler::text:
      return profiler_.download(protocol::DownloadKind::text, q);
    case Handler::graph:
      return profiler_.download(protocol::DownloadKind::graph, q);
    case Handler::heap_profile:
      return profiler_.heap_profile(q);
    case Handler::folded:
      return profiler_.download_folded(q);
    case Handler::flamegraph:
      return profiler_.download_flamegraph(q);
    case Handler::pprof:
      return profiler_.download_pprof(q);
    case Handler::diff:
      return profiler_.diff(q);
  }
  return text_reply(500, "Internal error: a route without a handler.\n");
}

}  // namespace heapgate::detail
