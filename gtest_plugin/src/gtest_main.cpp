// SPDX-License-Identifier: MIT
// heapgate::gtest_main: GoogleTest's main() with heapgate's listener installed.
// main() lives in this translation unit on purpose: a static library's object
// that nothing references is dropped by the linker (docs/platform-facts.md §2).
#include <gtest/gtest.h>

#include "heapgate/gtest.h"

int main(int argc, char** argv) {
  heapgate::gtest::Options options = heapgate::gtest::init(&argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  heapgate::gtest::install_listener(options);
  return RUN_ALL_TESTS();
}
