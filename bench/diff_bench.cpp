// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// parse + symbolize + normalize + diff of two profiles from two processes,
// against `jeprof --text --base` on the same pair (base rebased so jeprof can
// cancel the shared stacks). Profiles come from profile_gen; see scripts/bench.sh.
//   bench_diff BINARY BASE.heap CURRENT.heap [google benchmark flags]
// Reports wall time per run and peak RSS (MB): the process' own for heapgate
// (it does nothing else), its waited-for children's for jeprof (run first).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "heapgate/diff.h"
#include "heapgate/jeprof.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/rebase.h"
#include "heapgate/symbolizer.h"
#include "heapgate/sys.h"

namespace {

std::string g_binary;
std::string g_base;
std::string g_current;
std::string g_rebased;  // g_base rebased onto g_current, written once

double peak_rss_mb(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void BM_HeapgateParseSymbolizeDiff(benchmark::State& state) {
  std::size_t entries = 0;
  for (auto _ : state) {
    auto base = heapgate::read_profile(g_base);
    auto current = heapgate::read_profile(g_current);
    if (!base || !current) {
      state.SkipWithError((base ? current.error() : base.error()).message().c_str());
      return;
    }
    heapgate::Symbolizer symbols;
    heapgate::NormalizedProfile a = heapgate::normalize_profile(*base, symbols);
    heapgate::NormalizedProfile b = heapgate::normalize_profile(*current, symbols);
    heapgate::ProfileDiff diff = heapgate::diff_profiles(a, b);
    std::string text = heapgate::render_diff_text(diff);
    entries = diff.entries.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["stacks_changed"] = static_cast<double>(entries);
  state.counters["peak_rss_MB"] = peak_rss_mb(RUSAGE_SELF);
}

void BM_JeprofTextBase(benchmark::State& state) {
  heapgate::JeprofOptions options;
  options.binary = g_binary;
  options.profile = g_current;
  options.base = g_rebased;
  options.format = heapgate::JeprofFormat::text;
  options.timeout = std::chrono::minutes(30);
  for (auto _ : state) {
    auto out = heapgate::run_jeprof(options);
    if (!out) {
      state.SkipWithError(out.error().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(out->data());
  }
  state.counters["peak_rss_MB"] = peak_rss_mb(RUSAGE_CHILDREN);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc != 4) {
    std::fprintf(stderr, "usage: bench_diff BINARY BASE.heap CURRENT.heap [benchmark flags]\n");
    return 2;
  }
  g_binary = argv[1];
  g_base = argv[2];
  g_current = argv[3];
  auto base = heapgate::read_profile(g_base);
  auto current = heapgate::read_profile(g_current);
  if (!base || !current) {
    std::fprintf(stderr, "bench_diff: %s\n", (base ? current.error() : base.error()).message().c_str());
    return 2;
  }
  auto rebased = heapgate::rebase_profile(*base, *current);
  if (!rebased) {
    std::fprintf(stderr, "bench_diff: %s\n", rebased.error().message().c_str());
    return 2;
  }
  g_rebased = g_base + ".rebased";
  if (auto written = heapgate::sys::write_file_atomic(g_rebased, heapgate::write_profile(rebased->profile)); !written) {
    std::fprintf(stderr, "bench_diff: %s\n", written.error().message().c_str());
    return 2;
  }
  base = {};
  current = {};
  rebased = {};
  // jeprof first: posix_spawn's child shares the parent's memory until exec,
  // so a child spawned after heapgate grew would report heapgate's peak as its own.
  benchmark::RegisterBenchmark("jeprof/--text --base", BM_JeprofTextBase)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1);
  benchmark::RegisterBenchmark("heapgate/parse+symbolize+diff", BM_HeapgateParseSymbolizeDiff)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(3);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
