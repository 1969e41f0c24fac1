// SPDX-License-Identifier: MIT
// Test names chosen by a pattern (`heapgate accept --tests`).
#pragma once

#include <string>

namespace heapgate::runner {

/// GoogleTest's filter syntax: `POSITIVE[-NEGATIVE]`, each a `:`-separated
/// list of globs (`*`, `?`). An empty pattern matches everything.
bool matches_test_filter(const std::string& name, const std::string& filter);

}  // namespace heapgate::runner
