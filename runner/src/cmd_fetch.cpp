// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate fetch`: the "more sophisticated script" of Mesos' memory-profiling
// page. Starts a run on a /memory-profiler/* server (heapgate::HttpServer or
// Apache Mesos), keeps the run's id, waits for it, and downloads exactly that
// id: the server keeps only the latest finished run, so a download without
// the id could hand over somebody else's profile.
#include <memory>
#include <string>

#include "commands.h"
#include "heapgate/error.h"
#include "output.h"

#if HEAPGATE_FETCH_WITH_HTTP
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>
#endif

namespace heapgate::runner {
namespace {

struct FetchOptions {
  std::string url;
  std::string duration;
  bool duration_given = false;
  std::string format = "raw";
  std::string output;
  std::string token;
  bool join = false;
  std::string timeout = "30s";
  bool timeout_given = false;
};

#if HEAPGATE_FETCH_WITH_HTTP

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr const char* kRoutes = "/memory-profiler";
// jeprof runs on the server for text and graph; Mesos warns that it "can take
// several minutes", and heapgate's server gives it 5.
constexpr std::chrono::minutes kJeprofWait{10};
// Between the end of a run and its dump being served, /state may already say
// the run is over; downloads that miss it are retried this long.
constexpr std::chrono::seconds kDumpGrace{10};
constexpr std::chrono::seconds kPlainProgressEvery{10};

Error fetch_error(ErrorCode code, std::string where, std::string what, std::string fix = {}) {
  return make_error(code, std::move(where), std::move(what), std::move(fix));
}

// Accepts what people type for a client timeout: 30s, 500ms, 2mins, 1.5m, 10.
Result<std::chrono::milliseconds> parse_timeout(const std::string& text) {
  auto bad = [&] {
    return fail(fetch_error(ErrorCode::invalid_argument, "--timeout", "\"" + text + "\" is not a positive duration",
                            "write e.g. 30s, 500ms or 2mins (a bare number is seconds)"));
  };
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return bad();
  char* end = nullptr;
  const std::string number = text.substr(0, digits);
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value) || value <= 0) return bad();
  const std::string unit = text.substr(digits);
  double ms_per_unit = 0;
  if (unit == "ms") {
    ms_per_unit = 1;
  } else if (unit.empty() || unit == "s" || unit == "sec" || unit == "secs") {
    ms_per_unit = 1e3;
  } else if (unit == "m" || unit == "min" || unit == "mins") {
    ms_per_unit = 60e3;
  } else if (unit == "h" || unit == "hr" || unit == "hrs") {
    ms_per_unit = 3600e3;
  } else {
    return bad();
  }
  double ms = value * ms_per_unit;
  if (ms < 1 || ms > 24 * 3600e3) return bad();
  return std::chrono::milliseconds(static_cast<long long>(ms));
}

struct Endpoint {
  std::string scheme;
  std::string host;
  int port = 0;
  std::string prefix;  // a reverse proxy's path, without a trailing slash

  std::string origin() const {
    std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return scheme + "://" + h + ":" + std::to_string(port);
  }
  std::string url(const std::string& route) const { return origin() + prefix + kRoutes + route; }
};

