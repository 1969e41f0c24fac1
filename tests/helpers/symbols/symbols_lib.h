// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A small shared library for the symbolizer tests: its allocations must be
// named through the library's own file, build-id and debug info.
#pragma once

#include <cstddef>
#include <vector>

namespace symbols_lib {

/// Allocates `bytes` with malloc from inside the library and appends the block
/// to `keep` (reserve room first, so that push_back does not allocate).
__attribute__((visibility("default"))) void library_leak(std::vector<void*>& keep, std::size_t bytes);

/// The source line of the malloc call in library_leak (set by its first call).
__attribute__((visibility("default"))) int library_leak_line();

}  // namespace symbols_lib
