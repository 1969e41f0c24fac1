// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include <gtest/gtest.h>

#include "heapgate/allocator.h"
#include "heapgate/error.h"

namespace heapgate {
namespace {

TEST(Error, MessageNamesWhereWhatAndFix) {
  Error e = make_error(ErrorCode::parse_error, "baselines/a.json:12",
                       "tolerance.live_bytes: expected a number, got \"5%\"", "write 0.05");
  EXPECT_EQ(e.message(), "baselines/a.json:12: tolerance.live_bytes: expected a number, got \"5%\"; fix: write 0.05");
}

TEST(Error, MessageWithoutWhereOrFix) { EXPECT_EQ(make_error(ErrorCode::internal, "", "boom").message(), "boom"); }

TEST(Error, CodeNamesAreSnakeCase) {
  EXPECT_EQ(to_string(ErrorCode::invalid_argument), "invalid_argument");
  EXPECT_EQ(to_string(ErrorCode::external_tool), "external_tool");
}

TEST(Mode, ParsesEveryNameItPrints) {
  for (Mode m : {Mode::off, Mode::counters, Mode::exact, Mode::sampled}) {
    auto parsed = parse_mode(to_string(m));
    ASSERT_TRUE(parsed) << to_string(m);
    EXPECT_EQ(*parsed, m);
  }
}

TEST(Mode, RejectsUnknownNameListingValidOnes) {
  auto parsed = parse_mode("precise");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::parse_error);
  EXPECT_NE(parsed.error().message().find("precise"), std::string::npos);
  EXPECT_NE(parsed.error().message().find("counters"), std::string::npos);
}

}  // namespace
}  // namespace heapgate
