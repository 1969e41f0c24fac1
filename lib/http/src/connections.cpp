// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "connections.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

namespace heapgate::detail {

using Clock = std::chrono::steady_clock;

struct Connections::Connection {
  Connection(int socket, std::atomic<std::size_t>& open_count) : fd(socket), open(open_count) {}
  ~Connection() {
    ::close(fd);
    open.fetch_sub(1);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd;
  std::atomic<std::size_t>& open;
  /// Received and not yet answered: the request being framed, and whatever a
  /// pipelining client sent after it.
  std::string in;
  /// Idle: the next request must start by then; receiving: end by then;
  /// draining: the socket closes then.
  Clock::time_point deadline;
  std::size_t served = 0;
  bool in_epoll = false;
  /// The client shut down its side; what it sent is still answered.
  bool peer_closed = false;
  bool sent_continue = false;
  /// An error was answered and the write side shut down; input is read and
  /// dropped until the client closes, so that closing does not reset the
  /// connection before the client has read the answer.
  bool draining = false;
  std::size_t drained = 0;
};

namespace {

// After an error answer: how long, and how much, is read and dropped.
constexpr auto kDrainTime = std::chrono::seconds(2);
constexpr std::size_t kDrainBytes = 1 << 20;

// cpp-httplib's per-line bound in read_headers (CPPHTTPLIB_HEADER_MAX_LENGTH).
constexpr std::size_t kHttplibHeaderLine = 8192;

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string seconds_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

const char* reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

std::string error_response(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// The socket is non-blocking and the answer small: it fits the empty send
// buffer, and a client that does not read it loses nothing it asked for.
void send_best_effort(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

// What the bytes received so far hold.
struct Framing {
  // whole: head_complete, with the body arrived too and the head rewritten
  // for cpp-httplib (take_request).
  enum class State { incomplete, head_complete, whole, rejected };
  State state = State::incomplete;
  int status = 0;
  std::string message;
  std::size_t request_line_end = 0;  // past its CRLF
  std::size_t head_length = 0;       // past the blank line
  std::size_t body_length = 0;
  bool has_content_length = false;
  bool expects_continue = false;
};

Framing reject(int status, std::string message) {
  Framing f;
  f.state = Framing::State::rejected;
  f.status = status;
  f.message = std::move(message);
  return f;
}

// The methods cpp-httplib parses (it refuses others with an empty 400);
// PRI is HTTP/2's preface, not a request.
bool known_method(std::string_view method) {
  for (std::string_view m : {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}) {
    if (m == method) return true;
  }
  return false;
}

Framing frame(std::string_view in, const ConnectionLimits& limits) {
  const std::size_t newline = in.find('\n');
  const std::size_t line_length = newline == std::string_view::npos ? in.size() : newline + 1;
  if (line_length > limits.max_request_line) {
    return reject(414, "URI too long: the request line exceeds " + std::to_string(limits.max_request_line) +
                           " bytes; shorten the path and query.\n");
  }
  if (newline == std::string_view::npos) return {};
  std::string_view line = in.substr(0, newline);
  const std::string bad_line = "Bad request line: send 'METHOD /path HTTP/1.1' ending in CRLF.\n";
  if (line.empty() || line.back() != '\r') return reject(400, bad_line);
  line.remove_suffix(1);
  // Exactly three parts, one space apart, none empty.
  const std::size_t first_space = line.find(' ');
  const std::size_t last_space = line.rfind(' ');
  if (first_space == std::string_view::npos || line.find(' ', first_space + 1) != last_space) {
    return reject(400, bad_line);
  }
  const std::string_view method = line.substr(0, first_space);
  const std::string_view target = line.substr(first_space + 1, last_space - first_space - 1);
  const std::string_view version = line.substr(last_space + 1);
  if (method.empty() || target.empty() || (version != "HTTP/1.1" && version != "HTTP/1.0")) {
    return reject(400, bad_line);
  }
  if (!known_method(method)) {
    return reject(501, "Method '" + std::string(method) + "' is not implemented: use GET or POST.\n");
  }

  const std::size_t blank = in.find("\r\n\r\n");
  const std::string too_large = "Request header fields too large: the request line and headers exceed " +
                                std::to_string(limits.max_head) + " bytes, or one header line " +
                                std::to_string(kHttplibHeaderLine) + "; send fewer or shorter headers.\n";
  if (blank == std::string_view::npos) {
    if (in.size() > limits.max_head) return reject(431, too_large);
    return {};
  }
  Framing f;
  f.request_line_end = newline + 1;
  f.head_length = blank + 4;
  if (f.head_length > limits.max_head) return reject(431, too_large);
  // Each header line, without its CRLF; the blank line's CRLF ends the last.
  for (std::size_t pos = f.request_line_end; pos < blank + 2;) {
    std::size_t end = in.find("\r\n", pos);
    std::string_view header = in.substr(pos, end - pos);
    pos = end + 2;
    if (header.size() + 2 > kHttplibHeaderLine) return reject(431, too_large);
    // cpp-httplib ends a header line at a bare LF too; the framing would read
    // the next header as part of this one's value and miss an Expect or a
    // Content-Length that cpp-httplib then obeys (found by
    // tests/fuzz/http_request_fuzz.cpp).
    if (header.find('\n') != std::string_view::npos) {
      return reject(400, "Bad header line: a line ends in LF without CR; end every line of the head with CRLF.\n");
    }
    const std::size_t colon = header.find(':');
    if (colon == std::string_view::npos) continue;  // cpp-httplib skips it too
    const std::string_view name = header.substr(0, colon);
    const std::string_view value = trimmed(header.substr(colon + 1));
    // RFC 9112 §5.1; cpp-httplib would not recognise the name, and the body
    // would be read as the next request.
    if (name.empty() || name.back() == ' ' || name.back() == '\t') {
      return reject(400, "Bad header line '" + std::string(name) + "': no whitespace before the colon.\n");
    }
    if (equals_ignoring_case(name, "Content-Length")) {
      std::size_t length = 0;
      bool digits = !value.empty() && value.size() <= 18;
      for (char c : value) {
        if (c < '0' || c > '9') {
          digits = false;
          break;
        }
        length = length * 10 + static_cast<std::size_t>(c - '0');
      }
      if (!digits) {
        return reject(400, "Invalid Content-Length '" + std::string(value) + "': send the body's size in bytes.\n");
      }
      // Two lengths that disagree are how requests get smuggled past proxies.
      if (f.has_content_length && length != f.body_length) {
        return reject(400, "Conflicting Content-Length headers: send exactly one.\n");
      }
      f.has_content_length = true;
      f.body_length = length;
    } else if (equals_ignoring_case(name, "Transfer-Encoding")) {
      return reject(411, "Transfer-Encoding is not accepted: send the body with Content-Length (at most " +
                             std::to_string(limits.max_body) + " bytes).\n");
    } else if (equals_ignoring_case(name, "Expect") && equals_ignoring_case(value, "100-continue")) {
      f.expects_continue = true;
    }
  }
  if (f.body_length > limits.max_body) {
    return reject(413, "Request body too large: Content-Length is " + std::to_string(f.body_length) +
                           " bytes, the limit is " + std::to_string(limits.max_body) +
                           " (these endpoints take their parameters in the query).\n");
  }
  f.state = Framing::State::head_complete;
  return f;
}

// The head as cpp-httplib is to read it: without Expect (the client has its
// 100 Continue, or sent the body anyway), and with Content-Length: 0 when it
// had no length. A request without a length has no body (RFC 9112 §6.3), but
// cpp-httplib reads a POST without one until the client closes, which it
// never does before its answer.
std::string normalized_head(std::string_view in, const Framing& f) {
  std::string head(in.substr(0, f.request_line_end));
  for (std::size_t pos = f.request_line_end; pos < f.head_length - 2;) {
    std::size_t end = in.find("\r\n", pos);
    std::string_view header = in.substr(pos, end + 2 - pos);
    pos = end + 2;
    std::string_view name = header.substr(0, header.find(':'));
    if (equals_ignoring_case(name, "Expect")) continue;
    head += header;
  }
  if (!f.has_content_length) head += "Content-Length: 0\r\n";
  head += "\r\n";
  return head;
}

// What the socket path (Connections::evaluate) and answer_request_bytes do
// with the bytes a connection sent: frames them and, once the next request is
// whole, rewrites its head in place as cpp-httplib is to read it.
Framing take_request(std::string& in, const ConnectionLimits& limits) {
  Framing f = frame(in, limits);
  if (f.state != Framing::State::head_complete || in.size() < f.head_length + f.body_length) return f;
  if (!f.has_content_length || f.expects_continue) {
    std::string head = normalized_head(in, f);
    in.replace(0, f.head_length, head);
    f.head_length = head.size();
  }
  f.state = Framing::State::whole;
  return f;
}

std::string address_text(const sockaddr_storage& address, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  port = 0;
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  return text;
}

// One request, whole in memory, and the socket its answer goes to. Reading
// never waits on the client: past the request, the stream is at its end.
// Reads one request already whole in memory: in[0, request_end).
class BufferedRequest : public httplib::Stream {
 public:
  BufferedRequest(const std::string& in, std::size_t request_end) : in_(in), end_(request_end) {}

  bool is_readable() const override { return offset_ < end_; }
  ssize_t read(char* ptr, std::size_t size) override {
    const std::size_t n = std::min(size, end_ - offset_);
    std::memcpy(ptr, in_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }

 private:
  const std::string& in_;
  const std::size_t end_;
  std::size_t offset_ = 0;
};

class RequestStream final : public BufferedRequest {
 public:
  RequestStream(int fd, const std::string& in, std::size_t request_end, std::chrono::milliseconds write_timeout)
      : BufferedRequest(in, request_end), fd_(fd), write_timeout_ms_(static_cast<int>(write_timeout.count())) {}

  bool is_writable() const override { return wait_writable(); }

  ssize_t write(const char* ptr, std::size_t size) override {
    std::size_t sent = 0;
    while (sent < size) {
      ssize_t n = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_writable()) {
        continue;
      } else {
        return -1;
      }
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    ip = ::getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0 ? address_text(address, port) : "";
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    ip = ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0 ? address_text(address, port) : "";
  }
  socket_t socket() const override { return fd_; }

 private:
  bool wait_writable() const {
    pollfd p{fd_, POLLOUT, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, write_timeout_ms_);
    } while (ready < 0 && errno == EINTR);
    return ready > 0 && (p.revents & POLLOUT) != 0;
  }

  const int fd_;
  const int write_timeout_ms_;
};

// One request, whole in memory, whose answer is appended to a string.
class MemoryStream final : public BufferedRequest {
 public:
  MemoryStream(const std::string& in, std::size_t request_end, std::string& out)
      : BufferedRequest(in, request_end), out_(out) {}

  bool is_writable() const override { return true; }
  ssize_t write(const char* ptr, std::size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 0;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 0;
  }
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  std::string& out_;
};

}  // namespace

std::string answer_request_bytes(std::string_view bytes, const ConnectionLimits& limits, const ServeRequest& serve) {
  // A connection holds at most this much unanswered (on_readable).
  const std::size_t capacity = limits.max_head + limits.max_body;
  std::string in;
  std::string out;
  std::size_t served = 0;
  for (;;) {
    const std::size_t take = std::min(bytes.size(), capacity - std::min(capacity, in.size()));
    in.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    Framing f = take_request(in, limits);
    if (f.state == Framing::State::rejected) {
      out += error_response(f.status, f.message);
      return out;
    }
    if (f.state != Framing::State::whole) {
      // The buffer is full and still holds no whole request (evaluate's 431),
      // or the client sent no more: a request cut short gets no answer.
      if (!bytes.empty()) {
        out += error_response(431, "Request too large: send at most " + std::to_string(limits.max_head) +
                                       " bytes of head and " + std::to_string(limits.max_body) + " of body.\n");
      }
      return out;
    }
    const std::size_t request_end = f.head_length + f.body_length;
    const bool last = ++served >= limits.max_requests_per_connection;
    MemoryStream stream(in, request_end, out);
    bool closed = false;
    const bool answered = serve(stream, last, closed);
    if (!answered || closed || last) return out;
    in.erase(0, request_end);
  }
}

Result<std::unique_ptr<Connections>> Connections::start(ConnectionLimits limits, ServeRequest serve) {
  int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd < 0 || wake_fd < 0) {
    const std::string reason_text = std::strerror(errno);
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (wake_fd >= 0) ::close(wake_fd);
    return fail(make_error(ErrorCode::io_error, "HttpServer", "cannot create the connection poller: " + reason_text,
                           "raise the open-file limit (ulimit -n)"));
  }
  std::unique_ptr<Connections> connections(new Connections(std::move(limits), std::move(serve), epoll_fd, wake_fd));
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = wake_fd;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &event);
  Connections* self = connections.get();
  self->reader_ = std::thread([self] { self->reader_loop(); });
  for (std::size_t i = 0; i < self->limits_.workers; ++i) self->workers_.emplace_back([self] { self->worker_loop(); });
  return connections;
}

Connections::Connections(ConnectionLimits limits, ServeRequest serve, int epoll_fd, int wake_fd)
    : limits_(std::move(limits)), serve_(std::move(serve)), epoll_fd_(epoll_fd), wake_fd_(wake_fd) {}

Connections::~Connections() {
  stop();
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

void Connections::wake() {
  std::uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_, &one, sizeof one);
  (void)ignored;  // the counter only saturates when a wakeup is pending anyway
}

void Connections::adopt(int fd) {
  if (open_.fetch_add(1) >= limits_.max_connections) {
    Connection refused(fd, open_);
    send_best_effort(fd, error_response(503, "Too many connections: " + std::to_string(limits_.max_connections) +
                                                 " are open; retry shortly.\n"));
    return;
  }
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  // Answers go out in one or two writes; without it a kept-alive client
  // waits ~40 ms per answer (Nagle against delayed ACK).
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  {
    std::lock_guard<std::mutex> lock(handover_mutex_);
    if (stopping_) {
      Connection closed(fd, open_);
      return;
    }
    adopted_.push_back(fd);
  }
  wake();
}

void Connections::stop() {
  std::call_once(stopped_, [this] {
    {
      // Under both locks: adopt() and serve() then see it before handing
      // over, and no worker is between its check and its wait.
      std::lock_guard<std::mutex> handover(handover_mutex_);
      std::lock_guard<std::mutex> jobs(jobs_mutex_);
      stopping_ = true;
    }
    wake();
    if (reader_.joinable()) reader_.join();
    jobs_ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    // Connections the workers handed back after the reader left.
    std::lock_guard<std::mutex> lock(handover_mutex_);
    for (int fd : adopted_) Connection closed(fd, open_);
    adopted_.clear();
    returned_.clear();
  });
}

void Connections::reader_loop() {
  std::array<epoll_event, 64> events;
  while (!stopping_) {
    int timeout_ms = -1;
    if (!owned_.empty()) {
      Clock::time_point earliest = Clock::time_point::max();
      for (const auto& [fd, connection] : owned_) earliest = std::min(earliest, connection->deadline);
      auto wait = std::chrono::ceil<std::chrono::milliseconds>(earliest - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<decltype(wait)>(wait, 0, std::numeric_limits<int>::max()));
    }
    int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int i = 0; i < n; ++i) {
      if (events[static_cast<std::size_t>(i)].data.fd == wake_fd_) {
        take_handovers();
      } else {
        on_readable(events[static_cast<std::size_t>(i)].data.fd);
      }
    }
    expire_deadlines();
  }
  owned_.clear();
}

void Connections::take_handovers() {
  std::uint64_t count = 0;
  ssize_t ignored = ::read(wake_fd_, &count, sizeof count);
  (void)ignored;  // EAGAIN: another wakeup already drained it
  std::vector<int> adopted;
  std::vector<std::unique_ptr<Connection>> returned;
  {
    std::lock_guard<std::mutex> lock(handover_mutex_);
    adopted.swap(adopted_);
    returned.swap(returned_);
  }
  for (int fd : adopted) {
    auto connection = std::make_unique<Connection>(fd, open_);
    connection->deadline = Clock::now() + limits_.idle_timeout;
    watch(std::move(connection));
  }
  for (auto& connection : returned) watch(std::move(connection));
}

void Connections::watch(std::unique_ptr<Connection> connection) {
  const int fd = connection->fd;
  Connection& c = *connection;
  owned_[fd] = std::move(connection);
  // Bytes a pipelining client sent after the last request may already hold
  // the next one.
  if (!c.in.empty()) {
    evaluate(fd);
    if (owned_.find(fd) == owned_.end()) return;
  }
  if (c.peer_closed) {
    forget(fd);  // nothing more will arrive: what is here was not a request
    return;
  }
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.fd = fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    forget(fd);
    return;
  }
  c.in_epoll = true;
}

