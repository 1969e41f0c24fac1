// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// What the downloads hand over: jeprof's text without the allocator's own
// frames (Debian's stripped libjemalloc would otherwise take the whole flat
// column), plain file names, and the run as a pprof file. Real jemalloc with
// every allocation profiled, real jeprof, real HTTP on loopback.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "heapgate/jeprof.h"
#include "heapgate/pprof.h"
#include "heapgate/sys.h"
#include "http_test_support.h"
#if HEAPGATE_TEST_PPROF
#include <zlib.h>

#include "gunzip_test_support.h"
#include "profile.pb.h"
#endif
#include "test_support.h"

namespace heapgate::testing {
namespace {

using nlohmann::json;

std::vector<std::unique_ptr<char[]>> g_kept;

// 2000 x 4 KiB kept live: far more than anything else allocated during a run.
__attribute__((noinline)) void download_workload() {
  for (int i = 0; i < 2000; ++i) g_kept.emplace_back(new char[4096]);
}

std::string finished_run(TestServer& t) {
  g_kept.clear();
  g_kept.reserve(4096);  // before the run: the vector's own growth stays out
  auto start = t.get("/memory-profiler/start?duration=1mins");
  EXPECT_TRUE(start && start->status == 200) << (start ? start->body : "no answer");
  download_workload();
  auto stop = t.get("/memory-profiler/stop");
  EXPECT_TRUE(stop && stop->status == 200) << (stop ? stop->body : "no answer");
  if (!stop || stop->status != 200) return {};
  return json::parse(stop->body)["id"].get<std::string>();
}

TEST(HttpDownloads, TextNamesTheWorkloadNotTheAllocator) {
  HEAPGATE_REQUIRE_PROFILING();
  if (!sys::find_program("jeprof")) GTEST_SKIP() << "jeprof missing (apt-get install libjemalloc-dev)";
  TestServer t;
  ASSERT_TRUE(t.server);
  const std::string id = finished_run(t);
  ASSERT_FALSE(id.empty());
  auto text = t.get("/memory-profiler/download/text?id=" + id);
  ASSERT_TRUE(text);
  ASSERT_EQ(text->status, 200) << text->body;
  EXPECT_EQ(text->get_header_value("Content-Disposition"),
            "attachment; filename=\"symbolized-profile." + id + ".dump\"");
  auto parsed = parse_jeprof_text(text->body);
  ASSERT_TRUE(parsed) << parsed.error().message() << "\n" << text->body;
  ASSERT_FALSE(parsed->lines.empty()) << text->body;
  const JeprofTextLine* top = &parsed->lines.front();
  for (const auto& line : parsed->lines) {
    if (line.flat > top->flat) top = &line;
  }
  EXPECT_NE(top->name.find("download_workload"), std::string::npos) << text->body;
  EXPECT_EQ(text->body.find("malloc_usable_size"), std::string::npos) << text->body;
}

TEST(HttpDownloads, GraphIsSvgWithAPlainName) {
  HEAPGATE_REQUIRE_PROFILING();
  if (!sys::find_program("jeprof") || !sys::find_program("dot")) GTEST_SKIP() << "jeprof or dot missing";
  TestServer t;
  ASSERT_TRUE(t.server);
  const std::string id = finished_run(t);
  ASSERT_FALSE(id.empty());
  auto graph = t.get("/memory-profiler/download/graph?id=" + id);
  ASSERT_TRUE(graph);
  ASSERT_EQ(graph->status, 200) << graph->body;
  EXPECT_EQ(graph->get_header_value("Content-Type"), "image/svg+xml");
  EXPECT_EQ(graph->get_header_value("Content-Disposition"), "attachment; filename=\"profile." + id + ".svg\"");
  EXPECT_NE(graph->body.find("download_workload"), std::string::npos);
}

TEST(HttpDownloads, PprofOfTheLatestRun) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  auto before = t.get("/heapgate/download/pprof");
  ASSERT_TRUE(before);
  if (!pprof_supported()) {
    EXPECT_EQ(before->status, 501);
    EXPECT_NE(before->body.find("HEAPGATE_PPROF"), std::string::npos) << before->body;
    return;
  }
  EXPECT_EQ(before->status, 400) << "no run yet";
  EXPECT_EQ(before->body, "Cannot access raw profile: Not yet generated.\n");
  const std::string id = finished_run(t);
  ASSERT_FALSE(id.empty());
  auto wrong = t.get("/heapgate/download/pprof?id=1");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 400);
  auto res = t.get("/heapgate/download/pprof?id=" + id);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Disposition"), "attachment; filename=\"profile." + id + ".pb.gz\"");
#if HEAPGATE_TEST_PPROF
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(gunzip(res->body)));
  EXPECT_EQ(p.string_table(0), "");
  // HEAPGATE_EXACT_MALLOC_CONF has prof_accum: alloc_* first, then inuse_*.
  ASSERT_EQ(p.sample_type_size(), 4);
  EXPECT_EQ(p.string_table(p.sample_type(3).type()), "inuse_space");
  std::int64_t workload_bytes = 0;
  for (const auto& s : p.sample()) {
    const auto& leaf = p.location(static_cast<int>(s.location_id(0) - 1));
    ASSERT_EQ(leaf.id(), s.location_id(0));
    ASSERT_GT(leaf.line_size(), 0);
    const auto& function = p.function(static_cast<int>(leaf.line(0).function_id() - 1));
    if (p.string_table(function.name()).find("download_workload") != std::string::npos) workload_bytes += s.value(3);
  }
  EXPECT_EQ(workload_bytes, 2000 * 4096);
#endif
}

}  // namespace
}  // namespace heapgate::testing
