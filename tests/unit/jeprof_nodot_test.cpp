// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// jeprof on a machine without Graphviz. CTest runs this executable with PATH
// set to a directory that holds perl, jeprof and binutils but no `dot`
// (tests/profile_tests.cmake), so the missing program is missing for real.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "heapgate/jeprof.h"
#include "profile_test_support.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

TEST(JeprofWithoutDot, SvgIsUnavailableNamingDotWhileTextStillWorks) {
  const char* path = std::getenv("PATH");
  ASSERT_NE(path, nullptr);
  ASSERT_NE(std::string(path).find("path-without-dot"), std::string::npos)
      << "run through ctest, which sets PATH; PATH=" << path;
  ASSERT_FALSE(sys::find_program("dot")) << "the test PATH must not hold dot";
  ASSERT_TRUE(sys::find_program("jeprof")) << "jeprof missing from " << path;

  const std::string dump = testing::make_temp_dir() + "/workload.heap";
  // This process does not link jemalloc (its ENVIRONMENT holds PATH only), so
  // whether jemalloc can profile shows in the child's result.
  auto run = testing::run_heap_workload(dump, 0, 3);
  if (!run) {
    if (testing::profiling_required()) FAIL() << run.error().message();
    GTEST_SKIP() << run.error().message();
  }

  JeprofOptions o;
  o.binary = testing::helper_binary("heap_workload");
  o.profile = dump;
  o.format = JeprofFormat::svg;
  // jeprof itself would print nothing and exit 0 (its "sh: dot: not found" goes to stderr).
  auto svg = run_jeprof(o);
  ASSERT_FALSE(svg) << "got " << svg->size() << " bytes";
  EXPECT_EQ(svg.error().code, ErrorCode::unavailable);
  EXPECT_EQ(svg.error().where, "dot");
  EXPECT_NE(svg.error().what.find("dot not found"), std::string::npos) << svg.error().message();
  EXPECT_NE(svg.error().fix.find("apt-get install graphviz"), std::string::npos) << svg.error().message();

  // Everything else jeprof needs is here: only svg depends on dot.
  o.format = JeprofFormat::text;
  o.extra_args = {"--inuse_objects"};
  auto text = run_jeprof(o);
  ASSERT_TRUE(text) << text.error().message();
  auto parsed = parse_jeprof_text(*text);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(testing::flat_of(*parsed, "injected_leak"), 3);
}

}  // namespace
}  // namespace heapgate
