// SPDX-License-Identifier: MIT
// `heapgate fetch`: the "more sophisticated script" of Mesos' memory-profiling
// page. Starts a run on a /memory-profiler/* server (heapgate::HttpServer or
// Apache Mesos), keeps the run's id, waits for it, and downloads exactly that
// id: the server keeps only the latest finished run, so a download without
// the id could hand over somebody else's profile. The protocol is
// heapgate::http::ProfilerClient's (lib/http/src/profiler_client.cpp); this
// file is the command line around it: flags, progress and the output file.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "heapgate/error.h"
#include "output.h"

#if HEAPGATE_FETCH_WITH_HTTP
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "heapgate/memory_profiler_protocol.h"
#include "heapgate/mesos_duration.h"
#include "heapgate/profiler_client.h"
#include "progress.h"
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

using http::DownloadKind;
using http::ProfilerClient;
using http::short_duration_text;

// jeprof runs on the server for text and graph; Mesos warns that it "can take
// several minutes", and heapgate's server gives it 5.
constexpr std::chrono::minutes kJeprofWait{10};
constexpr std::chrono::seconds kPlainProgressEvery{10};

Error fetch_error(ErrorCode code, std::string where, std::string what, std::string fix = {}) {
  return make_error(code, std::move(where), std::move(what), std::move(fix));
}

// What people type for a client timeout (30s, 500ms, 2mins, 1.5m, 10): the
// Mesos grammar with the short units, 1ms to 24 hours.
Result<std::chrono::milliseconds> parse_timeout(const std::string& text) {
  auto parsed = detail::parse_duration_with_short_units(text);
  if (!parsed || *parsed < std::chrono::milliseconds(1) || *parsed > std::chrono::hours(24)) {
    return fail(fetch_error(ErrorCode::invalid_argument, "--timeout", "\"" + text + "\" is not a positive duration",
                            "write e.g. 30s, 500ms or 2mins (a bare number is seconds)"));
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
}

// Checked here, by the parser the server uses, so a typo fails before a run
// starts; the bounds are the server's to check.
Result<std::chrono::nanoseconds> parse_duration(const std::string& text) {
  auto parsed = detail::parse_mesos_duration(text);
  if (!parsed) {
    return fail(fetch_error(ErrorCode::invalid_argument, "--duration " + text,
                            std::string(http::memory_profiler::kBadDuration) + parsed.error(),
                            "give --duration in Mesos syntax within the server's bounds, e.g. 30secs or 5mins"));
  }
  return *parsed;
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

// The client's fixes name fetch's flags.
http::SettingNames flag_names() {
  http::SettingNames names;
  names.url = "--url";
  names.timeout = "--timeout";
  names.duration = "--duration";
  names.give_token = "pass --token TOKEN, or set HEAPGATE_HTTP_TOKEN";
  names.check_token = "check the token given by --token or HEAPGATE_HTTP_TOKEN";
  names.get_raw = "fetch --format raw";
  names.start_over = "run heapgate fetch again";
  return names;
}

int run_fetch(const FetchOptions& options) {
  // A server that closes early must give an error line, not a silent death.
  std::signal(SIGPIPE, SIG_IGN);
  auto timeout = parse_timeout(options.timeout);
  if (!timeout) return bad_input(timeout.error());
  std::optional<std::chrono::nanoseconds> duration;
  if (options.duration_given) {
    auto parsed = parse_duration(options.duration);
    if (!parsed) return bad_input(parsed.error());
    duration = *parsed;
  }
  const DownloadKind kind = http::memory_profiler::parse_download_kind(options.format).value_or(DownloadKind::raw);
  http::ProfilerClientOptions client_options;
  client_options.url = options.url;
  client_options.bearer_token = options.token;
  client_options.timeout = *timeout;
  client_options.names = flag_names();
  auto client = ProfilerClient::create(std::move(client_options));
  if (!client) return bad_input(client.error());
  if (auto writable = check_writable(options.output); !writable) return bad_input(writable.error());

  auto started = client->start(duration);
  if (!started) return bad_input(started.error());
  const std::string id = std::to_string(started->id);
  if (started->already_active) {
    if (!options.join) {
      return bad_input(fetch_error(ErrorCode::conflict, client->start_url(duration),
                                   "profiling run " + id + " is already active (" +
                                       short_duration_text(started->remaining_seconds) +
                                       " left), started by someone else",
                                   "pass --join to wait for that run and download its profile, or retry when it ends"));
    }
    std::fprintf(stderr, "heapgate fetch: joining profiling run %s, already active (%s left)\n", id.c_str(),
                 short_duration_text(started->remaining_seconds).c_str());
  }
  {
    // On a terminal one line that rewrites itself; in logs a line every ~10 s.
    ProgressLine progress(ProgressLine::style_for("auto"), kPlainProgressEvery);
    const double total = started->remaining_seconds;
    auto draw = [&](double remaining) {
      progress.show("profiling run " + id + ": " + short_duration_text(total - remaining) + " of " +
                    short_duration_text(total));
    };
    auto waited = client->wait_until_finished(*started, draw);
    if (!waited) {
      progress.end();
      Error e = waited.error();
      e.fix += std::string(e.fix.empty() ? "" : "; ") + "if the service is still up, run " + id +
               " goes on: download it later from " + client->download_url(kind, started->id);
      return bad_input(e);
    }
    // The terminal line shows the whole run as done before it ends.
    if (progress.live()) draw(0);
  }
  std::fprintf(stderr, "heapgate fetch: profiling run %s finished; downloading its %s profile\n", id.c_str(),
               options.format.c_str());

  std::optional<std::chrono::milliseconds> download_timeout;
  if (kind != DownloadKind::raw && !options.timeout_given) {
    download_timeout = std::max<std::chrono::milliseconds>(*timeout, kJeprofWait);
  }
  auto body = client->download(kind, started->id, download_timeout);
  if (!body) return bad_input(body.error());
  if (auto written = emit(options.output, *body); !written) return bad_input(written.error());
  std::fprintf(stderr, "heapgate fetch: wrote the %s profile of run %s to %s (%zu bytes)\n", options.format.c_str(),
               id.c_str(), options.output.c_str(), body->size());
  return exit_status(GateExit::ok);
}

#else

int run_fetch(const FetchOptions&) {
  // bad_input() adds the "heapgate: " prefix; the command is named once, after it.
  return bad_input(make_error(
      ErrorCode::unavailable, "fetch", "this heapgate was built without HTTP support (HEAPGATE_BUILD_HTTP=OFF)",
      "reconfigure with -DHEAPGATE_BUILD_HTTP=ON (apt-get install libcpp-httplib-dev libmicrohttpd-dev)"));
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
      "How long the run collects, in Mesos syntax (30secs, 5mins, 1hrs; a bare number is seconds); the server "
      "checks its bounds. Default: the server's (5mins)");
  fetch
      ->add_option("--format", options->format,
                   "raw (heap_v2, for heapgate diff or jeprof), text (jeprof --text on the server) or graph (svg)")
      ->check(CLI::IsMember({"raw", "text", "graph"}))
      ->capture_default_str();
  fetch->add_option("-o,--output", options->output, "Write the profile to FILE, atomically; nothing on failure")
      ->required();
  fetch
      ->add_option("--token", options->token,
                   "Send 'Authorization: Bearer TOKEN' (prefer HEAPGATE_HTTP_TOKEN: flags show in ps)")
      ->envname("HEAPGATE_HTTP_TOKEN");
  fetch->add_flag("--join", options->join,
                  "If a run is already active, wait for that run and download its profile instead of refusing");
  CLI::Option* timeout =
      fetch
          ->add_option(
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
