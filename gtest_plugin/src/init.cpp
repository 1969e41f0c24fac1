// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Start-up: options, and the one re-exec that gives jemalloc the settings a
// profiling mode needs (jemalloc reads MALLOC_CONF only when it starts).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "heapgate/gtest.h"
#include "heapgate/flags.h"
#include "heapgate/sys.h"

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
  std::vector<std::string> original(argv, argv + *argc);
  auto options = parse_options(argc, argv);
  if (!options) {
    std::fprintf(stderr, "heapgate: %s\n", options.error().message().c_str());
    std::exit(2);
  }
  detail::restart_once_for(options->mode, original);
  return *options;
}

}  // namespace heapgate::gtest
