// SPDX-License-Identifier: MIT
// The runner's two output helpers: emit() to a file or stdout, and bad_input() for usage errors.
#pragma once

#include <string>

#include "heapgate/error.h"

namespace heapgate::runner {

/// Writes `text` to `path` atomically, or to stdout when `path` is empty.
Result<void> emit(const std::string& path, const std::string& text);

/// Prints "heapgate: <message>" on stderr and returns exit_status(GateExit::usage).
int bad_input(const Error& error);

}  // namespace heapgate::runner
