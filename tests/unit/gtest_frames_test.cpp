// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The GoogleTest plugin's rule for the stacks GoogleTest makes for every test
// (gtest_plugin/src/gtest_frames.h), on stacks as normalize_profile() leaves
// them: GoogleTest's own frames already dropped, " at file:line" kept.
#include "gtest_frames.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace heapgate::gtest {
namespace {

StackSample stack(std::vector<std::string> frames) {
  StackSample s;
  s.frames = std::move(frames);
  s.counts.accum_objects = 1;
  s.counts.accum_bytes = 32;
  return s;
}

TEST(GtestFrames, TheFixtureObjectAndTheFlagSaverAreGoogleTests) {
  // The fixture object: every frame was GoogleTest's.
  EXPECT_TRUE(is_gtest_overhead(stack({"[framework]"})));
  // testing::Test's flag saver, built while the generated class is constructed.
  EXPECT_TRUE(is_gtest_overhead(stack(
      {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string(char const*) "
       "at basic_string.h:642",
       "Cache_Lookup_Test::Cache_Lookup_Test() at cache_test.cpp:12"})));
  // A chain of default constructors that ends in the generated class: a
  // fixture's members, templated fixtures and typed tests included.
  EXPECT_TRUE(is_gtest_overhead(stack({"std::vector<int, std::allocator<int> >::vector() at stl_vector.h:10",
                                       "CacheFixture::CacheFixture() at cache_test.cpp:8",
                                       "CacheFixture_Lookup_Test::CacheFixture_Lookup_Test() at cache_test.cpp:20"})));
  EXPECT_TRUE(is_gtest_overhead(stack({"Typed<int>::Typed()", "Typed_Runs_Test<int>::Typed_Runs_Test()"})));
  // Nothing left of the test at all.
  EXPECT_TRUE(is_gtest_overhead(stack({})));
  EXPECT_TRUE(is_gtest_overhead(stack({"std::vector<int, std::allocator<int> >::reserve(unsigned long)"})));
}

TEST(GtestFrames, WhatTheTestDoesIsTheTests) {
  EXPECT_FALSE(is_gtest_overhead(stack({"std::vector<int, std::allocator<int> >::push_back(int&&)",
                                        "Cache_Lookup_Test::TestBody() at cache_test.cpp:14"})));
  // A constructor that takes arguments, or a default constructor the test calls.
  EXPECT_FALSE(is_gtest_overhead(stack({"Cache::Cache(int)", "Cache_Lookup_Test::TestBody()"})));
  EXPECT_FALSE(is_gtest_overhead(stack({"Cache::Cache()", "Cache_Lookup_Test::TestBody()"})));
  // Default constructors that do not end in the generated class.
  EXPECT_FALSE(is_gtest_overhead(stack({"Cache::Cache()"})));
  EXPECT_FALSE(is_gtest_overhead(stack({"Cache::Cache()", "main"})));
  // std:: frames count once the test's own code has been seen.
  EXPECT_FALSE(is_gtest_overhead(stack({"CacheFixture::CacheFixture()", "std::function<void ()>::operator()() const",
                                        "CacheFixture_Lookup_Test::CacheFixture_Lookup_Test()"})));
}

TEST(GtestFrames, OverheadIsLeftOutInOrder) {
  const std::vector<StackSample> stacks = {stack({"b()"}), stack({"[framework]"}), stack({"a()"})};
  const std::vector<StackSample> kept = without_gtest_overhead(stacks);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].frames, std::vector<std::string>{"b()"});
  EXPECT_EQ(kept[1].frames, std::vector<std::string>{"a()"});
}

}  // namespace
}  // namespace heapgate::gtest
