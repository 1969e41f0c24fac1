// SPDX-License-Identifier: MIT
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

/// What `heapgate record` must know of a program before preloading into it.
struct ProgramFacts {
  bool dynamic = false;  ///< has a program interpreter (PT_INTERP): the dynamic loader runs it
  bool set_id = false;   ///< setuid or setgid: the loader ignores LD_PRELOAD for it
  std::string
      own_allocator;  ///< the library or tool that replaces malloc ("AddressSanitizer", "libtcmalloc.so.4"), or ""
};

/// Reads `path`'s program headers, dynamic section and dynamic symbols.
/// Errors: `io_error` (cannot open), `parse_error` (not an ELF file).
Result<ProgramFacts> inspect_program(const std::string& path);

/// True when the file contains the GoogleTest plugin (the string of its
/// internal re-run flag): such binaries understand --heapgate_* flags.
bool has_heapgate_plugin(const std::string& path);

/// The test framework a binary with heapgate's plugin was built on.
enum class TestFramework { googletest, catch2, doctest };

/// Told by the strings of the framework's own listing option in the file:
/// GoogleTest's `gtest_list_tests`, Catch2's `list-test-names-only`,
/// doctest's `list-test-cases`; GoogleTest when none is found.
TestFramework test_framework_of(const std::string& path);

}  // namespace heapgate::runner
