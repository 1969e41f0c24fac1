// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Without jemalloc the endpoints answer with Mesos' errors; nothing crashes.
#include <nlohmann/json.hpp>

#include "http_test_support.h"

namespace heapgate::testing {
namespace {

const std::string kNotDetectedStart = "\nThe current binary doesn't seem to be linked against jemalloc,";

TEST(HttpNoJemalloc, ProfilingEndpointsAnswerNotDetected) {
  TestServer t;
  ASSERT_TRUE(t.server);
  for (const char* path : {"/memory-profiler/start", "/memory-profiler/start?duration=5secs", "/memory-profiler/stop",
                           "/memory-profiler/statistics"}) {
    auto res = t.get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path;
    EXPECT_EQ(res->body.rfind(kNotDetectedStart, 0), 0u) << path << ": " << res->body;
    EXPECT_NE(res->body.find("--enable-jemalloc-allocator configuration option.\n"), std::string::npos) << path;
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; charset=utf-8");
  }
}

TEST(HttpNoJemalloc, StateOmitsJemallocObject) {
  TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.get("/memory-profiler/state");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  auto json = nlohmann::json::parse(res->body);
  EXPECT_FALSE(json.contains("jemalloc"));
  EXPECT_EQ(json["memory_profiler"]["jemalloc_detected"], false);
  EXPECT_TRUE(json["memory_profiler"]["current_run"]["id"].is_null());
  EXPECT_FALSE(json["memory_profiler"]["current_run"].contains("remaining_seconds"));
  EXPECT_EQ(json["memory_profiler"]["tmp_dir"], "Not yet generated");
}

TEST(HttpNoJemalloc, DownloadsAnswerNotYetGenerated) {
  TestServer t;
  ASSERT_TRUE(t.server);
  auto raw = t.get("/memory-profiler/download/raw");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 400);
  EXPECT_EQ(raw->body, "Cannot access raw profile: Not yet generated.\n");
  auto text = t.get("/memory-profiler/download/text");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->body, "No source profile exists: Not yet generated.\n");
  auto mtev = t.get("/heapgate/heap_profile?active=true");
  ASSERT_TRUE(mtev);
  EXPECT_EQ(mtev->status, 500);
  EXPECT_EQ(mtev->body, "libjemalloc is not loaded, cannot heap profile\n");
}

}  // namespace
}  // namespace heapgate::testing
