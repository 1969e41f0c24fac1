// SPDX-License-Identifier: MIT
// The fallback feed of the counting (alloc_counting.h): jemalloc's
// experimental.hooks, for a process where heapgate's own allocation entry
// points are not the ones called (docs/design.md §3).
#pragma once

namespace heapgate::detail {

/// jemalloc's version has the hooks_t ABI heapgate declares (5.1–5.3) and
/// serves malloc.
bool jemalloc_hooks_supported() noexcept;

/// Installs heapgate's hooks unless they are installed; false if jemalloc
/// refuses. Called when the first window opens, and never undone: installing
/// or removing a hook makes jemalloc walk every thread's data, which jemalloc
/// 5.3 gets wrong for a thread exiting at that moment
/// (docs/platform-facts.md §10), so it happens once per process, usually
/// before the program starts threads. From then on every allocation of the
/// process takes jemalloc's slow path.
bool install_jemalloc_hooks() noexcept;

}  // namespace heapgate::detail
