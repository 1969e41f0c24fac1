// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Runs the helper programs that dump profiles in a child process.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/profile.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate::testing {

/// Runs helper program `name` with `args`, MALLOC_CONF cleared (the helpers set
/// their own through `malloc_conf`), then reads the profile it dumped at
/// `dump`. Fails the current test (and returns an empty Profile) on any error.
/// `stdout_text`, when not null, receives the child's standard output.
inline Profile run_dumping_helper(const std::string& name, const std::string& dump, std::vector<std::string> args,
                                  std::string* stdout_text = nullptr) {
  std::vector<std::string> argv{helper_binary(name), "--dump", dump};
  argv.insert(argv.end(), args.begin(), args.end());
  sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "LD_PRELOAD"};
  options.timeout = std::chrono::seconds(60);
  auto run = sys::run_process(argv, options);
  if (!run) {
    ADD_FAILURE() << run.error().message();
    return {};
  }
  if (run->exit_code != 0) {
    ADD_FAILURE() << name << " exited with " << run->exit_code << ": " << run->stderr_text;
    return {};
  }
  if (stdout_text != nullptr) *stdout_text = run->stdout_text;
  auto profile = read_profile(dump);
  if (!profile) {
    ADD_FAILURE() << profile.error().message();
    return {};
  }
  return std::move(*profile);
}

/// heap_workload --extra N --leak M, dumped to `dir`/`file`.
inline Profile run_heap_workload(const std::string& dir, const std::string& file, int extra, int leak) {
  return run_dumping_helper("heap_workload", dir + "/" + file,
                            {"--extra", std::to_string(extra), "--leak", std::to_string(leak)});
}

}  // namespace heapgate::testing
