// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What the runner needs to know about a test binary before starting it.
#pragma once

#include <optional>
#include <string>

#include "heapgate/error.h"

namespace heapgate::runner {

/// How a binary gets jemalloc as its malloc.
enum class JemallocLinkage {
  dynamic,  ///< DT_NEEDED names libjemalloc
  linked,   ///< defines `mallctl` itself (jemalloc linked statically)
  absent,   ///< neither: jemalloc must be LD_PRELOADed
};

/// Reads the ELF file's dynamic section (DT_NEEDED) and symbol tables.
/// Errors: `io_error` when the file cannot be opened, `parse_error` when it
/// is not an ELF executable (a script, say), naming the path.
Result<JemallocLinkage> jemalloc_linkage(const std::string& path);

/// The system's libjemalloc.so.2 for LD_PRELOAD: $HEAPGATE_JEMALLOC if set,
/// else the file beside the C library this process runs with (the
/// multiarch directory on Debian), else the usual library directories.
std::optional<std::string> find_system_jemalloc();

/// True when the file contains the GoogleTest plugin (the string of its
/// internal re-run flag): such binaries understand --heapgate_* flags.
bool has_heapgate_plugin(const std::string& path);

}  // namespace heapgate::runner
