// SPDX-License-Identifier: MIT
// A call stack by name with its counts: what explains a failure. Its
// comparisons are implemented in lib/measure/src/profile.cpp.
#pragma once

#include <string>
#include <vector>

#include "heapgate/profile.h"

namespace heapgate {

/// One call stack by name and its counts: the one sample type that explains a
/// verdict. top_stacks() (heapgate/diff.h) makes them from a profile or a diff,
/// reports and their JSON keep them, suppressions match them, and the gate
/// charges them to call sites.
struct StackSample {
  /// Symbolic frames, innermost first ("f(int) at file.cpp:12" where the
  /// debug info has a line).
  std::vector<std::string> frames;
  /// The stack's four counts: scaled estimates in sampled mode (hence double);
  /// for a stack taken from a diff, the change.
  ScaledCounts counts;
};

/// Field-by-field equality (doubles compare exactly: JSON round trips are exact).
bool operator==(const StackSample& a, const StackSample& b) noexcept;
bool operator!=(const StackSample& a, const StackSample& b) noexcept;

}  // namespace heapgate
