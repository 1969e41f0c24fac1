// SPDX-License-Identifier: MIT
// Answers written straight to a connection's socket, where libmicrohttpd has
// no request to answer: 503 to a connection over the cap as it opens, 408 to
// a request that did not arrive whole in time. The socket stays
// libmicrohttpd's: it is shut down here, never closed, and libmicrohttpd
// closes it when it reads the end.
#pragma once

#include <string>

namespace heapgate::detail {

/// A whole HTTP/1.1 answer with a one-line text/plain body and
/// `Connection: close`.
std::string plain_answer(int status, const char* reason, const std::string& body);

/// Sends `answer` without blocking (it fits an idle socket's send buffer;
/// a client that does not read it loses nothing it asked for), then shuts
/// the socket down both ways.
void send_and_shut_down(int fd, const std::string& answer);

}  // namespace heapgate::detail
