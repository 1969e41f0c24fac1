// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The stack unwinder behind jemalloc's sampled allocations (docs/performance.md,
// "exact mode's unwinder").
#pragma once

namespace heapgate {

/// Which function collects the call stack of each sampled allocation.
enum class Unwinder {
  jemalloc_default,  ///< jemalloc's own (libgcc's _Unwind_Backtrace): ~3 µs per allocation
  libunwind,         ///< libunwind's unw_backtrace with per-thread caching: ~0.5 µs
};

/// The unwinder jemalloc uses now. heapgate switches to libunwind when its
/// first scope starts profiling; before that, jemalloc's default.
Unwinder active_unwinder() noexcept;

/// "libunwind" or "jemalloc's default (libgcc)".
const char* describe(Unwinder unwinder) noexcept;

namespace detail {

/// Puts libunwind's unw_backtrace behind jemalloc's
/// `experimental.hooks.prof_backtrace` (jemalloc ≥ 5.3), once per process, and
/// returns the unwinder in use. Keeps jemalloc's default when libunwind.so.8 is
/// not installed, when jemalloc has no such hook, or when HEAPGATE_UNWINDER=jemalloc.
/// Thread-safe; cheap after the first call.
Unwinder install_fast_unwinder() noexcept;

/// Switches the unwinder (tests compare the stacks of both); returns false
/// when the requested one is unavailable. Call only while no thread samples.
/// An explicit choice stands: install_fast_unwinder() no longer switches.
bool use_unwinder(Unwinder unwinder) noexcept;

/// libunwind's `unw_backtrace` (per-thread caching on), loaded once; null when
/// libunwind.so.8 is not installed or HEAPGATE_UNWINDER=jemalloc. Fills
/// `frames` with return addresses, innermost first, and returns how many.
using BacktraceFn = int (*)(void** frames, int size);
BacktraceFn libunwind_backtrace() noexcept;

}  // namespace detail
}  // namespace heapgate
