// SPDX-License-Identifier: MIT
// ProfileScope (heapgate/profile_scope.h): opens a counting window on the allocation hooks, owns
// jemalloc profiling or stack capture for exact/sampled scopes, and builds the ScopeResult.
#include "heapgate/profile_scope.h"

#include <link.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <mutex>

#include "alloc_counting.h"
#include "stack_capture.h"
#include "heapgate/unwinder_control.h"
#include "heapgate/integration.h"
#include "heapgate/profile.h"
#include "heapgate/sys.h"

namespace heapgate {
namespace {

// jemalloc's profiling is process-global: one scope owns it at a time.
std::atomic<bool> g_profiling_owned{false};

std::mutex g_sink_mutex;
ErrorSink& error_sink() {
  static auto* sink =
      new ErrorSink([](const Error& e) { std::fprintf(stderr, "heapgate: %s\n", e.message().c_str()); });
  return *sink;
}

// Dumps go to one private directory per process, made on first use and
// removed when the process exits: a test suite gated every day would
// otherwise leave one directory in $TMPDIR per run (and per re-run child).
Result<std::string> default_dump_path(const std::string& scope_name) {
  static std::mutex mutex;
  static std::string dir;
  static std::uint64_t sequence = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (dir.empty()) {
    auto made = sys::make_private_dir("heapgate.");
    if (!made) return fail(made.error());
    dir = *made;
    sys::remove_at_exit(dir);
  }
  return dir + "/" + sys::file_name_part(scope_name, "scope") + "." + std::to_string(sequence++) + ".heap";
}

std::uint64_t round_count(double v) { return v <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(v)); }

}  // namespace

namespace detail {
bool try_own_profiling() noexcept {
  bool expected = false;
  return g_profiling_owned.compare_exchange_strong(expected, true);
}
void release_profiling() noexcept { g_profiling_owned.store(false); }
std::optional<ReleasedBlocks> released_since(std::uint32_t counting_window) noexcept {
  return released_since_close(counting_window);
}

void follow_frees_between_windows(bool on) noexcept { g_follow_frees.store(on, std::memory_order_relaxed); }
}  // namespace detail

void set_error_sink(ErrorSink sink) {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  error_sink() = std::move(sink);
}

ProfileScope::ProfileScope(std::string name, ScopeOptions options) noexcept
    : name_(std::move(name)), options_(std::move(options)) {
  detail::HookSuppressor suppress;
  start_time_ = std::chrono::steady_clock::now();
  try {
    Mode requested = options_.mode;
    if (requested == Mode::off) return;
    const AllocatorStatus& status = allocator_status();
    if (auto usable = status.check(requested); !usable) {
      start_error_ = usable.error();
      return;
    }
    const bool hooks = status.hooks_available && detail::counting_source() != detail::CountingSource::none;
    if (status.hooks_available && !hooks) {
      start_error_ = make_error(ErrorCode::unavailable, "heapgate mode " + std::string(to_string(requested)),
                                detail::why_no_counting(), "report this as a heapgate bug");
      return;
    }
    mode_ = requested;
    if (requested == Mode::exact || requested == Mode::sampled) {
      bool expected = false;
      owns_profiling_ = g_profiling_owned.compare_exchange_strong(expected, true);
      if (!owns_profiling_) {
        mode_ = Mode::counters;
      } else if (requested == Mode::exact && hooks && status.exact_through_hooks &&
                 !detail::stacks_from_jemalloc_requested()) {
        // jemalloc's profiler moves every sampled block into a page-sized
        // size class of its own (~60x the time, GBs for a big test); the hooks
        // see every allocation anyway, so they record its stack themselves
        // (docs/performance.md).
        captures_stacks_ = true;
      } else {
        // Before the first sample: jemalloc's own unwinder costs ~3 µs per
        // allocation, libunwind's ~0.5 µs (docs/performance.md).
        (void)detail::install_fast_unwinder();
        // prof.reset drops samples of earlier scopes, so the dump holds only this
        // one's. It keeps the rate: a new rate reaches each thread only at its
        // next sample event, so switching rates would miss allocations.
        if (auto reset = jemalloc::prof_reset(); !reset) {
          start_error_ = reset.error();
          g_profiling_owned.store(false);
          owns_profiling_ = false;
          mode_ = Mode::off;
          return;
        }
      }
    }
    if (hooks) {
      window_ = detail::open_window();
      if (window_ == detail::kCountingFailed) {
        start_error_ = make_error(ErrorCode::unavailable, "heapgate mode " + std::string(to_string(requested)),
                                  "installing jemalloc's allocation hooks failed (all of jemalloc's hook slots taken?)",
                                  "remove other experimental.hooks users, or report this as a heapgate bug");
      } else if (window_ < 0) {
        start_error_ = make_error(ErrorCode::conflict, name_, "more than 64 scopes are open at once",
                                  "finish scopes before opening new ones");
      }
      if (window_ < 0) {
        window_ = -1;
        return;
      }
      detail::CountedTotals totals = detail::counted_totals();
      start_allocations_ = totals.allocations;
      start_deallocations_ = totals.deallocations;
      start_allocated_bytes_ = totals.allocated_bytes;
    } else if (mode_ == Mode::counters) {
      // Documented fallback (docs/design.md §3): the calling thread's bytes only.
      auto allocated = jemalloc::thread_allocated();
      auto deallocated = jemalloc::thread_deallocated();
      if (!allocated || !deallocated) {
        start_error_ = allocated ? deallocated.error() : allocated.error();
        return;
      }
      thread_bytes_only_ = true;
      start_thread_allocated_ = *allocated;
      start_thread_deallocated_ = *deallocated;
    }
    start_time_ = std::chrono::steady_clock::now();
    // Last: from here on every allocation is sampled, and heapgate makes none.
    if (captures_stacks_) {
      if (!detail::begin_stack_capture()) {
        start_error_ = make_error(ErrorCode::unavailable, name_, "libunwind could not be loaded to record call stacks",
                                  "install libunwind8, or set HEAPGATE_UNWINDER=jemalloc");
      }
    } else if (owns_profiling_) {
      if (auto activated = jemalloc::set_prof_active(true); !activated) start_error_ = activated.error();
    }
  } catch (const std::bad_alloc&) {
    start_error_ = make_error(ErrorCode::internal, name_, "out of memory while starting the scope");
  } catch (const std::exception& e) {
    start_error_ = make_error(ErrorCode::internal, name_, std::string("starting the scope failed: ") + e.what());
  }
}

