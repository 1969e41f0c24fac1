// SPDX-License-Identifier: MIT
// Apache Mesos' MemoryProfiler (libprocess memory_profiler.cpp) on heapgate's
// jemalloc layer; docs/mesos-protocol.md §5 lists where and why heapgate differs.
#include "memory_profiler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "heapgate/allocator.h"
#include "heapgate/allocator_frames.h"
#include "heapgate/diff.h"
#include "heapgate/folded.h"
#include "heapgate/flamegraph.h"
#include "heapgate/jeprof.h"
#include "heapgate/normalize.h"
#include "heapgate/pprof.h"
#include "heapgate/profile.h"
#include "heapgate/symbolizer.h"
#include "heapgate/memory_profiler_protocol.h"
#include "heapgate/mesos_duration.h"
#include "heapgate/integration.h"
#include "heapgate/sys.h"

namespace heapgate::detail {
namespace {

namespace protocol = heapgate::http::memory_profiler;
using protocol::DownloadKind;

// Mesos' two long texts end without their period; the answers add ".\n".
std::string ended(std::string_view long_text) { return std::string(long_text) + ".\n"; }

// "/memory-profiler/download/raw?id=42", as /start and /stop point to artifacts.
std::string with_id(std::string_view path, const std::string& id) {
  return std::string(path) + "?" + std::string(protocol::kIdParam) + "=" + id;
}
constexpr std::size_t kDummyFileSize = 64 * 1024;

Reply text_reply(int status, std::string body) {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Reply json_reply(const nlohmann::json& value) {
  Reply r;
  r.content_type = "application/json";
  r.body = value.dump();
  return r;
}

void log_warning(const std::string& message) { std::fprintf(stderr, "heapgate http: WARNING: %s\n", message.c_str()); }

// Mesos' helper texts: "Couldn't read option <name>: <strerror>".
template <typename T>
tl::expected<T, std::string> mesos_read(const char* name) {
  auto fn = mallctl_fn();
  if (fn == nullptr) return tl::unexpected(std::string(protocol::kNotDetected));
  T value{};
  std::size_t len = sizeof value;
  int err = fn(name, &value, &len, nullptr, 0);
  if (err != 0) return tl::unexpected(std::string("Couldn't read option ") + name + ": " + std::strerror(err));
  return value;
}

tl::expected<bool, std::string> mesos_exchange_active(bool active) {
  auto fn = mallctl_fn();
  if (fn == nullptr) return tl::unexpected(std::string(protocol::kNotDetected));
  bool old = false;
  std::size_t len = sizeof old;
  int err = fn("prof.active", &old, &len, &active, sizeof active);
  if (err != 0) {
    return tl::unexpected(std::string("Couldn't write value ") + (active ? "true" : "false") +
                          " for option prof.active: " + std::strerror(err));
  }
  return old;
}

const std::string* param(const QueryParams& params, std::string_view key) {
  auto it = params.find(std::string(key));
  return it == params.end() ? nullptr : &it->second;
}

// libprocess' extractIdFromRequest: strtoll quirks included (an empty id is 0).
tl::expected<std::optional<std::time_t>, std::string> parse_id(const QueryParams& params) {
  const std::string* text = param(params, protocol::kIdParam);
  if (text == nullptr) return std::optional<std::time_t>();
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(text->c_str(), &end, 10);
  if (errno != 0) return tl::unexpected(std::string(std::strerror(errno)));
  if (end != text->c_str() + text->size()) return tl::unexpected(std::string("Garbage after parsed id"));
  return std::optional<std::time_t>(static_cast<std::time_t>(parsed));
}

tl::expected<std::shared_ptr<OpenFile>, std::string> open_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tl::unexpected(std::string(std::strerror(errno)));
  auto file = std::make_shared<OpenFile>(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return tl::unexpected(std::string(std::strerror(errno)));
  file->size = static_cast<std::uint64_t>(st.st_size);
  return file;
}

// Mesos' downloads are application/octet-stream; the SVG is served as what it
// is, so a browser shows it (docs/mesos-protocol.md §5).
const char* content_type_of(DownloadKind kind) {
  return kind == DownloadKind::graph ? "image/svg+xml" : "application/octet-stream";
}

std::string attachment(const std::string& file_name) { return "attachment; filename=\"" + file_name + "\""; }

std::string self_exe() {
  auto exe = sys::self_exe_path();
  return exe ? *exe : std::string("/proc/self/exe");
}

}  // namespace

OpenFile::~OpenFile() {
  if (fd >= 0) ::close(fd);
}

DiskArtifact::~DiskArtifact() { ::unlink(path.c_str()); }

MemoryProfiler::MemoryProfiler(HttpOptions options) : options_(std::move(options)) {
  timer_ = std::thread([this] { timer_loop(); });
}

MemoryProfiler::~MemoryProfiler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
    // A run still going would leave prof.active on and the claim taken.
    if (run_) stop_and_dump_locked();
    if (toggled_on_) {
      // Nobody is left to answer; said on stderr, since a profiler left
      // active samples every later allocation of the process.
      if (auto off = mesos_exchange_active(false); !off) {
        std::fprintf(stderr, "heapgate: stopping the memory profiler: %s\n", off.error().c_str());
      }
      toggled_on_ = false;
      release_profiling();
    }
  }
  wake_.notify_all();
  if (timer_.joinable()) timer_.join();
}

