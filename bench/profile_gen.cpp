// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Writes a heap_v2 profile with many distinct call stacks, for diff_bench.
//   profile_gen --dump PATH --stacks N [--extra K]
// Stack i is a 16-level descent whose left/right choices spell i in binary, so
// N stacks are N distinct backtraces of 20-odd frames. Each allocates 32 bytes
// once (freed for even i, kept live for odd i). --extra K adds K allocations
// of 48 bytes in extra_work(), the difference a diff must find.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "heapgate/malloc_conf.h"
#include "heapgate/profile_scope.h"

HEAPGATE_ENABLE_EXACT_MODE();

namespace {

std::vector<void*> g_kept;

void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

void descend(int depth, unsigned bits, bool keep);

// The empty asm after each call keeps it from becoming a tail call, so every
// level leaves its own return address in the backtrace.
__attribute__((noinline)) void left(int depth, unsigned bits, bool keep) {
  descend(depth, bits, keep);
  asm volatile("");
}

__attribute__((noinline)) void right(int depth, unsigned bits, bool keep) {
  descend(depth, bits, keep);
  asm volatile("");
}

__attribute__((noinline)) void descend(int depth, unsigned bits, bool keep) {
  if (depth == 0) {
    void* p = std::malloc(32);
    escape(p);
    if (keep) {
      g_kept.push_back(p);
    } else {
      std::free(p);
    }
    return;
  }
  if ((bits & 1u) != 0) {
    left(depth - 1, bits >> 1, keep);
  } else {
    right(depth - 1, bits >> 1, keep);
  }
  asm volatile("");
}

__attribute__((noinline)) void extra_work(int count) {
  for (int i = 0; i < count; ++i) {
    void* p = std::malloc(48);
    escape(p);
    std::free(p);
  }
}

long parse_count(const char* flag, const char* value) {
  char* end = nullptr;
  long n = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || n < 0 || n > (1L << 16)) {
    std::fprintf(stderr, "profile_gen: %s: expected a count 0..65536, got \"%s\"\n", flag, value);
    std::exit(2);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dump;
  long stacks = 0;
  long extra = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--dump") == 0) {
      dump = argv[i + 1];
    } else if (std::strcmp(argv[i], "--stacks") == 0) {
      stacks = parse_count("--stacks", argv[i + 1]);
    } else if (std::strcmp(argv[i], "--extra") == 0) {
      extra = parse_count("--extra", argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: profile_gen --dump PATH --stacks N [--extra K]\n");
      return 2;
    }
  }
  if (dump.empty()) {
    std::fprintf(stderr, "usage: profile_gen --dump PATH --stacks N [--extra K]\n");
    return 2;
  }
  g_kept.reserve(static_cast<std::size_t>(stacks));
  heapgate::ProfileScope scope{"profile_gen", {heapgate::Mode::exact, dump}};
  for (long i = 0; i < stacks; ++i) descend(16, static_cast<unsigned>(i), (i & 1) != 0);
  extra_work(static_cast<int>(extra));
  auto r = scope.finish();
  if (!r) {
    std::fprintf(stderr, "profile_gen: %s\n", r.error().message().c_str());
    return 3;
  }
  for (void* p : g_kept) std::free(p);
  return 0;
}