ProfileScope::~ProfileScope() {
  if (finished_) return;
  auto result = finish();
  if (!result) {
    std::lock_guard<std::mutex> lock(g_sink_mutex);
    // The sink is the user's; whatever it throws, a destructor must not take
    // the process down with it, and the measurement's error is not lost.
    try {
      if (error_sink()) error_sink()(result.error());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "heapgate: the ProfileScope error sink threw (%s) while reporting: %s\n", e.what(),
                   result.error().message().c_str());
    } catch (...) {
      std::fprintf(stderr, "heapgate: the ProfileScope error sink threw a non-standard exception while reporting: %s\n",
                   result.error().message().c_str());
    }
  }
}

ProfileScope::Live ProfileScope::live() const noexcept {
  if (window_ < 0) return {};
  detail::WindowResult w = detail::peek_window(window_);
  return Live{w.live_allocations, w.live_bytes};
}

Result<ScopeResult> ProfileScope::finish() noexcept {
  detail::HookSuppressor suppress;
  // First: stop sampling, so nothing heapgate does below lands in the profile.
  if (captures_stacks_) {
    detail::end_stack_capture();
  } else if (owns_profiling_) {
    // Cannot fail here: the same mallctl set prof.active to true when the
    // scope started (it fails only where profiling is not compiled in or not
    // enabled at start, and then this scope never owned it).
    (void)jemalloc::set_prof_active(false);
  }
  auto end_time = std::chrono::steady_clock::now();
  detail::CountedTotals totals;
  detail::WindowResult window;
  // Read before anything below allocates (the fallback cannot tell heapgate's bytes apart).
  const std::uint64_t allocated =
      thread_bytes_only_ ? jemalloc::thread_allocated().value_or(start_thread_allocated_) : 0;
  const std::uint64_t deallocated =
      thread_bytes_only_ ? jemalloc::thread_deallocated().value_or(start_thread_deallocated_) : 0;
  const bool counted = window_ >= 0;
  std::uint32_t counting_window = 0;
  if (counted) {
    totals = detail::counted_totals();
    counting_window = detail::window_epoch(window_);
    window = detail::close_window(window_);
    window_ = -1;
  }
  try {
    if (finished_) {
      return fail(make_error(ErrorCode::conflict, name_, "the scope was already finished",
                             "call finish() once; its first result is the measurement"));
    }
    finished_ = true;
    auto release = [this] {
      if (captures_stacks_) {
        detail::clear_stack_capture();
        captures_stacks_ = false;
        g_profiling_owned.store(false);
        owns_profiling_ = false;
      } else if (owns_profiling_) {
        // Frees jemalloc's per-stack records of this scope. Ignored on
        // failure: the records stay until the next scope resets them at its
        // start, which costs memory, not correctness.
        (void)jemalloc::prof_reset();
        g_profiling_owned.store(false);
        owns_profiling_ = false;
      }
    };
    if (start_error_) {
      release();
      return fail(*start_error_);
    }
    ScopeResult result;
    result.name = name_;
    result.mode = mode_;
    result.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(end_time - start_time_);
    if (thread_bytes_only_) {
      const std::uint64_t grown = allocated - start_thread_allocated_;
      const std::uint64_t shrunk = deallocated - start_thread_deallocated_;
      result.bytes_only = true;
      result.allocated_bytes = grown;
      result.live_bytes = grown > shrunk ? grown - shrunk : 0;
    }
    if (counted) {
      result.allocations = totals.allocations - start_allocations_;
      result.deallocations = totals.deallocations - start_deallocations_;
      result.allocated_bytes = totals.allocated_bytes - start_allocated_bytes_;
      result.live_allocations = window.live_allocations;
      result.live_bytes = window.live_bytes;
      result.peak_bytes = window.peak_bytes;
      result.other_thread_allocations = window.other_thread_allocations;
      result.other_thread_bytes = window.other_thread_bytes;
      result.counting_window = counting_window;
    }
    if (!owns_profiling_) return result;
    auto profiled = finish_profiling(std::move(result));
    release();
    return profiled;
  } catch (const std::bad_alloc&) {
    return fail(make_error(ErrorCode::internal, name_, "out of memory while finishing the scope"));
  } catch (const std::exception& e) {
    return fail(make_error(ErrorCode::internal, name_, std::string("finishing the scope failed: ") + e.what()));
  }
}

