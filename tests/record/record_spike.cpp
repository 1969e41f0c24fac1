// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record`: a spike of 10 blocks of 1 MiB made by
// make_spike(), all freed before exit, so its peak is exactly 10 MiB and
// nothing is live at exit.
#include <cstdlib>

void* volatile g_blocks[10];

__attribute__((noinline)) void make_spike() {
  for (int i = 0; i < 10; ++i) g_blocks[i] = std::malloc(1 << 20);
}

__attribute__((noinline)) void drop_spike() {
  for (int i = 0; i < 10; ++i) std::free(g_blocks[i]);
}

int main() {
  make_spike();
  drop_spike();
  return 0;
}
