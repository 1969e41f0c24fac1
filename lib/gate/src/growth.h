// SPDX-License-Identifier: MIT
// Private: the leak rule's evidence as text, for judge()'s explanations.
#pragma once

#include <string>

#include "heapgate/report.h"

namespace heapgate::detail {

/// "live after 1, 2, 3 runs: 3, 6, 9 blocks (96, 192, 288 bytes)"
std::string describe_growth(const LiveGrowth& growth);

}  // namespace heapgate::detail