Result<Endpoint> parse_url(const std::string& text) {
  auto bad = [&](const std::string& what) {
    return fail(fetch_error(ErrorCode::invalid_argument, "--url " + text, what,
                            "write http://HOST:PORT or HOST:PORT, e.g. --url 127.0.0.1:5050"));
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
  if (authority.find('@') != std::string::npos) return bad("credentials in the URL are not supported (use --token)");
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
  const std::string routes = kRoutes;
  if (path.size() >= routes.size() && path.compare(path.size() - routes.size(), routes.size(), routes) == 0) {
    path.erase(path.size() - routes.size());
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  e.prefix = path;
  return e;
}

// The output is written only at the end, atomically; this probe makes an
// unwritable -o fail before a run of minutes is started, not after.
Result<void> check_writable(const std::string& path) {
  std::string probe = path + ".tmp.XXXXXX";
  std::vector<char> buf(probe.begin(), probe.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) {
    int err = errno;
    std::string dir = path.find('/') == std::string::npos ? std::string(".") : path.substr(0, path.rfind('/'));
    if (dir.empty()) dir = "/";
    return fail(fetch_error(ErrorCode::io_error, "-o " + path,
                            "cannot create files in " + dir + ": " + std::strerror(err),
                            "create the directory, or write to a path where you have write access"));
  }
  ::close(fd);
  ::unlink(buf.data());
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return fail(fetch_error(ErrorCode::io_error, "-o " + path, "is a directory", "give a file name"));
  }
  return {};
}

// "12s", "4m05s", "2h03m": progress lines stay short.
std::string seconds_text(double seconds) {
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

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::optional<long long> as_id(const json& value) {
  if (value.is_number_integer()) return value.get<long long>();
  // /stop answers the id as a string (Mesos quirk); accept it everywhere.
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    char* end = nullptr;
    long long id = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size()) return id;
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

class Server {
 public:
  Server(Endpoint endpoint, const std::string& token, std::chrono::milliseconds timeout, std::string timeout_text)
      : endpoint_(std::move(endpoint)), timeout_(timeout), timeout_text_(std::move(timeout_text)) {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (endpoint_.scheme == "https") {
      client_ = std::make_unique<httplib::SSLClient>(endpoint_.host, endpoint_.port);
    }
#endif
    if (!client_) client_ = std::make_unique<httplib::ClientImpl>(endpoint_.host, endpoint_.port);
    if (!token.empty()) headers_.emplace("Authorization", "Bearer " + token);
  }

  bool has_token() const { return !headers_.empty(); }

  std::string url(const std::string& route, const httplib::Params& params = {}) const {
    std::string u = endpoint_.url(route);
    char sep = '?';
    for (const auto& [key, value] : params) {
      u += sep + key + "=" + value;
      sep = '&';
    }
    return u;
  }

  // GET <prefix>/memory-profiler<route>: the answer, whatever its status, or
  // an Error naming the URL when no complete answer arrived.
  Result<httplib::Response> get(const std::string& route, const httplib::Params& params,
                                std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    const auto limit = timeout.value_or(timeout_);
    client_->set_connection_timeout(limit);
    client_->set_read_timeout(limit);
    client_->set_write_timeout(limit);
    const auto began = Clock::now();
    httplib::Result res = client_->Get(endpoint_.prefix + kRoutes + route, params, headers_);
    if (res) return std::move(res.value());
    const bool waited_out = Clock::now() - began >= limit - std::chrono::milliseconds(50);
    const std::string limit_text = timeout ? seconds_text(std::chrono::duration<double>(limit).count()) : timeout_text_;
    const std::string where = url(route, params);
    switch (res.error()) {
      case httplib::Error::Connection:
        return fail(fetch_error(ErrorCode::unavailable, where,
                                "cannot connect (connection refused, unknown host or no route)",
                                "check --url and that the service runs with its memory profiler enabled "
                                "(heapgate: HEAPGATE_MEMORY_PROFILING=true; Mesos: --memory_profiling)"));
      case httplib::Error::ConnectionTimeout:
        return fail(fetch_error(ErrorCode::unavailable, where, "cannot connect within " + limit_text,
                                "check --url and the network, or raise --timeout"));
      case httplib::Error::Read:
        if (waited_out) {
          return fail(fetch_error(ErrorCode::unavailable, where, "no answer within " + limit_text,
                                  "the service may be busy or stuck; retry, or raise --timeout"));
        }
        return fail(fetch_error(ErrorCode::unavailable, where, "the connection closed before a complete answer",
                                "check that --url is the memory profiler's address (http:// vs https://)"));
      case httplib::Error::Write:
        return fail(fetch_error(ErrorCode::unavailable, where, "the connection broke while sending the request",
                                "check --url and retry"));
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLServerVerification:
      case httplib::Error::SSLLoadingCerts:
        return fail(fetch_error(ErrorCode::unavailable, where,
                                "TLS failed (" + httplib::to_string(res.error()) + ")",
                                "check the certificate, or use http:// if the service does not speak TLS"));
      default:
        return fail(fetch_error(ErrorCode::unavailable, where,
                                "request failed (" + httplib::to_string(res.error()) + ")", "check --url and retry"));
    }
  }

  // An Error for an answer other than 200 that no caller handles specially.
  Error answer_error(const std::string& where, const httplib::Response& res, std::string what_prefix = {}) const {
    const std::string said = server_message(res.body);
    const std::string status = std::to_string(res.status);
    if (res.status == 401 || res.status == 403) {
      return fetch_error(ErrorCode::invalid_argument, where, "the server refused the request (" + status + "): " + said,
                         has_token() ? "check the token given by --token or HEAPGATE_HTTP_TOKEN"
                                     : "pass --token TOKEN, or set HEAPGATE_HTTP_TOKEN");
    }
    if (res.status == 404) {
      return fetch_error(ErrorCode::unavailable, where, "no memory profiler at this address (404)",
                         "check --url; the service must run with its memory profiler enabled "
                         "(heapgate: HEAPGATE_MEMORY_PROFILING=true; Mesos: --memory_profiling)");
    }
    std::string fix;
    if (res.status >= 500) fix = "see the service's log";
    if (contains(said, "doesn't seem to be linked against jemalloc")) {
      fix = "run the service with jemalloc (linked, or LD_PRELOAD=libjemalloc.so.2)";
    } else if (contains(said, "profiling couldn't be enabled")) {
      fix = "start the service with MALLOC_CONF=prof:true,prof_active:false";
    }
    return fetch_error(ErrorCode::unavailable, where,
                       what_prefix + "the server answered " + status + ": " + said, fix);
  }

  // GET /state: the current (or last finished) run, and its remaining time.
  struct RunState {
    std::optional<long long> id;
    double remaining = 0;
  };
  Result<RunState> state() {
    auto res = get("/state", {});
    if (!res) return fail(res.error());
    if (res->status != 200) return fail(answer_error(url("/state"), *res));
    json body = json::parse(res->body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("memory_profiler") ||
        !body["memory_profiler"].is_object() || !body["memory_profiler"].contains("current_run")) {
      return fail(not_memory_profiler(url("/state"), res->body));
    }
    const json& run = body["memory_profiler"]["current_run"];
    RunState state;
    if (run.is_object() && run.contains("id") && !run["id"].is_null()) {
      state.id = as_id(run["id"]);
      if (!state.id) return fail(not_memory_profiler(url("/state"), res->body));
      if (run.contains("remaining_seconds")) state.remaining = as_seconds(run["remaining_seconds"]).value_or(0);
    }
    return state;
  }

  static Error not_memory_profiler(const std::string& where, const std::string& body) {
    return fetch_error(ErrorCode::parse_error, where,
                       "the answer is not the memory profiler's JSON: " + server_message(body),
                       "check that --url is a Mesos or heapgate memory profiler");
  }

 private:
  Endpoint endpoint_;
  std::chrono::milliseconds timeout_;
  std::string timeout_text_;
  httplib::Headers headers_;
  std::unique_ptr<httplib::ClientImpl> client_;
};

// On a terminal one line that rewrites itself; in logs a line every ~10 s.
class Progress {
 public:
  Progress(long long id, double total) : id_(id), total_(total), tty_(::isatty(STDERR_FILENO) == 1) {}

  void update(double remaining) {
    const std::string line = "profiling run " + std::to_string(id_) + ": " + seconds_text(total_ - remaining) +
                             " of " + seconds_text(total_);
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      std::fflush(stderr);
      open_line_ = true;
      return;
    }
    const auto now = Clock::now();
    if (printed_ && now - last_ < kPlainProgressEvery) return;
    std::fprintf(stderr, "%s\n", line.c_str());
    printed_ = true;
    last_ = now;
  }

  // The terminal line shows the whole run as done before it ends.
  void complete() {
    if (tty_) update(0);
  }

  // Ends the rewritten line, so what follows starts on its own.
  void end() {
    if (open_line_) std::fputc('\n', stderr);
    open_line_ = false;
  }

  ~Progress() { end(); }

 private:
  long long id_;
  double total_;
  bool tty_;
  bool printed_ = false;
  bool open_line_ = false;
  Clock::time_point last_{};
};

struct Started {
  long long id = 0;
  double remaining = 0;
};

Result<Started> start_run(Server& server, const FetchOptions& options) {
  httplib::Params params;
  if (options.duration_given) params.emplace("duration", options.duration);
  const std::string where = server.url("/start", params);
  auto res = server.get("/start", params);
  if (!res) return fail(res.error());
  if (res->status == 409) {
    return fail(fetch_error(ErrorCode::conflict, where,
                            "the server answered 409: " + server_message(res->body) +
                                " (MALLOC_CONF with prof_active:true, or profiling inside the process)",
                            "wait until that profiling ends, or restart the service without prof_active:true"));
  }
  if (res->status == 400) {
    Error e = server.answer_error(where, *res, "cannot start a run: ");
    if (contains(res->body, "'duration'") || contains(res->body, "must be between")) {
      e.fix = "give --duration in Mesos syntax within the server's bounds, e.g. 30secs or 5mins";
    }
    return fail(e);
  }
  if (res->status != 200) return fail(server.answer_error(where, *res, "cannot start a run: "));
  json body = json::parse(res->body, nullptr, false);
  std::optional<long long> id;
  std::optional<double> remaining;
  if (!body.is_discarded() && body.is_object()) {
    if (body.contains("id")) id = as_id(body["id"]);
    if (body.contains("remaining_seconds")) remaining = as_seconds(body["remaining_seconds"]);
  }
  if (!id || !remaining) return fail(Server::not_memory_profiler(where, res->body));
  const bool already_active = body.contains("message") && body["message"].is_string() &&
                              starts_with(body["message"].get<std::string>(), "Heap profiling is already active.");
  if (already_active) {
    if (!options.join) {
      return fail(fetch_error(ErrorCode::conflict, where,
                              "profiling run " + std::to_string(*id) + " is already active (" +
                                  seconds_text(*remaining) + " left), started by someone else",
                              "pass --join to wait for that run and download its profile, or retry when it ends"));
    }
    std::fprintf(stderr, "heapgate fetch: joining profiling run %lld, already active (%s left)\n", *id,
                 seconds_text(*remaining).c_str());
  }
  return Started{*id, *remaining};
}

// Until /state says our run is over (or another run is the current one).
Result<void> wait_for(Server& server, const Started& run, Progress& progress, const std::string& later) {
  double remaining = run.remaining;
  progress.update(remaining);
  for (;;) {
    if (remaining > 0) {
      // Wake just past the end when it is near, else once a second for progress.
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(1.0, remaining + 0.05)));
    }
    auto state = server.state();
    if (!state) {
      Error e = state.error();
      e.fix += std::string(e.fix.empty() ? "" : "; ") + "if the service is still up, run " + std::to_string(run.id) +
               " goes on: " + later;
      return fail(e);
    }
    if (!state->id) {
      return fail(fetch_error(ErrorCode::unavailable, server.url("/state"),
                              "profiling run " + std::to_string(run.id) +
                                  " is gone: the server reports no run at all (restarted?)",
                              "run heapgate fetch again"));
    }
    if (*state->id != run.id || state->remaining <= 0) {
      progress.complete();
      return {};
    }
    remaining = state->remaining;
    progress.update(remaining);
  }
}

