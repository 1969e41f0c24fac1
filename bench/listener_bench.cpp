// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The listener's overhead: trivial_suite (1,000 trivial tests, one heavy test)
// run as a child process per iteration in each mode; compare with mode off.
//   bench_listener [google benchmark flags]
#include <benchmark/benchmark.h>

#include <string>

#include "heapgate/sys.h"

namespace {

std::string g_suite;

void run_suite(benchmark::State& state, const std::string& mode, const std::string& filter) {
  heapgate::sys::ProcessOptions options;
  options.unset_env = {"MALLOC_CONF", "HEAPGATE_MODE"};
  std::vector<std::string> argv = {g_suite, "--heapgate_mode=" + mode, "--gtest_filter=" + filter,
                                   "--heapgate_explain=false"};
  for (auto _ : state) {
    auto ran = heapgate::sys::run_process(argv, options);
    if (!ran || ran->exit_code != 0) {
      state.SkipWithError(ran ? ran->stderr_text.c_str() : ran.error().message().c_str());
      return;
    }
  }
}

void BM_ThousandTrivialTests(benchmark::State& state, const std::string& mode) { run_suite(state, mode, "Trivial.*"); }
void BM_HeavyTest(benchmark::State& state, const std::string& mode) { run_suite(state, mode, "Heavy.*"); }

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  g_suite = heapgate::sys::self_exe_path().value_or("");
  g_suite = g_suite.substr(0, g_suite.rfind('/') + 1) + "trivial_suite";
  for (const char* mode : {"off", "counters", "exact"}) {
    benchmark::RegisterBenchmark((std::string("1000 trivial tests/") + mode).c_str(), BM_ThousandTrivialTests, mode)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(5);
    benchmark::RegisterBenchmark((std::string("heavy test/") + mode).c_str(), BM_HeavyTest, mode)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(3);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