bool MemoryProfiler::jemalloc_detected() const {
  const AllocatorStatus& status = allocator_status();
  return status.jemalloc_detected && status.jemalloc_active;
}

void MemoryProfiler::timer_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!shutting_down_) {
    if (!run_) {
      wake_.wait(lock);
      continue;
    }
    auto deadline = run_->deadline;
    if (std::chrono::steady_clock::now() >= deadline) {
      stop_and_dump_locked();
      continue;
    }
    wake_.wait_until(lock, deadline);
  }
}

tl::expected<std::string, std::string> MemoryProfiler::tmp_dir_locked() {
  if (tmp_dir_) return *tmp_dir_;
  auto dir = sys::make_private_dir("heapgate-http.");
  if (!dir) return tl::unexpected(dir.error().message());
  tmp_dir_ = *dir;
  return *dir;
}

std::string MemoryProfiler::dump_raw_locked(std::time_t id, std::string& path_out) {
  auto dir = tmp_dir_locked();
  if (!dir) return "Could not determine target path: " + dir.error();
  std::string final_path = *dir + "/profile." + std::to_string(id) + ".dump";
  // jemalloc writes into a temporary name that is renamed when complete: no
  // download ever reads a dump that is still being written.
  std::string tmp_path = final_path + ".tmp";
  // As Mesos: check that the file is writable and the disk not full first.
  if (auto written = sys::write_file_atomic(tmp_path, std::string(kDummyFileSize, '\0')); !written) {
    return written.error().message();
  }
  struct stat st {};
  if (::stat(tmp_path.c_str(), &st) != 0 || static_cast<std::size_t>(st.st_size) != kDummyFileSize) {
    ::unlink(tmp_path.c_str());
    return "Couldn't verify integrity of dump file " + tmp_path;
  }
  if (auto dumped = jemalloc::prof_dump(tmp_path); !dumped) {
    ::unlink(tmp_path.c_str());
    return "Couldn't write value " + tmp_path + " for option prof.dump: " + dumped.error().what;
  }
  if (::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_path.c_str());
    return "Cannot rename " + tmp_path + ": " + std::strerror(err);
  }
  path_out = final_path;
  return {};
}

void MemoryProfiler::stop_and_dump_locked() {
  if (!run_) return;
  auto stopped = mesos_exchange_active(false);
  if (!stopped) {
    // As Mesos: keep the run and retry in 5 s; the failure shows in the log.
    log_warning("Failed to stop memory profiling: " + stopped.error());
    run_->deadline = std::max(run_->deadline, std::chrono::steady_clock::now()) + std::chrono::seconds(5);
    return;
  }
  std::time_t id = run_->id;
  run_.reset();
  release_profiling();
  if (!*stopped) {
    log_warning(
        "Memory profiling unexpectedly inactive; not dumping profile. Ensure nothing else is interfacing "
        "with jemalloc in this process");
    return;
  }
  std::string path;
  std::string error = dump_raw_locked(id, path);
  if (raw_.artifact) previous_raw_ = raw_.artifact;
  if (!error.empty()) {
    raw_.artifact.reset();
    raw_.error = "Failed to create artifact: " + error;
    log_warning("Could not dump profile: " + raw_.error);
    return;
  }
  raw_.artifact = std::make_shared<DiskArtifact>(path, id);
  raw_.error.clear();
}

