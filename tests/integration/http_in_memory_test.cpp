// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// detail::InMemoryServer, the HTTP fuzz target's way in (docs/fuzzing.md),
// answers byte for byte what the real server answers on loopback: the same
// framing, limits, routes and error bodies, without a socket. Without
// jemalloc (this binary links none) the profiling endpoints answer Mesos'
// "not detected" errors, so both answers are deterministic.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heapgate/http.h"
#include "in_memory_server.h"

namespace heapgate::testing {
namespace {

// How many whole answers `bytes` holds (head, then Content-Length bytes).
std::size_t count_answers(std::string_view bytes) {
  std::size_t count = 0;
  for (;;) {
    const std::size_t blank = bytes.find("\r\n\r\n");
    if (blank == std::string_view::npos) return count;
    const std::string head(bytes.substr(0, blank));
    std::size_t length = 0;
    const std::string key = "\r\nContent-Length: ";
    if (auto pos = head.find(key); pos != std::string::npos) length = std::stoul(head.substr(pos + key.size()));
    if (bytes.size() < blank + 4 + length) return count;
    bytes.remove_prefix(blank + 4 + length);
    ++count;
  }
}

// Sends `request` on a new loopback connection, keeps its side open, and
// reads until `answers` whole answers arrived or the server closed.
std::string over_socket(int port, const std::string& request, std::size_t answers) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string received;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    timeval tv{};
    tv.tv_sec = 20;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::size_t sent = 0;
    while (sent < request.size()) {
      ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    char chunk[16 * 1024];
    while (count_answers(received) < answers) {
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      received.append(chunk, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return received;
}

TEST(HttpInMemory, AnswersByteForByteAsTheServerOnLoopback) {
  HttpOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.bearer_token = "secret";
  auto server = HttpServer::start(options);
  ASSERT_TRUE(server) << server.error().message();
  auto in_memory = detail::InMemoryServer::create(options);
  ASSERT_TRUE(in_memory) << in_memory.error().message();

  const std::string auth = "Authorization: Bearer secret\r\n";
  const std::vector<std::string> requests = {
      "GET /memory-profiler/state HTTP/1.1\r\n" + auth + "\r\n",
      "POST /memory-profiler/start?duration=30secs HTTP/1.1\r\n" + auth + "Content-Length: 0\r\n\r\n",
      "GET /heapgate/heap_profile?active=maybe HTTP/1.1\r\n" + auth + "\r\n",
      "GET /memory-profiler/download/raw?id=7 HTTP/1.1\r\n" + auth + "\r\n",
      "GET /nowhere HTTP/1.1\r\n" + auth + "\r\n",
      "DELETE /memory-profiler/stop HTTP/1.1\r\n" + auth + "\r\n",
      "GET /memory-profiler/state HTTP/1.1\r\nAuthorization: Bearer wrong\r\n\r\n",
      // Pipelined: both answered, in order.
      "GET /memory-profiler/statistics HTTP/1.1\r\n" + auth + "\r\nGET /heapgate/diff HTTP/1.1\r\n" + auth + "\r\n",
      // Refused by the framing: one answer, then the connection closes.
      "GET /memory-profiler/state HTTP/1.1\n\n",
      "BREW /memory-profiler/state HTTP/1.1\r\n\r\n",
      "POST /memory-profiler/start HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST /memory-profiler/start HTTP/1.1\r\nContent-Length: 999999\r\n\r\n",
      "POST /memory-profiler/start HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n",
      "GET /memory-profiler/state HTTP/1.1\r\nX-A: 1\nExpect: 100-continue\r\n\r\n",
  };
  for (const std::string& request : requests) {
    const std::string expected = (*in_memory)->answer(request);
    const std::size_t answers = count_answers(expected);
    ASSERT_GT(answers, 0u) << request;
    EXPECT_EQ(over_socket((*server)->port(), request, answers), expected) << request;
  }
  // The pipelined pair got two answers.
  EXPECT_EQ(count_answers((*in_memory)->answer(requests[7])), 2u);
}

// Found by tests/fuzz/http_request_fuzz.cpp: a bare LF inside the head hid
// the header after it from the framing but not from cpp-httplib, which
// answered "100 Continue" to an Expect the framing had not seen (and would
// obey a hidden Content-Length the same way). Such a head is refused.
TEST(HttpInMemory, RefusesAHeadWithABareLineFeed) {
  auto in_memory = detail::InMemoryServer::create(HttpOptions{});
  ASSERT_TRUE(in_memory) << in_memory.error().message();
  for (const char* request : {"GET /memory-profiler/state HTTP/1.1\r\nX-A: 1\nExpect: 100-continue\r\n\r\n",
                              "POST /memory-profiler/start HTTP/1.1\r\nX-A: 1\nContent-Length: 4\r\n\r\nbody"}) {
    const std::string answer = (*in_memory)->answer(request);
    EXPECT_EQ(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << answer;
    EXPECT_NE(answer.find("end every line of the head with CRLF"), std::string::npos) << answer;
    EXPECT_EQ(answer.find("100 Continue"), std::string::npos) << answer;
  }
}

TEST(HttpInMemory, StopsAfterTheConnectionsRequestLimitAndAtACutShortRequest) {
  auto in_memory = detail::InMemoryServer::create(HttpOptions{});
  ASSERT_TRUE(in_memory) << in_memory.error().message();
  std::string many;
  for (std::size_t i = 0; i < HttpServer::kMaxRequestsPerConnection + 5; ++i) {
    many += "GET /memory-profiler/state HTTP/1.1\r\n\r\n";
  }
  const std::string answers = (*in_memory)->answer(many);
  EXPECT_EQ(count_answers(answers), HttpServer::kMaxRequestsPerConnection);
  // The last answer says the connection closes.
  const std::size_t last = answers.rfind("HTTP/1.1 ");
  EXPECT_NE(answers.find("Connection: close", last), std::string::npos);
  EXPECT_EQ((*in_memory)->answer("GET /memory-profiler/state HTTP/1.1\r\nHost: x"), "");
  EXPECT_EQ((*in_memory)->answer(""), "");
}

TEST(HttpInMemory, RefusesTheOptionsTheServerRefuses) {
  HttpOptions options;
  options.worker_threads = 0;
  auto in_memory = detail::InMemoryServer::create(options);
  ASSERT_FALSE(in_memory);
  EXPECT_EQ(in_memory.error().where, "HttpOptions::worker_threads");
}

}  // namespace
}  // namespace heapgate::testing