void Connections::forget(int fd) {
  auto it = owned_.find(fd);
  if (it == owned_.end()) return;
  if (it->second->in_epoll) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  owned_.erase(it);
}

void Connections::on_readable(int fd) {
  auto it = owned_.find(fd);
  if (it == owned_.end()) return;
  Connection& c = *it->second;
  // Never more than one bounded request (and what fits beside it) in memory.
  const std::size_t capacity = limits_.max_head + limits_.max_body;
  char buffer[16 * 1024];
  for (;;) {
    std::size_t want = sizeof buffer;
    if (!c.draining) {
      if (c.in.size() >= capacity) break;
      want = std::min(want, capacity - c.in.size());
    }
    ssize_t n = ::recv(fd, buffer, want, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 || (n == 0 && c.draining)) {
      forget(fd);
      return;
    }
    if (n == 0) {
      c.peer_closed = true;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      c.in_epoll = false;
      break;
    }
    const auto got = static_cast<std::size_t>(n);
    if (c.draining) {
      c.drained += got;
      if (c.drained > kDrainBytes) {
        forget(fd);
        return;
      }
      continue;
    }
    // The request's deadline runs from its first byte.
    if (c.in.empty()) c.deadline = Clock::now() + limits_.request_timeout;
    c.in.append(buffer, got);
  }
  if (!c.draining) evaluate(fd);
}

