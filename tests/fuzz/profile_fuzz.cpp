// SPDX-License-Identifier: MIT
// heap_v2 profiles (heapgate/profile.h): parse_profile never crashes, and a
// parsed profile survives writing: write(parse(x)) parses again to the same
// Profile and writes again to the same bytes.
#include <string>

#include "fuzz_check.h"
#include "heapgate/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto parsed = heapgate::parse_profile(heapgate::fuzz::text_of(data, size), "fuzz.heap");
  if (!parsed) {
    HEAPGATE_FUZZ_CHECK(!parsed.error().message().empty());
    return 0;
  }
  const std::string written = heapgate::write_profile(*parsed);
  auto again = heapgate::parse_profile(written, "written.heap");
  HEAPGATE_FUZZ_CHECK(again.has_value());
  HEAPGATE_FUZZ_CHECK(*again == *parsed);
  HEAPGATE_FUZZ_CHECK(heapgate::write_profile(*again) == written);
  for (const auto& stack : parsed->stacks) {
    (void)heapgate::unsample(stack.counts, parsed->sample_period);
  }
  return 0;
}
