// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What each verb of the `heapgate` command line takes, parsed by main.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace heapgate::runner {

/// Exit codes of every verb (design.md §6).
inline constexpr int kExitOk = 0;
inline constexpr int kExitGateFailed = 1;
inline constexpr int kExitBadInput = 2;

/// `heapgate diff BASE CURRENT`.
struct DiffOptions {
  std::string base;
  std::string current;
  std::string format = "text";  ///< text | folded | jeprof
  std::string metric = "live_bytes";  ///< for folded output
  std::string binary;  ///< for --format jeprof
  std::size_t max_stacks = 20;
  std::string output;  ///< file, or "" for stdout
};

/// `heapgate report merge|junit|markdown REPORT...`.
struct ReportOptions {
  std::string action;  ///< merge | junit | markdown
  std::vector<std::string> inputs;
  std::string output;  ///< file, or "" for stdout
};

int run_diff(const DiffOptions& options);
int run_report(const ReportOptions& options);

}  // namespace heapgate::runner
