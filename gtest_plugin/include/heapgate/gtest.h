// SPDX-License-Identifier: MIT
// The GoogleTest face's public API: the shared Options and budgets under heapgate::gtest's names,
// init() and install_listener() for a suite with its own main().
#pragma once

#include <gtest/gtest.h>

#include "heapgate/harness.h"

namespace heapgate::gtest {

/// The options, budgets and filter every face shares (heapgate/harness.h),
/// under the names this face has always had.
using harness::check_leaks;
using harness::gate_call_sites;
using harness::limit;
using harness::limit_any;
using harness::matches_test_filter;
using harness::Options;
using harness::parse_options;
using harness::ScopedLimit;

/// What `heapgate::gtest_main` does before InitGoogleTest; call it first in an
/// own main(). Parses the options and, when the chosen mode needs jemalloc
/// profiling that this process did not start with, re-executes the program once
/// with MALLOC_CONF extended by heapgate::kExactMallocConf (jemalloc reads its
/// settings only at start-up). Exits with status 2 and a message on bad flags.
/// Returns the options to pass to install_listener(). Not thread-safe: call it
/// from main before any thread starts.
Options init(int* argc, char** argv);

/// The GoogleTest random seed a measured run uses when none was given
/// (`--gtest_random_seed`, `GTEST_RANDOM_SEED`): suites that seed their test
/// data from `UnitTest::random_seed()` otherwise get the clock's seed, and
/// different data allocates differently from run to run.
inline constexpr int kPinnedRandomSeed = 1;

/// Appends heapgate's listener to GoogleTest's listeners (after the default
/// printer and XML generator, so its OnTestEnd runs first and a heapgate
/// failure is printed as the test's), and, unless the mode is `off` or a
/// seed was given, sets GoogleTest's random seed to kPinnedRandomSeed. Call
/// after InitGoogleTest and before RUN_ALL_TESTS, once.
void install_listener(const Options& options);

}  // namespace heapgate::gtest
