// SPDX-License-Identifier: MIT
// ProfileScope: an RAII window that measures the allocations made while it is open, in counters,
// exact or sampled mode; ScopeOptions, ScopeResult, live(), and the error sink for destructors.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "heapgate/allocator.h"
#include "heapgate/error.h"
#include "heapgate/profile.h"
#include "heapgate/sampling.h"

namespace heapgate {

/// How a ProfileScope measures.
struct ScopeOptions {
  ScopeOptions() = default;
  /// Implicit on purpose: `ProfileScope scope{"parse", Mode::exact};`.
  ScopeOptions(Mode scope_mode) : mode(scope_mode), profile_path() {}  // NOLINT(google-explicit-constructor)
  ScopeOptions(Mode scope_mode, std::string dump_path) : mode(scope_mode), profile_path(std::move(dump_path)) {}

  /// `counters` (the default) measures exactly, counting every allocation;
  /// `exact` and `sampled` also dump a heap profile with call stacks. A
  /// profiling scope nested in another one measures counters only, because
  /// jemalloc's profiling is process-global.
  Mode mode = Mode::counters;
  /// Where `exact`/`sampled` scopes write their heap_v2 dump. Empty: a file in a
  /// private directory under $TMPDIR (else /tmp), created once per process
  /// and removed, with its dumps, when the process exits: set a path to keep
  /// the dump.
  std::string profile_path;
  /// `exact` with heapgate's own stacks (the default): no file is written;
  /// ScopeResult::profile holds the profile instead. For a caller that reads
  /// the stacks once and keeps nothing: a file a scope costs more than a small
  /// scope's measuring. Ignored where jemalloc writes the dump (`sampled`).
  bool profile_in_memory = false;
};

/// What a scope measured. All byte counts are usable sizes: requests rounded up
/// to jemalloc's size classes (malloc(100) counts 112), as jemalloc's profiles
/// count them, so `counters` and `exact` report the same numbers.
struct ScopeResult {
  std::string name;
  /// The mode that actually measured: `counters` for a profiling scope nested
  /// in another, `off` when nothing could be measured.
  Mode mode = Mode::off;
  /// Allocations made inside the scope, by any thread (a realloc counts as one
  /// allocation and one deallocation, as in jemalloc's profiles).
  std::uint64_t allocations = 0;
  /// Bytes of those allocations.
  std::uint64_t allocated_bytes = 0;
  /// Allocations made inside the scope and not freed by its end: leaks, unless
  /// the scope meant to keep them. Frees of older memory never subtract here.
  std::uint64_t live_allocations = 0;
  std::uint64_t live_bytes = 0;
  /// The highest live_bytes reached at any moment inside the scope: exact when
  /// one thread made and freed the scope's blocks; when several did, the sum
  /// of each thread's own highest point (an upper bound, never below
  /// live_bytes), since tracking one shared peak would make every allocation
  /// of every thread contend for it.
  std::uint64_t peak_bytes = 0;
  /// Deallocations made inside the scope, of any memory (old or new).
  std::uint64_t deallocations = 0;
  /// The part of `allocations` (and of `allocated_bytes`) made by threads
  /// other than the one that started the scope: a thread pool's workers, a
  /// background logger. Kept apart because how many of those land inside the
  /// scope depends on scheduling, so a gate can hold them to a looser rule
  /// than the starting thread's own, which repeat exactly. Counted by the
  /// allocation hooks in every mode; 0 without them (`bytes_only`).
  std::uint64_t other_thread_allocations = 0;
  std::uint64_t other_thread_bytes = 0;
  /// True when the counts are estimates (`sampled` mode).
  bool estimated = false;
  /// `sampled`: the standard errors of those estimates (sampling_errors() of
  /// the dump), which the gate turns into each metric's tolerance. Zero otherwise.
  SamplingErrors sampling_errors;
  /// The `counters` fallback measured this scope: jemalloc offered no usable
  /// allocation hooks (unknown version, or HEAPGATE_HOOKS=off), so only the
  /// calling thread's `thread.allocated`/`thread.deallocated` were read.
  /// `allocated_bytes` is that thread's allocated bytes and `live_bytes` its net
  /// growth (0 if it freed more than it allocated); `allocations`,
  /// `live_allocations` and `peak_bytes` are 0 because they were not measured.
  bool bytes_only = false;
  /// `exact`/`sampled`: the heap_v2 dump of the allocations made inside the
  /// scope and still live at its end, plus cumulative counts per stack.
  std::string profile_path;
  /// ScopeOptions::profile_in_memory: the profile, not written (profile_path
  /// is then empty).
  std::shared_ptr<const Profile> profile;
  /// `exact`/`sampled`: the dump's sample period (1 = every allocation).
  std::uint64_t sample_period = 0;
  /// Wall-clock time between start and finish.
  std::chrono::nanoseconds duration{0};
  /// Which counting window measured the scope (0: none), for
  /// detail::released_since() (lib/measure/internal/heapgate/integration.h).
  std::uint32_t counting_window = 0;
};

/// Measures the allocations made between its construction and finish() (or its
/// destruction): an RAII window onto jemalloc.
///
/// ```
/// heapgate::ProfileScope scope{"parse_config"};
/// parse_config(text);
/// auto result = scope.finish();   // Result<ScopeResult>
/// ```
///
/// Counter scopes nest freely and may overlap across threads: each counts every
/// thread's allocations made while it is open. At most one `exact`/`sampled`
/// scope profiles at a time; others fall back to counters. heapgate's own
/// allocations never count. Not copyable or movable; finish it on any thread.
class ProfileScope {
 public:
  /// Starts measuring. Never throws: a failure to start (e.g. `exact` without
  /// profiling enabled) is kept and returned by finish().
  explicit ProfileScope(std::string name, ScopeOptions options = {}) noexcept;
  /// Finishes an unfinished scope; its result or error goes to the error sink
  /// only if it failed.
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

