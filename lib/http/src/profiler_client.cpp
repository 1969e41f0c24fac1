// SPDX-License-Identifier: MIT
// heapgate::http::ProfilerClient on cpp-httplib: the client side of the
// protocol in heapgate/memory_profiler_protocol.h, with Mesos' type quirks
// accepted so that it works against Mesos unchanged (docs/design.md §8).
#include "heapgate/profiler_client.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "heapgate/mesos_duration.h"

namespace heapgate::http {
namespace {

namespace protocol = memory_profiler;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Between the end of a run and its dump being served, /state may already say
// the run is over; downloads that miss it are retried this long.
constexpr std::chrono::seconds kDumpGrace{10};
// heapgate's server and Mesos both point users here when profiling is off.
// The variables are those HttpServer::from_environment() reads, as in
// examples/http_service.
constexpr const char* kEnableProfiler =
    "(heapgate: HEAPGATE_MEMORY_PROFILING=true, address in HEAPGATE_HTTP=HOST:PORT; Mesos: --memory_profiling)";

struct Endpoint {
  std::string scheme;
  std::string host;
  int port = 0;
  std::string prefix;  // a reverse proxy's path, without a trailing slash

  std::string origin() const {
    std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return scheme + "://" + h + ":" + std::to_string(port);
  }
};

Result<Endpoint> parse_url(const std::string& text, const SettingNames& names) {
  auto bad = [&](const std::string& what) {
    return fail(make_error(ErrorCode::invalid_argument, names.url + " " + text, what,
                           "write http://HOST:PORT or HOST:PORT, e.g. 127.0.0.1:5050"));
  };
  Endpoint e;
  e.scheme = "http";
  std::string rest = text;
  if (auto sep = rest.find("://"); sep != std::string::npos) {
    e.scheme = rest.substr(0, sep);
    std::transform(e.scheme.begin(), e.scheme.end(), e.scheme.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    rest = rest.substr(sep + 3);
  }
  if (e.scheme != "http" && e.scheme != "https") return bad("scheme \"" + e.scheme + "\" is not http or https");
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (e.scheme == "https") return bad("this heapgate was built with a cpp-httplib without TLS");
#endif
  const std::size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? std::string() : rest.substr(slash);
  if (path.find_first_of("?#") != std::string::npos) return bad("a query or fragment has no place in the base URL");
  if (authority.find('@') != std::string::npos) {
    return bad("credentials in the URL are not supported (send a bearer token instead)");
  }
  std::optional<std::string> port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) return bad("unclosed '[' in the host");
    e.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return bad("unexpected \"" + after + "\" after the host");
    if (!after.empty()) port_text = after.substr(1);
  } else if (auto colon = authority.rfind(':'); colon != std::string::npos) {
    e.host = authority.substr(0, colon);
    port_text = authority.substr(colon + 1);
    if (e.host.find(':') != std::string::npos) return bad("write an IPv6 address in brackets, e.g. [::1]:5050");
  } else {
    e.host = authority;
  }
  if (e.host.empty()) return bad("no host");
  e.port = e.scheme == "https" ? 443 : 80;
  if (port_text) {
    char* end = nullptr;
    long port = std::strtol(port_text->c_str(), &end, 10);
    if (port_text->empty() || end != port_text->c_str() + port_text->size() || port < 1 || port > 65535) {
      return bad("port \"" + *port_text + "\" is not a number in 1..65535");
    }
    e.port = static_cast<int>(port);
  }
  // Pasting the endpoints' own base (…/memory-profiler) works too.
  while (!path.empty() && path.back() == '/') path.pop_back();
  const std::string_view routes = protocol::kPrefix;
  if (path.size() >= routes.size() && path.compare(path.size() - routes.size(), routes.size(), routes) == 0) {
    path.erase(path.size() - routes.size());
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  e.prefix = path;
  return e;
}

// Mesos' error bodies are text ending in ".\n"; the two long ones start with a
// newline and span paragraphs. Their first paragraph, on one line, says it.
std::string server_message(const std::string& body) {
  std::string text = body;
  const std::size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "(empty answer)";
  text = text.substr(begin);
  if (auto para = text.find("\n\n"); para != std::string::npos) text.erase(para);
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '.')) text.pop_back();
  constexpr std::size_t kMax = 300;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }
bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

std::optional<RunId> as_id(const json& value) {
  if (value.is_number_integer()) return value.get<RunId>();
  // /stop answers the id as a string (Mesos quirk); accept it everywhere.
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    char* end = nullptr;
    long long id = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size()) return static_cast<RunId>(id);
  }
  return std::nullopt;
}

