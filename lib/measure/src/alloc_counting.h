// SPDX-License-Identifier: MIT
// Exact allocation counting over all threads (docs/design.md §3, mode
// `counters`): counting windows, per-thread counters and block stamps. What
// feeds it is either heapgate's own allocation entry points (entry_points.cpp,
// the default) or jemalloc's experimental.hooks (jemalloc_hooks.cpp, the
// fallback); both call the note_* functions below.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "heapgate/integration.h"
#include "size_classes.h"

namespace heapgate::detail {

/// Process-wide totals while windows counted (heapgate's own allocations excluded).
struct CountedTotals {
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

/// Where the counts come from, decided once per process (counting_source()).
enum class CountingSource {
  none,            ///< jemalloc does not serve malloc, or HEAPGATE_HOOKS=off
  entry_points,    ///< heapgate's malloc/operator new family is what the process calls
  jemalloc_hooks,  ///< jemalloc's experimental.hooks (installed once, at the first window, never removed)
};

/// The source this process counts with; the first call decides, from what the
/// dynamic linker resolved (entry_points_in_effect()) and
/// HEAPGATE_COUNT_WITH=hooks, which forces the hooks (to compare the two).
CountingSource counting_source() noexcept;
/// Why counting_source() is `none`, or "" when it is not.
const char* why_no_counting() noexcept;

/// Totals while windows counted (a window's own numbers are differences taken
/// while it is open). Sums every thread's counters under a lock: for opening
/// and closing, not hot paths.
CountedTotals counted_totals() noexcept;

/// Opens a counting window (at most kMaxWindows at once, process-wide); the
/// calling thread is the window's opener (WindowResult::other_thread_*).
/// Returns its index, kNoFreeWindow if all are in use, kCountingFailed if the
/// process cannot count (see why_no_counting()) or the hooks cannot be installed.
int open_window() noexcept;
inline constexpr int kNoFreeWindow = -1;
inline constexpr int kCountingFailed = -2;
/// What an open window has seen so far (peak included), without closing it.
WindowResult peek_window(int window) noexcept;
/// Closes a window and returns what it saw. A window that leaves live blocks
/// is followed after its close: released_since_close().
WindowResult close_window(int window) noexcept;
/// The epoch of an open window: the stamp of the blocks allocated in it.
std::uint32_t window_epoch(int window) noexcept;
/// What has been freed, since the window of `epoch` closed, of the blocks it
/// left live, counting frees made while some window counted; nullopt when
/// that window is not followed (it left nothing live, or 16,384 windows that
/// did have closed since).
std::optional<ReleasedBlocks> released_since_close(std::uint32_t epoch) noexcept;
inline constexpr int kMaxWindows = 64;
/// peek_window() and counted_totals() at one moment, for a fatal signal's
/// handler: false, and nothing read, when the counting's lock stayed held
/// for `wait_ms` (the interrupted code may be the holder).
bool try_peek_window(int window, int wait_ms, WindowResult* result, CountedTotals* totals) noexcept;

/// Take and release every lock the counting may take. Registered as fork()
/// handlers, so that a child never inherits a lock held by a thread it does
/// not have; tests call them to hold the locks across a fork.
void lock_counting_for_fork() noexcept;
void unlock_counting_after_fork() noexcept;

// --- for the two feeds (entry_points.cpp, jemalloc_hooks.cpp) ---------------

/// The windows counting through the entry points, one bit each; 0 whenever
/// the source is not entry_points. The only thing an entry point reads when
/// no window is open.
extern std::atomic<std::uint64_t> g_entry_point_windows;
/// The windows counting through any source, one bit each.
extern std::atomic<std::uint64_t> g_windows_active;

/// Frees are followed while no window counts too (follow_frees_between_windows()
/// in heapgate/integration.h). Read by the entry points only then.
extern std::atomic<bool> g_follow_frees;

/// A block of `usize` usable bytes (0: ask jemalloc) was allocated at `ptr`.
/// `stack_start` is where an exact-mode stack starts: a hook passes its return
/// address (inside jemalloc, where jemalloc's own stacks start); nullptr is
/// the caller's return address, i.e. the entry point that called, whose frame
/// reads as `malloc` or `operator new` the way jemalloc's own do. Skips
/// heapgate's own allocations and the skipped one.
void note_allocated(void* ptr, std::uint64_t usize, void* stack_start) noexcept;
/// The block at `ptr`, of `usize` usable bytes (0: ask jemalloc), is about to
/// be freed. Call before the block is given back: afterwards another thread
/// may get the same address.
void note_freed(void* ptr, std::uint64_t usize) noexcept;

/// The block at `ptr` is about to be freed while no window counts: if a
/// window left it live, that window's residue learns it was freed
/// (released_since_close()). Nothing is counted.
void note_freed_between_windows(void* ptr, std::uint64_t usize) noexcept;

/// A block about to be resized or moved (realloc, rallocx, xallocx). Taken
/// before the call, so its address cannot be handed to another thread while
/// still stamped; then exactly one of resize_done() or resize_failed().
struct ResizeTicket {
  bool tracked = false;    ///< allocated in a window still counting
  bool unstamped = false;  ///< kept in the fallback table, not a stamp
  std::uint32_t epoch = 0;
  std::uint64_t old_usize = 0;  ///< its usable size before the call, when tracked
};
ResizeTicket begin_resize(void* ptr) noexcept;
/// The block at `old_ptr` is now `new_ptr` with `new_usize` usable bytes
/// (0: ask jemalloc): a free plus an allocation, as jemalloc's profiler and
/// hooks record it, so `counters` and `exact` agree.
void resize_done(const ResizeTicket& ticket, void* old_ptr, void* new_ptr, std::uint64_t new_usize,
                 void* stack_start) noexcept;
/// The call failed or left the block as it was: it is tracked as before.
void resize_failed(const ResizeTicket& ticket, void* ptr) noexcept;

/// Makes the key whose destructor folds an exiting thread's counts, once,
/// as early in the process as possible (the entry points call it at the
/// first allocation): see register_thread() in alloc_counting.cpp.
void make_thread_key_early() noexcept;

/// jemalloc's usable size of a live block (sallocx). Only beside an
/// allocation call, which has already set up the thread's jemalloc state:
/// never for a free (see take_block() in alloc_counting.cpp).
std::uint64_t usable_size_of_block(const void* ptr) noexcept;

/// jemalloc's size classes, checked against nallocx when counting_source()
/// is first decided; until then it knows no size.
extern SizeClasses g_size_classes;
/// The usable size of a plain request of `size` bytes when heapgate's table of
/// jemalloc's size classes knows it, else 0. Inline: every counted allocation
/// and sized free asks, and a call cost more than the rounding.
inline std::uint64_t usable_size_of_request(std::uint64_t size) noexcept { return g_size_classes.usable(size); }

}  // namespace heapgate::detail
