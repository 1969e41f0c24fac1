// SPDX-License-Identifier: MIT
// The leak rule (grows()): a test leaks when what it leaves live grows with
// every further run; one-time setup stays level. docs/design.md §6a.
#include "growth.h"

#include "heapgate/gate.h"

namespace heapgate {

bool grows(const LiveGrowth& growth) noexcept {
  const auto& n = growth.live_allocations;
  const auto& b = growth.live_bytes;
  if (n.empty() || b.size() != n.size()) return false;
  if (n.size() == 1) return n[0] > 0 || b[0] > 0;
  for (std::size_t i = 1; i < n.size(); ++i) {
    // Fewer blocks live than after the run before: something of the test's
    // was freed, so what it keeps is bounded (a ring buffer of errors, a
    // cache that evicts), whatever the bytes did.
    if (n[i] < n[i - 1]) return false;
    if (!(n[i] > n[i - 1] || b[i] > b[i - 1])) return false;
  }
  return true;
}

namespace detail {

std::string describe_growth(const LiveGrowth& g) {
  std::string runs;
  std::string blocks;
  std::string bytes;
  for (std::size_t i = 0; i < g.live_allocations.size(); ++i) {
    const char* sep = i == 0 ? "" : ", ";
    runs += sep + std::to_string(i + 1);
    blocks += sep + std::to_string(g.live_allocations[i]);
    bytes += sep + std::to_string(g.live_bytes[i]);
  }
  return "live after " + runs + (g.live_allocations.size() == 1 ? " run: " : " runs: ") + blocks + " blocks (" + bytes +
         " bytes)";
}

}  // namespace detail
}  // namespace heapgate