// remaining_seconds is a string in /start and a number in /state (Mesos).
std::optional<double> as_seconds(const json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return v;
  }
  return std::nullopt;
}

const json* member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A timeout as the user would have written it: "1s", "500ms", "2m00s".
std::string limit_text(std::chrono::milliseconds limit) {
  if (limit.count() % 1000 != 0 && limit < std::chrono::minutes(2)) return std::to_string(limit.count()) + "ms";
  return short_duration_text(std::chrono::duration<double>(limit).count());
}

}  // namespace

std::string short_duration_text(double seconds) {
  long long s = std::llround(std::max(0.0, seconds));
  char buf[32];
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 7200) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

struct ProfilerClient::Impl {
  Endpoint endpoint;
  ProfilerClientOptions options;
  httplib::Headers headers;
  std::unique_ptr<httplib::ClientImpl> client;

  using Query = std::vector<std::pair<std::string, std::string>>;

  // Sent in stout's own syntax, which Mesos parses too (a bare number, which
  // heapgate's server also takes, would not be).
  static Query start_query(std::optional<std::chrono::nanoseconds> duration) {
    if (!duration) return {};
    return {{std::string(protocol::kDurationParam), detail::format_mesos_duration(*duration)}};
  }

  std::string url(std::string_view path, const Query& query) const {
    std::string u = endpoint.origin() + endpoint.prefix + std::string(path);
    char sep = '?';
    for (const auto& [key, value] : query) {
      u += sep + key + "=" + value;
      sep = '&';
    }
    return u;
  }

  // GET <prefix><path>: the answer, whatever its status, or an Error naming
  // the URL when no complete answer arrived.
  Result<httplib::Response> get(std::string_view path, const Query& query,
                                std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    const SettingNames& names = options.names;
    const auto limit = timeout.value_or(options.timeout);
    client->set_connection_timeout(limit);
    client->set_read_timeout(limit);
    client->set_write_timeout(limit);
    httplib::Params params(query.begin(), query.end());
    const auto began = Clock::now();
    httplib::Result res = client->Get(endpoint.prefix + std::string(path), params, headers);
    if (res) return std::move(res.value());
    const bool waited_out = Clock::now() - began >= limit - std::chrono::milliseconds(50);
    const std::string where = url(path, query);
    auto unavailable = [&](std::string what, std::string fix) {
      return fail(make_error(ErrorCode::unavailable, where, std::move(what), std::move(fix)));
    };
    switch (res.error()) {
      case httplib::Error::Connection:
        return unavailable(
            "cannot connect (connection refused, unknown host or no route)",
            "check " + names.url + " and that the service runs with its memory profiler enabled " + kEnableProfiler);
      case httplib::Error::ConnectionTimeout:
        return unavailable("cannot connect within " + limit_text(limit),
                           "check " + names.url + " and the network, or raise " + names.timeout);
      case httplib::Error::Read:
        if (waited_out) {
          return unavailable("no answer within " + limit_text(limit),
                             "the service may be busy or stuck; retry, or raise " + names.timeout);
        }
        return unavailable("the connection closed before a complete answer",
                           "check that " + names.url + " is the memory profiler's address (http:// vs https://)");
      case httplib::Error::Write:
        return unavailable("the connection broke while sending the request", "check " + names.url + " and retry");
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLServerVerification:
      case httplib::Error::SSLLoadingCerts:
        return unavailable("TLS failed (" + httplib::to_string(res.error()) + ")",
                           "check the certificate, or use http:// if the service does not speak TLS");
      default:
        return unavailable("request failed (" + httplib::to_string(res.error()) + ")",
                           "check " + names.url + " and retry");
    }
  }

  // An Error for an answer other than 200 that no caller handles specially.
  Error answer_error(const std::string& where, const httplib::Response& res,
                     const std::string& what_prefix = {}) const {
    const SettingNames& names = options.names;
    const std::string said = server_message(res.body);
    const std::string status = std::to_string(res.status);
    if (res.status == 401 || res.status == 403) {
      return make_error(ErrorCode::invalid_argument, where, "the server refused the request (" + status + "): " + said,
                        headers.empty() ? names.give_token : names.check_token);
    }
    if (res.status == 404) {
      return make_error(
          ErrorCode::unavailable, where, "no memory profiler at this address (404)",
          "check " + names.url + "; the service must run with its memory profiler enabled " + kEnableProfiler);
    }
    std::string fix;
    if (res.status >= 500) fix = "see the service's log";
    if (starts_with(said, protocol::first_line(protocol::kNotDetected))) {
      fix = "run the service with jemalloc (linked, or LD_PRELOAD=libjemalloc.so.2)";
    } else if (starts_with(said, protocol::first_line(protocol::kProfilingNotEnabled))) {
      fix = "start the service with MALLOC_CONF=prof:true,prof_active:false";
    }
    return make_error(ErrorCode::unavailable, where, what_prefix + "the server answered " + status + ": " + said, fix);
  }

