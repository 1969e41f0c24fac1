// SPDX-License-Identifier: MIT
// Google Benchmark's JSON (heapgate/benchmark_gate.h), judged against an
// empty baseline and against one made from its own numbers. Properties: no
// crash; the report it becomes is stable JSON (to_json, parse, to_json).
#include <string>

#include "fuzz_check.h"
#include "heapgate/benchmark_gate.h"
#include "heapgate/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto report = heapgate::bench::parse_benchmark_json(heapgate::fuzz::text_of(data, size), "fuzz.json");
  if (!report) {
    HEAPGATE_FUZZ_CHECK(!report.error().message().empty());
    return 0;
  }
  heapgate::Baseline own;
  own.binary = "fuzz";
  own.tests = heapgate::baseline_entries(*report);
  heapgate::Report against_own = *report;
  heapgate::bench::judge(against_own, own);
  heapgate::bench::judge(*report, heapgate::Baseline{});
  for (const heapgate::Report* judged : {&*report, &against_own}) {
    const std::string json = heapgate::to_json(*judged);
    auto again = heapgate::parse_report_json(json, "written.json");
    HEAPGATE_FUZZ_CHECK(again.has_value());
    HEAPGATE_FUZZ_CHECK(heapgate::to_json(*again) == json);
  }
  return 0;
}
