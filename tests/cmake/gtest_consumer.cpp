// SPDX-License-Identifier: MIT
// The GoogleTest suite every consumer project builds with heapgate::gtest_main
// (no main() here) and runs through gtest_consumer_check.cmake, which reads
// the JSON report: GtestConsumer.ThreeBlocks must show exactly 3 allocations
// within its budget of 3, and GtestConsumer.AllowedLeak 1 live block that is
// not a failure.
#include <gtest/gtest.h>

#include <cstdlib>

#include "heapgate/gtest.h"

namespace {

// volatile: the compiler must not elide the malloc/free pairs or the leak.
void* volatile g_leaked = nullptr;

}  // namespace

TEST(GtestConsumer, ThreeBlocks) {
  HEAPGATE_LIMIT_ALLOCATIONS(3);
  void* volatile blocks[3] = {};
  for (auto& block : blocks) block = std::malloc(100);
  for (auto& block : blocks) {
    EXPECT_NE(block, nullptr);
    std::free(block);
  }
}

TEST(GtestConsumer, AllowedLeak) {
  HEAPGATE_ALLOW_LEAKS();
  g_leaked = std::malloc(64);
  EXPECT_NE(g_leaked, nullptr);
}

// What the README's path must catch, planted by environment variables so the
// same binary runs clean first (recording its baseline) and then changed:
// CONSUMER_EXTRA_ALLOCATION=1 adds one allocation (a regression),
// CONSUMER_LEAK=1 leaks one block per run (a leak).
TEST(GtestConsumer, Planted) {
  void* volatile block = std::malloc(32);
  std::free(block);
  if (std::getenv("CONSUMER_EXTRA_ALLOCATION") != nullptr) {
    block = std::malloc(32);
    std::free(block);
  }
  if (std::getenv("CONSUMER_LEAK") != nullptr) g_leaked = std::malloc(48);
}

#ifdef HEAPGATE_CONSUMER_OWN_MAIN
// The own-main() path of the README: heapgate's flags first, then GoogleTest's.
int main(int argc, char** argv) {
  heapgate::gtest::Options options = heapgate::gtest::init(&argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  heapgate::gtest::install_listener(options);
  return RUN_ALL_TESTS();
}
#endif
