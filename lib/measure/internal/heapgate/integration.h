// SPDX-License-Identifier: MIT
// The integration header: what a face (a test or benchmark framework adapter,
// the HTTP endpoints) needs from the measuring layer beyond ProfileScope.
// Application code does not need it.
#pragma once

#include <cstdint>
#include <optional>

namespace heapgate::detail {

/// Blocks freed after the scope that allocated them ended (released_since()).
struct ReleasedBlocks {
  std::uint64_t allocations = 0;
  std::uint64_t bytes = 0;
};
/// What has been freed, since the scope of `counting_window`
/// (ScopeResult::counting_window) ended, of the blocks it left live
/// (ScopeResult::live_allocations). Frees count while some counting scope
/// is open (a GoogleTest run: the later tests), and between scopes while
/// follow_frees_between_windows() is on; otherwise what is freed between
/// scopes stays unseen. nullopt when the scope did not count or is no longer
/// followed. For telling blocks a test held (a later test, or a thread it
/// handed them to, freed them) from blocks it leaked, without running it again.
std::optional<ReleasedBlocks> released_since(std::uint32_t counting_window) noexcept;

/// While on, a free between counting scopes still tells released_since():
/// a pool's worker that drops a test's last reference just after the test
/// returned frees it in the gap before the next test. Nothing is counted
/// between scopes, only the blocks scopes left live are followed. Counting
/// through heapgate's entry points only (the default); a no-op otherwise.
void follow_frees_between_windows(bool on) noexcept;

/// The next allocation the calling thread makes is not counted (nor is its
/// free, since it is never tracked). For an allocation that a framework makes
/// at a known point, e.g. GoogleTest's `new` of the test fixture right after
/// OnTestStart. take_skipped_bytes() returns its usable size once it happened.
void skip_next_allocation() noexcept;
/// The usable size of the allocation skip_next_allocation() skipped on this
/// thread (0 if none yet), and clears the request.
std::uint64_t take_skipped_bytes() noexcept;

/// `exact` stacks keep at most `frames` innermost frames (1 to 128, the
/// default), for a run that keeps only each test's call sites: a site is a
/// stack's innermost frame of the program's own. A task tree that runs its
/// children inline at any depth (a million nodes) makes a distinct whole
/// stack per node and path: 490,000 of them took a run past 13 GB and three
/// minutes.
void limit_stack_depth(int frames) noexcept;

/// While alive, allocations made by the current thread are invisible to the
/// hooks: heapgate's own bookkeeping never counts.
class HookSuppressor {
 public:
  HookSuppressor() noexcept;
  ~HookSuppressor();
  HookSuppressor(const HookSuppressor&) = delete;
  HookSuppressor& operator=(const HookSuppressor&) = delete;

 private:
  bool previous_;
};

/// jemalloc's profiling (prof.active, prof.reset, the samples) is process-wide,
/// so exactly one user may drive it at a time: an exact/sampled ProfileScope or
/// a profiling run started over HTTP (http.h). Both claim it here.
/// Claims process-wide profiling; false if another scope or run holds it.
bool try_own_profiling() noexcept;
/// Gives the claim back. Only the holder calls this.
void release_profiling() noexcept;

}  // namespace heapgate::detail
