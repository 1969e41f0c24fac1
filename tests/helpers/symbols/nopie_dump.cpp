// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A non-PIE (ET_EXEC) child program for the symbolizer tests: leaks 3 blocks of
// 3000 B from nopie_leak() inside an exact-mode scope and leaves the heap_v2
// dump at --dump PATH. Prints "line=N", the line of the malloc call.
//   symbols_nopie --dump PATH
// Exit code 0 on success, 2 on bad arguments, 3 when the scope fails.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "heapgate/profile_scope.h"

extern "C" {
__attribute__((used, visibility("default"))) const char* malloc_conf =
    "prof:true,prof_active:false,lg_prof_sample:0,prof_accum:true,prof_unbias:false";
}

namespace {

int g_line = 0;

__attribute__((noinline)) void nopie_leak(std::vector<void*>& keep) {
  for (int i = 0; i < 3; ++i) {
    // clang-format off
    void* p = std::malloc(3000); g_line = __LINE__;  // NOLINT: one line, so __LINE__ is the call's
    // clang-format on
    asm volatile("" : : "g"(p) : "memory");
    keep.push_back(p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "--dump") != 0) {
    std::fprintf(stderr, "usage: symbols_nopie --dump PATH\n");
    return 2;
  }
  std::vector<void*> keep;
  keep.reserve(8);
  heapgate::ProfileScope scope{"nopie", {heapgate::Mode::exact, argv[2]}};
  nopie_leak(keep);
  auto result = scope.finish();
  if (!result) {
    std::fprintf(stderr, "symbols_nopie: %s\n", result.error().message().c_str());
    return 3;
  }
  std::printf("line=%d\n", g_line);
  for (void* p : keep) std::free(p);
  return 0;
}
