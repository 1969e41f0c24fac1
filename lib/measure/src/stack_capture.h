// SPDX-License-Identifier: MIT
// `exact` mode's call stacks, recorded by the allocation hooks themselves
// rather than by jemalloc's profiler (docs/performance.md, "exact mode
// without jemalloc's profiler").
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "block_stamps.h"
#include "frame_walker.h"
#include "heapgate/error.h"
#include "heapgate/profile.h"

namespace heapgate::detail {

/// HEAPGATE_EXACT_STACKS=jemalloc is set: `exact` goes through jemalloc's
/// profiler, as before the hooks recorded stacks (to compare the two, or where
/// libunwind misbehaves). Read each time, so a test can switch it.
bool stacks_from_jemalloc_requested() noexcept;

/// Recording: every allocation the hooks see gets its call stack.
extern std::atomic<bool> g_capturing;

/// Starts recording into an empty table. False, and nothing recorded, when
/// libunwind is not installed (or HEAPGATE_UNWINDER=jemalloc): the caller
/// then uses jemalloc's profiler. One recording at a time (the caller owns
/// profiling, see detail::try_own_profiling).
bool begin_stack_capture() noexcept;
/// Stops recording; what was recorded stays for write_captured_profile().
void end_stack_capture() noexcept;
/// Writes what was recorded as a jemalloc `heap_v2` profile with sample
/// period 1 (every allocation), the format `prof.dump` writes in `exact`:
/// per call stack the blocks still live and all allocated, and the process's
/// mappings, so jeprof and heapgate read it as they read jemalloc's.
Result<void> write_captured_profile(const std::string& path);
/// The profile write_captured_profile() writes, in memory, with `maps_text`
/// as its maps (Profile::mappings is left to the caller that needs it).
Profile captured_profile(std::string maps_text);
/// Forgets what was recorded.
void clear_stack_capture() noexcept;

/// One thread's share of the recording's per-stack counts (stack_capture.cpp).
struct ThreadTally;

/// What the recording keeps for one thread, beside its counters: its last
/// stack (frame_walker.h), its caches of the pages whose stack ids it
/// wrote or cleared last, and its own counts per stack. Owned by its thread
/// (and by the next thread that takes over its slot); zero memory is a fresh one.
struct CaptureThread {
  /// Remembered walks, one per depth of the stack at the allocation (the
  /// address of capture_alloc()'s frame picks one of kWalkMemories): a loop
  /// that allocates at a few call sites in turn (a map node, a string, a
  /// vector) finds each site's own last walk, all of whose frames are still
  /// on the stack, instead of the other site's, whose inner frames differ.
  static constexpr unsigned kWalkMemories = 8;
  WalkMemory walks[kWalkMemories];
  BlockStamps::Cache id_alloc;
  BlockStamps::Cache id_free;
  /// Counts of the blocks this thread recorded and freed, by stack, and the
  /// stacks it met last: summed over all threads when a profile is written,
  /// so no lock is taken per block (made on the thread's first recorded block).
  ThreadTally* tally = nullptr;
};

/// From the counting, while g_capturing: a block of `usize` usable bytes at
/// `ptr`; `caller` is where the kept stack starts: the return address of
/// heapgate's entry point (in the code that allocated) or of jemalloc's hook
/// (inside jemalloc, as jemalloc's own stacks start). `thread` is the calling
/// thread's, or nullptr.
void capture_alloc(void* ptr, std::uint64_t usize, void* caller, CaptureThread* thread) noexcept;
/// From the counting: a block freed; counts only if it was recorded.
/// `usize` is its usable size when the caller knows it, else 0.
void capture_dalloc(void* ptr, std::uint64_t usize, CaptureThread* thread) noexcept;

/// Whole-process recording (`heapgate record`, process_recorder.cpp) also keeps the
/// stacks that hold memory at the peak: whenever the live bytes of all
/// stacks pass the last copy's total by more than 1/256, the per-stack live
/// counts are copied, so the copy is within 0.4% of the true peak (with one
/// thread; with several, the copy sums the threads' tallies as they are read,
/// while they go on). Off for ProfileScope, which has no use for it. Set
/// before begin_stack_capture().
void track_peak_stacks(bool on) noexcept;

/// What the recording holds now, summed over its stacks.
struct CaptureTotals {
  std::uint64_t live_allocations = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t allocated_bytes = 0;
  /// The highest live_bytes reached: exact with track_peak_stacks(true) (every
  /// change goes into one total, under the lock or by an atomic add); else
  /// only the live bytes now.
  std::uint64_t peak_bytes = 0;
  /// live_bytes of the stacks copied at the peak (peak_bytes / 1.004 or more).
  std::uint64_t peak_copy_bytes = 0;
  std::uint64_t peak_copy_allocations = 0;
};

/// Which counts write_capture_view() writes as a profile's columns.
enum class CaptureView {
  live,         ///< live blocks now, and every allocation (as write_captured_profile)
  allocations,  ///< every allocation in both columns: what any viewer's default shows
  peak,         ///< the copy taken at the peak in both columns
};

/// Writes the recording as a heap_v2 profile (the bytes write_captured_profile
/// writes for `live`) to `fd` without allocating: from a fatal signal's
/// handler the interrupted code may hold the allocator's locks. Returns false
/// on a write error, or when the recording's lock stayed held by another
/// thread for `lock_wait_ms`. `totals` (optional) receives the totals taken
/// under the same lock.
bool write_capture_view(int fd, CaptureView view, int lock_wait_ms, CaptureTotals* totals) noexcept;

/// Hold and release the recording's lock around fork() (alloc_counting.cpp).
void lock_stack_capture_for_fork() noexcept;
void unlock_stack_capture_after_fork() noexcept;

}  // namespace heapgate::detail
