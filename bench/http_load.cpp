// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// GET /memory-profiler/state under a fixed request rate, and the cost of many
// idle kept-alive clients, against heapgate::HttpServer in a child process
// (this binary re-run with --serve), so that the server's RSS, threads and
// descriptors are its own. Only the public API and raw loopback sockets: the
// same source measures any version of the server (docs/performance.md).
//
//   bench_http_load [--seconds S] [--idle-clients N]
//
// Latency is counted from sending each request to reading its answer, and
// also from its scheduled send time, so a slow answer that delays the next
// request shows in that request's figure too.
// The server child runs with MALLOC_CONF=prof:true,prof_active:false (as a
// service that may be profiled); "profiling" rows run inside a
// /memory-profiler/start run at jemalloc's default sampling.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "heapgate/http.h"

namespace {

using Clock = std::chrono::steady_clock;

int serve(std::size_t max_connections) {
  heapgate::HttpOptions options;
  options.port = 0;
  options.max_connections = max_connections;
  // The idle clients must outlive the measurement.
  options.idle_timeout = std::chrono::seconds(120);
  options.request_timeout = std::chrono::seconds(120);
  auto server = heapgate::HttpServer::start(options);
  if (!server) {
    std::fprintf(stderr, "bench_http_load --serve: %s\n", server.error().message().c_str());
    return 2;
  }
  std::printf("%d\n", (*server)->port());
  std::fflush(stdout);
  char byte;
  while (::read(STDIN_FILENO, &byte, 1) > 0) {
  }
  return 0;
}

class Connection {
 public:
  explicit Connection(int port) : port_(port) {}
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool open() {
    close();
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int yes = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buffer_.clear();
  }
  bool is_open() const { return fd_ >= 0; }

  // One GET on this connection (reopened when the server closed it); the
  // status, or 0 when no whole answer came back.
  int get(const std::string& path) {
    if (fd_ < 0 && !open()) return 0;
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
      close();
      return 0;
    }
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!receive()) return 0;
    }
    const std::string head = buffer_.substr(0, end);
    buffer_.erase(0, end + 4);
    std::size_t length = 0;
    for (const char* key : {"\r\nContent-Length: ", "\r\ncontent-length: "}) {
      if (auto pos = head.find(key); pos != std::string::npos) length = std::stoul(head.substr(pos + std::strlen(key)));
    }
    while (buffer_.size() < length) {
      if (!receive()) return 0;
    }
    buffer_.erase(0, length);
    const int status = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
    if (head.find("\r\nConnection: close") != std::string::npos ||
        head.find("\r\nConnection: Close") != std::string::npos) {
      close();
    }
    return status;
  }

 private:
  bool receive() {
    char chunk[16 * 1024];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) {
      close();
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int port_;
  int fd_ = -1;
  std::string buffer_;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

struct Latency {
  // From sending the request to reading the whole answer: the server's
  // share, as far as a client can see it.
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  // From the request's scheduled time: also counts a request sent late
  // because the one before it was slow, or because this client itself
  // was not scheduled in time (on a loaded machine, mostly the latter).
  double scheduled_p99_ms = 0;
  std::size_t requests = 0;
  std::size_t failed = 0;
};

Latency at_rate(int port, int rate, double seconds) {
  Connection connection(port);
  const auto interval = std::chrono::nanoseconds(1'000'000'000LL / rate);
  const auto total = static_cast<std::size_t>(rate * seconds);
  std::vector<double> ms;
  std::vector<double> from_schedule;
  ms.reserve(total);
  from_schedule.reserve(total);
  Latency result;
  const auto start = Clock::now() + std::chrono::milliseconds(50);
  for (std::size_t i = 0; i < total; ++i) {
    const auto scheduled = start + interval * static_cast<long>(i);
    std::this_thread::sleep_until(scheduled);
    const auto sent = Clock::now();
    const int status = connection.get("/memory-profiler/state");
    const auto done = Clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(done - sent).count());
    from_schedule.push_back(std::chrono::duration<double, std::milli>(done - scheduled).count());
    if (status != 200) ++result.failed;
  }
  result.requests = total;
  result.p50_ms = percentile(ms, 0.50);
  result.p90_ms = percentile(ms, 0.90);
  result.p99_ms = percentile(ms, 0.99);
  result.max_ms = percentile(ms, 1.0);
  result.scheduled_p99_ms = percentile(from_schedule, 0.99);
  return result;
}

long status_field(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0) return std::atol(line.c_str() + key.size());
  }
  return -1;
}

// User + system CPU time of process `pid` so far, in microseconds: the
// server's own cost per request, which other load on the machine disturbs
// far less than latency.
double cpu_us(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());
  }
  return ticks * 1e6 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long open_descriptors(pid_t pid) {
  long count = 0;
  std::error_code ignored;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ignored);
       it != std::filesystem::directory_iterator(); ++it) {
    ++count;
  }
  return count;
}

