// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "heapgate/allocator.h"
#include "heapgate/error.h"
#include "heapgate/metrics.h"

namespace heapgate::gtest {

/// How the listener measures and gates one test binary. Every field has a
/// `--heapgate_<name>` flag and a `HEAPGATE_<NAME>` environment twin; a flag
/// wins over the environment (GoogleTest's own convention).
struct Options {
  /// `--heapgate_mode=off|counters|exact|sampled` (default counters): how
  /// every test is measured. In `counters`, failing tests are re-run alone in
  /// `exact` mode in a child process so their failures carry stacks.
  Mode mode = Mode::counters;
  /// `--heapgate_baselines=DIR`: where `<binary>.json` baselines live. Empty:
  /// no baseline comparison (budgets and leak checks still apply).
  std::string baselines_dir;
  /// `--heapgate_report=DIR`: where `<binary>[.shard-I-of-N].{json,junit.xml,md}` go. Empty: none.
  std::string report_dir;
  /// `--heapgate_profiles=DIR`: where the heap profiles a report names are
  /// kept (the exact re-runs' that explain failures, and in exact mode each
  /// test's own), each with its symbols sidecar. Empty: `<report
  /// dir>/profiles/<binary>` when there is a report, else none is kept.
  /// Everything else a run writes under $TMPDIR (re-run children's reports
  /// and dumps) is removed before it ends.
  std::string profiles_dir;
  /// `--heapgate_update_baselines`: write this run's numbers into the baseline
  /// (atomically) instead of comparing. Tests that did not run keep theirs.
  bool update_baselines = false;
  /// `--heapgate_strict`: profiling unavailable is a failure, not a skip-with-reason.
  bool strict = false;
  /// `--heapgate_suppressions=FILE`: `leak:<pattern>` lines; a leak whose every
  /// live stack has a frame containing a pattern is not a failure.
  std::string suppressions_path;
  /// `--heapgate_check_leaks` (default true): memory a test allocates and does
  /// not free is a failure. HEAPGATE_ALLOW_LEAKS() opts one test out.
  bool check_leaks = true;
  /// `--heapgate_explain` (default true): re-run failing tests in exact mode for stacks.
  bool explain = true;
  /// `--heapgate_top_stacks=N` (default 5): stacks shown per failure.
  std::size_t top_stacks = 5;

  /// `--heapgate_leak_repetitions=K` (default 3): a test that ends with live
  /// blocks is run K times more in one child process; it leaks only if its
  /// live blocks grow with every run (one-time setup stays level).
  int leak_repetitions = 3;
  /// Internal (`--heapgate_internal_growth=K`): this process is a re-run
  /// child that measures one test across all K gtest iterations in one scope
  /// and records what is live after each (TestRecord::growth).
  int growth_child = 0;
  /// Internal (`--heapgate_internal_child=ITERATION`): this process is a re-run
  /// child; it records only gtest iteration ITERATION and never re-runs,
  /// writes baselines or re-executes itself.
  int child_iteration = 0;
};

/// Reads the `--heapgate_*` flags out of argv (removing them, as
/// InitGoogleTest does with its own) and the `HEAPGATE_*` environment.
/// Errors: `invalid_argument` naming the flag or variable, the bad value and
/// the valid ones; an unknown `--heapgate_` flag is an error too, so a typo
/// never silently turns the gate off.
Result<Options> parse_options(int* argc, char** argv);

/// What `heapgate::gtest_main` does before InitGoogleTest; call it first in an
/// own main(). Parses the options and, when the chosen mode needs jemalloc
/// profiling that this process did not start with, re-executes the program once
/// with MALLOC_CONF extended by heapgate::kExactMallocConf (jemalloc reads its
/// settings only at start-up). Exits with status 2 and a message on bad flags.
/// Returns the options to pass to install_listener(). Not thread-safe: call it
/// from main before any thread starts.
Options init(int* argc, char** argv);

/// Appends heapgate's listener to GoogleTest's listeners (after the default
/// printer and XML generator, so its OnTestEnd runs first and a heapgate
/// failure is printed as the test's). Call after InitGoogleTest, once.
void install_listener(const Options& options);

/// Budgets, checked when the current test ends; use the HEAPGATE_* macros.
/// They do not allocate, so they never change what they measure.
void limit(MetricName metric, std::uint64_t limit) noexcept;
/// Leak checking for the current test: true forces it on, false allows leaks.
void check_leaks(bool enabled) noexcept;

}  // namespace heapgate::gtest

/// The current test fails if it makes more than `n` allocations (all threads).
#define HEAPGATE_LIMIT_ALLOCATIONS(n) ::heapgate::gtest::limit(::heapgate::MetricName::allocations, (n))
/// The current test fails if it allocates more than `n` bytes in total (usable sizes).
#define HEAPGATE_LIMIT_ALLOCATED_BYTES(n) ::heapgate::gtest::limit(::heapgate::MetricName::allocated_bytes, (n))
/// The current test fails if its live bytes ever exceed `n` (usable sizes, all threads).
#define HEAPGATE_LIMIT_PEAK_BYTES(n) ::heapgate::gtest::limit(::heapgate::MetricName::peak_bytes, (n))
/// The current test fails if it leaks anything, even when --heapgate_check_leaks=false.
#define HEAPGATE_EXPECT_NO_LEAKS() ::heapgate::gtest::check_leaks(true)
/// The current test may leak (e.g. it fills a process-wide cache on purpose).
#define HEAPGATE_ALLOW_LEAKS() ::heapgate::gtest::check_leaks(false)
