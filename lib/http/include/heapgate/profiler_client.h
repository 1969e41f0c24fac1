// SPDX-License-Identifier: MIT
// A client of the /memory-profiler/* endpoints (heapgate::HttpServer or Apache
// Mesos), speaking the protocol of heapgate/memory_profiler_protocol.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "heapgate/error.h"
#include "heapgate/memory_profiler_protocol.h"

namespace heapgate::http {

using memory_profiler::DownloadKind;

/// A profiling run's id: Unix seconds on Mesos, unique per run on heapgate.
using RunId = std::int64_t;

/// How the fixes in the client's errors tell the user to change something.
/// The defaults suit a program; `heapgate fetch` names its flags instead.
struct SettingNames {
  std::string url = "the URL";                                         // "check the URL and retry"
  std::string timeout = "the timeout";                                 // "raise the timeout"
  std::string duration = "the duration";                               // "give the duration in Mesos syntax"
  std::string give_token = "set ProfilerClientOptions::bearer_token";  // a 401 without a token
  std::string check_token = "check the bearer token";                  // a 401 with one
  std::string get_raw = "download the raw profile";                    // when jeprof fails on the server
  std::string start_over = "start a new run";                          // the run is gone or replaced
};

struct ProfilerClientOptions {
  /// `http://HOST:PORT`, `HOST:PORT`, `https://HOST[:PORT]`, `[::1]:PORT`,
  /// optionally with a reverse proxy's path prefix; a trailing
  /// `/memory-profiler` is dropped, so the endpoints' own base works too.
  std::string url;
  /// If not empty, sent as `Authorization: Bearer <token>`.
  std::string bearer_token;
  /// The longest wait for each answer (connecting, sending, reading).
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  SettingNames names;
};

/// What `/start` answered: the run's id and how long it still collects.
struct StartedRun {
  RunId id = 0;
  double remaining_seconds = 0;
  /// The server had a run going already ("Heap profiling is already
  /// active."): `id` and `remaining_seconds` are that run's, started by
  /// someone else with their duration.
  bool already_active = false;
};

/// `/state`'s current run: the one going, or else the latest finished one
/// (remaining 0); no id when no run ever started.
struct RunState {
  std::optional<RunId> id;
  double remaining_seconds = 0;
};

/// Speaks to one server. Every call blocks, and fails with an Error whose
/// `where` is the URL requested (or the setting that is wrong) and whose `fix`
/// says what to do: `unavailable` when no complete answer arrived or the
/// server cannot profile, `conflict` when the server's state forbids the call,
/// `parse_error` when the answer is not the memory profiler's, and
/// `invalid_argument` for a bad URL or a refused token. Not thread-safe.
class ProfilerClient {
 public:
  /// Parses the URL; nothing is sent yet. Errors: `invalid_argument` naming
  /// `names.url` and the URL.
  static Result<ProfilerClient> create(ProfilerClientOptions options);

  ProfilerClient(ProfilerClient&&) noexcept;
  ProfilerClient& operator=(ProfilerClient&&) noexcept;
  ~ProfilerClient();

  /// `/start?duration=` (formatted in stout's syntax), or the server's default
  /// duration when none is given. A run already going is not an error here:
  /// see StartedRun::already_active. Errors: `conflict` when profiling was
  /// started outside the endpoints (409), `unavailable` for the server's 400s
  /// (duration out of bounds, no jemalloc, profiling not enabled).
  Result<StartedRun> start(std::optional<std::chrono::nanoseconds> duration = std::nullopt);

  /// `/state`.
  Result<RunState> state();

  /// Polls `/state` (about once a second, and just past the end when it is
  /// near) until `run` is over: its remaining time is 0, or another run is the
  /// current one. `on_progress` gets the run's remaining seconds at the start
  /// and after every poll. Errors: those of state(), and `unavailable` when the
  /// server reports no run at all any more (it restarted).
  Result<void> wait_until_finished(const StartedRun& run,
                                   const std::function<void(double remaining)>& on_progress = {});

  /// `/download/<kind>?id=<id>`: the body of exactly that run's artifact,
  /// never another run's. A download that misses a run that just ended (its
  /// dump not yet published) is retried for a few seconds while `/state` still
  /// names it. `timeout` overrides ProfilerClientOptions::timeout for this
  /// download (text and graph run jeprof on the server, which can take
  /// minutes). Errors: `conflict` when another run finished meanwhile and
  /// replaced it (the server keeps only the latest), `parse_error` when a raw
  /// download is not a heap_v2 profile, `unavailable` for other answers.
  Result<std::string> download(DownloadKind kind, RunId id,
                               std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  /// `/stop`: ends the current run now; the id of the run whose profile is
  /// now served.
  Result<RunId> stop();

  /// The full URL of an endpoint path (memory_profiler::kStatePath, …) with
  /// its query, as the errors name it: `http://host:port/prefix/memory-profiler/state`.
  std::string url(std::string_view path, const std::vector<std::pair<std::string, std::string>>& query = {}) const;
  /// The URL start(duration) requests.
  std::string start_url(std::optional<std::chrono::nanoseconds> duration = std::nullopt) const;
  /// The URL that downloads `kind` of run `id`: what a user can fetch later.
  std::string download_url(DownloadKind kind, RunId id) const;

 private:
  struct Impl;
  explicit ProfilerClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A length of time in whole seconds, short for progress lines and messages:
/// "12s", "4m05s", "2h03m".
std::string short_duration_text(double seconds);

}  // namespace heapgate::http
