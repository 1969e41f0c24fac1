// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A child program for counting_sources_test: one scope over a workload that
// allocates in every way a program can (C and C++, sized and aligned frees,
// realloc that grows in place and moves, a map of strings and vectors, a
// joined thread, blocks left live), printed as one line of numbers. Run once
// per counting source (HEAPGATE_COUNT_WITH=hooks forces jemalloc's hooks) and
// per mode; every run must print the same numbers. (The one difference of
// the two feeds, the dynamic loader's own allocations, is kept out of the
// scope: see the thread started before it.)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "heapgate/allocator.h"
#include "heapgate/profile_scope.h"

namespace {

struct alignas(64) Aligned {
  char bytes[100];
};

__attribute__((noinline)) void c_family(std::vector<void*>& keep) {
  void* p = std::malloc(24);
  for (std::size_t size = 32; size <= 70000; size = size * 3 / 2) p = std::realloc(p, size);  // in place and moved
  std::free(p);
  void* zeroed = std::calloc(13, 17);
  std::free(zeroed);
  void* aligned = nullptr;
  if (posix_memalign(&aligned, 256, 300) == 0) std::free(aligned);
  std::free(aligned_alloc(64, 640));
  keep.push_back(std::malloc(5000));  // left live
  std::free(std::realloc(nullptr, 40));
}

// The compiler may drop a new whose pointer goes nowhere, with its delete.
void escape(void* p) { asm volatile("" : : "r"(p) : "memory"); }

__attribute__((noinline)) void cxx_family(std::vector<void*>& keep) {
  auto* a = new Aligned[3];
  escape(a);
  delete[] a;
  auto* one = new Aligned;
  escape(one);
  delete one;
  void* loose = ::operator new (100, std::align_val_t{128});
  escape(loose);
  ::operator delete (loose, std::align_val_t{128});
  std::unique_ptr<int[]> ints(new int[77]);
  escape(ints.get());
  int* sized = std::allocator<int>().allocate(1000);  // a sized delete follows
  std::allocator<int>().deallocate(sized, 1000);
  keep.push_back(::operator new(200));
  void* nothrow = ::operator new(48, std::nothrow);
  ::operator delete(nothrow, std::nothrow);
}

__attribute__((noinline)) void containers() {
  std::map<std::string, std::vector<int>> table;
  for (int i = 0; i < 3000; ++i) {
    std::string key = "key-" + std::to_string(i * 7919 % 3001) + std::string(static_cast<std::size_t>(i % 40), 'k');
    table[key].resize(static_cast<std::size_t>(1 + i % 97));
  }
  for (auto it = table.begin(); it != table.end();) it = (it->second.size() % 2 == 0) ? table.erase(it) : std::next(it);
  for (auto& entry : table) entry.second.push_back(1);
}

}  // namespace

int main(int argc, char** argv) {
  const heapgate::Mode mode = heapgate::parse_mode(argc > 1 ? argv[1] : "counters").value_or(heapgate::Mode::counters);
  std::vector<void*> keep;
  keep.reserve(16);
  for (int warm = 0; warm < 2; ++warm) {  // lazily initialised statics first
    std::vector<void*> scratch;
    scratch.reserve(16);
    c_family(scratch);
    cxx_family(scratch);
    containers();
    std::free(scratch[0]);
    ::operator delete(scratch[1]);
  }
  // A thread started and joined before the scope leaves its stack in glibc's
  // cache, so the scope's thread reuses it and the dynamic loader allocates
  // no TLS vector for it: the entry points leave the loader's allocations
  // out, jemalloc's hooks (which cannot tell who called) count them.
  std::thread([] {}).join();
  heapgate::ProfileScope scope{"workload", mode};
  c_family(keep);
  cxx_family(keep);
  containers();
  std::thread worker([] { containers(); });
  worker.join();
  auto r = scope.finish();
  std::free(keep[0]);
  ::operator delete(keep[1]);
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().message().c_str());
    return 2;
  }
  const std::string described = heapgate::allocator_status().describe();
  const char* source = described.find("heapgate's allocation entry points") != std::string::npos ? "entry_points"
                       : described.find("jemalloc's hooks") != std::string::npos                 ? "jemalloc_hooks"
                                                                                                 : "unknown";
  std::printf("source=%s\n", source);
  std::printf(
      "mode=%s allocations=%llu allocated_bytes=%llu live_allocations=%llu live_bytes=%llu peak_bytes=%llu "
      "other_thread_allocations=%llu other_thread_bytes=%llu\n",
      std::string(heapgate::to_string(r->mode)).c_str(), static_cast<unsigned long long>(r->allocations),
      static_cast<unsigned long long>(r->allocated_bytes), static_cast<unsigned long long>(r->live_allocations),
      static_cast<unsigned long long>(r->live_bytes), static_cast<unsigned long long>(r->peak_bytes),
      static_cast<unsigned long long>(r->other_thread_allocations),
      static_cast<unsigned long long>(r->other_thread_bytes));
  return 0;
}
