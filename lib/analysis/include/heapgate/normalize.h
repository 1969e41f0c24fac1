// SPDX-License-Identifier: MIT
// Heap profiles reduced to symbolic stacks comparable across processes and builds:
// NormalizeOptions, NormalizedStack, NormalizedProfile, normalize_profile() and its dropping rules,
// and ProfileNormalizer for many profiles through one Symbolizer.
#pragma once

#include <memory>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/frame_name.h"
#include "heapgate/profile.h"
#include "heapgate/symbolizer.h"

namespace heapgate {

/// The single frame of a stack whose every frame was an allocator frame.
inline constexpr std::string_view kAllocatorOnlyFrame = "[allocator]";
/// The single frame of a stack whose every frame was dropped, and not all of
/// them as allocator frames (e.g. an allocation made by GoogleTest itself).
inline constexpr std::string_view kFrameworkOnlyFrame = "[framework]";

/// How normalize_profile builds stack keys.
struct NormalizeOptions {
  /// Append the source location to each frame: "f(int) at file.cpp:12" (file
  /// base name; join_frame() and split_frame(), heapgate/frame_text.h). Keys
  /// then change whenever a line moves; off by default, so a baseline
  /// survives edits that only shift code.
  bool with_lines = false;
  /// Extra frames to drop wherever they appear: a frame whose function name
  /// (or, for an unknown function, its "module+0xoffset" name) contains one of
  /// these strings (plain substrings, case-sensitive) is removed.
  std::vector<std::string> drop_frames;
};

/// One normalized call stack and the allocations recorded for it.
struct NormalizedStack {
  /// The key: function names, innermost first, inlined functions expanded into
  /// frames of their own. Unknown functions are written "module+0xoffset"
  /// (module base name, Location::offset in hex), or "0xaddress" when the
  /// address lies in no file mapping; see normalize_profile() for what is
  /// dropped. Names are shared (FrameName), not copied per stack.
  std::vector<FrameName> frames;
  /// Raw counts summed over the profile's records with this key.
  Counts counts;
  /// Un-sampled counts (unsample() of each record, summed); equal to `counts`
  /// when the profile's period is 1.
  ScaledCounts scaled;
};

/// A profile reduced to symbolic stacks, comparable across processes and builds.
struct NormalizedProfile {
  /// The source profile's sample period (1 = every allocation recorded).
  std::uint64_t sample_period = 1;
  /// The source profile's header totals (`t*:` line), raw.
  Counts totals;
  /// Sum of `scaled` over all stacks (what diffs and reports use as totals).
  ScaledCounts scaled_totals;
  /// One entry per distinct key, sorted by key (lexicographically by frames,
  /// innermost first) so that output is deterministic.
  std::vector<NormalizedStack> stacks;

  /// True when counts are estimates (period > 1).
  bool sampled() const { return sample_period > 1; }
};

/// Symbolizes `profile` through `symbolizer` and reduces each record to a key
/// of function names, merging records whose keys are equal. Dropped frames:
///
/// 1. Everything outward of the outermost `main` (process start-up:
///    `_start`, `__libc_start_main`, `__libc_start_call_main`).
/// 2. Anywhere in the stack: heapgate's own frames (functions in namespace
///    `heapgate::` whose source, when known, lies in heapgate's library
///    sources — so test code that merely lives in namespace heapgate stays),
///    GoogleTest's frames (namespace `testing::`, `RUN_ALL_TESTS`), and frames
///    matching `options.drop_frames`. A test's own `Suite_Name_Test::TestBody()`
///    is not in `testing::` and stays.
/// 3. The innermost run of allocator frames: malloc, calloc, realloc, free,
///    posix_memalign, aligned_alloc, memalign, valloc and friends, jemalloc's
///    `*allocx` API and internals (`je_*`, `imalloc*`, `prof_*`, ...), every
///    frame in a libjemalloc module, `operator new`/`new[]`/`delete` in all
///    variants, and the `allocate`/`_M_allocate` members in `std::` and
///    `__gnu_cxx::` (`std::allocator`, `std::allocator_traits`,
///    `std::__new_allocator`, `__gnu_cxx::new_allocator`, `std::_Vector_base`).
/// 4. The outermost run of start-up and thread-start frames: `start_thread`,
///    `clone`, `clone3`, `execute_native_thread_routine`, `std::thread`'s
///    `_State_impl::_M_run` and `_Invoker`, `std::__invoke*`, unknown frames
///    in the C and C++ runtime libraries (libc, libstdc++, ld.so), address 0
///    (where jemalloc's unwinder gave up), and `main` when GoogleTest frames
///    were dropped (so a test's stacks end at TestBody, a thread's at the
///    function or lambda the thread ran).
///
/// A stack left empty becomes the single frame kAllocatorOnlyFrame (when
/// every frame was an allocator frame) or kFrameworkOnlyFrame.
/// Never fails: unknown frames are kept as "module+0xoffset". Cost: one
/// symbolization per distinct address, then linear in the number of frames;
/// frame names come from `symbolizer.frame_name()`, so profiles normalized
/// through one Symbolizer share them. Not thread-safe in `symbolizer`.
NormalizedProfile normalize_profile(const Profile& profile, Symbolizer& symbolizer,
                                    const NormalizeOptions& options = {});

namespace detail {
class Normalizer;
}

/// normalize_profile() for many profiles of one process, read through one
/// Symbolizer: each frame is named and classified once, not once per profile.
/// An exact run that records the call sites of a thousand short tests
/// otherwise spends most of its time classifying again frames earlier tests
/// had shown. Not thread-safe; `symbolizer` must outlive it.
class ProfileNormalizer {
 public:
  explicit ProfileNormalizer(Symbolizer& symbolizer, NormalizeOptions options = {});
  ~ProfileNormalizer();
  ProfileNormalizer(const ProfileNormalizer&) = delete;
  ProfileNormalizer& operator=(const ProfileNormalizer&) = delete;

  /// What normalize_profile(profile, symbolizer, options) returns.
  NormalizedProfile normalize(const Profile& profile);
  Symbolizer& symbolizer() const { return symbolizer_; }

 private:
  Symbolizer& symbolizer_;
  NormalizeOptions options_;
  std::unique_ptr<detail::Normalizer> normalizer_;
};

}  // namespace heapgate
