// SPDX-License-Identifier: MIT
// What `heapgate run` runs: the test binaries (given, or a ctest build
// directory's), each with the environment its mode needs and its test count.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "binary_inspect.h"
#include "heapgate/error.h"

namespace heapgate::runner {

/// One test binary to run: where it is, its arguments and environment.
struct Job {
  std::string path;
  std::string name;  // file name: the baseline's and report's stem
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::size_t total_tests = 0;
  bool whole_suite = true;  // no --gtest_filter: missing tests can be told
  // Catch2 and doctest binaries list their tests their own way and run in
  // one process: sharding is GoogleTest's alone for now.
  TestFramework framework = TestFramework::googletest;
};

/// The environment of `mode` for the binary at `path`: jemalloc preloaded when
/// the binary lacks it, and the MALLOC_CONF exact and sampled need from the
/// start (the plugin would otherwise re-exec itself to set it).
Result<std::vector<std::string>> environment_for(const std::string& path, const std::string& mode);

/// The number of tests the job's binary would run with its arguments.
Result<std::size_t> count_tests(const Job& job);

/// The GoogleTest binaries of a ctest build directory: every executable named
/// in a test's command that carries heapgate's plugin, once each.
Result<std::vector<std::string>> ctest_binaries(const std::string& dir);

}  // namespace heapgate::runner
