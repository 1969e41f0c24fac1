// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A child program for cross-process tests: runs a fixed workload inside one
// exact-mode ProfileScope and leaves the heap_v2 dump at --dump PATH. Two runs
// differ only by what the flags inject, so a diff of their profiles must find
// exactly the injected allocations, although ASLR placed the code differently.
//
//   heap_workload --dump PATH [--extra N] [--leak N]
//     steady_work():     200 x 64 B allocated and freed, 10 x 1024 B kept until exit
//     injected_extra():  N x 48 B allocated and freed   (accumulated only)
//     injected_leak():   N x 96 B never freed            (live)
// Prints one line: "allocations=A allocated_bytes=B live_allocations=L live_bytes=M".
// Exit code 0 on success, 2 on bad arguments, 3 when the scope fails.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "heapgate/profile_scope.h"

// Every allocation sampled, accumulated counts kept; profiling off until the scope starts it.
extern "C" {
__attribute__((used, visibility("default"))) const char* malloc_conf =
    "prof:true,prof_active:false,lg_prof_sample:0,prof_accum:true,prof_unbias:false";
}

namespace {

void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

std::vector<void*> g_kept;  // reserved before the scope, so it never allocates inside

__attribute__((noinline)) void steady_work() {
  for (int i = 0; i < 200; ++i) {
    void* p = std::malloc(64);
    escape(p);
    std::free(p);
  }
  for (int i = 0; i < 10; ++i) g_kept.push_back(std::malloc(1024));
}

__attribute__((noinline)) void injected_extra(int n) {
  for (int i = 0; i < n; ++i) {
    void* p = std::malloc(48);
    escape(p);
    std::free(p);
  }
}

__attribute__((noinline)) void injected_leak(int n) {
  for (int i = 0; i < n; ++i) escape(std::malloc(96));
}

int parse_count(const char* flag, const char* value) {
  char* end = nullptr;
  long n = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || n < 0 || n > 1000000) {
    std::fprintf(stderr, "heap_workload: %s: expected a count 0..1000000, got \"%s\"\n", flag, value);
    std::exit(2);
  }
  return static_cast<int>(n);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dump;
  int extra = 0;
  int leak = 0;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--dump") == 0 && has_value) {
      dump = argv[++i];
    } else if (std::strcmp(argv[i], "--extra") == 0 && has_value) {
      extra = parse_count("--extra", argv[++i]);
    } else if (std::strcmp(argv[i], "--leak") == 0 && has_value) {
      leak = parse_count("--leak", argv[++i]);
    } else {
      std::fprintf(stderr, "usage: heap_workload --dump PATH [--extra N] [--leak N]\n");
      return 2;
    }
  }
  if (dump.empty()) {
    std::fprintf(stderr, "heap_workload: --dump PATH is required\n");
    return 2;
  }
  g_kept.reserve(16);

  heapgate::ProfileScope scope{"heap_workload", {heapgate::Mode::exact, dump}};
  steady_work();
  injected_extra(extra);
  injected_leak(leak);
  auto result = scope.finish();
  if (!result) {
    std::fprintf(stderr, "heap_workload: %s\n", result.error().message().c_str());
    return 3;
  }
  std::printf(
      "allocations=%llu allocated_bytes=%llu live_allocations=%llu live_bytes=%llu\n",
      static_cast<unsigned long long>(result->allocations), static_cast<unsigned long long>(result->allocated_bytes),
      static_cast<unsigned long long>(result->live_allocations), static_cast<unsigned long long>(result->live_bytes));
  for (void* p : g_kept) std::free(p);
  return 0;
}
