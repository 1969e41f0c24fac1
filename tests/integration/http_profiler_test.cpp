// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The Mesos memory-profiler endpoints over real HTTP on loopback, with
// profiling of every allocation (HEAPGATE_EXACT_MALLOC_CONF).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "heapgate/jeprof.h"
#include "heapgate/profile_scope.h"
#include "heapgate/mesos_duration.h"
#include "http_test_support.h"
#include "heapgate/sys.h"
#include "test_support.h"

namespace heapgate::testing {
namespace {

using nlohmann::json;

// Kept live across the profile so the dump has records of this test binary.
std::vector<std::unique_ptr<char[]>> g_kept;

__attribute__((noinline)) void allocate_during_run() {
  for (int i = 0; i < 100; ++i) g_kept.emplace_back(new char[1024]);
}

json start_ok(TestServer& t, const std::string& query = "?duration=1mins") {
  auto res = t.get("/memory-profiler/start" + query);
  EXPECT_TRUE(res);
  if (!res) return {};
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  return json::parse(res->body);
}

json stop_ok(TestServer& t) {
  auto res = t.get("/memory-profiler/stop");
  EXPECT_TRUE(res);
  if (!res) return {};
  EXPECT_EQ(res->status, 200) << res->body;
  return json::parse(res->body);
}

std::string body_of(TestServer& t, const std::string& path, int status) {
  auto res = t.get(path);
  EXPECT_TRUE(res) << path;
  if (!res) return {};
  EXPECT_EQ(res->status, status) << path << ": " << res->body;
  return res->body;
}

TEST(HttpDuration, ParsesStoutSyntax) {
  using namespace std::chrono;
  EXPECT_EQ(*detail::parse_mesos_duration("5mins"), minutes(5));
  EXPECT_EQ(*detail::parse_mesos_duration("1.5secs"), milliseconds(1500));
  EXPECT_EQ(*detail::parse_mesos_duration("600"), seconds(600));  // heapgate's extension
  EXPECT_EQ(
      detail::parse_mesos_duration("600x").error(),
      "Unknown duration unit 'x'; supported units are 'ns', 'us', 'ms', 'secs', 'mins', 'hrs', 'days', and 'weeks'");
  EXPECT_EQ(detail::parse_mesos_duration("-5mins").error(), "Failed to convert '' to number");
  EXPECT_EQ(detail::parse_mesos_duration("").error(), "Invalid duration ''");
  EXPECT_EQ(detail::parse_mesos_duration("1.2.3secs").error(), "Failed to convert '1.2.3' to number");
  EXPECT_EQ(detail::format_mesos_duration(seconds(0)), "0ns");
  EXPECT_EQ(detail::format_mesos_duration(seconds(1)), "1secs");
  EXPECT_EQ(detail::format_mesos_duration(hours(25)), "25hrs");
  EXPECT_EQ(detail::format_mesos_duration(hours(24)), "1days");
  EXPECT_EQ(detail::format_mesos_duration(minutes(5)), "5mins");
  EXPECT_EQ(detail::format_mesos_duration(milliseconds(1500)), "1500ms");
}

TEST(HttpProfiler, StartStopAndRawDownloadIsHeapV2ThatJeprofReads) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  json started = start_ok(t);
  ASSERT_TRUE(started["id"].is_number());
  const long long id = started["id"];
  const std::string ids = std::to_string(id);
  EXPECT_EQ(started["remaining_seconds"], "60");
  EXPECT_EQ(started["message"],
            "Successfully started new heap profiling run. After the remaining time elapses, download the generated "
            "profile at '/memory-profiler/download/raw?id=" +
                ids + "'. Visit '/memory-profiler/stop' to stop collection earlier.");
  allocate_during_run();

  json stopped = stop_ok(t);
  EXPECT_EQ(stopped["id"], ids);  // a string in /stop, as in Mesos
  EXPECT_EQ(stopped["url_raw_profile"], "/memory-profiler/download/raw?id=" + ids);
  EXPECT_EQ(stopped["url_symbolized_profile"], "/memory-profiler/download/text?id=" + ids);
  EXPECT_EQ(stopped["url_graph_profile"], "/memory-profiler/download/graph?id=" + ids);
  // Stopping again answers the last finished run again.
  EXPECT_EQ(stop_ok(t)["id"], ids);

