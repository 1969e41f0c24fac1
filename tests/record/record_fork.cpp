// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record`: the parent leaks 1 block of 100 bytes in
// parent_leak(), forks, and the child leaks 2 blocks of 200 bytes in
// child_leak() and calls exit() (with the argument `_exit`, _exit(), which
// skips atexit handlers). Each process writes its own profiles.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

void* volatile g_kept[2];

__attribute__((noinline)) void parent_leak() { g_kept[0] = std::malloc(100); }

__attribute__((noinline)) void child_leak() {
  g_kept[0] = std::malloc(200);
  g_kept[1] = std::malloc(200);
}

int main(int argc, char**) {
  parent_leak();
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    child_leak();
    if (argc > 1) _exit(0);
    std::exit(0);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
