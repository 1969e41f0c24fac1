// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// heapgate::http::ProfilerClient against heapgate::HttpServer over real HTTP
// on loopback, plus the protocol header and the duration grammar both share.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "heapgate/memory_profiler_protocol.h"
#include "heapgate/mesos_duration.h"
#include "heapgate/profile.h"
#include "heapgate/profiler_client.h"
#include "http_test_support.h"
#include "test_support.h"

namespace heapgate::testing {
namespace {

using namespace std::chrono_literals;
using http::DownloadKind;
using http::ProfilerClient;
namespace protocol = http::memory_profiler;

ProfilerClient client_for(const TestServer& t) {
  http::ProfilerClientOptions options;
  options.url = "127.0.0.1:" + std::to_string(t.server->port());
  options.timeout = 10s;
  auto client = ProfilerClient::create(options);
  EXPECT_TRUE(client) << client.error().message();
  return std::move(*client);
}

HttpOptions fast_runs() {
  HttpOptions options;
  options.minimum_duration = 100ms;
  return options;
}

TEST(HttpClientDuration, ShortUnitsOnlyWhereAsked) {
  EXPECT_EQ(*detail::parse_duration_with_short_units("30s"), 30s);
  EXPECT_EQ(*detail::parse_duration_with_short_units("1.5m"), 90s);
  EXPECT_EQ(*detail::parse_duration_with_short_units("2h"), 2h);
  EXPECT_EQ(*detail::parse_duration_with_short_units("500ms"), 500ms);
  EXPECT_EQ(*detail::parse_duration_with_short_units("10"), 10s);
  EXPECT_EQ(*detail::parse_duration_with_short_units("2mins"), 2min);
  EXPECT_FALSE(detail::parse_duration_with_short_units("soon"));
  EXPECT_FALSE(detail::parse_duration_with_short_units("s"));
  // /start keeps Mesos' grammar: the short units are stout's error there.
  EXPECT_EQ(detail::parse_mesos_duration("30s").error(),
            "Unknown duration unit 's'; supported units are 'ns', 'us', 'ms', 'secs', 'mins', 'hrs', 'days', and "
            "'weeks'");
}

TEST(HttpClientProtocol, RoutesAndTexts) {
  EXPECT_EQ(protocol::download_path(DownloadKind::text), "/memory-profiler/download/text");
  EXPECT_EQ(protocol::parse_download_kind("graph"), DownloadKind::graph);
  EXPECT_FALSE(protocol::parse_download_kind("pdf"));
  EXPECT_EQ(protocol::first_line(protocol::kNotDetected),
            "The current binary doesn't seem to be linked against jemalloc,");
}

TEST(HttpClient, StartWaitDownloadStop) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t(fast_runs());
  ASSERT_TRUE(t.server);
  ProfilerClient client = client_for(t);

  auto started = client.start(std::chrono::milliseconds(300));
  ASSERT_TRUE(started) << started.error().message();
  EXPECT_FALSE(started->already_active);
  auto again = client.start();
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_TRUE(again->already_active);
  EXPECT_EQ(again->id, started->id);
  auto state = client.state();
  ASSERT_TRUE(state) << state.error().message();
  EXPECT_EQ(state->id, started->id);

  std::vector<double> remaining;
  auto waited = client.wait_until_finished(*started, [&](double r) { remaining.push_back(r); });
  ASSERT_TRUE(waited) << waited.error().message();
  EXPECT_FALSE(remaining.empty());
  auto raw = client.download(DownloadKind::raw, started->id);
  ASSERT_TRUE(raw) << raw.error().message();
  EXPECT_TRUE(parse_profile(*raw, "raw")) << raw->substr(0, 80);
  EXPECT_EQ(client.download_url(DownloadKind::raw, started->id),
            "http://127.0.0.1:" + std::to_string(t.server->port()) +
                "/memory-profiler/download/raw?id=" + std::to_string(started->id));

  // Another id is not served: the client says so instead of returning the
  // latest run's profile.
  auto other = client.download(DownloadKind::raw, started->id + 1000);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::conflict) << other.error().message();
  EXPECT_NE(other.error().what.find("is no longer served"), std::string::npos) << other.error().message();

  auto next = client.start(std::chrono::minutes(1));
  ASSERT_TRUE(next) << next.error().message();
  auto stopped = client.stop();
  ASSERT_TRUE(stopped) << stopped.error().message();
  EXPECT_EQ(*stopped, next->id);
}

TEST(HttpClient, DurationOutOfBoundsNamesTheSetting) {
  HEAPGATE_REQUIRE_PROFILING();
  TestServer t(fast_runs());
  ASSERT_TRUE(t.server);
  ProfilerClient client = client_for(t);
  auto started = client.start(std::chrono::milliseconds(10));
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().where, client.start_url(std::chrono::milliseconds(10)));
  EXPECT_NE(started.error().where.find("?duration=10ms"), std::string::npos) << started.error().where;
  EXPECT_NE(started.error().what.find("Duration '10ms' must be between 100ms and 1days"), std::string::npos)
      << started.error().message();
  EXPECT_EQ(started.error().fix, "give the duration in Mesos syntax within the server's bounds, e.g. 30secs or 5mins");
}

TEST(HttpClient, BadUrlsAreRefusedBeforeAnyRequest) {
  http::ProfilerClientOptions options;
  options.url = "ftp://127.0.0.1:1";
  auto scheme = ProfilerClient::create(options);
  ASSERT_FALSE(scheme);
  EXPECT_EQ(scheme.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(scheme.error().where, "the URL ftp://127.0.0.1:1");
  options.url = "http://[::1:5050";
  EXPECT_FALSE(ProfilerClient::create(options));
  // The endpoints' own base works as the URL too.
  options.url = "http://127.0.0.1:5050/proxy/memory-profiler/";
  auto based = ProfilerClient::create(options);
  ASSERT_TRUE(based) << based.error().message();
  EXPECT_EQ(based->url(protocol::kStatePath), "http://127.0.0.1:5050/proxy/memory-profiler/state");
}

TEST(HttpClient, ConnectionRefusedNamesTheUrl) {
  int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(sock);
  http::ProfilerClientOptions options;
  options.url = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto client = ProfilerClient::create(options);
  ASSERT_TRUE(client);
  auto state = client->state();
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().code, ErrorCode::unavailable);
  EXPECT_EQ(state.error().where, "http://" + options.url + "/memory-profiler/state");
  EXPECT_NE(state.error().fix.find("check the URL"), std::string::npos) << state.error().fix;
}

}  // namespace
}  // namespace heapgate::testing