  auto raw = t.get("/memory-profiler/download/raw?id=" + ids);
  ASSERT_TRUE(raw);
  ASSERT_EQ(raw->status, 200) << raw->body;
  EXPECT_EQ(raw->get_header_value("Content-Type"), "application/octet-stream");
  // A plain file name, never the server's temporary directory.
  EXPECT_EQ(raw->get_header_value("Content-Disposition"), "attachment; filename=\"profile." + ids + ".dump\"");
  ASSERT_EQ(raw->body.rfind("heap_v2/1\n", 0), 0u) << raw->body.substr(0, 200);
  // Without id, after the run, the latest run is served too.
  auto latest = t.get("/memory-profiler/download/raw");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->status, 200);
  EXPECT_EQ(latest->body, raw->body);

  std::string dir = make_temp_dir();
  ASSERT_TRUE(sys::write_file_atomic(dir + "/raw.heap", raw->body));
  JeprofOptions jeprof;
  jeprof.binary = *sys::self_exe_path();
  jeprof.profile = dir + "/raw.heap";
  jeprof.extra_args = {"--show_bytes"};
  auto text = run_jeprof(jeprof);
  ASSERT_TRUE(text) << text.error().message();
  auto parsed = parse_jeprof_text(*text);
  ASSERT_TRUE(parsed) << parsed.error().message();
  // prof.reset at start: the run's 100 KiB (and some more) are in, but far
  // from everything this process holds.
  EXPECT_GE(parsed->total, 100 * 1024);
  EXPECT_NE(text->find("allocate_during_run"), std::string::npos) << *text;
}

TEST(HttpProfiler, SecondStartWhileActiveReusesTheRun) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  json first = start_ok(t, "?duration=2mins");
  json second = start_ok(t, "?duration=5secs");
  EXPECT_EQ(second["id"], first["id"]);
  EXPECT_EQ(second["message"].get<std::string>().rfind("Heap profiling is already active. After the remaining", 0), 0u);
  EXPECT_EQ(second["remaining_seconds"], "120");
  // The duration is still validated while a run is active.
  EXPECT_EQ(body_of(t, "/memory-profiler/start?duration=0secs", 400),
            "Duration '0ns' must be between 1secs and 1days.\n");
  stop_ok(t);
}

TEST(HttpProfiler, BadDurations) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  EXPECT_EQ(body_of(t, "/memory-profiler/start?duration=0secs", 400),
            "Duration '0ns' must be between 1secs and 1days.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/start?duration=25hrs", 400),
            "Duration '25hrs' must be between 1secs and 1days.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/start?duration=500ms", 400),
            "Duration '500ms' must be between 1secs and 1days.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/start?duration=5minutes", 400),
            "Could not parse parameter 'duration': Unknown duration unit 'minutes'; supported units are 'ns', 'us', "
            "'ms', 'secs', 'mins', 'hrs', 'days', and 'weeks'.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/start?duration=-5mins", 400),
            "Could not parse parameter 'duration': Failed to convert '' to number.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/start?duration=", 400),
            "Could not parse parameter 'duration': Invalid duration ''.\n");
  // Nothing was started by the rejected requests.
  EXPECT_TRUE(json::parse(body_of(t, "/memory-profiler/state", 200))["memory_profiler"]["current_run"]["id"].is_null());
  // The default is 5mins; a bare number is seconds.
  EXPECT_EQ(start_ok(t, "")["remaining_seconds"], "300");
  stop_ok(t);
  EXPECT_EQ(start_ok(t, "?duration=600")["remaining_seconds"], "600");
  stop_ok(t);
}

TEST(HttpProfiler, ErrorsBeforeAnyRun) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  EXPECT_EQ(body_of(t, "/memory-profiler/stop", 400), "Not yet generated.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw", 400), "Cannot access raw profile: Not yet generated.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/download/text", 400), "No source profile exists: Not yet generated.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/download/graph?id=5", 400), "No source profile exists: Not yet generated.\n");
  EXPECT_EQ(body_of(t, "/heapgate/download/folded", 400), "Cannot access raw profile: Not yet generated.\n");
  json state = json::parse(body_of(t, "/memory-profiler/state", 200));
  EXPECT_TRUE(state["memory_profiler"]["current_run"]["id"].is_null());
  EXPECT_EQ(state["jemalloc"]["profiling_enabled"], true);
  EXPECT_EQ(state["jemalloc"]["profiling_active"], false);
  EXPECT_NE(state["jemalloc"]["malloc_conf"]["environment"].get<std::string>().find("prof:true"), std::string::npos);
}

