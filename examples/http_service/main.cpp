// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A small long-running service with heapgate's memory-profiler endpoints, the
// Mesos way: switched on by HEAPGATE_MEMORY_PROFILING=true, as any service
// embedding heapgate::HttpServer::from_environment() is, and profiled with curl
// or `heapgate fetch` while it runs. README.md here walks through it.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <thread>

#include "heapgate/http.h"

// Profiling must be enabled when jemalloc starts (docs/platform-facts.md §5); it stays
// inactive until /start. Every allocation is sampled, so small runs show up.
extern "C" {
const char* malloc_conf = "prof:true,prof_active:false,lg_prof_sample:0";
}

namespace {

constexpr const char* kUsage =
    "usage: http_service [SECONDS]\n"
    "\n"
    "A toy service (a session cache, and a request log that leaks) with heapgate's\n"
    "Mesos-compatible /memory-profiler/* endpoints. Runs until SIGINT/SIGTERM, or for\n"
    "SECONDS when given.\n"
    "\n"
    "Environment (read by heapgate::HttpServer::from_environment()):\n"
    "  HEAPGATE_MEMORY_PROFILING=true  serve the endpoints (otherwise the service runs\n"
    "                                  without them, as Mesos without --memory_profiling)\n"
    "  HEAPGATE_HTTP=HOST:PORT         where to listen (default 127.0.0.1:5050; PORT 0\n"
    "                                  picks a free port, printed on the first line)\n"
    "  HEAPGATE_HTTP_TOKEN=TOKEN       require 'Authorization: Bearer TOKEN'\n"
    "\n"
    "Example:\n"
    "  HEAPGATE_MEMORY_PROFILING=true ./http_service &\n"
    "  heapgate fetch --url 127.0.0.1:5050 --duration 10secs -o run.heap\n"
    "\n"
    "Exit codes: 0 stopped, 2 bad usage or bad environment.\n";

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

// The "business logic": a session cache that forgets old sessions, and a
// request log that never does (the leak a profile should point at).
struct Service {
  std::map<int, std::string> sessions;
  std::deque<std::string> request_log;

  __attribute__((noinline)) void handle_request(int n) {
    sessions[n % 512] = std::string(256, static_cast<char>('a' + n % 26));
    request_log.push_back("request " + std::to_string(n) + std::string(100, '.'));
  }
};

// SECONDS: a whole number in 1..86400.
bool parse_seconds(const char* text, int& seconds) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > 86400) return false;
  seconds = static_cast<int>(value);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int run_for = 0;  // 0: until SIGTERM/SIGINT
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (argv[i][0] == '-' || run_for != 0 || !parse_seconds(argv[i], run_for)) {
      std::fprintf(stderr, "http_service: unexpected argument '%s'; fix: http_service [SECONDS], see --help\n",
                   argv[i]);
      return 2;
    }
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  // The few lines an embedding process needs.
  auto server = heapgate::HttpServer::from_environment();
  if (!server) {
    std::fprintf(stderr, "http_service: %s\n", server.error().message().c_str());
    return 2;
  }
  if (*server) {
    std::printf("listening on %s\n", (**server).address().c_str());
  } else {
    std::printf("memory profiler off (set HEAPGATE_MEMORY_PROFILING=true to serve /memory-profiler/*)\n");
  }
  std::fflush(stdout);

  Service service;
  auto started = std::chrono::steady_clock::now();
  for (int n = 0; !g_stop; ++n) {
    service.handle_request(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (run_for > 0 && std::chrono::steady_clock::now() - started > std::chrono::seconds(run_for)) break;
  }
  return 0;
}
