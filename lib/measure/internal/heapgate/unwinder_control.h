// SPDX-License-Identifier: MIT
// Choosing the unwinder behind jemalloc's sampled allocations: heapgate's
// own scopes and tests switch it; a consumer only reads which one is in use
// (heapgate/unwinder.h). Implemented in lib/measure/src/unwinder.cpp.
#pragma once

#include "heapgate/unwinder.h"

namespace heapgate {

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