Result<std::string> download(Server& server, const FetchOptions& options, long long id,
                             std::optional<std::chrono::milliseconds> timeout) {
  const std::string route = "/download/" + options.format;
  const httplib::Params params{{"id", std::to_string(id)}};
  const std::string where = server.url(route, params);
  const auto grace_end = Clock::now() + kDumpGrace;
  for (;;) {
    auto res = server.get(route, params, timeout);
    if (!res) return fail(res.error());
    if (res->status == 200) return std::move(res->body);
    const std::string said = server_message(res->body);
    const bool other_id = starts_with(said, "Cannot serve requested id");
    const bool not_ours = res->status == 400 && (other_id || contains(said, "Not yet generated"));
    if (!not_ours) {
      Error e = server.answer_error(where, *res, "cannot download run " + std::to_string(id) + ": ");
      if (contains(said, "jeprof")) {
        e.fix = "install jeprof (and dot, for graph) on the service's host, or fetch --format raw and run jeprof "
                "locally";
      }
      return fail(e);
    }
    auto state = server.state();
    if (!state) return fail(state.error());
    if (state->id && *state->id == id && Clock::now() < grace_end) {
      // Our run is still being dumped.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (other_id && state->id && *state->id != id) {
      return fail(fetch_error(ErrorCode::conflict, where,
                              "the profile of run " + std::to_string(id) +
                                  " is no longer served: a run started by someone else meanwhile finished and "
                                  "replaced it (the server keeps only the latest; it now reports run " +
                                  std::to_string(*state->id) + ")",
                              "run heapgate fetch again while nobody else profiles this service"));
    }
    return fail(server.answer_error(where, *res, "run " + std::to_string(id) + " ended but is not served: "));
  }
}