Reply MemoryProfiler::start(const QueryParams& params) {
  if (!jemalloc_detected()) return text_reply(400, ended(protocol::kNotDetected));
  std::chrono::nanoseconds duration = options_.default_duration;
  if (const std::string* text = param(params, protocol::kDurationParam)) {
    auto parsed = parse_mesos_duration(*text);
    if (!parsed) return text_reply(400, std::string(protocol::kBadDuration) + parsed.error() + ".\n");
    duration = *parsed;
  }
  if (duration < options_.minimum_duration || duration > options_.maximum_duration) {
    return text_reply(400, "Duration '" + format_mesos_duration(duration) + std::string(protocol::kDurationBounds) +
                               format_mesos_duration(options_.minimum_duration) + " and " +
                               format_mesos_duration(options_.maximum_duration) + ".\n");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const bool already_active = run_.has_value();
  if (!already_active) {
    const auto conflict = [] { return text_reply(409, std::string(protocol::kStartedExternally)); };
    if (toggled_on_) return conflict();
    auto active = mesos_read<bool>("prof.active");
    if (!active) return text_reply(400, ended(protocol::kProfilingNotEnabled));
    if (*active) return conflict();
    if (!try_own_profiling()) return conflict();
    // heapgate's deliberate difference: start from empty profile data, so the
    // run's profile holds only its own allocations. Fails exactly when
    // profiling cannot be enabled (ENOENT without opt.prof).
    if (auto reset = jemalloc::prof_reset(); !reset) {
      release_profiling();
      return text_reply(400, ended(protocol::kProfilingNotEnabled));
    }
    auto was_active = mesos_exchange_active(true);
    if (!was_active) {
      release_profiling();
      return text_reply(400, ended(protocol::kProfilingNotEnabled));
    }
    if (*was_active) {
      // Someone else switched it on in between; leave it as they wanted it.
      release_profiling();
      return conflict();
    }
    // Unix seconds as in Mesos, but unique: ids name downloads.
    std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::time_t id = std::max(now, last_id_ + 1);
    last_id_ = id;
    run_ = Run{id, std::chrono::steady_clock::now() + duration};
    wake_.notify_all();
  }
  auto remaining = std::chrono::duration<double>(run_->deadline - std::chrono::steady_clock::now()).count();
  std::string id = std::to_string(run_->id);
  std::string message(already_active ? protocol::kAlreadyActive : protocol::kStartedNewRun);
  message += " After the remaining time elapses, download the generated profile at '" +
             with_id(protocol::kDownloadRawPath, id) + "'. Visit '" + std::string(protocol::kStopPath) +
             "' to stop collection earlier.";
  nlohmann::json body;
  body[protocol::kIdField] = run_->id;
  body[protocol::kMessageField] = message;
  body[protocol::kRemainingSecondsField] = std::to_string(static_cast<int>(remaining + 0.5));
  return json_reply(body);
}

Reply MemoryProfiler::stop() {
  if (!jemalloc_detected()) return text_reply(400, ended(protocol::kNotDetected));
  std::lock_guard<std::mutex> lock(mutex_);
  auto active = mesos_read<bool>("prof.active");
  if (!active) return text_reply(400, "Error interfacing with jemalloc: " + active.error() + ".\n");
  if (!run_ && *active) {
    return text_reply(400,
                      "Profiling is active, but was not started by libprocess. Accessing the raw profile through "
                      "libprocess is currently not supported.\n");
  }
  if (run_) {
    stop_and_dump_locked();
    // Stopping failed (logged, retried by the timer): answer with the reason.
    if (run_) return text_reply(400, "Error interfacing with jemalloc: Couldn't stop profiling.\n");
  }
  if (!raw_.artifact) return text_reply(400, raw_.error + ".\n");
  std::string id = std::to_string(raw_.artifact->id);
  nlohmann::json body;
  body[protocol::kIdField] = id;
  body[protocol::kMessageField] = protocol::kStoppedRun;
  body[protocol::kUrlGraphProfileField] = with_id(protocol::kDownloadGraphPath, id);
  body[protocol::kUrlRawProfileField] = with_id(protocol::kDownloadRawPath, id);
  body[protocol::kUrlSymbolizedProfileField] = with_id(protocol::kDownloadTextPath, id);
  return json_reply(body);
}

Reply MemoryProfiler::state() { return *state_taking_lock(true); }

std::optional<Reply> MemoryProfiler::state_if_free() { return state_taking_lock(false); }

std::optional<Reply> MemoryProfiler::state_taking_lock(bool wait) {
  nlohmann::json body;
  const bool detected = jemalloc_detected();
  if (detected) {
    nlohmann::json jemalloc;
    const char* env = std::getenv("MALLOC_CONF");
    auto build = mesos_read<const char*>("config.malloc_conf");
    nlohmann::json& malloc_conf = jemalloc[protocol::kMallocConfField];
    malloc_conf[protocol::kBuildOptionsField] = build ? std::string(*build != nullptr ? *build : "") : build.error();
    malloc_conf[protocol::kEnvironmentField] = env != nullptr ? env : "";
    auto enabled = mesos_read<bool>("config.prof");
    jemalloc[protocol::kProfilingEnabledField] = enabled ? nlohmann::json(*enabled) : nlohmann::json(enabled.error());
    auto active = mesos_read<bool>("prof.active");
    jemalloc[protocol::kProfilingActiveField] = active ? nlohmann::json(*active) : nlohmann::json(active.error());
    body[protocol::kJemallocField] = jemalloc;
  }
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return std::nullopt;
  }
  nlohmann::json run;
  if (run_) {
    run[protocol::kIdField] = run_->id;
    run[protocol::kRemainingSecondsField] =
        std::chrono::duration<double>(run_->deadline - std::chrono::steady_clock::now()).count();
  } else if (raw_.artifact) {
    run[protocol::kIdField] = raw_.artifact->id;
    run[protocol::kRemainingSecondsField] = 0;
  } else {
    run[protocol::kIdField] = nullptr;
  }
  nlohmann::json& profiler = body[protocol::kMemoryProfilerField];
  profiler[protocol::kCurrentRunField] = run;
  profiler[protocol::kJemallocDetectedField] = detected;
  profiler[protocol::kTmpDirField] = tmp_dir_ ? *tmp_dir_ : std::string(protocol::kNotYetGenerated);
  return json_reply(body);
}

