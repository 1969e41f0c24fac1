// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The two feeds of the counting give the same numbers: heapgate's allocation
// entry points (the default) and jemalloc's hooks (HEAPGATE_COUNT_WITH=hooks,
// the fallback), in `counters` and in `exact`, on a workload that allocates in
// every way a program can (tests/helpers/counting_workload.cpp). Each
// configuration is a process of its own: the source is chosen once per process.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate {
namespace {

struct WorkloadRun {
  std::string source;   // which feed the child counted with
  std::string numbers;  // its scope's numbers, without the mode
};

WorkloadRun run_workload(const std::string& mode, bool hooks) {
  sys::ProcessOptions options;
  options.unset_env = testing::suite_unset_env();
  if (hooks) options.extra_env.push_back("HEAPGATE_COUNT_WITH=hooks");
  auto result = sys::run_process({testing::helper_binary("counting_workload"), mode}, options);
  EXPECT_TRUE(result) << (result ? "" : result.error().message());
  if (!result) return {};
  EXPECT_EQ(result->exit_code, 0) << result->stderr_text;
  WorkloadRun run;
  const std::string& out = result->stdout_text;
  const auto source_end = out.find('\n');
  if (source_end == std::string::npos || out.compare(0, 7, "source=") != 0) {
    ADD_FAILURE() << "unexpected output: " << out;
    return run;
  }
  run.source = out.substr(7, source_end - 7);
  const auto numbers = out.find(' ', source_end);
  run.numbers = numbers == std::string::npos ? std::string() : out.substr(numbers + 1);
  return run;
}

TEST(CountingSources, EntryPointsAndJemallocsHooksCountTheSame) {
  HEAPGATE_REQUIRE_COUNTERS();
  const WorkloadRun entry = run_workload("counters", false);
  const WorkloadRun hooks = run_workload("counters", true);
  EXPECT_EQ(entry.source, "entry_points");
  EXPECT_EQ(hooks.source, "jemalloc_hooks");
  EXPECT_FALSE(entry.numbers.empty());
  EXPECT_EQ(entry.numbers, hooks.numbers);
}

TEST(CountingSources, ExactCountsEqualCountersThroughEitherFeed) {
  HEAPGATE_REQUIRE_PROFILING();
  const WorkloadRun counters = run_workload("counters", false);
  const WorkloadRun exact_entry = run_workload("exact", false);
  const WorkloadRun exact_hooks = run_workload("exact", true);
  EXPECT_EQ(exact_entry.numbers, counters.numbers);
  EXPECT_EQ(exact_hooks.numbers, counters.numbers);
}

TEST(CountingSources, TheSameNumbersEveryRun) {
  HEAPGATE_REQUIRE_COUNTERS();
  const WorkloadRun first = run_workload("counters", false);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(run_workload("counters", false).numbers, first.numbers) << "run " << i;
}

}  // namespace
}  // namespace heapgate
