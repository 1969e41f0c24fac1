// SPDX-License-Identifier: MIT
// What every test-framework face shares: the options of a gated run (the
// `--heapgate_*` flags), start-up, and the budgets test code declares. The
// per-test engine the faces drive is heapgate/face.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "heapgate/allocator.h"
#include "heapgate/error.h"
#include "heapgate/fingerprint.h"
#include "heapgate/metrics.h"
#include "heapgate/profile_scope.h"

namespace heapgate::harness {

/// How the face's listener measures and gates one test binary. Every field has a
/// `--heapgate_<name>` flag and a `HEAPGATE_<NAME>` environment twin; a flag
/// wins over the environment (GoogleTest's convention, kept for every framework).
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
  /// `--heapgate_libc_suppressions` (default true): memory the C library
  /// keeps by contract (setenv's values, tzset, locale, NSS, stdio buffers;
  /// heapgate/suppressions.h c_library_suppressions()) is not a test's leak;
  /// such a test passes with a note naming it.
  bool libc_suppressions = true;
  /// `--heapgate_check_leaks` (default true): memory a test allocates and does
  /// not free is a failure. HEAPGATE_ALLOW_LEAKS() opts one test out.
  bool check_leaks = true;
  /// `--heapgate_fingerprint=warn|strict|ignore` (default warn): what a
  /// baseline recorded in another environment (compiler, C/C++ runtime,
  /// jemalloc, build type, architecture; heapgate/fingerprint.h) does: said at
  /// start and in every regression, a failure of the run, or nothing.
  FingerprintCheck fingerprint = FingerprintCheck::warn;
  /// `--heapgate_explain` (default true): re-run failing tests in exact mode for stacks.
  bool explain = true;
  /// `--heapgate_gate_call_sites=FILTER` (heapgate's test filter, matches_test_filter();
  /// e.g. `Parser.*:Lexer.Hot`; default none): the tests it selects gate their call
  /// sites too, as HEAPGATE_GATE_CALL_SITES() does for one test. Each such
  /// test that passes on its totals runs once more in `exact` mode.
  std::string gate_call_sites;
  /// `--heapgate_top_stacks=N` (default 5): stacks shown per failure.
  std::size_t top_stacks = 5;

  /// `--heapgate_leak_repetitions=K` (default 5): a test that ends with live
  /// blocks is run K times more in one child process; it leaks only if its
  /// live blocks grow with every run (one-time setup stays level).
  int leak_repetitions = 5;
  /// `--heapgate_confirm_runs=N` (default 2, 0 to 5): a test that regressed
  /// is measured again in up to N fresh child processes (`counters`); if one
  /// of them is within the baseline, the regression was timing noise and the
  /// test passes with a note. When N ≥ 2 and the test varied when recorded,
  /// only sizes grew or the change is within 1%, up to 4 more are made while
  /// none clears it.
  int confirm_runs = 2;
  /// `--heapgate_test_timeout=SECONDS` (default 600; 0: none): a test still
  /// running after this long is stopped by heapgate's watchdog, which writes
  /// the report of every test that finished plus the hung one with the stacks
  /// of all threads, and ends the process with exit status 5 (incomplete).
  int test_timeout_seconds = 600;
  /// `--heapgate_measure_alone` (default false): measure every test once more
  /// alone, in a fresh child process (`counters`), and keep it in the record
  /// (TestRecord::alone) and so in a baseline recorded from the run. A later
  /// regression whose confirmation run alone measures the same is state that
  /// earlier tests left behind, not a change. `heapgate run --calibrate`
  /// sets it for its last run; it costs one process per test.
  bool measure_alone = false;
  /// `--heapgate_measure_alone_skip=FILTER` (matches_test_filter(),
  /// default none): tests `measure_alone` leaves out. `heapgate run
  /// --calibrate` names those its earlier runs showed to follow timing: only
  /// their leaks are gated, so a run alone would tell nothing, and such a
  /// test works for as long as it is given (40 s, twice over in a fresh
  /// process, on one suite measured).
  std::string measure_alone_skip;
  /// `--heapgate_learn_spread` (default true): a run that records a baseline
  /// runs the tests other threads allocated in a few times more, for their
  /// noise band (docs/design.md §6a). `heapgate run --calibrate` turns it
  /// off: its own runs are the samples.
  bool learn_spread = true;
  /// Internal (`--heapgate_internal_growth=K`): this process is a re-run
  /// child that measures one test across all K runs of the suite in one scope
  /// and records what is live after each (TestRecord::growth).
  int growth_child = 0;
  /// Internal (`--heapgate_internal_child=ITERATION`): this process is a re-run
  /// child; it records only run ITERATION of the suite and never re-runs,
  /// writes baselines or re-executes itself.
  int child_iteration = 0;
  /// Internal (`--heapgate_internal_samples=K`): this process is a re-run
  /// child that records every one of K runs of the suite, each a sample of
  /// its tests' spread for a baseline being recorded.
  int sample_runs = 0;
  /// Internal (`--heapgate_internal_runs=N`, 1 to 100): for a framework
  /// without a repeat flag of its own (Catch2, doctest), the face runs the
  /// suite N times in this process (Face::child_arguments() asks for it).
  int suite_runs = 1;
  /// Internal (`--heapgate_internal_call_sites=1`), with child_iteration:
  /// the child records each test's call sites for a baseline being recorded,
  /// and nothing its parent does not read (no stacks, no symbols sidecars).
  bool call_sites_only = false;
};

