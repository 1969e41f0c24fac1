// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A GoogleTest suite shaped like a network library's: 500 tests, each starts a
// small server thread pool on loopback and a client thread and exchanges echo
// messages; half join the client, half let it exit on its own. Linked with
// heapgate::gtest_main; echo_gate_test runs it under the gate again and again.
// Every allocation here is decided by the test's parameter, never by timing
// (messages are framed, and each is read whole into a buffer of its size), so
// a test's counts must be the same in every run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// One framed message: a 4-byte length, then the bytes, in one write (two
// small writes would wait for the peer's delayed acknowledgement). The frame
// is built on the stack: messages are shorter than 1 KiB.
bool send_message(int fd, const std::string& text) {
  char frame[1024 + sizeof(std::uint32_t)];
  const auto size = static_cast<std::uint32_t>(text.size());
  if (text.size() > 1024) return false;
  std::memcpy(frame, &size, sizeof size);
  std::memcpy(frame + sizeof size, text.data(), text.size());
  return write_all(fd, frame, sizeof size + text.size());
}

bool receive_message(int fd, std::string* text) {
  std::uint32_t size = 0;
  if (!read_all(fd, &size, sizeof size)) return false;
  text->assign(size, '\0');
  return read_all(fd, text->data(), size);
}

// A thread of a test, joined when the Worker goes, or detached: then a bare
// detached pthread, which says it is done as its very last step and exits on
// its own. (A detached std::thread would free its state object after the
// function returned, maybe after the test ended: a block of the test's
// freed or not within it, by timing.) The body belongs to the Worker, so
// the test's own thread frees whatever the body holds.
class Worker {
 public:
  Worker(bool detached, std::function<void()> body) : body_(std::move(body)) {
    if (!detached) {
      joined_ = std::thread([this] { run(); });
      return;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t id;
    if (pthread_create(
            &id, &attr,
            [](void* self) -> void* {
              static_cast<Worker*>(self)->run();
              return nullptr;
            },
            this) != 0) {
      done_.store(true);
    }
    pthread_attr_destroy(&attr);
  }
  ~Worker() {
    if (joined_.joinable()) joined_.join();
    while (!done_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

 private:
  void run() {
    body_();
    done_.store(true, std::memory_order_release);  // the last touch of the test's state
  }
  std::function<void()> body_;
  std::atomic<bool> done_{false};
  std::thread joined_;
};

// A pool of server threads sharing one listening socket: each accepts one
// connection and echoes its messages until the client closes it.
class EchoServer {
 public:
  // `detached`: the pool's threads are not joined but say when they are done,
  // and exit on their own.
  EchoServer(int threads, bool detached) : detached_(detached) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    port_ = ntohs(address.sin_port);
    workers_.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i) workers_.push_back(std::make_unique<Worker>(detached_, [this] { serve_one(); }));
  }
  ~EchoServer() {
    workers_.clear();  // each waits for its thread
    ::close(listener_);
  }
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;
  int port() const { return port_; }

 private:
  void serve_one() {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    std::string message;
    while (receive_message(fd, &message)) {
      if (!send_message(fd, message)) break;
    }
    ::close(fd);
  }

  bool detached_;
  int listener_ = -1;
  int port_ = 0;
  std::vector<std::unique_ptr<Worker>> workers_;
};

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

class Echo : public ::testing::TestWithParam<int> {};

// Odd tests detach their threads, as a library's thread pool and background
// threads may be: each frees what it allocated and says so before the test
// ends, then exits on its own, while the next test is starting.
TEST_P(Echo, RoundTrips) {
  const int n = GetParam();
  constexpr int kServers = 2;
  const bool detached = n % 2 == 1;
  EchoServer server(kServers, detached);
  ASSERT_NE(server.port(), 0);
  int echoed = 0;
  int failed = 0;
  {
    // The client opens one connection per server thread and sends a few
    // messages of sizes that depend on the test only.
    Worker client(detached, [&] {
      for (int c = 0; c < kServers; ++c) {
        const int fd = connect_to(server.port());
        if (fd < 0) {
          ++failed;
          continue;
        }
        for (int m = 0; m < 3 + n % 5; ++m) {
          const std::string sent(static_cast<std::size_t>(1 + (n * 37 + m * 101 + c * 7) % 600),
                                 static_cast<char>('a' + m));
          std::string back;
          if (!send_message(fd, sent) || !receive_message(fd, &back) || back != sent) {
            ++failed;
            break;
          }
          ++echoed;
        }
        ::close(fd);
      }
    });
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(echoed, kServers * (3 + n % 5));
}

INSTANTIATE_TEST_SUITE_P(Loopback, Echo, ::testing::Range(0, 500));

}  // namespace
