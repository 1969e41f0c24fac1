// SPDX-License-Identifier: MIT
// The allocation behaviours of the Catch2 and doctest sample suites
// (sample_catch2.cpp, sample_doctest.cpp): the same in both, so both faces are
// held to the same counts. framework_faces_test names lines of this file.
#pragma once

#include <cstddef>
#include <cstdlib>

namespace sample_workload {

inline void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

inline __attribute__((noinline)) void allocate_and_free(int count, std::size_t size) {
  for (int i = 0; i < count; ++i) {
    void* p = std::malloc(size);
    escape(p);
    std::free(p);
  }
}

inline __attribute__((noinline)) void leak_three_blocks() {
  for (int i = 0; i < 3; ++i) escape(std::malloc(96));
}

// The planted regression allocates at a line of its own, which the
// regression's explanation must name.
inline __attribute__((noinline)) void planted_extra(int count) {
  for (int i = 0; i < count; ++i) {
    void* p = std::malloc(256);
    escape(p);
    std::free(p);
  }
}

inline int extra_allocations() {
  const char* extra = std::getenv("SAMPLE_EXTRA");
  return extra != nullptr ? std::atoi(extra) : 0;
}

}  // namespace sample_workload
