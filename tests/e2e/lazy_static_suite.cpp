// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A suite whose first test builds what later tests reuse, as a library builds
// a table or a std::regex once behind a function-local static: in the suite,
// and in its baseline, the first test pays for it; a fresh process's second
// run of the test does not. LAZY_EXTRA=1 plants one more allocation in the
// first test, which the gate must catch there too.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "scripted_counts.h"

namespace {

using heapgate::sample::allocate_and_free;
using heapgate::sample::g_sink;

const std::vector<std::string>& table() {
  static const std::vector<std::string> built = [] {
    std::vector<std::string> rows;
    for (int i = 0; i < 16; ++i) rows.emplace_back(40, static_cast<char>('a' + i));
    return rows;
  }();
  return built;
}

}  // namespace

TEST(Lazy, BuildsTheTableFirst) {
  EXPECT_EQ(table().size(), 16u);
  allocate_and_free(5);
  if (std::getenv("LAZY_EXTRA") != nullptr) std::free(g_sink = std::malloc(24));  // LAZY_EXTRA_SITE
}

TEST(Lazy, UsesTheTable) {
  EXPECT_EQ(table().back().size(), 40u);
  allocate_and_free(3);
}