  Error not_memory_profiler(const std::string& where, const std::string& body) const {
    return make_error(ErrorCode::parse_error, where,
                      "the answer is not the memory profiler's JSON: " + server_message(body),
                      "check that " + options.names.url + " is a Mesos or heapgate memory profiler");
  }
};

Result<ProfilerClient> ProfilerClient::create(ProfilerClientOptions options) {
  auto endpoint = parse_url(options.url, options.names);
  if (!endpoint) return fail(endpoint.error());
  auto impl = std::make_unique<Impl>();
  impl->endpoint = std::move(*endpoint);
  impl->options = std::move(options);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (impl->endpoint.scheme == "https") {
    impl->client = std::make_unique<httplib::SSLClient>(impl->endpoint.host, impl->endpoint.port);
  }
#endif
  if (!impl->client) impl->client = std::make_unique<httplib::ClientImpl>(impl->endpoint.host, impl->endpoint.port);
  if (!impl->options.bearer_token.empty()) {
    impl->headers.emplace("Authorization", "Bearer " + impl->options.bearer_token);
  }
  return ProfilerClient(std::move(impl));
}

ProfilerClient::ProfilerClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProfilerClient::ProfilerClient(ProfilerClient&&) noexcept = default;
ProfilerClient& ProfilerClient::operator=(ProfilerClient&&) noexcept = default;
ProfilerClient::~ProfilerClient() = default;

std::string ProfilerClient::url(std::string_view path,
                                const std::vector<std::pair<std::string, std::string>>& query) const {
  return impl_->url(path, query);
}

std::string ProfilerClient::download_url(DownloadKind kind, RunId id) const {
  return impl_->url(protocol::download_path(kind), {{std::string(protocol::kIdParam), std::to_string(id)}});
}

std::string ProfilerClient::start_url(std::optional<std::chrono::nanoseconds> duration) const {
  return impl_->url(protocol::kStartPath, Impl::start_query(duration));
}

Result<StartedRun> ProfilerClient::start(std::optional<std::chrono::nanoseconds> duration) {
  const Impl::Query query = Impl::start_query(duration);
  const std::string where = url(protocol::kStartPath, query);
  auto res = impl_->get(protocol::kStartPath, query);
  if (!res) return fail(res.error());
  if (res->status == 409) {
    return fail(make_error(ErrorCode::conflict, where,
                           "the server answered 409: " + server_message(res->body) +
                               " (MALLOC_CONF with prof_active:true, or profiling inside the process)",
                           "wait until that profiling ends, or restart the service without prof_active:true"));
  }
  if (res->status == 400) {
    Error e = impl_->answer_error(where, *res, "cannot start a run: ");
    if (starts_with(res->body, protocol::kBadDuration) || contains(res->body, protocol::kDurationBounds)) {
      e.fix =
          "give " + impl_->options.names.duration + " in Mesos syntax within the server's bounds, e.g. 30secs or 5mins";
    }
    return fail(e);
  }
  if (res->status != 200) return fail(impl_->answer_error(where, *res, "cannot start a run: "));
  json body = json::parse(res->body, nullptr, false);
  std::optional<RunId> id;
  std::optional<double> remaining;
  if (const json* value = member(body, protocol::kIdField)) id = as_id(*value);
  if (const json* value = member(body, protocol::kRemainingSecondsField)) remaining = as_seconds(*value);
  if (!id || !remaining) return fail(impl_->not_memory_profiler(where, res->body));
  const json* message = member(body, protocol::kMessageField);
  const bool already_active = message != nullptr && message->is_string() &&
                              starts_with(message->get_ref<const std::string&>(), protocol::kAlreadyActive);
  return StartedRun{*id, *remaining, already_active};
}