/// Reads the `--heapgate_*` flags out of argv (removing them, as a
/// framework does with its own) and the `HEAPGATE_*` environment.
/// Errors: `invalid_argument` naming the flag or variable, the bad value and
/// the valid ones; an unknown `--heapgate_` flag is an error too, so a typo
/// never silently turns the gate off.
Result<Options> parse_options(int* argc, char** argv);

/// What every face does before its framework reads argv: parses the options
/// and, when the chosen mode needs jemalloc profiling that this process did
/// not start with, re-executes the program once with MALLOC_CONF extended by
/// heapgate::kExactMallocConf (jemalloc reads its settings only at start-up).
/// Exits with status 2 and a message on bad flags. Not thread-safe: call it
/// from main before any thread starts.
Options init(int* argc, char** argv);

/// Budgets, checked when the current test ends; use the HEAPGATE_* macros.
/// They do not allocate, so they never change what they measure. A budget
/// covers the whole test: the fixture's constructor and SetUp() included.
void limit(MetricName metric, std::uint64_t limit) noexcept;
/// The same with a size as text ("24 MiB", "512 KB"; see parse_size()); a
/// malformed one fails the test, naming it.
void limit(MetricName metric, const char* size) noexcept;

/// Lets one macro take a number (a literal 0 too) or a size string.
template <typename T>
void limit_any(MetricName metric, const T& value) noexcept {
  if constexpr (std::is_convertible_v<const T&, const char*>) {
    limit(metric, static_cast<const char*>(value));
  } else {
    limit(metric, static_cast<std::uint64_t>(value));
  }
}

/// A budget for one region of a test instead of the whole test: counts what
/// the enclosing block allocates (all threads, `counters`), and when the block
/// ends fails the test (through its framework) at the macro's line if the metric exceeds
/// `limit` ("allocations 12 over the budget of 10 (+2)"). Does nothing when
/// the process cannot measure. Use the HEAPGATE_SCOPED_LIMIT_* macros.
class ScopedLimit {
 public:
  ScopedLimit(MetricName metric, std::uint64_t limit, const char* file, int line) noexcept;
  ScopedLimit(MetricName metric, const char* size, const char* file, int line) noexcept;
  ~ScopedLimit();
  ScopedLimit(const ScopedLimit&) = delete;
  ScopedLimit& operator=(const ScopedLimit&) = delete;

