// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The HTTP fuzz target's seeds (tests/fuzz/corpus/http_request) through the
// real server on loopback, with the target's own exchange and property
// (tests/fuzz/http_exchange.h), built with this build's compiler: the seeds
// stay meaningful where clang's libFuzzer is not available.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "heapgate/http.h"
#include "http_exchange.h"

namespace heapgate::testing {
namespace {

TEST(HttpFuzzSeeds, EveryAnswerIsWhole) {
  HttpOptions options;
  options.port = 0;
  options.jeprof_program = "/nonexistent/jeprof";
  options.request_timeout = std::chrono::seconds(2);
  options.idle_timeout = std::chrono::seconds(1);
  auto server = HttpServer::start(options);
  ASSERT_TRUE(server) << server.error().message();
  std::size_t seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(HEAPGATE_HTTP_SEEDS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string out = fuzz::exchange((*server)->port(), bytes.str());
    EXPECT_FALSE(out.empty()) << entry.path();
    EXPECT_EQ(fuzz::check_answers(out), "") << entry.path() << "\n" << out;
    ++seeds;
  }
  EXPECT_GE(seeds, 6u);
}

}  // namespace
}  // namespace heapgate::testing