int run_fetch(const FetchOptions& options) {
  // A server that closes early must give an error line, not a silent death.
  std::signal(SIGPIPE, SIG_IGN);
  auto timeout = parse_timeout(options.timeout);
  if (!timeout) return bad_input(timeout.error());
  auto endpoint = parse_url(options.url);
  if (!endpoint) return bad_input(endpoint.error());
  if (auto writable = check_writable(options.output); !writable) return bad_input(writable.error());
  Server server(*endpoint, options.token, *timeout, options.timeout);

  auto started = start_run(server, options);
  if (!started) return bad_input(started.error());
  const std::string later =
      "download it later from " + server.url("/download/" + options.format, {{"id", std::to_string(started->id)}});
  {
    Progress progress(started->id, started->remaining);
    auto waited = wait_for(server, *started, progress, later);
    progress.end();
    if (!waited) return bad_input(waited.error());
  }
  std::fprintf(stderr, "heapgate fetch: profiling run %lld finished; downloading its %s profile\n", started->id,
               options.format.c_str());

  std::optional<std::chrono::milliseconds> download_timeout;
  if (options.format != "raw" && !options.timeout_given) {
    download_timeout = std::max<std::chrono::milliseconds>(*timeout, kJeprofWait);
  }
  auto body = download(server, options, started->id, download_timeout);
  if (!body) return bad_input(body.error());
  if (options.format == "raw" && !starts_with(*body, "heap_v2/")) {
    const std::string where = server.url("/download/raw", {{"id", std::to_string(started->id)}});
    return bad_input(fetch_error(ErrorCode::parse_error, where,
                                 "the answer is not a heap_v2 profile: " + server_message(body->substr(0, 80)),
                                 "check that --url is a Mesos or heapgate memory profiler"));
  }
  if (auto written = emit(options.output, *body); !written) return bad_input(written.error());
  std::fprintf(stderr, "heapgate fetch: wrote the %s profile of run %lld to %s (%zu bytes)\n", options.format.c_str(),
               started->id, options.output.c_str(), body->size());
  return kExitOk;
}

