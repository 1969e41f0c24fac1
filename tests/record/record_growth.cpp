// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record --snapshot-every`: setup_tables() allocates
// 5 blocks of 4096 bytes once at start-up; then, for about 1.2 s,
// leak_request() leaks a block of 512 bytes every 50 ms. The first is
// one-time setup, the second a leak. With the argument `signal` it also
// asks for a snapshot with SIGUSR2 three times (`--snapshot-signal`), after
// its 4th, 12th and 20th block, each followed by a 250 ms pause.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

void* volatile g_tables[5];
void* volatile g_last;

__attribute__((noinline)) void setup_tables() {
  for (int i = 0; i < 5; ++i) g_tables[i] = std::malloc(4096);
}

__attribute__((noinline)) void leak_request() { g_last = std::malloc(512); }

int main(int argc, char** argv) {
  const bool signals = argc > 1 && std::strcmp(argv[1], "signal") == 0;
  setup_tables();
  for (int i = 0; i < 24; ++i) {
    leak_request();
    const bool ask = signals && i % 8 == 3;
    if (ask) kill(getpid(), SIGUSR2);
    // Time for the snapshot before the next block, even on a loaded machine.
    const timespec step{0, (ask ? 250 : 50) * 1000 * 1000};
    nanosleep(&step, nullptr);
  }
  return 0;
}