TEST(HttpProfiler, DownloadIdErrorsAndRunInProgress) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  start_ok(t);
  std::string ids = stop_ok(t)["id"];
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw?id=12abc", 400),
            "Invalid parameter 'id': Garbage after parsed id.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw?id=99999999999999999999", 400),
            "Invalid parameter 'id': Numerical result out of range.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw?id=1", 400), "Cannot serve requested id #1.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/download/text?id=1", 400), "Cannot serve requested id #1.\n");
  // A new run: downloads need the id of the finished one.
  json next = start_ok(t);
  EXPECT_NE(std::to_string(next["id"].get<long long>()), ids);  // ids are unique even within a second
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw", 400),
            "A profiling run is currently in progress. To download results of the previous run, please pass an 'id' "
            "explicitly.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw?id=" + ids, 200).rfind("heap_v2/", 0), 0u);
  json state = json::parse(body_of(t, "/memory-profiler/state", 200));
  EXPECT_EQ(state["memory_profiler"]["current_run"]["id"], next["id"]);
  EXPECT_GT(state["memory_profiler"]["current_run"]["remaining_seconds"].get<double>(), 50.0);
  EXPECT_EQ(state["jemalloc"]["profiling_active"], true);
  stop_ok(t);
}

TEST(HttpProfiler, RunEndsByItself) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  long long id = start_ok(t, "?duration=1secs")["id"];
  json state;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    state = json::parse(body_of(t, "/memory-profiler/state", 200));
  } while (state["memory_profiler"]["current_run"].value("remaining_seconds", 1.0) != 0 &&
           std::chrono::steady_clock::now() < until);
  EXPECT_EQ(state["memory_profiler"]["current_run"]["id"], id);
  EXPECT_EQ(state["memory_profiler"]["current_run"]["remaining_seconds"], 0);
  EXPECT_EQ(state["jemalloc"]["profiling_active"], false);
  EXPECT_NE(state["memory_profiler"]["tmp_dir"], "Not yet generated");
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw", 200).rfind("heap_v2/", 0), 0u);
}

TEST(HttpProfiler, TextAndGraphThroughJeprof) {
  HEAPGATE_REQUIRE_PROFILING();
  if (!sys::find_program("jeprof") || !sys::find_program("dot")) GTEST_SKIP() << "jeprof or dot missing";
  TestServer t;
  ASSERT_TRUE(t.server);
  start_ok(t);
  allocate_during_run();
  std::string ids = stop_ok(t)["id"];
  std::string text = body_of(t, "/memory-profiler/download/text?id=" + ids, 200);
  EXPECT_NE(text.find("Total:"), std::string::npos) << text;
  EXPECT_NE(text.find("allocate_during_run"), std::string::npos) << text;
  // Cached per run: the same file again.
  EXPECT_EQ(body_of(t, "/memory-profiler/download/text", 200), text);
  auto graph = t.get("/memory-profiler/download/graph?id=" + ids);
  ASSERT_TRUE(graph);
  ASSERT_EQ(graph->status, 200) << graph->body;
  EXPECT_EQ(graph->get_header_value("Content-Type"), "image/svg+xml");
  EXPECT_EQ(graph->get_header_value("Content-Disposition"), "attachment; filename=\"profile." + ids + ".svg\"");
  EXPECT_NE(graph->body.find("<svg"), std::string::npos);
}

TEST(HttpProfiler, JeprofMissingAnswersMesosError) {
  HEAPGATE_REQUIRE_PROFILING();
  HttpOptions options;
  options.jeprof_program = "/nonexistent/jeprof";
  TestServer t(options);
  ASSERT_TRUE(t.server);
  start_ok(t);
  stop_ok(t);
  const std::string expected =
      "Cannot generate file: Failed to create artifact: Error trying to run jeprof. Please make sure that jeprof is "
      "installed and that the input file contains data. For more information, please consult the log files of this "
      "process.\n";
  EXPECT_EQ(body_of(t, "/memory-profiler/download/text", 400), expected);
  EXPECT_EQ(body_of(t, "/memory-profiler/download/graph", 400), expected);
  // The raw profile is unaffected.
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw", 200).rfind("heap_v2/", 0), 0u);
}

