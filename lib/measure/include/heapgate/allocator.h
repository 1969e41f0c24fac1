// SPDX-License-Identifier: MIT
// jemalloc as heapgate sees it: Mode (off, counters, exact, sampled), the MALLOC_CONF strings,
// AllocatorStatus and allocator_status(), AllocatorStats, and typed mallctl access (jemalloc::).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "heapgate/error.h"
#include "heapgate/vocabulary.h"

namespace heapgate {

/// How heapgate measures. Closed list, spelled as in flags and JSON:
/// - `off`: nothing is recorded (jemalloc absent, or switched off).
/// - `counters`: exact counts, bytes, live and peak over all threads, counted
///   in heapgate's own allocation entry points in front of jemalloc (its
///   allocation hooks where those entry points are not in effect); no call
///   stacks. The default for gates.
/// - `exact`: jemalloc profiling with every allocation sampled; counts plus the
///   call stack of every allocation. Needs `MALLOC_CONF=prof:true` at start.
/// - `sampled`: jemalloc profiling at the process' `lg_prof_sample`; counts are
///   estimates (exact when the process samples every allocation).
enum class Mode { off, counters, exact, sampled };

/// Every Mode with its name, in the order error messages list them.
inline constexpr Vocabulary<Mode, 4> kModeWords = {{
    {Mode::off, "off"},
    {Mode::counters, "counters"},
    {Mode::exact, "exact"},
    {Mode::sampled, "sampled"},
}};

/// The mode's name as written in flags and JSON ("counters").
std::string_view to_string(Mode mode) noexcept;
/// Parses a mode name; the error names the value and lists the valid ones.
Result<Mode> parse_mode(std::string_view text);

/// The MALLOC_CONF string that makes `exact` mode possible through jemalloc's
/// profiler (needed only without AllocatorStatus::exact_through_hooks):
/// profiling compiled in and enabled, inactive until a scope starts it, every
/// allocation sampled, cumulative counts kept, raw (not unbiased) counts written.
inline constexpr const char* kExactMallocConf =
    "prof:true,prof_active:false,lg_prof_sample:0,prof_accum:true,prof_unbias:false";
/// The MALLOC_CONF string for `sampled` mode (jemalloc's default 512 KiB period).
inline constexpr const char* kSampledMallocConf = "prof:true,prof_active:false,prof_accum:true";

/// What jemalloc offers this process, read once (see allocator_status()).
struct AllocatorStatus {
  /// `mallctl` was found in the process (jemalloc linked or LD_PRELOADed).
  bool jemalloc_detected = false;
  /// jemalloc serves this process' malloc (the Mesos probe: a malloc moves thread.allocated).
  bool jemalloc_active = false;
  std::string version;           ///< jemalloc's "version" ctl, e.g. "5.3.0-0-g54ea..."
  bool config_prof = false;      ///< built with --enable-prof
  bool config_stats = false;     ///< built with --enable-stats
  bool opt_prof = false;         ///< MALLOC_CONF prof:true at start
  bool opt_prof_active = false;  ///< initial prof.active
  bool opt_prof_accum = false;   ///< cumulative counts kept
  std::size_t opt_lg_prof_sample = 19;
  std::string malloc_conf_env;     ///< $MALLOC_CONF at start, or ""
  std::string config_malloc_conf;  ///< the --with-malloc-conf string built into jemalloc
  /// `experimental.hooks.install` is usable (jemalloc 5.1–5.3, whose hooks_t ABI heapgate declares).
  bool hooks_available = false;
  /// `HEAPGATE_HOOKS=off` was set: heapgate does not install the hooks, and
  /// `counters` falls back to the calling thread's byte counters.
  bool hooks_disabled_by_env = false;
  /// Profiling was started active at process start (MALLOC_CONF prof_active:true):
  /// heapgate refuses profiling scopes, as Mesos does, to avoid interfering.
  bool profiling_started_externally = false;
  /// `exact` records its stacks in heapgate's hooks (libunwind.so.8 loads, the
  /// hooks are available, and neither HEAPGATE_EXACT_STACKS=jemalloc nor
  /// HEAPGATE_UNWINDER=jemalloc is set): it then needs nothing from jemalloc's
  /// profiler, so any process where `counters` works can use it, whatever its
  /// MALLOC_CONF. Otherwise `exact` is jemalloc's profiler and needs kExactMallocConf.
  bool exact_through_hooks = false;
  /// Why a mode is not usable; empty when it is. One per mode that needs something.
  std::string why_not_counters;
  std::string why_not_exact;
  std::string why_not_sampled;

