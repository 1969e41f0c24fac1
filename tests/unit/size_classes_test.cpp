// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The hooks' own rounding of a request to jemalloc's usable size
// (lib/measure/src/size_classes.h), against the jemalloc this test links.
#include <jemalloc/jemalloc.h>

#include <cstddef>
#include <cstdint>

#include <gtest/gtest.h>

#include "size_classes.h"

namespace heapgate::detail {
namespace {

std::size_t jemalloc_nallocx(std::size_t size, int flags) { return nallocx(size, flags); }

TEST(SizeClasses, AgreesWithJemallocOnEverySize) {
  SizeClasses classes;
  ASSERT_TRUE(classes.init(jemalloc_nallocx)) << "jemalloc's size classes are not the layout size_classes.h assumes";
  for (std::uint64_t size = 1; size <= 65536; ++size) {
    ASSERT_EQ(classes.usable(size), jemalloc_nallocx(size, 0)) << "a request of " << size << " bytes";
  }
  // Above 64 KiB, the sizes next to every class boundary.
  for (std::uint64_t usize = 65536; usize < SizeClasses::kMaxSize; usize = jemalloc_nallocx(usize + 1, 0)) {
    ASSERT_EQ(classes.usable(usize), usize);
    ASSERT_EQ(classes.usable(usize + 1), jemalloc_nallocx(usize + 1, 0)) << "a request of " << usize + 1 << " bytes";
  }
}

TEST(SizeClasses, AnswersNothingForZeroOrAboveTheCheckedSizes) {
  SizeClasses classes;
  ASSERT_TRUE(classes.init(jemalloc_nallocx));
  EXPECT_EQ(classes.usable(0), 0u);
  EXPECT_EQ(classes.usable(SizeClasses::kMaxSize), SizeClasses::kMaxSize);
  EXPECT_EQ(classes.usable(SizeClasses::kMaxSize + 1), 0u);
}

// A jemalloc configured with other classes (here: powers of two) is asked.
std::size_t powers_of_two(std::size_t size, int) {
  std::size_t usize = 8;
  while (usize < size) usize *= 2;
  return usize;
}

TEST(SizeClasses, AnswersNothingWhenJemallocsClassesDiffer) {
  SizeClasses classes;
  EXPECT_FALSE(classes.init(powers_of_two));
  EXPECT_EQ(classes.usable(100), 0u);
  EXPECT_FALSE(classes.init(nullptr));
  EXPECT_EQ(classes.usable(8), 0u);
}

}  // namespace
}  // namespace heapgate::detail
