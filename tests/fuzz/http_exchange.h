// SPDX-License-Identifier: MIT
// One connection's raw bytes through heapgate::HttpServer on loopback, and
// the property its answers must have. Shared by the HTTP fuzz target
// (http_request_fuzz.cpp, clang) and by http_fuzz_seeds_test, which replays
// the checked-in seeds with the main build's compiler.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace heapgate::fuzz {

inline std::string check_answers(std::string_view out);

/// Sends `bytes` on a new connection to 127.0.0.1:`port`, ends its sending
/// side, and returns everything the server wrote until it closed, or until
/// it has been quiet for 5 ms after whole answers, or for 100 ms after none:
/// libmicrohttpd 0.9.75 does not always notice that a client shut its side
/// (after an answered request, or in a request line), and keeps the
/// connection until its idle timeout. A partial answer is waited for up to
/// 10 s.
inline std::string exchange(int port, std::string_view bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string received;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    // The server may refuse early (413, 411) and close: the rest is not sent.
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::shutdown(fd, SHUT_WR);
    char chunk[16 * 1024];
    for (int quiet = 0; quiet < 2000;) {
      pollfd readable{fd, POLLIN, 0};
      if (::poll(&readable, 1, 5) == 0) {
        ++quiet;
        if (received.empty() ? quiet >= 20 : check_answers(received).empty()) break;
        continue;
      }
      quiet = 0;
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      received.append(chunk, static_cast<std::size_t>(n));
    }
  }
  // A reset instead of a close: neither side keeps the connection in
  // TIME_WAIT, so a long fuzzing run does not use up the loopback's ports.
  linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd);
  return received;
}

/// Empty when `out` is a sequence of whole HTTP/1.1 answers: each a status
/// line, a head up to a blank line, and the body its Content-Length
/// announces (none for 1xx, and none after the head of a HEAD's answer);
/// otherwise what is wrong. Nothing is checked after an answer that says
/// `Connection: close`: libmicrohttpd 0.9.75 repeats its own head in its
/// answer to a malformed Content-Length (the status and the close hold).
inline std::string check_answers(std::string_view out) {
  while (!out.empty()) {
    if (out.substr(0, 9) != "HTTP/1.1 ") return "an answer does not start with 'HTTP/1.1 '";
    const std::size_t blank = out.find("\r\n\r\n");
    if (blank == std::string_view::npos) return "an answer's head does not end";
    const std::string_view head = out.substr(0, blank + 2);
    const bool interim = out.substr(9, 1) == "1";
    std::size_t length = 0;
    bool has_length = false;
    bool closes = false;
    for (std::size_t pos = head.find("\r\n") + 2; pos < head.size();) {
      const std::size_t end = head.find("\r\n", pos);
      const std::string_view line = head.substr(pos, end - pos);
      pos = end + 2;
      constexpr std::string_view kLength = "Content-Length: ";
      if (line.substr(0, kLength.size()) == kLength) {
        length = std::strtoull(std::string(line.substr(kLength.size())).c_str(), nullptr, 10);
        has_length = true;
      }
      if (line == "Connection: close") closes = true;
    }
    out.remove_prefix(blank + 4);
    if (interim) continue;
    if (!has_length) return "an answer without Content-Length";
    if (closes) return {};
    // No body: the answer to a HEAD, followed by the next answer or nothing.
    if (length > 0 && (out.empty() || out.substr(0, 9) == "HTTP/1.1 ")) continue;
    if (out.size() < length) return "an answer shorter than its Content-Length";
    out.remove_prefix(length);
  }
  return {};
}

}  // namespace heapgate::fuzz
