// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What the scripted sample suites (noisy_suite.cpp, threaded_suite.cpp) share:
// a counter kept in a file, so a test's count can vary from run to run in a
// way its own test can predict, and allocations that count exactly.
#pragma once

#include <cstdlib>
#include <fstream>

namespace heapgate::sample {

inline void* volatile g_sink = nullptr;

/// `blocks` allocations of 64 bytes, each freed at once.
inline void allocate_and_free(int blocks) {
  for (int i = 0; i < blocks; ++i) {
    g_sink = std::malloc(64);
    std::free(g_sink);
  }
}

/// The counter in the file the environment variable `variable` names,
/// incremented for the next run; 0 when the variable is unset.
inline int next_count(const char* variable) {
  const char* path = std::getenv(variable);
  if (path == nullptr) return 0;
  int count = 0;
  {
    std::ifstream in(path);
    in >> count;
  }
  std::ofstream(path) << count + 1;
  return count;
}

}  // namespace heapgate::sample
