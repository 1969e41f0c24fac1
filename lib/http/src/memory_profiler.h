// SPDX-License-Identifier: MIT
// The state machine behind the memory-profiler endpoints, kept free of the
// HTTP library: a request is a path plus query parameters, an answer a Reply.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "heapgate/diff.h"
#include "heapgate/http.h"
#include "heapgate/memory_profiler_protocol.h"
#include "heapgate/normalize.h"

namespace heapgate::detail {

/// Query parameters; the first value of a repeated key wins (as libmtev and
/// libprocess' url.query do).
using QueryParams = std::multimap<std::string, std::string>;

/// An open file whose descriptor closes with the last reference. Downloads
/// stream from a descriptor opened under the state lock, so a newer run that
/// replaces the file (rename) never changes what an ongoing download reads.
struct OpenFile {
  explicit OpenFile(int descriptor) : fd(descriptor) {}
  ~OpenFile();
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  int fd = -1;
  std::uint64_t size = 0;
};

/// One answer. `file`, when set, is the body (streamed); otherwise `body`.
struct Reply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::shared_ptr<OpenFile> file;
  /// Extra headers (Content-Disposition).
  std::multimap<std::string, std::string> headers;
};

/// A finished artifact on disk: the path is unlinked when the last reference
/// goes, so a jeprof or symbolizer still reading an older run keeps its input.
struct DiskArtifact {
  DiskArtifact(std::string artifact_path, std::time_t run_id) : path(std::move(artifact_path)), id(run_id) {}
  ~DiskArtifact();
  DiskArtifact(const DiskArtifact&) = delete;
  DiskArtifact& operator=(const DiskArtifact&) = delete;
  std::string path;
  std::time_t id;
};

/// An artifact slot: the artifact, or why there is none (Mesos' Try<DiskArtifact>).
struct ArtifactSlot {
  std::shared_ptr<const DiskArtifact> artifact;
  std::string error{http::memory_profiler::kNotYetGenerated};
};

class MemoryProfiler {
 public:
  explicit MemoryProfiler(HttpOptions options);
  /// Finishes an active run (dumping it) and joins the timer thread.
  ~MemoryProfiler();
  MemoryProfiler(const MemoryProfiler&) = delete;
  MemoryProfiler& operator=(const MemoryProfiler&) = delete;

  // Mesos' /memory-profiler/<route>.
  Reply start(const QueryParams& params);
  Reply stop();
  Reply state();
  /// state(), or nullopt when the state lock is held (a run starting or
  /// dumping): for a caller that must not wait.
  std::optional<Reply> state_if_free();
  Reply statistics();
  Reply download(http::memory_profiler::DownloadKind kind, const QueryParams& params);

  // heapgate's extensions under /heapgate/.
  Reply heap_profile(const QueryParams& params);
  Reply download_folded(const QueryParams& params);
  Reply download_flamegraph(const QueryParams& params);
  /// The latest run's profile as a gzipped pprof file (heapgate/pprof.h).
  Reply download_pprof(const QueryParams& params);
  Reply diff(const QueryParams& params);

 private:
  struct Run {
    std::time_t id = 0;
    std::chrono::steady_clock::time_point deadline;
  };

  bool jemalloc_detected() const;
  // state() and state_if_free(): waits for the state lock, or gives up.
  std::optional<Reply> state_taking_lock(bool wait);
  void timer_loop();
  // Both need mutex_ held.
  void stop_and_dump_locked();
  std::string dump_raw_locked(std::time_t id, std::string& path_out);
  tl::expected<std::string, std::string> tmp_dir_locked();
  // Resolves `id` against the latest raw profile, as Mesos' download checks do.
  tl::expected<std::shared_ptr<const DiskArtifact>, Reply> latest_raw_for(const QueryParams& params,
                                                                          const char* missing_prefix);
  // The latest finished run's profile, symbolized, and the `metric`
  // parameter: what the folded and flame-graph downloads draw.
  struct LatestProfile {
    std::time_t id;
    ProfileMetric metric;
    NormalizedProfile profile;
  };
  tl::expected<LatestProfile, Reply> latest_profile(const QueryParams& params);
  Reply generate_with_jeprof(http::memory_profiler::DownloadKind kind, std::shared_ptr<const DiskArtifact> raw);
  // Named by the file's base name in Content-Disposition.
  Reply serve_file(const std::shared_ptr<const DiskArtifact>& artifact, const char* content_type);

  HttpOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool shutting_down_ = false;
  std::optional<Run> run_;
  std::time_t last_id_ = 0;
  ArtifactSlot raw_;
  ArtifactSlot text_;
  ArtifactSlot graph_;
  // The latest successful raw profile before raw_, for /heapgate/diff.
  std::shared_ptr<const DiskArtifact> previous_raw_;
  std::optional<std::string> tmp_dir_;
  std::uint64_t dump_sequence_ = 0;
  // libmtev-style ?active=true took profiling (not a run).
  bool toggled_on_ = false;
  // One jeprof per artifact kind at a time; the state lock is not held meanwhile.
  std::mutex text_generation_;
  std::mutex graph_generation_;
  std::thread timer_;
};

}  // namespace heapgate::detail
