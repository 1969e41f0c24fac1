// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A program for `heapgate record`: 4 threads each make 2 blocks of 1 MiB in
// make_part() and exit; the main thread frees all 8 after joining them. The
// heap only grows until the last block is made, so the peak holds the 8 MiB,
// counted by four threads that are gone when it is read and freed by another.
#include <pthread.h>

#include <cstdlib>

void* volatile g_parts[4][2];

__attribute__((noinline)) void make_part(int t) {
  for (int i = 0; i < 2; ++i) g_parts[t][i] = std::malloc(1 << 20);
}

void* run(void* arg) {
  make_part(static_cast<int>(reinterpret_cast<long>(arg)));
  return nullptr;
}

int main() {
  pthread_t threads[4];
  for (long t = 0; t < 4; ++t) {
    if (pthread_create(&threads[t], nullptr, run, reinterpret_cast<void*>(t)) != 0) return 1;
  }
  for (pthread_t thread : threads) pthread_join(thread, nullptr);
  for (auto& part : g_parts) {
    for (void* block : part) std::free(block);
  }
  return 0;
}
