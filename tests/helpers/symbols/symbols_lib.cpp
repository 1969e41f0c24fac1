// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "symbols_lib.h"

#include <cstdlib>

namespace symbols_lib {
namespace {

int g_line = 0;

}  // namespace

__attribute__((noinline)) void library_leak(std::vector<void*>& keep, std::size_t bytes) {
  // clang-format off
  void* p = std::malloc(bytes); g_line = __LINE__;  // NOLINT: one line, so __LINE__ is the call's
  // clang-format on
  asm volatile("" : : "g"(p) : "memory");
  keep.push_back(p);
}

int library_leak_line() { return g_line; }

}  // namespace symbols_lib
