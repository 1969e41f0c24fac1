// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record`: holds 4 blocks of 1000 bytes made in
// hold_four(), then is killed by SIGTERM (sent to itself, as a supervisor
// would send it) while they are live.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

void* volatile g_kept[4];

__attribute__((noinline)) void hold_four() {
  for (int i = 0; i < 4; ++i) g_kept[i] = std::malloc(1000);
}

int main() {
  hold_four();
  kill(getpid(), SIGTERM);
  for (;;) pause();
}