TEST(HttpProfiler, StatisticsIsJemallocJson) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.get("/memory-profiler/statistics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json; charset=utf-8");
  json stats = json::parse(res->body);
  EXPECT_TRUE(stats["jemalloc"]["stats"].contains("allocated"));
}

TEST(HttpProfiler, PostWorksLikeGet) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.client->Post("/memory-profiler/start?duration=1mins");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = t.client->Post("/memory-profiler/stop");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpProfiler, ConcurrentClientsSeeOneRun) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  const int port = t.server->port();
  constexpr int kClients = 8;
  std::vector<std::thread> threads;
  std::vector<std::string> starts(kClients), stops(kClients);
  std::atomic<int> go{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      httplib::Client client("127.0.0.1", port);
      ++go;
      while (go < kClients) std::this_thread::yield();
      if (auto r = client.Get("/memory-profiler/start?duration=1mins")) starts[i] = r->body;
      for (int k = 0; k < 5; ++k) {
        auto s = client.Get("/memory-profiler/state");
        if (s) {
          EXPECT_EQ(json::parse(s->body)["jemalloc"]["profiling_active"], true);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  threads.clear();
  int fresh = 0;
  std::set<long long> ids;
  for (const auto& body : starts) {
    json j = json::parse(body);
    ids.insert(j["id"].get<long long>());
    fresh += j["message"].get<std::string>().rfind("Successfully started", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(fresh, 1);
  EXPECT_EQ(ids.size(), 1u);
  // Concurrent stops and downloads: every stop names the one run; every raw
  // download that succeeds is a complete profile.
  go = 0;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      httplib::Client client("127.0.0.1", port);
      ++go;
      while (go < kClients) std::this_thread::yield();
      if (auto r = client.Get("/memory-profiler/stop")) stops[i] = r->body;
      auto raw = client.Get("/memory-profiler/download/raw?id=" + std::to_string(*ids.begin()));
      ASSERT_TRUE(raw);
      EXPECT_EQ(raw->status, 200);
      EXPECT_EQ(raw->body.rfind("heap_v2/", 0), 0u);
      EXPECT_NE(raw->body.find("MAPPED_LIBRARIES:"), std::string::npos);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& body : stops) EXPECT_EQ(json::parse(body)["id"], std::to_string(*ids.begin()));
}

TEST(HttpProfiler, ClientDisconnectingMidDownloadLeavesServerHealthy) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  start_ok(t);
  allocate_during_run();
  stop_ok(t);
  for (int i = 0; i < 5; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(t.server->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string request = "GET /memory-profiler/download/raw HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    char buffer[64];
    EXPECT_GT(::recv(fd, buffer, sizeof buffer, 0), 0);
    ::close(fd);  // mid-download
  }
  EXPECT_EQ(body_of(t, "/memory-profiler/download/raw", 200).rfind("heap_v2/", 0), 0u);
  EXPECT_EQ(
      json::parse(body_of(t, "/memory-profiler/state", 200))["memory_profiler"]["current_run"]["remaining_seconds"], 0);
}

TEST(HttpProfiler, BearerToken) {
  HttpOptions options;
  options.bearer_token = "s3cret";
  TestServer t(options);
  ASSERT_TRUE(t.server);
  auto none = t.get("/memory-profiler/state");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"heapgate\"");
  auto wrong = t.get("/memory-profiler/state", {{"Authorization", "Bearer s3cre"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto right = t.get("/memory-profiler/state", {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
}

TEST(HttpProfiler, UnknownRouteIs404) {
  TestServer t;
  ASSERT_TRUE(t.server);
  auto res = t.get("/memory-profiler/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST(HttpProfiler, LibmtevStyleToggleAndDump) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  EXPECT_EQ(body_of(t, "/heapgate/heap_profile", 200),
            "opt.prof: true\nprof.active: false\nprof.thread_active_init: true\n");
  EXPECT_EQ(body_of(t, "/heapgate/heap_profile?active=", 400), "Parameter 'active' needs a value: true or false\n");
  EXPECT_EQ(body_of(t, "/heapgate/heap_profile?active=true", 200), "Profiling is activated\n");
  // Profiling is on, not by a run: Mesos' answers.
  EXPECT_EQ(body_of(t, "/memory-profiler/start", 409), "Heap profiling was started externally.\n");
  EXPECT_EQ(body_of(t, "/memory-profiler/stop", 400),
            "Profiling is active, but was not started by libprocess. Accessing the raw profile through libprocess "
            "is currently not supported.\n");
  auto dump = t.get("/heapgate/heap_profile?trigger_dump=true");
  ASSERT_TRUE(dump);
  EXPECT_EQ(dump->status, 200);
  EXPECT_EQ(dump->get_header_value("Content-Type"), "application/x-jemalloc-heap-profile");
  EXPECT_EQ(dump->body.rfind("heap_v2/1\n", 0), 0u);
  EXPECT_EQ(body_of(t, "/heapgate/heap_profile?active=false", 200), "Profiling is deactivated\n");
  // And the Mesos run works again.
  start_ok(t);
  EXPECT_EQ(body_of(t, "/heapgate/heap_profile?active=false", 409), "A profiling run is currently in progress.\n");
  stop_ok(t);
}

TEST(HttpProfiler, RunsAndProfileScopesExcludeEachOther) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  {
    ProfileScope scope{"owner", Mode::exact};
    ASSERT_EQ(scope.mode(), Mode::exact);
    EXPECT_EQ(body_of(t, "/memory-profiler/start", 409), "Heap profiling was started externally.\n");
    ASSERT_TRUE(scope.finish());
  }
  start_ok(t);
  {
    ProfileScope scope{"during_run", Mode::exact};
    EXPECT_EQ(scope.mode(), Mode::counters);
  }
  json state = json::parse(body_of(t, "/memory-profiler/state", 200));
  EXPECT_EQ(state["jemalloc"]["profiling_active"], true);
  stop_ok(t);
}

TEST(HttpProfiler, FoldedAndDiffByHeapgate) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  start_ok(t);
  allocate_during_run();
  std::string first = stop_ok(t)["id"];
  std::string folded = body_of(t, "/heapgate/download/folded?id=" + first, 200);
  EXPECT_NE(folded.find("allocate_during_run"), std::string::npos) << folded;
  EXPECT_EQ(body_of(t, "/heapgate/download/folded?metric=bogus", 400).rfind("Invalid parameter 'metric': ", 0), 0u);
  EXPECT_EQ(body_of(t, "/heapgate/diff", 400), "No previous run to compare against.\n");
  start_ok(t);
  allocate_during_run();
  allocate_during_run();
  std::string second = stop_ok(t)["id"];
  std::string diff = body_of(t, "/heapgate/diff?base=" + first, 200);
  EXPECT_EQ(diff.rfind("base: run " + first + "\ncurrent: run " + second + "\n", 0), 0u) << diff;
  EXPECT_NE(diff.find("allocate_during_run"), std::string::npos) << diff;
  EXPECT_EQ(body_of(t, "/heapgate/diff?base=1", 400), "Cannot serve requested base #1.\n");
  EXPECT_EQ(body_of(t, "/heapgate/diff?format=svg", 400),
            "Invalid parameter 'format': expected text or folded, got 'svg'.\n");
  EXPECT_NE(body_of(t, "/heapgate/diff?format=folded", 200).find("allocate_during_run"), std::string::npos);
}

TEST(HttpProfiler, FlamegraphByHeapgate) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t;
  ASSERT_TRUE(t.server);
  EXPECT_EQ(body_of(t, "/heapgate/download/flamegraph", 400), "Cannot access raw profile: Not yet generated.\n");
  start_ok(t);
  allocate_during_run();
  std::string id = stop_ok(t)["id"];
  auto svg = t.get("/heapgate/download/flamegraph?id=" + id + "&metric=live_objects");
  ASSERT_TRUE(svg);
  ASSERT_EQ(svg->status, 200) << svg->body;
  EXPECT_EQ(svg->get_header_value("Content-Type"), "image/svg+xml");
  EXPECT_EQ(svg->body.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n<svg ", 0), 0u);
  EXPECT_EQ(svg->body.substr(svg->body.size() - 7), "</svg>\n");
  EXPECT_NE(svg->body.find("heapgate: run " + id + ", live_objects"), std::string::npos);
  // The 100 blocks kept by allocate_during_run are a frame, with a tooltip in objects.
  const std::size_t frame = svg->body.find("allocate_during_run() (");
  ASSERT_NE(frame, std::string::npos) << svg->body;
  EXPECT_NE(svg->body.find(" objects, ", frame), std::string::npos);
  // Latest run without an id; live_bytes by default.
  std::string latest = body_of(t, "/heapgate/download/flamegraph", 200);
  EXPECT_NE(latest.find("heapgate: run " + id + ", live_bytes"), std::string::npos);
  EXPECT_NE(latest.find(" bytes, "), std::string::npos);
  // The checks of /heapgate/download/folded.
  EXPECT_EQ(body_of(t, "/heapgate/download/flamegraph?metric=bogus", 400).rfind("Invalid parameter 'metric': ", 0), 0u);
  EXPECT_EQ(body_of(t, "/heapgate/download/flamegraph?id=1", 400), "Cannot serve requested id #1.\n");
  EXPECT_EQ(body_of(t, "/heapgate/download/flamegraph?id=12abc", 400),
            "Invalid parameter 'id': Garbage after parsed id.\n");
  start_ok(t);
  EXPECT_EQ(body_of(t, "/heapgate/download/flamegraph", 400),
            "A profiling run is currently in progress. To download results of the previous run, please pass an 'id' "
            "explicitly.\n");
  EXPECT_EQ(body_of(t, "/heapgate/download/flamegraph?id=" + id, 200).rfind("<?xml", 0), 0u);
  stop_ok(t);
}

TEST(HttpEnvironment, ParsesAddressAndToken) {
  ::setenv("HEAPGATE_HTTP", "0.0.0.0:6060", 1);
  ::setenv("HEAPGATE_HTTP_TOKEN", "tok", 1);
  auto options = http_options_from_environment();
  ASSERT_TRUE(options);
  EXPECT_EQ(options->host, "0.0.0.0");
  EXPECT_EQ(options->port, 6060);
  EXPECT_EQ(options->bearer_token, "tok");
  ::setenv("HEAPGATE_HTTP", "7070", 1);
  options = http_options_from_environment();
  ASSERT_TRUE(options);
  EXPECT_EQ(options->host, "127.0.0.1");  // loopback unless an address is given
  EXPECT_EQ(options->port, 7070);
  ::setenv("HEAPGATE_HTTP", "localhost:http", 1);
  options = http_options_from_environment();
  ASSERT_FALSE(options);
  EXPECT_EQ(options.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(options.error().where, "HEAPGATE_HTTP");
  ::unsetenv("HEAPGATE_HTTP");
  ::unsetenv("HEAPGATE_HTTP_TOKEN");
  options = http_options_from_environment();
  ASSERT_TRUE(options);
  EXPECT_EQ(options->host, "127.0.0.1");
  EXPECT_EQ(options->port, 5050);
  EXPECT_TRUE(options->bearer_token.empty());

  ::unsetenv("HEAPGATE_MEMORY_PROFILING");
  auto off = HttpServer::from_environment();
  ASSERT_TRUE(off);
  EXPECT_EQ(*off, nullptr);
  ::setenv("HEAPGATE_MEMORY_PROFILING", "true", 1);
  ::setenv("HEAPGATE_HTTP", "127.0.0.1:0", 1);
  auto on = HttpServer::from_environment();
  ::unsetenv("HEAPGATE_MEMORY_PROFILING");
  ::unsetenv("HEAPGATE_HTTP");
  ASSERT_TRUE(on) << on.error().message();
  ASSERT_NE(*on, nullptr);
  EXPECT_GT((*on)->port(), 0);
  httplib::Client client("127.0.0.1", (*on)->port());
  auto res = client.Get("/memory-profiler/state");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpEnvironment, BusyPortIsAnError) {
  TestServer t;
  ASSERT_TRUE(t.server);
  HttpOptions options;
  options.port = t.server->port();
  auto second = HttpServer::start(options);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::io_error);
}

}  // namespace
}  // namespace heapgate::testing
