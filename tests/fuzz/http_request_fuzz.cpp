// SPDX-License-Identifier: MIT
// Raw HTTP requests, pipelined on one connection, fed to the embedded
// server's front end in process (detail::InMemoryServer: the request framing
// and limits of connections.cpp, cpp-httplib's parser, the memory-profiler
// routes). Without jemalloc the profiling endpoints answer Mesos' errors, so
// a run is deterministic. Properties: no crash; every answer that comes back
// is a whole HTTP/1.1 response (status line, head, Content-Length body; an
// answer to HEAD announces a length and sends no body).
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_check.h"
#include "in_memory_server.h"

namespace {

// The answers parse as responses: each a status line, headers up to a blank
// line, and the body its Content-Length announces.
void check_responses(std::string_view out) {
  while (!out.empty()) {
    HEAPGATE_FUZZ_CHECK(out.substr(0, 9) == "HTTP/1.1 ");
    const std::size_t blank = out.find("\r\n\r\n");
    HEAPGATE_FUZZ_CHECK(blank != std::string_view::npos);
    const std::string_view head = out.substr(0, blank + 2);
    std::size_t length = 0;
    bool has_length = false;
    for (std::size_t pos = head.find("\r\n") + 2; pos < head.size();) {
      const std::size_t end = head.find("\r\n", pos);
      const std::string_view line = head.substr(pos, end - pos);
      pos = end + 2;
      constexpr std::string_view kLength = "Content-Length: ";
      if (line.substr(0, kLength.size()) == kLength) {
        length = std::strtoull(std::string(line.substr(kLength.size())).c_str(), nullptr, 10);
        has_length = true;
      }
    }
    HEAPGATE_FUZZ_CHECK(has_length);
    out.remove_prefix(blank + 4);
    // No body: the answer to a HEAD, followed by the next answer or nothing.
    if (length > 0 && (out.empty() || out.substr(0, 9) == "HTTP/1.1 ")) continue;
    HEAPGATE_FUZZ_CHECK(out.size() >= length);
    out.remove_prefix(length);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::unique_ptr<heapgate::detail::InMemoryServer> server = [] {
    heapgate::HttpOptions options;
    options.jeprof_program = "/nonexistent/jeprof";  // never spawn a process while fuzzing
    auto created = heapgate::detail::InMemoryServer::create(options);
    HEAPGATE_FUZZ_CHECK(created.has_value());
    return std::move(*created);
  }();
  check_responses(server->answer(heapgate::fuzz::text_of(data, size)));
  return 0;
}
