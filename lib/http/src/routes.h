// SPDX-License-Identifier: MIT
// The endpoints as a table, apart from any HTTP library: authentication, 404
// for a path that is no endpoint, 405 for a method a route does not take,
// and the route's handler on detail::MemoryProfiler. The front end
// (front_end.cpp) hands it requests that libmicrohttpd has parsed.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "memory_profiler.h"

namespace heapgate::detail {

/// What a route needs of a request.
struct RouteRequest {
  std::string method;
  std::string path;
  QueryParams query;
  /// The Authorization header; nullopt when absent.
  std::optional<std::string> authorization;
};

class Routes {
 public:
  /// `profiler` must outlive this.
  Routes(MemoryProfiler& profiler, std::string bearer_token);

  /// The answer that needs no handler: 401 (token missing or wrong), 404,
  /// 405 with Allow. nullopt: the request goes to its route's handler (run()).
  std::optional<Reply> refuse(const RouteRequest& request) const;
  /// The route's handler, for a request refuse() let through. May take long
  /// (a jeprof download): never call it on the connection thread.
  Reply run(const RouteRequest& request) const;
  /// The answer when it is quick and needs no lock another thread holds
  /// (`/state`, unless a run is starting or dumping): what the connection
  /// thread may answer itself, sparing the request two thread hand-overs.
  /// nullopt: run() it on a handler thread.
  std::optional<Reply> run_if_quick(const RouteRequest& request) const;

 private:
  enum class Handler {
    start,
    stop,
    state,
    statistics,
    raw,
    text,
    graph,
    heap_profile,
    folded,
    flamegraph,
    pprof,
    diff
  };
  struct Route {
    Handler handler;
    /// HEAD runs the GET handler: only where GET changes nothing.
    bool head;
  };

  MemoryProfiler& profiler_;
  const std::string token_;
  std::map<std::string, Route, std::less<>> routes_;
};

/// `text` with CR and LF replaced by spaces: an error body stays one line
/// whatever a client put in its path.
std::string one_line(std::string text);

}  // namespace heapgate::detail
