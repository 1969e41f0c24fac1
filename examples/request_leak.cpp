// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Gate with counters, explain with stacks: a request handler leaks 200 bytes
// per request. A counters scope (exact and cheap) catches it; the same work is
// then re-run in an exact scope, and the heap profile, symbolized offline,
// names the function that leaked.
//
// Exit code: 0 no leak, 1 leak caught (what this example is for), 2 heapgate
// could not measure (e.g. jemalloc absent; the message says why).
#include <cstdio>
#include <cstring>
#include <string>

#include "heapgate/diff.h"
#include "heapgate/malloc_conf.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/profile_scope.h"
#include "heapgate/symbolizer.h"

HEAPGATE_ENABLE_EXACT_MODE();  // exact scopes even without libunwind8

namespace {

struct Request {
  int id = 0;
  std::string path;
};

// Keeps the compiler from eliding an allocation nobody reads.
void escape(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

__attribute__((noinline)) std::string render_response(const Request& request) {
  std::string body = "{\"id\": " + std::to_string(request.id) + ", \"path\": \"" + request.path + "\"}";
  return body;
}

// The bug: the audit copy is never freed.
__attribute__((noinline)) void remember_for_audit(const std::string& response) {
  char* copy = new char[200];
  std::strncpy(copy, response.c_str(), 199);
  copy[199] = '\0';
  escape(copy);
}

__attribute__((noinline)) void handle_request(const Request& request) {
  std::string response = render_response(request);
  remember_for_audit(response);
}

void serve_requests(int count) {
  for (int i = 0; i < count; ++i) {
    handle_request(Request{i, "/api/v1/items/with/a/long/path"});
  }
}

constexpr int kRequests = 100;

}  // namespace

int main() {
  // 1. Gate: counters mode counts every allocation exactly, without stacks.
  heapgate::ProfileScope gate{"serve 100 requests"};
  serve_requests(kRequests);
  auto counted = gate.finish();
  if (!counted) {
    std::fprintf(stderr, "heapgate could not measure: %s\n", counted.error().message().c_str());
    return 2;
  }
  std::printf("[counters] %d requests: %llu allocations, %llu bytes; still live at the end: %llu blocks, %llu bytes\n",
              kRequests, static_cast<unsigned long long>(counted->allocations),
              static_cast<unsigned long long>(counted->allocated_bytes),
              static_cast<unsigned long long>(counted->live_allocations),
              static_cast<unsigned long long>(counted->live_bytes));
  if (counted->live_bytes == 0) {
    std::printf("no leak\n");
    return 0;
  }

  // 2. Explain: the same work in exact mode records the stack of every allocation.
  heapgate::ProfileScope explain{"serve 100 requests", heapgate::Mode::exact};
  serve_requests(kRequests);
  auto profiled = explain.finish();
  if (!profiled) {
    std::fprintf(stderr, "LEAK: %llu bytes, but heapgate could not profile it: %s\n",
                 static_cast<unsigned long long>(counted->live_bytes), profiled.error().message().c_str());
    return 1;
  }
  auto profile = heapgate::read_profile(profiled->profile_path);
  if (!profile) {
    std::fprintf(stderr, "LEAK, but the profile is unreadable: %s\n", profile.error().message().c_str());
    return 1;
  }
  heapgate::Symbolizer symbols;
  heapgate::NormalizedProfile stacks = heapgate::normalize_profile(*profile, symbols);

  // Live objects only: what the requests allocated and never freed.
  std::printf("[exact]    the same %d requests leave %llu blocks (%llu bytes) allocated at:\n", kRequests,
              static_cast<unsigned long long>(profiled->live_allocations),
              static_cast<unsigned long long>(profiled->live_bytes));
  for (const heapgate::NormalizedStack& stack : stacks.stacks) {
    if (stack.counts.live_objects == 0) continue;
    std::printf("  %llu blocks, %llu bytes\n", static_cast<unsigned long long>(stack.counts.live_objects),
                static_cast<unsigned long long>(stack.counts.live_bytes));
    for (const std::string& frame : stack.frames) std::printf("    %s\n", frame.c_str());
  }
  // The default dump directory goes when the process exits; a dump to keep
  // (for `heapgate diff`) gets its own path: ScopeOptions{Mode::exact, PATH}.
  std::printf("profile: %s (removed at exit)\n", profiled->profile_path.c_str());
  std::printf("LEAK: %llu bytes in %llu blocks\n", static_cast<unsigned long long>(counted->live_bytes),
              static_cast<unsigned long long>(counted->live_allocations));
  return 1;
}
