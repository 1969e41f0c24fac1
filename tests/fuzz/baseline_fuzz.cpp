// SPDX-License-Identifier: MIT
// Baseline JSON (heapgate/baseline.h) and the suppressions file beside it
// (heapgate/suppressions.h): never a crash, and to_json() is stable: the text
// it writes parses back to the same Baseline and the same bytes.
#include <string>

#include "fuzz_check.h"
#include "heapgate/baseline.h"
#include "heapgate/suppressions.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = heapgate::fuzz::text_of(data, size);
  (void)heapgate::parse_suppressions(text, "fuzz.supp");
  auto parsed = heapgate::parse_baseline_json(text, "fuzz.json");
  if (!parsed) {
    HEAPGATE_FUZZ_CHECK(!parsed.error().message().empty());
    return 0;
  }
  const std::string written = heapgate::to_json(*parsed);
  auto again = heapgate::parse_baseline_json(written, "written.json");
  HEAPGATE_FUZZ_CHECK(again.has_value());
  HEAPGATE_FUZZ_CHECK(heapgate::to_json(*again) == written);
  return 0;
}
