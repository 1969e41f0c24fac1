// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Exact allocation counting over all threads through jemalloc's
// experimental.hooks (docs/design.md §3, mode `counters`).
#pragma once

#include <cstdint>

#include "heapgate/integration.h"

namespace heapgate::detail {

/// Process-wide totals since the hooks were installed (heapgate's own allocations excluded).
struct HookTotals {
  std::uint64_t allocations = 0;
  std::uint64_t deallocations = 0;
  std::uint64_t allocated_bytes = 0;  ///< usable (size-class) bytes
};

/// What a counting window saw of the allocations made while it was open.
struct WindowResult {
  std::uint64_t live_allocations = 0;  ///< made in the window, not freed by its close
  std::uint64_t live_bytes = 0;
  std::uint64_t peak_bytes = 0;        ///< highest live_bytes reached while open
};

/// Installs the hooks once per process. False if jemalloc or its hook ABI is unavailable.
bool install_hooks() noexcept;

/// Current totals. Requires install_hooks().
HookTotals hook_totals() noexcept;

/// Opens a counting window (at most kMaxWindows at once, process-wide);
/// returns its index, or -1 if all are in use.
int open_window() noexcept;
/// What an open window has seen so far (peak included), without closing it.
WindowResult peek_window(int window) noexcept;
/// Closes a window and returns what it saw.
WindowResult close_window(int window) noexcept;
inline constexpr int kMaxWindows = 64;

}  // namespace heapgate::detail
