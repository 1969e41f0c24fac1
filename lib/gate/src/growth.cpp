// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The leak rule (grows()): a test leaks when what it leaves live grows with
// every further run; one-time setup stays level. docs/design.md §6a.
#include "growth.h"

#include "heapgate/gate.h"

namespace heapgate {

bool grows_at_every_step(const LiveGrowth& growth) noexcept {
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

bool grows(const LiveGrowth& growth) noexcept {
  if (!grows_at_every_step(growth)) return false;
  // A cache that keeps freed blocks for reuse holds what the busiest run so
  // far needed, so it grows only in a run that did more than every run before
  // (a test that works for a fixed time: dispenso's
  // MultiThenReadyDelayedOriginTightLoop makes as many futures as 1 ms
  // allows, and its allocator keeps their buffers). A leak keeps part of
  // every run's work: it grows in a run that did no more than an earlier one
  // too, and a test that repeats its work exactly always has such runs.
  return !detail::grew_only_with_more_work(growth);
}

namespace detail {

bool grew_only_with_more_work(const LiveGrowth& growth) noexcept {
  const auto& made = growth.allocations;
  if (made.size() < 2 || made.size() != growth.live_allocations.size()) return false;
  std::uint64_t most = made[0];
  for (std::size_t i = 1; i < made.size(); ++i) {
    if (made[i] < made[i - 1]) return false;
    const std::uint64_t work = made[i] - made[i - 1];
    if (work <= most) return false;
    most = work;
  }
  return true;
}

std::string describe_work(const LiveGrowth& growth) {
  std::string per_run;
  for (std::size_t i = 0; i < growth.allocations.size(); ++i) {
    const std::uint64_t before = i == 0 ? 0 : growth.allocations[i - 1];
    const std::uint64_t now = growth.allocations[i];
    per_run += (i == 0 ? "" : ", ") + std::to_string(now >= before ? now - before : 0);
  }
  return "allocations per run: " + per_run;
}

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