void Connections::evaluate(int fd) {
  auto it = owned_.find(fd);
  Connection& c = *it->second;
  Framing f = take_request(c.in, limits_);
  if (f.state == Framing::State::rejected) {
    answer_error(c, f.status, f.message);
    return;
  }
  if (f.state != Framing::State::whole) {
    if (c.peer_closed) {
      forget(fd);  // the rest will never come
    } else if (f.state == Framing::State::head_complete && f.expects_continue && !c.sent_continue) {
      send_best_effort(fd, "HTTP/1.1 100 Continue\r\n\r\n");
      c.sent_continue = true;
    } else if (c.in.size() >= limits_.max_head + limits_.max_body) {
      // Unreachable while the limits hold; refuse rather than spin on a full buffer.
      answer_error(c, 431,
                   "Request too large: send at most " + std::to_string(limits_.max_head) + " bytes of head and " +
                       std::to_string(limits_.max_body) + " of body.\n");
    }
    return;
  }
  Job job;
  job.request_end = f.head_length + f.body_length;
  c.sent_continue = false;
  if (c.in_epoll) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  c.in_epoll = false;
  job.connection = std::move(it->second);
  owned_.erase(it);
  {
    std::lock_guard<std::mutex> lock(jobs_mutex_);
    jobs_.push_back(std::move(job));
  }
  jobs_ready_.notify_one();
}

