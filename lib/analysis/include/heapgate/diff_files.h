// SPDX-License-Identifier: MIT
// diff_profile_files(): the ProfileDiff of two heap profile files, equal to diff_profiles() of
// their normalized profiles but with far less memory and time, for `heapgate diff`.
#pragma once

#include <string>

#include "heapgate/diff.h"
#include "heapgate/error.h"
#include "heapgate/normalize.h"
#include "heapgate/symbolizer.h"

namespace heapgate {

/// The symbolic diff of the heap profiles at `base_path` and `current_path`:
/// field for field the ProfileDiff that
///
///     diff_profiles(normalize_profile(*read_profile(base_path), symbolizer, options),
///                   normalize_profile(*read_profile(current_path), symbolizer, options))
///
/// returns, each profile read through its symbols sidecar (prepare_symbols()),
/// but at a fraction of the memory and time, for `heapgate diff` on large
/// profiles: records are kept as interned address ids while the file is read
/// (read_profile_records()), each distinct address is symbolized once, stack
/// keys are runs of interned name ids, and only the stacks that changed get
/// their frames as FrameName lists.
///
/// Errors, in this order: the base's read or sidecar error, then the
/// current's (those of read_profile() and prepare_symbols()). Not
/// thread-safe in `symbolizer`.
Result<ProfileDiff> diff_profile_files(const std::string& base_path, const std::string& current_path,
                                       Symbolizer& symbolizer, const NormalizeOptions& options = {});

}  // namespace heapgate