Reply MemoryProfiler::statistics() {
  if (!jemalloc_detected()) return text_reply(400, ended(protocol::kNotDetected));
  auto json = jemalloc::stats_json();
  if (!json) return text_reply(400, json.error().message() + ".\n");
  Reply r;
  r.content_type = "application/json; charset=utf-8";
  r.body = std::move(*json);
  return r;
}

tl::expected<std::shared_ptr<const DiskArtifact>, Reply> MemoryProfiler::latest_raw_for(const QueryParams& params,
                                                                                        const char* missing_prefix) {
  auto id = parse_id(params);
  if (!id) return tl::unexpected(text_reply(400, "Invalid parameter 'id': " + id.error() + ".\n"));
  if (run_ && !*id) return tl::unexpected(text_reply(400, std::string(protocol::kRunInProgress)));
  if (!raw_.artifact) return tl::unexpected(text_reply(400, missing_prefix + raw_.error + ".\n"));
  if (*id && **id != raw_.artifact->id) {
    return tl::unexpected(text_reply(400, std::string(protocol::kCannotServeId) + std::to_string(**id) + ".\n"));
  }
  return raw_.artifact;
}

Reply MemoryProfiler::serve_file(const std::shared_ptr<const DiskArtifact>& artifact, const char* content_type) {
  auto file = open_file(artifact->path);
  if (!file) return text_reply(400, "Requested file was deleted from local disk.\n");
  Reply r;
  r.content_type = content_type;
  // The file's own name, never the server's directory: clients save under it.
  r.headers.emplace("Content-Disposition", attachment(artifact->path.substr(artifact->path.rfind('/') + 1)));
  r.file = *file;
  return r;
}

