// SPDX-License-Identifier: MIT
// rebase_profile(): moves a base profile's frame addresses onto another process's mappings so
// `jeprof --base` cancels shared stacks; RebaseResult, RebasedModule, run_jeprof_rebased().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "heapgate/error.h"
#include "heapgate/jeprof.h"
#include "heapgate/profile.h"

namespace heapgate {

/// One file whose mappings carried frames of the base profile onto the current one.
struct RebasedModule {
  /// The mapped file, without the kernel's " (deleted)" suffix.
  std::string path;
  std::string device;       ///< "fe:00", the same in both profiles
  std::uint64_t inode = 0;  ///< the same in both profiles
  /// The GNU build-id of the file now on disk at `path` (lowercase hex), or ""
  /// when it cannot be read (file gone, not ELF, no build-id note).
  std::string build_id;
  std::size_t frames = 0;  ///< base frames moved through this module
};

/// What rebase_profile did.
struct RebaseResult {
  /// `base` with every mappable frame moved to the address the same code has in
  /// `current`; its mappings and maps_text are `current`'s, so jeprof symbolizes
  /// both profiles alike. Counts, threads and period are `base`'s, unchanged.
  Profile profile;
  std::size_t total_frames = 0;    ///< frames in base's records
  std::size_t rebased_frames = 0;  ///< frames moved onto current's layout
  /// Frames left as they were: anonymous or JIT memory, [vdso] and other
  /// pseudo-files, addresses outside every mapping, and files that `current`
  /// does not map (see `missing_modules`). Their stacks cannot cancel in a diff.
  std::size_t unmapped_frames = 0;
  std::size_t unmapped_stacks = 0;  ///< records with at least one unmapped frame
  /// Files mapped by both profiles that carried base frames, in first-use order.
  std::vector<RebasedModule> modules;
  /// Files that carried base frames but are not mapped (at that file offset)
  /// in `current`, e.g. a library only the base process loaded. A file can be
  /// in both lists when only some of its base frames found a home.
  std::vector<std::string> missing_modules;
};

/// Rewrites the frame addresses of `base` onto `current`'s address-space
/// layout, so `jeprof --base` (which subtracts by raw address) cancels the
/// stacks the two processes share although ASLR placed their code differently.
/// A frame at `addr` in a mapping of file F at file offset `o` becomes
/// `cur.start + o - cur.offset` for the mapping `cur` of F in `current` that
/// covers `o`. Caller frames (all but the first) are return addresses and are
/// located at `addr - 1`, as jeprof does, so a call that ends a mapping still
/// resolves. Files are matched by path (ignoring the kernel's " (deleted)")
/// and must have the same device and inode in both profiles.
/// Errors: `invalid_argument` when either profile has no MAPPED_LIBRARIES
/// section, or (built by hand) mappings that are not ascending and disjoint;
/// `conflict` when a file carrying base frames has another device/inode in
/// `current` ("the two profiles come from different builds of
/// <path>; use heapgate's symbolic diff"), with `where` = the path. Reads
/// build-ids from disk (for the report only). Thread-safe; O(frames · log
/// mappings), plus one scan of `current`'s mappings per base mapping used.
Result<RebaseResult> rebase_profile(const Profile& base, const Profile& current);

/// `jeprof --base=<base rebased onto profile> <binary> <profile>`: reads both
/// profiles, rebases `options.base` onto `options.profile`, writes it to a
/// private temporary directory (removed afterwards) and runs run_jeprof with
/// the rest of `options`. Use it when `base` came from another process (or
/// another run) of the same build; within one process run_jeprof suffices.
/// Errors: `invalid_argument` without `options.base`; those of read_profile
/// (`io_error` naming a missing file), rebase_profile and run_jeprof.
/// Thread-safe; blocks until jeprof exits.
Result<std::string> run_jeprof_rebased(const JeprofOptions& options);

/// Shorthand for run_jeprof_rebased with the default jeprof from $PATH.
Result<std::string> run_jeprof_base_rebased(const std::string& binary, const std::string& base_path,
                                            const std::string& current_path, JeprofFormat format = JeprofFormat::text,
                                            const std::vector<std::string>& extra_args = {});

}  // namespace heapgate