namespace {

// The process's mappings for profiles kept in memory, read again only when
// the dynamic linker loaded or unloaded an object since: a child that
// records the call sites of 467 tiny tests spent 5% of its time reading
// /proc/self/maps once a test. What changes between tests without dlopen or
// dlclose is anonymous memory (the heap's extents), which names no frame.
struct MapsSnapshot {
  unsigned long long loads = ~0ull;
  unsigned long long unloads = ~0ull;
  std::string text;
  std::vector<Mapping> mappings;
};

std::pair<unsigned long long, unsigned long long> loader_generation() {
  std::pair<unsigned long long, unsigned long long> seen{0, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* data) {
        auto* out = static_cast<std::pair<unsigned long long, unsigned long long>*>(data);
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          *out = {info->dlpi_adds, info->dlpi_subs};
        }
        return 1;  // the counters are the same in every entry
      },
      &seen);
  return seen;
}

// A copy, taken under the lock: another thread's scope may read them again.
Result<MapsSnapshot> current_maps() {
  static std::mutex mutex;
  static MapsSnapshot snapshot;
  std::lock_guard<std::mutex> lock(mutex);
  const auto [loads, unloads] = loader_generation();
  if (loads != snapshot.loads || unloads != snapshot.unloads || loads == 0) {
    auto text = sys::read_file("/proc/self/maps");
    if (!text) return fail(std::move(text.error()));
    // What reading a written profile back gives: it is symbolized by these.
    auto mappings = parse_mappings(*text);
    if (!mappings) return fail(mappings.error());
    snapshot = MapsSnapshot{loads, unloads, std::move(*text), std::move(*mappings)};
  }
  return snapshot;
}

}  // namespace

Result<ScopeResult> ProfileScope::finish_profiling(ScopeResult result) {
  Result<Profile> profile = Profile{};
  if (captures_stacks_ && options_.profile_in_memory) {
    auto maps = current_maps();
    if (!maps) return fail(maps.error());
    profile = detail::captured_profile(std::move(maps->text));
    profile->mappings = std::move(maps->mappings);
  } else {
    std::string path = options_.profile_path;
    if (path.empty()) {
      auto made = default_dump_path(name_);
      if (!made) return fail(made.error());
      path = *made;
    }
    auto dumped = captures_stacks_ ? detail::write_captured_profile(path) : jemalloc::prof_dump(path);
    if (!dumped) return fail(dumped.error());
    profile = read_profile(path);
    if (!profile) return fail(profile.error());
    result.profile_path = path;
  }
  result.sample_period = profile->sample_period;
  // Counts come from the dump: jemalloc recorded every allocation's stack
  // (exact) or a sample of them (sampled, scaled back up as jeprof does).
  if (!profile->sampled()) {
    result.allocations = profile->totals.accum_objects;
    result.allocated_bytes = profile->totals.accum_bytes;
    result.live_allocations = profile->totals.live_objects;
    result.live_bytes = profile->totals.live_bytes;
  } else {
    ScaledCounts sum;
    for (const auto& stack : profile->stacks) {
      sum += unsample(stack.counts, profile->sample_period);
    }
    result.allocations = round_count(sum.accum_objects);
    result.allocated_bytes = round_count(sum.accum_bytes);
    result.live_allocations = round_count(sum.live_objects);
    result.live_bytes = round_count(sum.live_bytes);
    result.estimated = true;
    result.sampling_errors = sampling_errors(*profile);
  }
  if (captures_stacks_ && options_.profile_in_memory)
    result.profile = std::make_shared<const Profile>(std::move(*profile));
  return result;
}

}  // namespace heapgate
