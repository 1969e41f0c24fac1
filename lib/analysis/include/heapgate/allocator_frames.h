// SPDX-License-Identifier: MIT
// without_allocator_frames(): a copy of a profile whose stacks start at the code that asked for
// memory, not inside malloc, operator new or jemalloc; AllocatorFramesDropped counts what went.
#pragma once

#include <cstddef>

#include "heapgate/profile.h"
#include "heapgate/symbolizer.h"

namespace heapgate {

/// What without_allocator_frames() did, for logs and tests.
struct AllocatorFramesDropped {
  /// Frames removed over all records.
  std::size_t frames = 0;
  /// Records that became equal to another once trimmed and were merged into it.
  std::size_t records_merged = 0;
};

/// A copy of `profile` whose records start at the code that asked for memory
/// rather than inside the allocator: the innermost run of frames that are the
/// allocator's own is removed from each record. Those are the frames whose
/// every function classifies as an allocator frame for normalize_profile()
/// (malloc and friends, operator new/delete, std::allocator members,
/// jemalloc's internals) and every frame inside a libjemalloc module, named or
/// not.
///
/// Why: Debian's libjemalloc is stripped, so jeprof (and any tool reading
/// only symbol tables) names each of its internal frames after the nearest
/// exported symbol, and a profile's flat column then credits everything to
/// something like `malloc_usable_size`. Without those frames the flat column
/// names the caller.
///
/// The new innermost address of a trimmed record is the old return address
/// minus one, so that tools that read the first frame as an exact address
/// (jeprof, Symbolizer::symbolize_all) land on the call instruction. A record
/// made only of allocator frames is kept as it was. Records that end up with
/// equal frames are merged (counts and per-thread counts summed), keeping the
/// first one's position. Header totals, threads and mappings are unchanged.
/// Never fails; not thread-safe in `symbolizer`.
Profile without_allocator_frames(const Profile& profile, Symbolizer& symbolizer,
                                 AllocatorFramesDropped* dropped = nullptr);

}  // namespace heapgate
