// SPDX-License-Identifier: MIT
// Linked with heapgate::benchmark_main: allocations per iteration are exact
// user counters, gated by `heapgate bench compare`.
#include <benchmark/benchmark.h>

#include <string>

#include "heapgate/benchmark.h"
#include "wordcount.h"

static void BM_CountWords(benchmark::State& state) {
  const std::string text = "to be or not to be that is the question whether tis nobler in the mind to suffer";
  HEAPGATE_BENCHMARK_SCOPE(state);
  for (auto _ : state) benchmark::DoNotOptimize(wordcount::count_words(text));
}
BENCHMARK(BM_CountWords);
