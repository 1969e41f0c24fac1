// SPDX-License-Identifier: MIT
// GoogleTest's own flags, read the same way whatever its version.
#pragma once

#include <gtest/gtest.h>

// GoogleTest 1.11 and later read a flag through GTEST_FLAG_GET; earlier
// versions only have the ::testing::GTEST_FLAG(name) variable.
#ifdef GTEST_FLAG_GET
#define HEAPGATE_GTEST_FLAG(name) GTEST_FLAG_GET(name)
#define HEAPGATE_GTEST_FLAG_SET(name, value) GTEST_FLAG_SET(name, value)
#else
#define HEAPGATE_GTEST_FLAG(name) ::testing::GTEST_FLAG(name)
#define HEAPGATE_GTEST_FLAG_SET(name, value) (::testing::GTEST_FLAG(name) = (value))
#endif
