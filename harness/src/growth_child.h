// SPDX-License-Identifier: MIT
// The growth child (--heapgate_internal_growth=N): runs one test N times
// (Face::child_arguments(): GoogleTest's --gtest_repeat, or the face's own
// loop) inside one scope and records what all runs so far
// left live after each, so the gate can tell a leak (live blocks grow with
// the runs) from one-time setup (they do not). docs/design.md §5.
#pragma once

#include "heapgate/profile_scope.h"
#include "heapgate/report.h"

namespace heapgate::harness {

class GrowthChild {
 public:
  /// `stop_when_level`: end as soon as a run left no more than the run
  /// before (the `counters` check; grows() needs growth at every step, so
  /// the verdict is known). The exact children that find the growing call
  /// sites run all N: their difference is divided by N - 1.
  GrowthChild(int runs, bool stop_when_level) : runs_(runs), stop_when_level_(stop_when_level) {}

  /// The scope opened for the first run stays open across the others.
  static bool opens_scope(int iteration) noexcept { return iteration == 0; }
  /// After run `iteration`: samples the live blocks; true when that was the
  /// last run and the scope closes now.
  bool after_run(ProfileScope& scope, int iteration);
  /// after_run() ended the runs before the last GoogleTest will make: the
  /// process has nothing more to measure.
  bool stopped_early(int iteration) const noexcept { return iteration + 1 < runs_; }
  /// The samples so far, for the record; empties them.
  LiveGrowth take();

 private:
  int runs_;
  bool stop_when_level_;
  LiveGrowth growth_;
};

}  // namespace heapgate::harness
