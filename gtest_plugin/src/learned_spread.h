// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The spread a baseline being recorded learns: a test that other threads
// allocated in while it ran (a server's thread pool, a background
// compaction) may count differently next time with no change in the code, so
// it is run a few times more in one child and the lowest and highest counts
// become its noise band. A test that allocated on its own thread alone is
// exact and is not run again. docs/design.md §6a, "Learned spread".
#pragma once

#include <chrono>
#include <string>

#include "explainers.h"
#include "heapgate/report.h"

namespace heapgate::gtest {

/// More runs of each test whose spread is learned.
inline constexpr int kLearnedRuns = 2;

/// Other threads allocated while the test ran: its counts may depend on timing.
bool may_vary(const TestRecord& record);

/// Runs the tests of `run` that may vary `kLearnedRuns` more times, in one
/// child that stops after `budget`, and adds each run's metrics to its
/// record (TestRecord::samples). `run_filter` is this run's --gtest_filter,
/// used when the tests' names are too many for one. Says on stderr what it
/// learned, or why it could not.
void learn_spread(Report& run, RerunExplainer& explainer, const std::string& run_filter, std::chrono::seconds budget);

}  // namespace heapgate::gtest
