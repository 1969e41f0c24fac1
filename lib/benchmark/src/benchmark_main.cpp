// SPDX-License-Identifier: MIT
// heapgate::benchmark_main: Google Benchmark's main() with heapgate's
// MemoryManager registered and its --heapgate_* flags read. main() lives in
// this translation unit on purpose: a static library's object that nothing
// references is dropped by the linker (docs/platform-facts.md §2).
#include <benchmark/benchmark.h>

#include "heapgate/benchmark.h"

int main(int argc, char** argv) {
  heapgate::bench::init(&argc, argv);
  ::benchmark::Initialize(&argc, argv);
  if (::benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ::benchmark::RunSpecifiedBenchmarks();
  const int status = heapgate::bench::finish();
  ::benchmark::Shutdown();
  return status;
}
