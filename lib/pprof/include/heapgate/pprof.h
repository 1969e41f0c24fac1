// SPDX-License-Identifier: MIT
// Export to pprof's gzipped profile.proto: pprof_supported(), PprofOptions, and to_pprof() of a
// heap profile (symbolized, allocator frames dropped) or of a ProfileDiff's deltas.
#pragma once

#include <string>

#include "heapgate/diff.h"
#include "heapgate/error.h"
#include "heapgate/profile.h"
#include "heapgate/symbolizer.h"

namespace heapgate {

/// True when this heapgate was built with pprof export (CMake option
/// HEAPGATE_PPROF, on when libprotobuf and protoc are found). When false,
/// the to_pprof() functions fail with `unavailable` and a fix naming the
/// packages.
bool pprof_supported() noexcept;

/// How a profile becomes a pprof file.
struct PprofOptions {
  /// Remove the allocator's own frames first (without_allocator_frames()), so
  /// that a viewer's flat column names the code that asked for memory.
  bool drop_allocator_frames = true;
  /// Written as the profile's first comment (`pprof -comments`), if not empty:
  /// where it came from, e.g. the source file or the test name.
  std::string comment;
};

/// `profile` as pprof's profile.proto, gzipped: the bytes of a `.pb.gz` file
/// that `pprof -top`, `pprof -http` and Speedscope open.
///
/// Sample types, in this order: `alloc_objects` (count) and `alloc_space`
/// (bytes) when the profile recorded accumulated counts (some record has
/// non-zero accum counts, i.e. jemalloc ran with prof_accum), then always
/// `inuse_objects` (count) and `inuse_space` (bytes); `inuse_space` is the
/// default. Values are jemalloc's counts un-sampled (unsample(), rounded), so
/// a sampled profile gives estimates; `period_type` is space/bytes and
/// `period` the profile's sample period.
///
/// One Location per distinct address, carrying the mapping it falls in (from
/// the profile's MAPPED_LIBRARIES) and its lines from `symbolizer`, innermost
/// inlined function first, each with the function's name and the source file
/// and line. An unknown function gets a Function named "module+0xoffset" (the
/// key normalize_profile() uses), so viewers that do not symbolize still show
/// something stable. Mappings carry the file's build-id when the symbolizer
/// read one.
///
/// Errors: `unavailable` when !pprof_supported(); `io_error` if compression
/// fails. Not thread-safe in `symbolizer`.
Result<std::string> to_pprof(const Profile& profile, Symbolizer& symbolizer, const PprofOptions& options = {});

/// `diff` as a gzipped pprof profile of the change: sample types
/// `alloc_objects`, `alloc_space`, `inuse_objects`, `inuse_space` holding the
/// deltas (current minus base; negative where a stack shrank or vanished, which
/// pprof allows: `pprof -top` then lists the shrinking stacks with negative
/// values). Locations are symbolic (a diff compares function names, not
/// addresses): one per distinct frame name, with no mapping or address.
/// `comment`, if not empty, becomes the profile's comment.
/// Errors: as for the profile overload.
Result<std::string> to_pprof(const ProfileDiff& diff, const std::string& comment = {});

}  // namespace heapgate
