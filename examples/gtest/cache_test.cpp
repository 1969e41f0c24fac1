// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// An example GoogleTest suite gated by heapgate. Linking heapgate::gtest_main
// instead of GTest::gtest_main is the whole integration. Four tests, four
// outcomes: a clean test, a leak, a test over its allocation budget, and a
// test whose allocations grew against the committed baseline
// (examples/gtest/baselines/example_cache_test.json).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "heapgate/gtest.h"

namespace {

// A tiny LRU-less cache: the code under test.
class Cache {
 public:
  void put(int key, std::string value) { entries_[key] = std::move(value); }
  const std::string* get(int key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }

 private:
  std::map<int, std::string> entries_;
};

// The bug for the leak example: an "audit" copy nobody frees.
__attribute__((noinline)) void audit(const std::string& value) {
  auto* copy = new std::string(value);
  asm volatile("" : : "g"(copy) : "memory");
}

// The change for the regression example: it used to reserve once; now the
// vector grows step by step, allocating 8 times instead of once.
__attribute__((noinline)) std::vector<std::string> render_all(const Cache& cache, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    if (const std::string* v = cache.get(i)) out.push_back(*v);
  }
  return out;
}

std::string long_value(int i) { return "value number " + std::to_string(i) + " with a long enough text"; }

}  // namespace

TEST(Cache, PutAndGetIsClean) {
  Cache cache;
  cache.put(1, long_value(1));
  ASSERT_NE(cache.get(1), nullptr);
}

TEST(Cache, AuditLeaks) {
  Cache cache;
  cache.put(1, long_value(1));
  audit(*cache.get(1));
}

TEST(Cache, FillStaysWithinBudget) {
  HEAPGATE_LIMIT_ALLOCATIONS(100);
  Cache cache;
  for (int i = 0; i < 100; ++i) cache.put(i, long_value(i));  // 2 allocations per entry: over budget
}

TEST(Cache, RenderAllIsNotSlowerThanBefore) {
  Cache cache;
  for (int i = 0; i < 100; ++i) cache.put(i, long_value(i));
  EXPECT_EQ(render_all(cache, 100).size(), 100u);
}