#else

int run_fetch(const FetchOptions&) {
  return bad_input(make_error(ErrorCode::unavailable, "heapgate fetch",
                              "this heapgate was built without HTTP support (HEAPGATE_BUILD_HTTP=OFF)",
                              "reconfigure with -DHEAPGATE_BUILD_HTTP=ON (apt-get install libcpp-httplib-dev)"));
}

#endif

}  // namespace

void add_fetch_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<FetchOptions>();
  CLI::App* fetch = app.add_subcommand(
      "fetch",
      "Profile a running service through its /memory-profiler/* endpoints (heapgate::HttpServer or Apache Mesos): "
      "start a run, wait for it, and download that run's profile, never another one.");
  fetch->add_option("--url", options->url, "The service: http://HOST:PORT, HOST:PORT or https://HOST[:PORT][/PREFIX]")
      ->required();
  CLI::Option* duration = fetch->add_option(
      "--duration", options->duration,
      "How long the run collects, in Mesos syntax (30secs, 5mins, 1hrs; a bare number is seconds on heapgate's "
      "server); the server checks it. Default: the server's (5mins)");
  fetch->add_option("--format", options->format,
                    "raw (heap_v2, for heapgate diff or jeprof), text (jeprof --text on the server) or graph (svg)")
      ->check(CLI::IsMember({"raw", "text", "graph"}))
      ->capture_default_str();
  fetch->add_option("-o,--output", options->output, "Write the profile to FILE, atomically; nothing on failure")
      ->required();
  fetch->add_option("--token", options->token,
                    "Send 'Authorization: Bearer TOKEN' (prefer HEAPGATE_HTTP_TOKEN: flags show in ps)")
      ->envname("HEAPGATE_HTTP_TOKEN");
  fetch->add_flag("--join", options->join,
                  "If a run is already active, wait for that run and download its profile instead of refusing");
  CLI::Option* timeout = fetch->add_option(
      "--timeout", options->timeout,
      "Longest wait for each answer (30s, 500ms, 2mins). text and graph downloads, for which the server runs "
      "jeprof, wait at least 10mins unless this is given")
      ->capture_default_str();
  fetch->footer(
      "Exit codes: 0 the profile was written, 2 anything else (one line on stderr says what and what to do).");
  fetch->callback([options, duration, timeout, &exit_code] {
    options->duration_given = duration->count() > 0;
    options->timeout_given = timeout->count() > 0;
    exit_code = run_fetch(*options);
  });
}

}  // namespace heapgate::runner
