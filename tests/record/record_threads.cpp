// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record` with 4 threads.
// Without arguments: each thread leaks 5 blocks of 64 bytes in thread_leak()
// (20 blocks, 1280 bytes) and allocates and frees a 4000-byte block.
// With `peak`: each thread makes 2 blocks of 1 MiB in make_part() and exits;
// the main thread frees all 8 after joining them. The heap only grows until
// the last block is made, so the peak holds the 8 MiB, counted by four
// threads that are gone when it is read and freed by another.
#include <pthread.h>

#include <cstdlib>
#include <cstring>

void* volatile g_kept[4][5];
void* volatile g_parts[4][2];

__attribute__((noinline)) void thread_leak(int t) {
  for (int i = 0; i < 5; ++i) g_kept[t][i] = std::malloc(64);
}

__attribute__((noinline)) void make_part(int t) {
  for (int i = 0; i < 2; ++i) g_parts[t][i] = std::malloc(1 << 20);
}

void* leak(void* arg) {
  const int t = static_cast<int>(reinterpret_cast<long>(arg));
  thread_leak(t);
  void* volatile scratch = std::malloc(4000);
  std::free(scratch);
  return nullptr;
}

void* part(void* arg) {
  make_part(static_cast<int>(reinterpret_cast<long>(arg)));
  return nullptr;
}

int main(int argc, char** argv) {
  const bool peak = argc > 1 && std::strcmp(argv[1], "peak") == 0;
  pthread_t threads[4];
  for (long t = 0; t < 4; ++t) {
    if (pthread_create(&threads[t], nullptr, peak ? part : leak, reinterpret_cast<void*>(t)) != 0) return 1;
  }
  for (pthread_t thread : threads) pthread_join(thread, nullptr);
  if (peak) {
    for (auto& blocks : g_parts) {
      for (void* block : blocks) std::free(block);
    }
  }
  return 0;
}