 private:
  MetricName metric_;
  std::uint64_t limit_ = 0;
  const char* file_;
  int line_;
  std::optional<ProfileScope> scope_;
};
/// Leak checking for the current test: true forces it on, false allows leaks.
void check_leaks(bool enabled) noexcept;
/// The current test gates its call sites (HEAPGATE_GATE_CALL_SITES()).
void gate_call_sites() noexcept;
/// `name` ("Suite.Test") is selected by a heapgate test filter (GoogleTest's syntax): ':'-separated
/// patterns with `*` and `?`, then optionally '-' and patterns to exclude.
/// An empty filter selects nothing.
bool matches_test_filter(std::string_view name, std::string_view filter) noexcept;

}  // namespace heapgate::harness

/// The current test fails if it makes more than `n` allocations (all threads).
#define HEAPGATE_LIMIT_ALLOCATIONS(n) ::heapgate::harness::limit_any(::heapgate::MetricName::allocations, (n))
/// The current test fails if it allocates more than `n` bytes in total (usable
/// sizes); `n` a number or a size such as "24 MiB".
#define HEAPGATE_LIMIT_ALLOCATED_BYTES(n) ::heapgate::harness::limit_any(::heapgate::MetricName::allocated_bytes, (n))
/// The current test fails if its live bytes ever exceed `n` (usable sizes, all
/// threads); `n` a number or a size such as "512 KB".
#define HEAPGATE_LIMIT_PEAK_BYTES(n) ::heapgate::harness::limit_any(::heapgate::MetricName::peak_bytes, (n))

#define HEAPGATE_SCOPED_LIMIT_CONCAT_INNER(a, b) a##b
#define HEAPGATE_SCOPED_LIMIT_CONCAT(a, b) HEAPGATE_SCOPED_LIMIT_CONCAT_INNER(a, b)
#define HEAPGATE_SCOPED_LIMIT_(metric, n)                                                                        \
  ::heapgate::harness::ScopedLimit HEAPGATE_SCOPED_LIMIT_CONCAT(heapgate_scoped_limit_, __LINE__)((metric), (n), \
                                                                                                  __FILE__, __LINE__)
/// From here to the end of the enclosing block: at most `n` allocations.
#define HEAPGATE_SCOPED_LIMIT_ALLOCATIONS(n) HEAPGATE_SCOPED_LIMIT_(::heapgate::MetricName::allocations, (n))
/// From here to the end of the enclosing block: at most `n` bytes allocated ("24 MiB" or a number).
#define HEAPGATE_SCOPED_LIMIT_ALLOCATED_BYTES(n) HEAPGATE_SCOPED_LIMIT_(::heapgate::MetricName::allocated_bytes, (n))
/// From here to the end of the enclosing block: live bytes never above `n` ("512 KB" or a number).
#define HEAPGATE_SCOPED_LIMIT_PEAK_BYTES(n) HEAPGATE_SCOPED_LIMIT_(::heapgate::MetricName::peak_bytes, (n))
/// The current test fails if it leaks anything, even when --heapgate_check_leaks=false.
#define HEAPGATE_EXPECT_NO_LEAKS() ::heapgate::harness::check_leaks(true)
/// The current test may leak (e.g. it fills a process-wide cache on purpose).
#define HEAPGATE_ALLOW_LEAKS() ::heapgate::harness::check_leaks(false)
/// The current test also fails when one of its call sites (the innermost
/// frame of its own code in each stack) allocates more than the baseline
/// recorded for that site, beyond the test's tolerance, even if its totals
/// stay within: allocations moved into a hot loop elsewhere. The first run
/// with it records every call site in the baseline; docs/design.md §6a.
#define HEAPGATE_GATE_CALL_SITES() ::heapgate::harness::gate_call_sites()
