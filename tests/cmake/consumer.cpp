// SPDX-License-Identifier: MIT
// The program every consumer project builds and runs: a counters scope around
// known mallocs must see exactly them, through the jemalloc linked in by
// heapgate_link_jemalloc() and without MALLOC_CONF. Exits 0 on success.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "heapgate/profile_scope.h"
#include "heapgate/version.h"

#ifndef HEAPGATE_EXPECTED_VERSION
#error "the consumer project defines HEAPGATE_EXPECTED_VERSION"
#endif

int main() {
  constexpr int kBlocks = 3;
  // volatile: the compiler must not elide the malloc/free pairs.
  void* volatile blocks[kBlocks] = {};
  heapgate::ProfileScope scope{"consumer"};
  for (auto& block : blocks) block = std::malloc(100);
  std::free(blocks[0]);
  auto result = scope.finish();
  for (int i = 1; i < kBlocks; ++i) std::free(blocks[i]);
  if (!result) {
    std::puts(result.error().message().c_str());
    return 1;
  }
  const auto mode = heapgate::to_string(result->mode);
  std::printf(
      "heapgate %s: mode %.*s, allocations %llu (%llu bytes), deallocations %llu, live %llu (%llu bytes)\n",
      HEAPGATE_VERSION_STRING, static_cast<int>(mode.size()), mode.data(),
      static_cast<unsigned long long>(result->allocations), static_cast<unsigned long long>(result->allocated_bytes),
      static_cast<unsigned long long>(result->deallocations), static_cast<unsigned long long>(result->live_allocations),
      static_cast<unsigned long long>(result->live_bytes));
  int failures = 0;
  auto check = [&failures](bool ok, const char* what) {
    if (!ok) {
      std::printf("FAILED: %s\n", what);
      ++failures;
    }
  };
  // The headers are the ones of the heapgate this consumer was configured against.
  check(std::strcmp(HEAPGATE_VERSION_STRING, HEAPGATE_EXPECTED_VERSION) == 0, "version.h is the expected version");
  check(result->mode == heapgate::Mode::counters, "mode == counters (jemalloc serves this program)");
  check(!result->bytes_only, "jemalloc's allocation hooks were used");
  check(result->allocations == kBlocks, "allocations == 3");
  check(result->allocated_bytes == kBlocks * 112, "allocated_bytes == 3 * 112 (malloc(100) is a 112-byte size class)");
  check(result->deallocations == 1, "deallocations == 1");
  check(result->live_allocations == kBlocks - 1, "live_allocations == 2");
  check(result->live_bytes == (kBlocks - 1) * 112, "live_bytes == 2 * 112");
  return failures == 0 ? 0 : 1;
}
