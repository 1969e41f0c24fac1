// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// Latency of GET /memory-profiler/state against heapgate::HttpServer in this
// process, over one kept-alive connection and over a new connection per
// request (as curl in a script does), next to a 404 on the same server: the
// difference is heapgate's handler (mallctl reads and the JSON body), the
// rest is cpp-httplib and the loopback.
#include <benchmark/benchmark.h>

#include <httplib.h>

#include <memory>
#include <string>

#include "heapgate/http.h"

namespace {

std::unique_ptr<heapgate::HttpServer> g_server;

void get(benchmark::State& state, const char* path, int expected_status, bool keep_alive) {
  if (!g_server) {
    state.SkipWithError("the server did not start");
    return;
  }
  auto client = std::make_unique<httplib::Client>("127.0.0.1", g_server->port());
  client->set_keep_alive(keep_alive);
  for (auto _ : state) {
    if (!keep_alive) {
      state.PauseTiming();
      client = std::make_unique<httplib::Client>("127.0.0.1", g_server->port());
      state.ResumeTiming();
    }
    auto response = client->Get(path);
    if (!response || response->status != expected_status) {
      state.SkipWithError(response ? ("unexpected status " + std::to_string(response->status)).c_str()
                                   : "request failed");
      break;
    }
    benchmark::DoNotOptimize(response->body.data());
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  heapgate::HttpOptions options;
  options.port = 0;
  auto server = heapgate::HttpServer::start(options);
  if (!server) {
    std::fprintf(stderr, "bench_http: %s\n", server.error().message().c_str());
    return 2;
  }
  g_server = std::move(*server);
  benchmark::RegisterBenchmark("http/state/keep-alive", get, "/memory-profiler/state", 200, true)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("http/404/keep-alive", get, "/no-such-endpoint", 404, true)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("http/state/new-connection", get, "/memory-profiler/state", 200, false)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_server.reset();
  return 0;
}