struct Child {
  pid_t pid = -1;
  int to_child = -1;
  int port = 0;
};

std::optional<Child> spawn_server(const char* self, std::size_t max_connections) {
  int in_pipe[2];
  int out_pipe[2];
  if (::pipe(in_pipe) != 0 || ::pipe(out_pipe) != 0) return std::nullopt;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::setenv("MALLOC_CONF", "prof:true,prof_active:false", 1);
    const std::string max = std::to_string(max_connections);
    ::execl(self, self, "--serve", max.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  char text[32] = {};
  std::size_t got = 0;
  while (got < sizeof text - 1) {
    ssize_t n = ::read(out_pipe[0], text + got, 1);
    if (n <= 0 || text[got] == '\n') break;
    ++got;
  }
  ::close(out_pipe[0]);
  Child child;
  child.pid = pid;
  child.to_child = in_pipe[1];
  child.port = std::atoi(text);
  if (child.port <= 0) return std::nullopt;
  return child;
}

void stop_server(const Child& child) {
  ::close(child.to_child);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
}

void print_latency(const char* state, int rate, const Latency& l, double server_cpu_us) {
  std::printf("| %s | %d | %zu | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f | %zu |\n", state, rate, l.requests, l.p50_ms,
              l.p90_ms, l.p99_ms, l.max_ms, l.scheduled_p99_ms, server_cpu_us / static_cast<double>(l.requests),
              l.failed);
}

// at_rate(), with the server's CPU time per request.
void measure(const char* state, int port, pid_t server, int rate, double seconds) {
  const double cpu_before = cpu_us(server);
  const Latency latency = at_rate(port, rate, seconds);
  print_latency(state, rate, latency, cpu_us(server) - cpu_before);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--serve") == 0) {
    return serve(argc >= 3 ? static_cast<std::size_t>(std::atol(argv[2])) : 256);
  }
  double seconds = 10;
  int idle_clients = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) {
      seconds = std::atof(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--idle-clients") == 0) {
      idle_clients = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "bench_http_load: unknown option %s; fix: use --seconds S or --idle-clients N\n", argv[i]);
      return 2;
    }
  }
  // The idle clients hold a descriptor each, here and in the server.
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);

  auto child = spawn_server("/proc/self/exe", static_cast<std::size_t>(idle_clients) + 64);
  if (!child) {
    std::fprintf(stderr, "bench_http_load: the server did not start\n");
    return 2;
  }
  const int port = child->port;
  std::printf(
      "| state | req/s | requests | p50 ms | p90 ms | p99 ms | max ms | p99 ms from schedule | server CPU µs/request "
      "| failed |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int rate : {200, 1000}) measure("idle", port, child->pid, rate, seconds);
  Connection control(port);
  const int started = control.get("/memory-profiler/start?duration=1hrs");
  for (int rate : {200, 1000}) {
    measure(started == 200 ? "profiling" : "profiling (start failed)", port, child->pid, rate, seconds);
  }
  control.get("/memory-profiler/stop");
  control.close();

  // Idle kept-alive clients: each sends one request, reads its answer and
  // stays connected.
  const long rss_before = status_field(child->pid, "VmRSS");
  const long threads_before = status_field(child->pid, "Threads");
  const long fds_before = open_descriptors(child->pid);
  std::vector<std::unique_ptr<Connection>> idle;
  std::size_t answered = 0;
  for (int i = 0; i < idle_clients; ++i) {
    idle.push_back(std::make_unique<Connection>(port));
    if (idle.back()->get("/memory-profiler/state") == 200) ++answered;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const long rss_after = status_field(child->pid, "VmRSS");
  const long threads_after = status_field(child->pid, "Threads");
  const long fds_after = open_descriptors(child->pid);
  // Still served after the pause, on the same connections.
  std::size_t still_open = 0;
  for (auto& c : idle) {
    if (c->is_open() && c->get("/memory-profiler/state") == 200) ++still_open;
  }
  Latency with_idle = at_rate(port, 1000, seconds / 2);
  std::printf(
      "\n| idle clients | answered | served again | server RSS before KiB | after KiB | per client KiB | "
      "threads before/after | descriptors before/after |\n|---|---|---|---|---|---|---|---|\n");
  std::printf("| %d | %zu | %zu | %ld | %ld | %.1f | %ld/%ld | %ld/%ld |\n", idle_clients, answered, still_open,
              rss_before, rss_after, static_cast<double>(rss_after - rss_before) / idle_clients, threads_before,
              threads_after, fds_before, fds_after);
  std::printf(
      "\n/state at 1000 req/s beside %d idle clients: p50 %.3f ms, p99 %.3f ms, max %.3f ms, p99 from schedule %.3f "
      "ms, %zu failed\n",
      idle_clients, with_idle.p50_ms, with_idle.p99_ms, with_idle.max_ms, with_idle.scheduled_p99_ms, with_idle.failed);
  idle.clear();
  stop_server(*child);
  return 0;
}
