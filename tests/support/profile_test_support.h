// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Helpers for the profile, jeprof and rebase tests: the heap_workload child
// program, required external programs, and lookups in jeprof output.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/error.h"
#include "heapgate/jeprof.h"
#include "heapgate/profile.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate::testing {

/// Why `program` cannot be used by these tests, or "" when it is on PATH.
inline std::string program_missing_reason(const std::string& program) {
  if (sys::find_program(program)) return {};
  return program + " not found on PATH (jeprof: apt-get install libjemalloc-dev; dot: apt-get install graphviz)";
}

/// Runs `heap_workload --dump <dump> --extra <extra> --leak <leak>` as a child
/// process and returns its one-line summary. The child defines its own exact-mode
/// malloc_conf; MALLOC_CONF and LD_PRELOAD of this test process are not passed
/// on, so they cannot change how it profiles.
inline Result<std::string> run_heap_workload(const std::string& dump, int extra, int leak) {
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
  options.timeout = std::chrono::seconds(30);
  std::vector<std::string> argv = {
      helper_binary("heap_workload"), "--dump", dump, "--extra", std::to_string(extra), "--leak", std::to_string(leak)};
  auto run = sys::run_process(argv, options);
  if (!run) return fail(run.error());
  if (run->exit_code != 0) {
    return fail(make_error(ErrorCode::external_tool, "heap_workload",
                           "exit " + std::to_string(run->exit_code) + ", signal " + std::to_string(run->term_signal) +
                               ": " + run->stderr_text));
  }
  return run->stdout_text;
}

/// The function name jeprof printed, without the namespace qualification and
/// parameter list jeprof may keep: "::steady_work" and
/// "(anonymous namespace)::steady_work()" both give "steady_work".
inline std::string_view bare_function_name(std::string_view name) {
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        name = name.substr(0, i);
        break;
      }
    }
  }
  std::size_t sep = name.rfind("::");
  return sep == std::string_view::npos ? name : name.substr(sep + 2);
}

/// The `--text` line of function `name` (see bare_function_name), or nullptr.
inline const JeprofTextLine* find_function(const JeprofText& text, std::string_view name) {
  for (const auto& line : text.lines) {
    if (bare_function_name(line.name) == name) return &line;
  }
  return nullptr;
}

/// The flat value of function `name`, 0 when jeprof printed no line for it.
inline double flat_of(const JeprofText& text, std::string_view name) {
  const JeprofTextLine* line = find_function(text, name);
  return line == nullptr ? 0 : line->flat;
}

/// True when jeprof could not symbolize `name` and printed an address instead.
inline bool is_address(std::string_view name) {
  if (name.substr(0, 2) == "0x") name.remove_prefix(2);
  return !name.empty() && name.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
}

}  // namespace heapgate::testing

/// Skips (locally) or fails (HEAPGATE_REQUIRE_PROFILING=1, as in CI) unless
/// `program` is on PATH.
#define HEAPGATE_REQUIRE_PROGRAM(program)                                                   \
  do {                                                                                      \
    const std::string heapgate_why_ = ::heapgate::testing::program_missing_reason(program); \
    if (!heapgate_why_.empty()) {                                                           \
      if (::heapgate::testing::profiling_required()) FAIL() << heapgate_why_;               \
      GTEST_SKIP() << heapgate_why_;                                                        \
    }                                                                                       \
  } while (0)
