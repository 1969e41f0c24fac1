// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record`: holds 4 blocks of 1000 bytes made in
// hold_four(), then dies of a signal while they are live: SIGTERM (sent to
// itself, as a supervisor would send it), or with the argument `abort`
// abort()'s SIGABRT, or with `kill` SIGKILL, which no process survives to
// write anything.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

void* volatile g_kept[4];

__attribute__((noinline)) void hold_four() {
  for (int i = 0; i < 4; ++i) g_kept[i] = std::malloc(1000);
}

int main(int argc, char** argv) {
  hold_four();
  if (argc > 1 && std::strcmp(argv[1], "abort") == 0) std::abort();
  kill(getpid(), argc > 1 && std::strcmp(argv[1], "kill") == 0 ? SIGKILL : SIGTERM);
  for (;;) pause();
}