Reply MemoryProfiler::download(DownloadKind kind, const QueryParams& params) {
  std::shared_ptr<const DiskArtifact> raw;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto latest = latest_raw_for(
        params, kind == DownloadKind::raw ? "Cannot access raw profile: " : "No source profile exists: ");
    if (!latest) return latest.error();
    // Opened under the lock: a later run renames a new file over the path,
    // which leaves this descriptor on the old, complete file.
    if (kind == DownloadKind::raw) return serve_file(*latest, content_type_of(kind));
    ArtifactSlot& slot = kind == DownloadKind::text ? text_ : graph_;
    if (slot.artifact && slot.artifact->id == (*latest)->id) return serve_file(slot.artifact, content_type_of(kind));
    raw = *latest;
  }
  return generate_with_jeprof(kind, std::move(raw));
}

Reply MemoryProfiler::generate_with_jeprof(DownloadKind kind, std::shared_ptr<const DiskArtifact> raw) {
  // One generation per kind at a time; the second request for the same run
  // waits here and then finds the cached file. Other endpoints keep answering.
  std::lock_guard<std::mutex> generation(kind == DownloadKind::text ? text_generation_ : graph_generation_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ArtifactSlot& slot = kind == DownloadKind::text ? text_ : graph_;
    if (slot.artifact && slot.artifact->id == raw->id) return serve_file(slot.artifact, content_type_of(kind));
  }
  const bool text = kind == DownloadKind::text;
  std::string dir = raw->path.substr(0, raw->path.rfind('/'));
  std::string final_path =
      dir + (text ? "/symbolized-profile." : "/profile.") + std::to_string(raw->id) + (text ? ".dump" : ".svg");
  std::string tmp_path = final_path + ".tmp";
  // jeprof reads the profile without the allocator's own frames: Debian's
  // libjemalloc is stripped, and jeprof names each of its internal frames after
  // the nearest export, crediting the whole flat column to something like
  // malloc_usable_size. Everything else (totals, maps) is the dump's.
  const std::string trimmed_path = final_path + ".input.heap";
  std::string source = raw->path;  // kept on disk by `raw` while read
  if (auto profile = read_profile(raw->path)) {
    Symbolizer symbolizer;
    if (sys::write_file_atomic(trimmed_path, write_profile(without_allocator_frames(*profile, symbolizer)))) {
      source = trimmed_path;
    }
  }
  JeprofOptions jeprof;
  jeprof.binary = self_exe();
  jeprof.profile = source;
  jeprof.format = text ? JeprofFormat::text : JeprofFormat::svg;
  jeprof.output_path = tmp_path;
  jeprof.jeprof_program = options_.jeprof_program;
  jeprof.timeout = options_.jeprof_timeout;
  auto ran = run_jeprof(jeprof);
  ::unlink(trimmed_path.c_str());
  if (!ran || ::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    ::unlink(tmp_path.c_str());
    log_warning(std::string("jeprof failed for ") + raw->path + ": " +
                (ran ? std::string("cannot rename its output") : ran.error().message()));
    std::lock_guard<std::mutex> lock(mutex_);
    ArtifactSlot& slot = text ? text_ : graph_;
    slot.artifact.reset();
    slot.error = "Failed to create artifact: Error trying to run jeprof";
    return text_reply(400, std::string(protocol::kJeprofFailed));
  }
  auto artifact = std::make_shared<DiskArtifact>(final_path, raw->id);
  std::lock_guard<std::mutex> lock(mutex_);
  ArtifactSlot& slot = text ? text_ : graph_;
  // Keep the newest: a stale generation (a newer run finished meanwhile) is
  // still served to its requester, who asked for that id.
  if (!slot.artifact || slot.artifact->id <= raw->id) slot.artifact = artifact;
  return serve_file(artifact, content_type_of(kind));
}

