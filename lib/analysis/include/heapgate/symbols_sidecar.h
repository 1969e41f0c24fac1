// SPDX-License-Identifier: MIT
// A heap profile keeps addresses; what they meant lives in the binary that was
// running. A rebuild in place changes that binary, and the old profile would
// then be read against the new code. heapgate writes the meaning beside every
// profile it keeps, `<profile>.symbols.json` (docs/design.md §5), and reads
// profiles through it.
#pragma once

#include <string>
#include <vector>

#include "heapgate/error.h"
#include "heapgate/profile.h"
#include "heapgate/symbolizer.h"

namespace heapgate {

/// The schema tag of sidecar files.
inline constexpr const char* kSymbolsSchema = "heapgate.symbols/1";

/// `<profile_path>.symbols.json`.
std::string symbols_sidecar_path(const std::string& profile_path);

/// Symbolizes every address of `profile` and writes the sidecar of
/// `profile_path` atomically: per looked-up address, its module, build-id,
/// offset and frames (function, file, line, inlined). Errors: `io_error`.
Result<void> write_symbols_sidecar(const std::string& profile_path, const Profile& profile, Symbolizer& symbolizer);

/// Reads the sidecar of `profile_path`, if there is one, into `symbolizer`
/// for `profile` (Symbolizer::set_known). Returns whether there was one.
/// Errors: `parse_error` naming the sidecar for a damaged or newer one.
Result<bool> load_symbols_sidecar(const std::string& profile_path, const Profile& profile, Symbolizer& symbolizer);

/// The modules of `profile` whose file changed after `profile_path` was
/// written: the path names a regular file modified later than the profile.
/// Their addresses would be read against other code. (heap_v2 records no
/// build-ids, so the file's time stands in for one; a module missing here
/// is not counted: there is nothing to misread it with.)
std::vector<std::string> rebuilt_modules(const std::string& profile_path, const Profile& profile);

/// Prepares `profile` (read from `profile_path`; it must stay where it is
/// while `symbolizer` symbolizes it) to be read correctly: through its
/// sidecar when it has one; without one, refused (`conflict`, naming the
/// rebuilt module and the fix) when a module was rebuilt since
/// (rebuilt_modules()).
Result<void> prepare_symbols(const std::string& profile_path, const Profile& profile, Symbolizer& symbolizer);

}  // namespace heapgate
