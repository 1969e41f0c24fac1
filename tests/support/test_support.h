// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Helpers shared by heapgate's own tests.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/allocator.h"
#include "heapgate/report.h"
#include "heapgate/sys.h"

namespace heapgate::testing {

/// Why `mode` is not usable in this process, or "" when it is.
std::string mode_unavailable_reason(Mode mode);
/// HEAPGATE_REQUIRE_PROFILING=1 (set in CI): a test that needs profiling fails
/// instead of skipping, so a broken setup never passes silently.
bool profiling_required();
/// A fresh private directory under $TMPDIR (or /tmp), removed at process exit.
std::string make_temp_dir();
/// Path of a file under tests/data.
std::string data_path(const std::string& relative);
/// Path of a built test helper program (in the tests build directory).
std::string helper_binary(const std::string& name);
/// What a test suite run as a child must not inherit from this process: its
/// allocator settings, GoogleTest sharding, heapgate's mode and re-exec
/// marker. The suite decides its own.
std::vector<std::string> suite_unset_env();
/// `heapgate run` as ci/gate.sh runs it (two shards, strict, no progress
/// lines) on the helper suite `suite` (helper_binary()), with `baselines` and
/// `report`, as a child without this process's settings (suite_unset_env())
/// and with `env` added. A failure to start it fails the calling test.
sys::ProcessResult gate_suite(const std::string& cli, const std::string& suite, const std::string& baselines,
                              const std::string& report, std::vector<std::string> env = {});
/// A bad-input row's answer (docs/bad-inputs.md): exit code `code` and
/// `line` as one whole line of stderr (a stable prefix when `line` ends in
/// "..."). BAD_INPUTS_CAPTURE=1 prints what the program said, to paste into a
/// new row.
void expect_refused(const sys::ProcessResult& r, int code, std::string line);
/// The record of test `name` in `report`, or nullptr.
const TestRecord* find_record(const Report& report, const std::string& name);
/// Whether process `pid` has ended within `seconds`: gone, or a zombie (an
/// orphan's waits for whoever reaps orphans here, which may be no one).
bool process_ends_within(int pid, double seconds);

}  // namespace heapgate::testing

/// Skips (locally) or fails (HEAPGATE_REQUIRE_PROFILING=1, as in CI) the
/// current test unless `mode` works in this process.
#define HEAPGATE_REQUIRE_MODE(mode)                                                       \
  do {                                                                                    \
    const std::string heapgate_why_ = ::heapgate::testing::mode_unavailable_reason(mode); \
    if (!heapgate_why_.empty()) {                                                         \
      if (::heapgate::testing::profiling_required()) FAIL() << heapgate_why_;             \
      GTEST_SKIP() << heapgate_why_;                                                      \
    }                                                                                     \
  } while (0)

/// Requires `exact` mode: jemalloc profiling of every allocation.
#define HEAPGATE_REQUIRE_PROFILING() HEAPGATE_REQUIRE_MODE(::heapgate::Mode::exact)
/// Requires `counters` mode: heapgate's counting of every allocation.
#define HEAPGATE_REQUIRE_COUNTERS() HEAPGATE_REQUIRE_MODE(::heapgate::Mode::counters)
