// SPDX-License-Identifier: MIT
// Start-up: Bazel's sharding variables, then the start-up every face shares
// (harness::init(): options, and the re-exec for jemalloc's settings).
#include <cstdlib>
#include <utility>

#include "heapgate/gtest.h"

namespace heapgate::gtest {
namespace {

// Bazel gives a test its shard as TEST_TOTAL_SHARDS / TEST_SHARD_INDEX and
// asks it to touch TEST_SHARD_STATUS_FILE to say it honours them; GoogleTest
// reads only its GTEST_* names. Without them every shard would run, and
// report, every test. Before RUN_ALL_TESTS, which is when GoogleTest reads them.
void adopt_bazel_sharding() {
  const std::pair<const char*, const char*> names[] = {{"TEST_TOTAL_SHARDS", "GTEST_TOTAL_SHARDS"},
                                                       {"TEST_SHARD_INDEX", "GTEST_SHARD_INDEX"},
                                                       {"TEST_SHARD_STATUS_FILE", "GTEST_SHARD_STATUS_FILE"}};
  for (const auto& [bazel, gtest] : names) {
    const char* value = std::getenv(bazel);
    if (value != nullptr && *value != '\0') ::setenv(gtest, value, /*overwrite=*/0);
  }
}

}  // namespace

Options init(int* argc, char** argv) {
  adopt_bazel_sharding();
  return harness::init(argc, argv);
}

}  // namespace heapgate::gtest
