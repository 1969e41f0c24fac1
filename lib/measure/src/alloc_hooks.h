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
  /// Highest live_bytes reached while open: exact when one thread allocated
  /// and freed the window's blocks; with several, the sum of each thread's
  /// own highest point, an upper bound that is never below live_bytes.
  std::uint64_t peak_bytes = 0;
  /// Allocations (and their usable bytes) made while open by threads other
  /// than the one that opened the window.
  std::uint64_t other_thread_allocations = 0;
  std::uint64_t other_thread_bytes = 0;
};

/// jemalloc serves malloc and its hook ABI and sallocx are there. Checked once.
bool hooks_supported() noexcept;

/// Totals while hooks were installed (they only count inside windows; a
/// window's own numbers are differences taken while it is open). Sums every
/// thread's counters under a lock: for opening and closing, not hot paths.
HookTotals hook_totals() noexcept;

/// Opens a counting window (at most kMaxWindows at once, process-wide),
/// installing jemalloc's hooks if it is the only one; the calling thread is
/// the window's opener (WindowResult::other_thread_*). Returns its index,
/// kNoFreeWindow if all are in use, kHooksFailed if the hooks cannot be installed.
int open_window() noexcept;
inline constexpr int kNoFreeWindow = -1;
inline constexpr int kHooksFailed = -2;
/// What an open window has seen so far (peak included), without closing it.
WindowResult peek_window(int window) noexcept;
/// Closes a window and returns what it saw; the last one open removes the hooks.
WindowResult close_window(int window) noexcept;
inline constexpr int kMaxWindows = 64;

/// Take and release every lock a hook may take. hooks_supported() registers
/// them as fork() handlers, so that a child never inherits a lock held by a
/// thread it does not have; tests call them to hold the locks across a fork.
void lock_hooks_for_fork() noexcept;
void unlock_hooks_after_fork() noexcept;

}  // namespace heapgate::detail
