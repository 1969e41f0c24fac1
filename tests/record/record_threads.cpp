// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record`: 4 threads each leak 5 blocks of 64 bytes
// in thread_leak() (20 blocks, 1280 bytes), and each allocates and frees a
// 4000-byte block.
#include <pthread.h>

#include <cstdlib>

void* volatile g_kept[4][5];

__attribute__((noinline)) void thread_leak(int t) {
  for (int i = 0; i < 5; ++i) g_kept[t][i] = std::malloc(64);
}

void* run(void* arg) {
  const int t = static_cast<int>(reinterpret_cast<long>(arg));
  thread_leak(t);
  void* volatile scratch = std::malloc(4000);
  std::free(scratch);
  return nullptr;
}

int main() {
  pthread_t threads[4];
  for (long t = 0; t < 4; ++t) {
    if (pthread_create(&threads[t], nullptr, run, reinterpret_cast<void*>(t)) != 0) return 1;
  }
  for (pthread_t thread : threads) pthread_join(thread, nullptr);
  return 0;
}
