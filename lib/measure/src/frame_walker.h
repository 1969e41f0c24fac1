// SPDX-License-Identifier: MIT
// `exact` mode's own stack walk: libunwind's, with a cheaper step per frame
// and the outer frames of a thread's previous walk reused when they are
// still on its stack (docs/performance.md, issue 30, "exact").
#pragma once

#include <cstdint>

namespace heapgate::detail {

/// A stack's hash, built from its outermost frame inward: the hash of
/// frames[i..n) is stack_hash_step(hash of frames[i+1..n), frames[i]), and of
/// no frames kStackHashSeed. So a walk that reuses its callers from the last
/// walk reuses their hash too, and only hashes the frames it stepped through.
inline constexpr std::uint64_t kStackHashSeed = 0x9E3779B97F4A7C15ull;
inline std::uint64_t stack_hash_step(std::uint64_t outer, std::uintptr_t frame) noexcept {
  std::uint64_t h = (outer ^ frame) * 0xFF51AFD7ED558CCDull;
  return h ^ (h >> 32);
}
/// The hash of frames[0, depth).
inline std::uint64_t stack_hash(void* const* frames, int depth) noexcept {
  std::uint64_t h = kStackHashSeed;
  for (int i = depth - 1; i >= 0; --i) h = stack_hash_step(h, reinterpret_cast<std::uintptr_t>(frames[i]));
  return h;
}

/// What walk_stack() gives of its stack's hashes (below).
inline constexpr int kWalkHashes = 8;
struct WalkHashes {
  std::uint64_t of[kWalkHashes];
  bool whole = false;
};

/// One thread's last complete walk, for walk_stack() to reuse: consecutive
/// allocations of a thread share most of their stack (a test body's frame
/// and all the frames that called it). Zero-initialized memory is an empty
/// one. Owned by one thread: walk_stack() does not use it while it is in use
/// (a signal handler's allocation in the middle of a walk).
struct WalkMemory {
  static constexpr int kFrames = 136;
  struct Frame {
    std::uintptr_t ip;       ///< the return address
    std::uintptr_t sp;       ///< the frame's stack pointer (its callee's CFA)
    std::uintptr_t bp;       ///< rbp in the frame
    std::uintptr_t bp_slot;  ///< where the step out of the frame read the caller's rbp; 0: rbp unchanged
    std::uint64_t hash;      ///< stack_hash of this frame and its callers
    bool bp_matters;         ///< the walk from here on reads `bp` (a CFA from rbp before rbp is reloaded)
    bool cfa_from_bp;        ///< the step out of the frame took the CFA from rbp
  };
  int count = 0;  ///< frames remembered, outermost first (so a new walk's own frames go on the end); 0: none
  bool busy = false;
  Frame frames[kFrames] = {};
};

/// Fills `frames` with return addresses, innermost first (the first is the
/// return address into the function that called walk_stack()), at most
/// `max`, as unw_backtrace does, and returns how many; -1 when a frame on the
/// way cannot be stepped out of with a FrameRule (frame_rules.h): then the
/// caller unwinds with libunwind, and nothing it records differs. `memory`
/// (the calling thread's, or nullptr) is read and updated: a frame found at
/// the same place with the same registers as in the last walk, whose callers'
/// saved return addresses and rbp values are all still the same words, has
/// the same callers, which are copied instead of stepped through. Allocates
/// nothing; safe from any thread.
///
/// `hashes` (optional): when the walk returns the whole stack through
/// `memory` (not truncated), hashes->of[i] = stack_hash(frames + i, n - i)
/// for the first kWalkHashes frames and hashes->whole is true; else false.
int walk_stack(void** frames, int max, WalkMemory* memory, WalkHashes* hashes = nullptr) noexcept;

/// Prepares walk_stack() (its table of rules, once); false when it cannot
/// work in this process (not x86-64, no libgcc unwinder, no memory) or
/// HEAPGATE_UNWINDER=libunwind asks for libunwind alone. Call before the
/// first walk_stack(), outside any allocation hook.
bool frame_walker_ready() noexcept;

}  // namespace heapgate::detail
