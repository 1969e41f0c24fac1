// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Private: the leak rule's evidence as text, for judge()'s explanations.
#pragma once

#include <string>

#include "heapgate/report.h"

namespace heapgate::detail {

/// "live after 1, 2, 3 runs: 3, 6, 9 blocks (96, 192, 288 bytes)"
std::string describe_growth(const LiveGrowth& growth);

/// Each run's work is known and every run after the first made more
/// allocations than any run before it: growth at every step is then what a
/// cache that keeps the busiest run's blocks for reuse shows (grows()).
bool grew_only_with_more_work(const LiveGrowth& growth) noexcept;

/// "allocations per run: 70, 300, 5100"
std::string describe_work(const LiveGrowth& growth);

}  // namespace heapgate::detail
