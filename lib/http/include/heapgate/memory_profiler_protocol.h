// SPDX-License-Identifier: MIT
// Apache Mesos' /memory-profiler/* protocol, written once: the routes, query
// parameters, JSON fields and fixed texts that heapgate::HttpServer answers
// with (lib/http/src/memory_profiler.cpp) and heapgate::http::ProfilerClient
// recognises (lib/http/src/profiler_client.cpp). docs/mesos-protocol.md
// describes the protocol itself; the texts here are Mesos' own (libprocess
// memory_profiler.cpp), so that a client written against one server works
// against the other.
#pragma once

#include <optional>
#include <string_view>

namespace heapgate::http::memory_profiler {

// ---- Routes. libprocess serves each on GET and POST alike.
inline constexpr std::string_view kPrefix = "/memory-profiler";
inline constexpr std::string_view kStartPath = "/memory-profiler/start";
inline constexpr std::string_view kStopPath = "/memory-profiler/stop";
inline constexpr std::string_view kStatePath = "/memory-profiler/state";
inline constexpr std::string_view kStatisticsPath = "/memory-profiler/statistics";
inline constexpr std::string_view kDownloadRawPath = "/memory-profiler/download/raw";
inline constexpr std::string_view kDownloadTextPath = "/memory-profiler/download/text";
inline constexpr std::string_view kDownloadGraphPath = "/memory-profiler/download/graph";

/// The three artifacts of a finished run: the heap_v2 dump, `jeprof --text`
/// and `jeprof --svg` of it (both generated on the server).
enum class DownloadKind { raw, text, graph };

/// `raw`, `text` or `graph`: the last segment of the kind's route.
constexpr std::string_view to_string(DownloadKind kind) noexcept {
  switch (kind) {
    case DownloadKind::text:
      return "text";
    case DownloadKind::graph:
      return "graph";
    case DownloadKind::raw:
      break;
  }
  return "raw";
}

constexpr std::string_view download_path(DownloadKind kind) noexcept {
  switch (kind) {
    case DownloadKind::text:
      return kDownloadTextPath;
    case DownloadKind::graph:
      return kDownloadGraphPath;
    case DownloadKind::raw:
      break;
  }
  return kDownloadRawPath;
}

/// The kind named `raw`, `text` or `graph`; nullopt for anything else.
constexpr std::optional<DownloadKind> parse_download_kind(std::string_view name) noexcept {
  for (DownloadKind kind : {DownloadKind::raw, DownloadKind::text, DownloadKind::graph}) {
    if (to_string(kind) == name) return kind;
  }
  return std::nullopt;
}

/// A raw download is a jemalloc heap profile: its first bytes.
inline constexpr std::string_view kRawProfileMagic = "heap_v2/";

// ---- Query parameters.
/// `/start?duration=`: stout's Duration syntax (heapgate/mesos_duration.h).
inline constexpr std::string_view kDurationParam = "duration";
/// `/download/*?id=`: the run to serve; without it, the latest finished run.
inline constexpr std::string_view kIdParam = "id";

// ---- JSON fields. Mesos' types differ per route: `/start` answers `id` as a
// number and `remaining_seconds` as a string, `/stop` answers `id` as a string,
// `/state` both as numbers; clients accept either everywhere.
inline constexpr std::string_view kIdField = "id";
inline constexpr std::string_view kMessageField = "message";
inline constexpr std::string_view kRemainingSecondsField = "remaining_seconds";
// `/stop`: where the run's artifacts are.
inline constexpr std::string_view kUrlGraphProfileField = "url_graph_profile";
inline constexpr std::string_view kUrlRawProfileField = "url_raw_profile";
inline constexpr std::string_view kUrlSymbolizedProfileField = "url_symbolized_profile";
// `/state`: {"memory_profiler": {"current_run": {"id", "remaining_seconds"},
// "jemalloc_detected", "tmp_dir"}, "jemalloc": {...}} (no "jemalloc" without it).
inline constexpr std::string_view kMemoryProfilerField = "memory_profiler";
inline constexpr std::string_view kCurrentRunField = "current_run";
inline constexpr std::string_view kJemallocDetectedField = "jemalloc_detected";
inline constexpr std::string_view kTmpDirField = "tmp_dir";
inline constexpr std::string_view kJemallocField = "jemalloc";
inline constexpr std::string_view kMallocConfField = "malloc_conf";
inline constexpr std::string_view kBuildOptionsField = "build_options";
inline constexpr std::string_view kEnvironmentField = "environment";
inline constexpr std::string_view kProfilingEnabledField = "profiling_enabled";
inline constexpr std::string_view kProfilingActiveField = "profiling_active";

// ---- Fixed texts. Error bodies are text/plain ending in ".\n"; the two long
// ones below start with a newline, and the server appends ".\n" to them.

/// 400 from every route but /state when jemalloc is not the allocator.
inline constexpr std::string_view kNotDetected = R"_(
The current binary doesn't seem to be linked against jemalloc,
or the currently used jemalloc library was compiled without
support for statistics collection.

If the current binary was not compiled against jemalloc,
consider adding the path to libjemalloc to the LD_PRELOAD
environment variable, for example LD_PRELOAD=/usr/lib/libjemalloc.so

If you're running a mesos binary and want to have it linked
against jemalloc by default, consider using the
--enable-jemalloc-allocator configuration option)_";

