// SPDX-License-Identifier: MIT
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

}  // namespace heapgate
