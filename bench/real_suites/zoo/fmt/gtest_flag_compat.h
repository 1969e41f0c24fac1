// SPDX-License-Identifier: MIT
// The zoo's shim for fmt's vendored GoogleTest (a fused gtest from before
// 1.11: no GTEST_FLAG_GET, and its internal_run_death_test flag is declared
// in testing::internal). heapgate's gtest_flags.h reads that flag as
// ::testing::FLAGS_gtest_internal_run_death_test when GTEST_FLAG_GET is
// missing, which does not compile against it; this using-declaration makes
// the name visible there. Force-included into heapgate's plugin only.
#pragma once
#include <gtest/gtest.h>
#ifndef GTEST_FLAG_GET
namespace testing {
using ::testing::internal::FLAGS_gtest_internal_run_death_test;
}  // namespace testing
#endif
