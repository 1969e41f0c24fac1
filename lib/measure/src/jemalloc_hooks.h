// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The fallback feed of the counting (alloc_counting.h): jemalloc's
// experimental.hooks, for a process where heapgate's own allocation entry
// points are not the ones called (docs/design.md §3).
#pragma once

namespace heapgate::detail {

/// jemalloc's version has the hooks_t ABI heapgate declares (5.1–5.3) and
/// serves malloc.
bool jemalloc_hooks_supported() noexcept;

/// Installs heapgate's hooks unless they are installed; false if jemalloc
/// refuses. Called when the first window opens. Installing makes jemalloc walk
/// every thread's data, which jemalloc 5.3 gets wrong for a thread exiting at
/// that moment (docs/platform-facts.md), so the hooks are never installed
/// twice while other threads run: see remove_jemalloc_hooks_if_alone().
bool install_jemalloc_hooks() noexcept;

/// Removes the hooks, so that code outside windows keeps jemalloc's fast path,
/// but only when the calling thread is the process' only one: then no thread
/// can be exiting while jemalloc walks the threads' data. Otherwise they stay
/// installed (every allocation then takes jemalloc's slow path) until a later
/// window closes in a single-threaded moment.
void remove_jemalloc_hooks_if_alone() noexcept;

/// The number of threads of this process (from /proc/self/stat), 0 if unknown.
/// Allocates nothing.
int process_thread_count() noexcept;

}  // namespace heapgate::detail
