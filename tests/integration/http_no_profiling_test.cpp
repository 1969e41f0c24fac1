// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// jemalloc without MALLOC_CONF=prof:true: /start answers Mesos' "profiling
// couldn't be enabled"; everything else keeps working.
#include <nlohmann/json.hpp>

#include "http_test_support.h"

namespace heapgate::testing {
namespace {

TEST(HttpNoProfiling, StartAnswersProfilingNotEnabled) {
  TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.get("/memory-profiler/start?duration=1secs");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(res->body.rfind("\nThe current process seems to be using jemalloc, but profiling\ncouldn't be enabled.", 0),
            0u)
      << res->body;
  EXPECT_NE(res->body.find("please consider filing a bug report.\n"), std::string::npos);

  auto stop = t.get("/memory-profiler/stop");
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->status, 400);
  EXPECT_EQ(stop->body, "Not yet generated.\n");

  auto state = t.get("/memory-profiler/state");
  ASSERT_TRUE(state);
  auto json = nlohmann::json::parse(state->body);
  EXPECT_EQ(json["memory_profiler"]["jemalloc_detected"], true);
  EXPECT_EQ(json["jemalloc"]["profiling_active"], false);
  EXPECT_EQ(json["jemalloc"]["malloc_conf"]["environment"], "");

  auto stats = t.get("/memory-profiler/statistics");
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->status, 200);
  EXPECT_TRUE(nlohmann::json::parse(stats->body).contains("jemalloc"));
}

}  // namespace
}  // namespace heapgate::testing