  /// OK if `mode` can be used now; otherwise an `unavailable` or `conflict`
  /// error that says why and how to fix it. `off` is always usable.
  Result<void> check(Mode mode) const;
  /// The most precise mode usable: exact, else counters, else off. (Sampled is
  /// never chosen by default: its counts are estimates.)
  Mode best_mode() const;
  /// A few human-readable lines: what was detected and which modes work.
  std::string describe() const;
};

/// Detects jemalloc and reads its configuration once per process; thread-safe.
const AllocatorStatus& allocator_status();

/// Process-wide allocator statistics (jemalloc `stats.*`, refreshed through `epoch`).
struct AllocatorStats {
  std::size_t allocated = 0;  ///< bytes allocated by the application
  std::size_t active = 0;     ///< bytes in active pages
  std::size_t resident = 0;   ///< bytes physically resident (metadata, active, dirty)
  std::size_t metadata = 0;
  std::size_t mapped = 0;
  std::size_t retained = 0;
};

/// Typed access to the mallctl names heapgate uses. Every function fails with
/// `unavailable` when jemalloc is absent, and otherwise with an error that names
/// the ctl and jemalloc's errno (ENOENT: not compiled in or not enabled).
namespace jemalloc {

/// Raw access for names not wrapped below. T must match the ctl's type exactly.
template <typename T>
Result<T> read(const char* name);
template <typename T>
Result<void> write(const char* name, T value);
/// Writes `value` and returns the previous value, atomically.
template <typename T>
Result<T> exchange(const char* name, T value);

/// jemalloc's version string.
Result<std::string> version();
/// Turns sampling on or off process-wide; returns the previous value.
Result<bool> set_prof_active(bool active);
/// prof.active.
Result<bool> prof_active();
/// Drops all profile data. With a value, also sets the sample rate (lg2 bytes;
/// 0 = every allocation); beware that each thread adopts a new rate only at its
/// next sample event, so allocations right after a rate change are missed.
Result<void> prof_reset(std::optional<std::size_t> lg_sample = std::nullopt);
/// The current sample rate (lg2 bytes).
Result<std::size_t> prof_lg_sample();
/// Dumps a heap_v2 profile to `path`.
Result<void> prof_dump(const std::string& path);
/// Bytes ever allocated / deallocated by the calling thread.
Result<std::uint64_t> thread_allocated();
Result<std::uint64_t> thread_deallocated();
/// The calling thread's peak of allocated-minus-deallocated bytes since the last reset (jemalloc ≥5.3).
Result<std::uint64_t> thread_peak();
Result<void> thread_peak_reset();
/// Refreshes the statistics snapshot and reads the process-wide totals.
Result<AllocatorStats> stats();
/// jemalloc's full statistics as JSON (malloc_stats_print with "J").
Result<std::string> stats_json();

}  // namespace jemalloc

namespace detail {
using MallctlFn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
/// mallctl found through dlsym, or nullptr when jemalloc is absent.
MallctlFn mallctl_fn() noexcept;
Error mallctl_error(const char* name, int err, const char* action);
Error jemalloc_absent_error();
}  // namespace detail

template <typename T>
Result<T> jemalloc::read(const char* name) {
  auto fn = detail::mallctl_fn();
  if (fn == nullptr) return fail(detail::jemalloc_absent_error());
  T value{};
  std::size_t len = sizeof(T);
  int err = fn(name, &value, &len, nullptr, 0);
  if (err != 0) return fail(detail::mallctl_error(name, err, "read"));
  return value;
}

template <typename T>
Result<void> jemalloc::write(const char* name, T value) {
  auto fn = detail::mallctl_fn();
  if (fn == nullptr) return fail(detail::jemalloc_absent_error());
  int err = fn(name, nullptr, nullptr, &value, sizeof(T));
  if (err != 0) return fail(detail::mallctl_error(name, err, "write"));
  return {};
}

template <typename T>
Result<T> jemalloc::exchange(const char* name, T value) {
  auto fn = detail::mallctl_fn();
  if (fn == nullptr) return fail(detail::jemalloc_absent_error());
  T old{};
  std::size_t len = sizeof(T);
  int err = fn(name, &old, &len, &value, sizeof(T));
  if (err != 0) return fail(detail::mallctl_error(name, err, "write"));
  return old;
}

}  // namespace heapgate
