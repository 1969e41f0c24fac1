// SPDX-License-Identifier: MIT
// GrowthChild::after_run(): records what is live after each of the N runs, stopping early once
// the series can no longer grow; take() hands back the LiveGrowth.
#include "growth_child.h"

#include <utility>

#include "heapgate/gate.h"
#include "heapgate/integration.h"

namespace heapgate::harness {

bool GrowthChild::after_run(ProfileScope& scope, int iteration) {
  // What all runs so far left live; heapgate's own bookkeeping stays out.
  detail::HookSuppressor suppress;
  const ProfileScope::Live live = scope.live();
  growth_.live_allocations.push_back(live.allocations);
  growth_.live_bytes.push_back(live.bytes);
  if (stop_when_level_ && growth_.live_allocations.size() >= 2 && !grows(growth_)) return true;
  return iteration + 1 >= runs_;
}

LiveGrowth GrowthChild::take() { return std::exchange(growth_, LiveGrowth{}); }

}  // namespace heapgate::harness