Reply MemoryProfiler::heap_profile(const QueryParams& params) {
  if (mallctl_fn() == nullptr) return text_reply(500, "libjemalloc is not loaded, cannot heap profile\n");
  if (const std::string* active = param(params, "active")) {
    // libmtev crashes on a valueless ?active; heapgate refuses it.
    if (active->empty()) return text_reply(400, "Parameter 'active' needs a value: true or false\n");
    // libmtev reads anything but "true" as false; a typo must not switch
    // profiling off.
    if (*active != "true" && *active != "false") {
      return text_reply(400, "Invalid parameter 'active': expected true or false, got '" + *active + "'\n");
    }
    const bool on = *active == "true";
    std::lock_guard<std::mutex> lock(mutex_);
    if (run_) return text_reply(409, "A profiling run is currently in progress.\n");
    // Profiling is claimed while toggled on, so runs and scopes stay out.
    if (on && !toggled_on_ && !try_own_profiling()) {
      return text_reply(409, "Heap profiling is in use by a profiling scope.\n");
    }
    bool value = on;
    int err = mallctl_fn()("prof.active", nullptr, nullptr, &value, sizeof value);
    if (on && !toggled_on_) {
      if (err != 0) {
        release_profiling();
      } else {
        toggled_on_ = true;
      }
    } else if (!on && err == 0 && toggled_on_) {
      toggled_on_ = false;
      release_profiling();
    }
    // libmtev: strerror without a trailing newline.
    if (err != 0) return text_reply(500, std::strerror(err));
    return text_reply(200, on ? "Profiling is activated\n" : "Profiling is deactivated\n");
  }
  const std::string* trigger = param(params, "trigger_dump");
  if (trigger != nullptr && *trigger != "true" && *trigger != "false") {
    return text_reply(400, "Invalid parameter 'trigger_dump': expected true or false, got '" + *trigger + "'\n");
  }
  if (trigger != nullptr && *trigger == "true") {
    std::string path;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto dir = tmp_dir_locked();
      if (!dir) return text_reply(500, dir.error() + "\n");
      // A name per dump (libmtev reuses one and races between clients).
      path = *dir + "/heap_profile." + std::to_string(::getpid()) + "." + std::to_string(++dump_sequence_);
    }
    const char* name = path.c_str();
    int err = mallctl_fn()("prof.dump", nullptr, nullptr, &name, sizeof name);
    if (err != 0) return text_reply(500, std::strerror(err));
    // prof.dump returns after the file is complete; read, then unlink as libmtev does.
    auto file = open_file(path);
    ::unlink(path.c_str());
    if (!file) return text_reply(500, file.error());
    Reply r;
    r.content_type = "application/x-jemalloc-heap-profile";
    r.file = *file;
    return r;
  }
  auto line = [](const char* name) {
    auto v = mesos_read<bool>(name);
    return std::string(name) + ": " + (v ? (*v ? "true" : "false") : "error") + "\n";
  };
  std::string body = line("opt.prof");
  if (auto prof = mesos_read<bool>("opt.prof"); prof && !*prof) body += "# needs MALLOC_CONF=\"prof:true\"\n";
  body += line("prof.active");
  body += line("prof.thread_active_init");
  return text_reply(200, body);
}

namespace {

tl::expected<ProfileMetric, Reply> metric_param(const QueryParams& params) {
  const std::string* text = param(params, "metric");
  if (text == nullptr) return ProfileMetric::live_bytes;
  auto metric = parse_profile_metric(*text);
  if (!metric)
    return tl::unexpected(text_reply(400, "Invalid parameter 'metric': " + metric.error().message() + ".\n"));
  return *metric;
}

tl::expected<NormalizedProfile, Reply> normalized(const DiskArtifact& artifact, Symbolizer& symbolizer) {
  auto profile = read_profile(artifact.path);
  if (!profile) return tl::unexpected(text_reply(400, "Cannot read profile: " + profile.error().message() + ".\n"));
  return normalize_profile(*profile, symbolizer);
}

}  // namespace

