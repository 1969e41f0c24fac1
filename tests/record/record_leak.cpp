// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record` (tests/record/record_test.cpp): leaks
// exactly 3 blocks of 100 bytes from leak_three() and frees everything else.
// No stdio: its buffers would stay live at exit.
#include <cstdlib>

void* volatile g_kept[3];

__attribute__((noinline)) void leak_three() {
  for (int i = 0; i < 3; ++i) g_kept[i] = std::malloc(100);
}

__attribute__((noinline)) void use_and_free() {
  void* volatile scratch = std::malloc(5000);
  std::free(scratch);
}

int main(int argc, char**) {
  leak_three();
  use_and_free();
  return argc > 1 ? 7 : 0;  // any argument: exit code 7, passed through by heapgate record
}
