// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Helpers shared by heapgate's own tests.
#pragma once

#include <string>

#include <gtest/gtest.h>

namespace heapgate::testing {

/// Why `exact` profiling is not usable in this process, or "" when it is.
std::string profiling_unavailable_reason();
/// Why `counters` mode is not usable in this process, or "" when it is.
std::string counters_unavailable_reason();
/// HEAPGATE_REQUIRE_PROFILING=1 (set in CI): a test that needs profiling fails
/// instead of skipping, so a broken setup never passes silently.
bool profiling_required();
/// A fresh private directory under $TMPDIR (or /tmp), removed at process exit.
std::string make_temp_dir();
/// Path of a file under tests/data.
std::string data_path(const std::string& relative);
/// Path of a built test helper program (in the tests build directory).
std::string helper_binary(const std::string& name);

}  // namespace heapgate::testing

/// Skips (locally) or fails (HEAPGATE_REQUIRE_PROFILING=1) the current test
/// unless `exact` profiling works in this process.
#define HEAPGATE_REQUIRE_PROFILING()                                          \
  do {                                                                        \
    const std::string heapgate_why_ = ::heapgate::testing::profiling_unavailable_reason(); \
    if (!heapgate_why_.empty()) {                                             \
      if (::heapgate::testing::profiling_required()) FAIL() << heapgate_why_; \
      GTEST_SKIP() << heapgate_why_;                                          \
    }                                                                         \
  } while (0)

/// As HEAPGATE_REQUIRE_PROFILING, for `counters` mode (jemalloc's hooks).
#define HEAPGATE_REQUIRE_COUNTERS()                                           \
  do {                                                                        \
    const std::string heapgate_why_ = ::heapgate::testing::counters_unavailable_reason(); \
    if (!heapgate_why_.empty()) {                                             \
      if (::heapgate::testing::profiling_required()) FAIL() << heapgate_why_; \
      GTEST_SKIP() << heapgate_why_;                                          \
    }                                                                         \
  } while (0)