tl::expected<MemoryProfiler::LatestProfile, Reply> MemoryProfiler::latest_profile(const QueryParams& params) {
  auto metric = metric_param(params);
  if (!metric) return tl::make_unexpected(metric.error());
  std::shared_ptr<const DiskArtifact> raw;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto latest = latest_raw_for(params, "Cannot access raw profile: ");
    if (!latest) return tl::make_unexpected(latest.error());
    raw = *latest;
  }
  // Symbolized off the lock; `raw` keeps the file until this is done.
  Symbolizer symbolizer;
  auto profile = normalized(*raw, symbolizer);
  if (!profile) return tl::make_unexpected(profile.error());
  return LatestProfile{raw->id, *metric, std::move(*profile)};
}

Reply MemoryProfiler::download_folded(const QueryParams& params) {
  auto latest = latest_profile(params);
  if (!latest) return latest.error();
  return text_reply(200, render_folded(latest->profile, latest->metric));
}

Reply MemoryProfiler::download_flamegraph(const QueryParams& params) {
  auto latest = latest_profile(params);
  if (!latest) return latest.error();
  const NormalizedProfile& profile = latest->profile;
  const ProfileMetric metric = latest->metric;
  FlamegraphOptions options;
  options.title = "heapgate: run " + std::to_string(latest->id) + ", " + std::string(to_string(metric));
  options.subtitle = profile.sampled() ? "estimated from a sampled profile" : "";
  options.unit = std::string(flame_unit(metric));
  Reply r;
  r.content_type = "image/svg+xml";
  r.body = render_flamegraph_svg(folded_stacks(profile, metric), options);
  return r;
}

Reply MemoryProfiler::download_pprof(const QueryParams& params) {
  if (!pprof_supported()) {
    return text_reply(501, to_pprof(ProfileDiff{}).error().message() + "\n");
  }
  std::shared_ptr<const DiskArtifact> raw;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto latest = latest_raw_for(params, "Cannot access raw profile: ");
    if (!latest) return latest.error();
    raw = *latest;
  }
  // Off the lock; `raw` keeps the file until this is done.
  auto profile = read_profile(raw->path);
  if (!profile) return text_reply(400, "Cannot read profile: " + profile.error().message() + ".\n");
  Symbolizer symbolizer;
  PprofOptions options;
  options.comment = "heapgate: memory-profiler run " + std::to_string(raw->id);
  auto bytes = to_pprof(*profile, symbolizer, options);
  if (!bytes) return text_reply(500, bytes.error().message() + "\n");
  Reply r;
  r.content_type = "application/octet-stream";
  r.headers.emplace("Content-Disposition", attachment("profile." + std::to_string(raw->id) + ".pb.gz"));
  r.body = std::move(*bytes);
  return r;
}

Reply MemoryProfiler::diff(const QueryParams& params) {
  auto metric = metric_param(params);
  if (!metric) return metric.error();
  const std::string* format = param(params, "format");
  if (format != nullptr && *format != "text" && *format != "folded") {
    return text_reply(400, "Invalid parameter 'format': expected text or folded, got '" + *format + "'.\n");
  }
  std::shared_ptr<const DiskArtifact> current;
  std::shared_ptr<const DiskArtifact> base;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto latest = latest_raw_for(params, "Cannot access raw profile: ");
    if (!latest) return latest.error();
    current = *latest;
    base = previous_raw_;
    if (!base) return text_reply(400, "No previous run to compare against.\n");
    if (const std::string* requested = param(params, "base")) {
      auto base_id = parse_id(QueryParams{{std::string(protocol::kIdParam), *requested}});
      if (!base_id) return text_reply(400, "Invalid parameter 'base': " + base_id.error() + ".\n");
      if (**base_id != base->id) return text_reply(400, "Cannot serve requested base #" + *requested + ".\n");
    }
  }
  Symbolizer symbolizer;
  auto before = normalized(*base, symbolizer);
  if (!before) return before.error();
  auto after = normalized(*current, symbolizer);
  if (!after) return after.error();
  ProfileDiff result = diff_profiles(*before, *after);
  if (format != nullptr && *format == "folded") return text_reply(200, render_folded(result, *metric));
  return text_reply(200, "base: run " + std::to_string(base->id) + "\ncurrent: run " + std::to_string(current->id) +
                             "\n" + render_diff_text(result));
}

}  // namespace heapgate::detail