void Connections::answer_error(Connection& c, int status, const std::string& message) {
  send_best_effort(c.fd, error_response(status, message));
  ::shutdown(c.fd, SHUT_WR);
  c.in.clear();
  c.in.shrink_to_fit();
  c.draining = true;
  c.deadline = Clock::now() + kDrainTime;
  if (c.peer_closed) forget(c.fd);
}

void Connections::expire_deadlines() {
  const Clock::time_point now = Clock::now();
  std::vector<int> expired;
  for (const auto& [fd, connection] : owned_) {
    if (connection->deadline <= now) expired.push_back(fd);
  }
  for (int fd : expired) {
    Connection& c = *owned_[fd];
    if (c.draining || c.in.empty()) {
      forget(fd);  // idle keep-alive connections close without a word
    } else {
      answer_error(c, 408,
                   "Request timeout: the request did not arrive whole within " + seconds_text(limits_.request_timeout) +
                       " of its first byte; send it at once.\n");
    }
  }
}

void Connections::worker_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(jobs_mutex_);
      jobs_ready_.wait(lock, [this] { return !jobs_.empty() || stopping_; });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    serve(std::move(job));
  }
}

void Connections::serve(Job job) {
  Connection& c = *job.connection;
  ++c.served;
  const bool last = c.served >= limits_.max_requests_per_connection || c.peer_closed || stopping_;
  RequestStream stream(c.fd, c.in, job.request_end, limits_.write_timeout);
  bool closed = false;
  const bool answered = serve_(stream, last, closed);
  if (!answered || closed || last) return;
  // The request ends where it was framed, whatever cpp-httplib read of it (it
  // stops at a request line it cannot parse, and skips a GET's body).
  c.in.erase(0, job.request_end);
  c.deadline = Clock::now() + (c.in.empty() ? limits_.idle_timeout : limits_.request_timeout);
  {
    std::lock_guard<std::mutex> lock(handover_mutex_);
    if (stopping_) return;
    returned_.push_back(std::move(job.connection));
  }
  wake();
}

}  // namespace heapgate::detail