  /// Stops measuring and returns what was measured. A second call fails with
  /// ErrorCode::conflict. In `exact`/`sampled` mode this writes and parses the
  /// dump, which takes time proportional to the number of distinct stacks.
  Result<ScopeResult> finish() noexcept;

  /// Blocks allocated since the scope started and still live now, as
  /// finish() would report them, without finishing; zeros when the
  /// allocation hooks are not counting (no jemalloc hooks, a failed start).
  /// For watching what stays live across repetitions of the same code.
  struct Live {
    std::uint64_t allocations = 0;
    std::uint64_t bytes = 0;
  };
  Live live() const noexcept;

  /// The mode this scope measures in (see ScopeResult::mode).
  Mode mode() const noexcept { return mode_; }
  /// The scope's name.
  const std::string& name() const noexcept { return name_; }

 private:
  Result<ScopeResult> finish_profiling(ScopeResult result);

  std::string name_;
  ScopeOptions options_;
  Mode mode_ = Mode::off;
  std::optional<Error> start_error_;
  bool finished_ = false;
  bool owns_profiling_ = false;
  // `exact` through the hooks' own stack recording instead of jemalloc's profiler.
  bool captures_stacks_ = false;
  int window_ = -1;
  std::uint64_t start_allocations_ = 0;
  std::uint64_t start_deallocations_ = 0;
  std::uint64_t start_allocated_bytes_ = 0;
  // The counters fallback (no hooks): the calling thread's byte counters at start.
  bool thread_bytes_only_ = false;
  std::uint64_t start_thread_allocated_ = 0;
  std::uint64_t start_thread_deallocated_ = 0;
  std::chrono::steady_clock::time_point start_time_;
};

/// Where errors of scopes finished by their destructor go. The default writes
/// one line to stderr. Not thread-safe against concurrent calls to itself.
using ErrorSink = std::function<void(const Error&)>;
void set_error_sink(ErrorSink sink);

}  // namespace heapgate
