// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A GoogleTest suite linked with heapgate::gtest_main, run as a child process
// by gtest_plugin_test. Each test has a known allocation behaviour. The
// environment variable SAMPLE_EXTRA=N makes Sample.Counted allocate N more
// times, a "regression" without rebuilding.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "heapgate/gtest.h"

namespace {

void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

__attribute__((noinline)) void allocate_and_free(int count, std::size_t size) {
  for (int i = 0; i < count; ++i) {
    void* p = std::malloc(size);
    escape(p);
    std::free(p);
  }
}

__attribute__((noinline)) void leak_three_blocks() {
  for (int i = 0; i < 3; ++i) escape(std::malloc(96));
}

int extra_allocations() {
  const char* extra = std::getenv("SAMPLE_EXTRA");
  return extra != nullptr ? std::atoi(extra) : 0;
}

// Allocates on first use only, like std::locale or a logging singleton.
__attribute__((noinline)) const std::string& lazily_built_table() {
  static const std::string* table = new std::string(1000, 'x');
  return *table;
}

// Replaces a process-wide object on every call, like
// std::locale::global(std::locale("")): the new one stays live, the old one
// is freed, so what stays live never grows.
std::string* g_current_setting = nullptr;
__attribute__((noinline)) void replace_global_setting() {
  delete g_current_setting;
  g_current_setting = new std::string(200, 'y');
}

// SAMPLE_PRINT_TMPDIR=1: tests/e2e/shard_merge_test.cpp reads from each
// shard's log where `heapgate run` sent its temporary files.
[[maybe_unused]] const bool g_printed_temp_dirs = [] {
  if (std::getenv("SAMPLE_PRINT_TMPDIR") != nullptr) {
    const char* tmpdir = std::getenv("TMPDIR");
    const char* test_tmpdir = std::getenv("TEST_TMPDIR");
    std::printf("TMPDIR=%s TEST_TMPDIR=%s \n", tmpdir ? tmpdir : "", test_tmpdir ? test_tmpdir : "");
  }
  return true;
}();

}  // namespace

TEST(Sample, Clean) { allocate_and_free(10, 64); }

TEST(Sample, Counted) { allocate_and_free(7 + extra_allocations(), 128); }

TEST(Sample, Leaks) { leak_three_blocks(); }

TEST(Sample, AllowedLeak) {
  HEAPGATE_ALLOW_LEAKS();
  leak_three_blocks();
}

TEST(Sample, OverBudget) {
  HEAPGATE_LIMIT_ALLOCATIONS(5);
  allocate_and_free(10, 64);
}

TEST(Sample, WithinBudget) {
  HEAPGATE_LIMIT_ALLOCATIONS(10);
  HEAPGATE_LIMIT_PEAK_BYTES(64);
  allocate_and_free(10, 64);
}

TEST(Sample, LazyStatic) { EXPECT_EQ(lazily_built_table().size(), 1000u); }

TEST(Sample, ReplacesGlobal) { replace_global_setting(); }

// Frees what ReplacesGlobal left: run after it, its blocks were held, not leaked.
TEST(Sample, ClearsGlobal) {
  delete g_current_setting;
  g_current_setting = nullptr;
}

TEST(Sample, Threads) {
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) threads.emplace_back([] { allocate_and_free(25, 256); });
  for (auto& t : threads) t.join();
}

// Ends the process mid-run when SAMPLE_CRASH=1: the report must keep the tests before it.
TEST(Sample, CrashesOnRequest) {
  if (std::getenv("SAMPLE_CRASH") != nullptr) std::abort();
}

// Test data seeded from GoogleTest's random seed, as many suites do: the
// count follows the seed.
TEST(Sample, SeededData) { allocate_and_free(1 + ::testing::UnitTest::GetInstance()->random_seed() % 1000, 16); }

TEST(Sample, Skips) { GTEST_SKIP() << "skipped on purpose"; }

TEST(Sample, AssertionFails) { EXPECT_EQ(1, 2) << "this test fails on purpose"; }

TEST(SampleDeathTest, Dies) {
  EXPECT_DEATH(
      {
        allocate_and_free(1, 64);
        std::abort();
      },
      "");
}

template <typename T>
class SampleTyped : public ::testing::Test {};
using SampleTypes = ::testing::Types<char, int>;
TYPED_TEST_SUITE(SampleTyped, SampleTypes);
TYPED_TEST(SampleTyped, AllocatesOneArray) {
  std::vector<TypeParam> v(100);
  escape(v.data());
}

class SampleParam : public ::testing::TestWithParam<int> {};
TEST_P(SampleParam, AllocatesParamTimes) { allocate_and_free(GetParam(), 32); }
INSTANTIATE_TEST_SUITE_P(Counts, SampleParam, ::testing::Values(1, 2, 3));
