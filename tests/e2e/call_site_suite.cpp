// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A suite whose tests make 500 allocations at two call sites; the environment
// variable CALL_SITE_SUITE_MOVED moves that many of them from one site to the
// other, so the totals stay the same and only the split changes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "heapgate/gtest.h"

namespace {

int moved() {
  const char* v = std::getenv("CALL_SITE_SUITE_MOVED");
  return v == nullptr ? 0 : std::atoi(v);
}

// The escape keeps the compiler from pairing malloc with free away; noipa
// keeps gcc from folding the two identical functions into one.
__attribute__((noinline, noipa)) void allocate_in_setup(int n) {
  for (int i = 0; i < n; ++i) {
    void* p = std::malloc(32);
    asm volatile("" : : "r"(p) : "memory");
    std::free(p);
  }
}

__attribute__((noinline, noipa)) void allocate_in_hot_loop(int n) {
  for (int i = 0; i < n; ++i) {
    void* p = std::malloc(32);
    asm volatile("" : : "r"(p) : "memory");
    std::free(p);
  }
}

void workload() {
  allocate_in_setup(500 - moved());
  allocate_in_hot_loop(50 + moved());
}

}  // namespace

TEST(CallSites, Gated) {
  HEAPGATE_GATE_CALL_SITES();
  workload();
}

TEST(CallSites, NotGated) { workload(); }

// Gated by --heapgate_gate_call_sites=CallSites.ByFlag in the tests.
TEST(CallSites, ByFlag) { workload(); }

// Runs only when asked (--gtest_also_run_disabled_tests). It leaves a file
// named CALL_SITE_SUITE_DISABLED_MARKER.<pid>, so a test can count the
// processes that ran it: the suite's own and any re-run of it.
TEST(CallSites, DISABLED_LeavesAMarker) {
  if (const char* marker = std::getenv("CALL_SITE_SUITE_DISABLED_MARKER")) {
    const std::string path = std::string(marker) + "." + std::to_string(::getpid());
    if (std::FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
  }
}