/// 400 from /start when jemalloc runs without `prof:true`.
inline constexpr std::string_view kProfilingNotEnabled = R"_(
The current process seems to be using jemalloc, but profiling
couldn't be enabled.

If you're using a custom version of libjemalloc, make sure that
MALLOC_CONF="prof:true" is part of the environment. (The '/state'
endpoint can be used to double-check the current malloc
configuration).

If the environment looks correct, make sure jemalloc was built
with the --enable-stats and --enable-prof options enabled.

If you're running a mesos binary that was built with the
--enable-memory-profiling option enabled and you're still seeing
this message, please consider filing a bug report)_";

/// The first line of a long text (without its leading newline): what a client
/// recognises it by once it has been shortened to one line.
constexpr std::string_view first_line(std::string_view text) noexcept {
  if (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  return text.substr(0, text.find('\n'));
}

/// `/start`'s `message` begins with one of these (then " After the remaining
/// time elapses, download the generated profile at '…'. Visit '…' to stop
/// collection earlier."). The id and remaining time are those of the run
/// already going when it says "already active".
inline constexpr std::string_view kStartedNewRun = "Successfully started new heap profiling run.";
inline constexpr std::string_view kAlreadyActive = "Heap profiling is already active.";
inline constexpr std::string_view kStoppedRun =
    "Successfully stopped memory profiling run. Use one of the provided URLs to download results. Note that in "
    "order to generate graphs or symbolized profiles, jeprof must be installed on the host machine and generation "
    "of these files can take several minutes.";

/// 409 from /start: prof.active was switched on by someone else.
inline constexpr std::string_view kStartedExternally = "Heap profiling was started externally.\n";
/// 400 from /start: the duration does not parse ("…: <stout's error>.\n") or
/// is out of bounds ("Duration '<d>' must be between <min> and <max>.\n").
inline constexpr std::string_view kBadDuration = "Could not parse parameter 'duration': ";
inline constexpr std::string_view kDurationBounds = "' must be between ";

/// 400 from a download without `id` while a run is going.
inline constexpr std::string_view kRunInProgress =
    "A profiling run is currently in progress. To download results of the previous run, please pass an 'id' "
    "explicitly.\n";
/// 400 from a download whose `id` is not the latest finished run: "…#<id>.\n".
inline constexpr std::string_view kCannotServeId = "Cannot serve requested id #";
/// Why an artifact does not exist yet (no run has finished): in /state's
/// `tmp_dir` and in download errors ("Cannot access raw profile: Not yet generated.\n").
inline constexpr std::string_view kNotYetGenerated = "Not yet generated";
/// 400 from /download/text and /download/graph when jeprof fails.
inline constexpr std::string_view kJeprofFailed =
    "Cannot generate file: Failed to create artifact: Error trying to run jeprof. Please make sure that jeprof is "
    "installed and that the input file contains data. For more information, please consult the log files of this "
    "process.\n";

}  // namespace heapgate::http::memory_profiler