Result<RunState> ProfilerClient::state() {
  const std::string where = url(protocol::kStatePath);
  auto res = impl_->get(protocol::kStatePath, {});
  if (!res) return fail(res.error());
  if (res->status != 200) return fail(impl_->answer_error(where, *res));
  json body = json::parse(res->body, nullptr, false);
  const json* profiler = member(body, protocol::kMemoryProfilerField);
  const json* run = profiler != nullptr ? member(*profiler, protocol::kCurrentRunField) : nullptr;
  if (run == nullptr) return fail(impl_->not_memory_profiler(where, res->body));
  RunState state;
  const json* id = member(*run, protocol::kIdField);
  if (id != nullptr && !id->is_null()) {
    state.id = as_id(*id);
    if (!state.id) return fail(impl_->not_memory_profiler(where, res->body));
    if (const json* remaining = member(*run, protocol::kRemainingSecondsField)) {
      state.remaining_seconds = as_seconds(*remaining).value_or(0);
    }
  }
  return state;
}

Result<void> ProfilerClient::wait_until_finished(const StartedRun& run,
                                                 const std::function<void(double remaining)>& on_progress) {
  double remaining = run.remaining_seconds;
  if (on_progress) on_progress(remaining);
  for (;;) {
    if (remaining > 0) {
      // Wake just past the end when it is near, else once a second for progress.
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(1.0, remaining + 0.05)));
    }
    auto current = state();
    if (!current) return fail(current.error());
    if (!current->id) {
      return fail(make_error(
          ErrorCode::unavailable, url(protocol::kStatePath),
          "profiling run " + std::to_string(run.id) + " is gone: the server reports no run at all (restarted?)",
          impl_->options.names.start_over));
    }
    if (*current->id != run.id || current->remaining_seconds <= 0) return {};
    remaining = current->remaining_seconds;
    if (on_progress) on_progress(remaining);
  }
}

Result<std::string> ProfilerClient::download(DownloadKind kind, RunId id,
                                             std::optional<std::chrono::milliseconds> timeout) {
  const SettingNames& names = impl_->options.names;
  const std::string_view path = protocol::download_path(kind);
  const Impl::Query query{{std::string(protocol::kIdParam), std::to_string(id)}};
  const std::string where = url(path, query);
  const auto grace_end = Clock::now() + kDumpGrace;
  for (;;) {
    auto res = impl_->get(path, query, timeout);
    if (!res) return fail(res.error());
    if (res->status == 200) {
      if (kind == DownloadKind::raw && !starts_with(res->body, protocol::kRawProfileMagic)) {
        return fail(make_error(ErrorCode::parse_error, where,
                               "the answer is not a heap_v2 profile: " + server_message(res->body.substr(0, 80)),
                               "check that " + names.url + " is a Mesos or heapgate memory profiler"));
      }
      return std::move(res->body);
    }
    const std::string said = server_message(res->body);
    const bool other_id = starts_with(said, protocol::kCannotServeId);
    const bool not_ours = res->status == 400 && (other_id || contains(said, protocol::kNotYetGenerated));
    if (!not_ours) {
      Error e = impl_->answer_error(where, *res, "cannot download run " + std::to_string(id) + ": ");
      if (contains(said, "jeprof")) {
        e.fix = "install jeprof (and dot, for graph) on the service's host, or " + names.get_raw +
                " and run jeprof locally";
      }
      return fail(e);
    }
    auto current = state();
    if (!current) return fail(current.error());
    if (current->id && *current->id == id && Clock::now() < grace_end) {
      // Our run is still being dumped.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (other_id && current->id && *current->id != id) {
      return fail(make_error(ErrorCode::conflict, where,
                             "the profile of run " + std::to_string(id) +
                                 " is no longer served: a run started by someone else meanwhile finished and "
                                 "replaced it (the server keeps only the latest; it now reports run " +
                                 std::to_string(*current->id) + ")",
                             names.start_over + " while nobody else profiles this service"));
    }
    return fail(impl_->answer_error(where, *res, "run " + std::to_string(id) + " ended but is not served: "));
  }
}

Result<RunId> ProfilerClient::stop() {
  const std::string where = url(protocol::kStopPath);
  auto res = impl_->get(protocol::kStopPath, {});
  if (!res) return fail(res.error());
  if (res->status != 200) return fail(impl_->answer_error(where, *res, "cannot stop the run: "));
  json body = json::parse(res->body, nullptr, false);
  const json* id = member(body, protocol::kIdField);
  std::optional<RunId> parsed = id != nullptr ? as_id(*id) : std::nullopt;
  if (!parsed) return fail(impl_->not_memory_profiler(where, res->body));
  return *parsed;
}

}  // namespace heapgate::http
