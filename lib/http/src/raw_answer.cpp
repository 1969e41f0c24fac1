// SPDX-License-Identifier: MIT
// plain_answer() and send_and_shut_down() (raw_answer.h): a whole text/plain HTTP answer written
// straight to a socket without blocking, then the socket shut down both ways.
#include "raw_answer.h"

#include <sys/socket.h>

#include <cerrno>

namespace heapgate::detail {

std::string plain_answer(int status, const char* reason, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

void send_and_shut_down(int fd, const std::string& answer) {
  std::size_t sent = 0;
  while (sent < answer.size()) {
    ssize_t n = ::send(fd, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  // Both ways: libmicrohttpd's next read sees the end and closes the
  // connection, instead of reading what the client still sends.
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace heapgate::detail
