// SPDX-License-Identifier: MIT
// read_build_id(): the GNU build-id of an ELF file on disk as lowercase hex; to_hex().
#pragma once

#include <cstddef>
#include <string>

#include "heapgate/error.h"

namespace heapgate::detail {

/// The GNU build-id of the ELF file at `elf_path` (its NT_GNU_BUILD_ID note),
/// as lowercase hex, e.g. "3f1c...". Reads the file from disk, so it describes
/// the file as it is now, not as it was when a profile was taken.
/// Errors: `io_error` if the file cannot be opened; `parse_error` if it is not
/// an ELF file; `unavailable` if it has no build-id note (linked with
/// `--build-id=none`). Thread-safe (no shared state besides libelf's version).
Result<std::string> read_build_id(const std::string& elf_path);

/// `size` bytes as lowercase hex, two digits per byte (how build-ids are written).
std::string to_hex(const unsigned char* bytes, std::size_t size);

}  // namespace heapgate::detail
