// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// A small long-running service with heapgate's memory-profiler endpoints on,
// the Mesos way: profile it with curl while it runs (see README.md here).
//
//   HEAPGATE_HTTP=127.0.0.1:5050 ./http_service
//   curl '127.0.0.1:5050/memory-profiler/start?duration=10secs'
//   curl 127.0.0.1:5050/memory-profiler/download/raw?id=<id> > profile.heap
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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

}  // namespace

int main(int argc, char** argv) {
  // Optional: stop after N seconds (for scripted runs); default: until SIGTERM/SIGINT.
  int run_for = argc > 1 ? std::atoi(argv[1]) : 0;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  // The few lines an embedding process needs. The endpoints are on in this
  // example even without HEAPGATE_MEMORY_PROFILING=true.
  auto options = heapgate::http_options_from_environment();
  if (!options) {
    std::fprintf(stderr, "http_service: %s\n", options.error().message().c_str());
    return 2;
  }
  auto server = heapgate::HttpServer::start(*options);
  if (!server) {
    std::fprintf(stderr, "http_service: %s\n", server.error().message().c_str());
    return 2;
  }
  std::printf("listening on %s\n", (*server)->address().c_str());
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
