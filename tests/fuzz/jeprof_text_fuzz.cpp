// SPDX-License-Identifier: MIT
// `jeprof --text` output (heapgate/jeprof.h): parse_jeprof_text never
// crashes, and every line it returns can be found again by its name.
#include "fuzz_check.h"
#include "heapgate/jeprof.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = heapgate::fuzz::text_of(data, size);
  (void)heapgate::parse_jeprof_format(text);
  auto parsed = heapgate::parse_jeprof_text(text, "fuzz.txt");
  if (!parsed) {
    HEAPGATE_FUZZ_CHECK(!parsed.error().message().empty());
    return 0;
  }
  for (const auto& line : parsed->lines) HEAPGATE_FUZZ_CHECK(parsed->find(line.name) != nullptr);
  return 0;
}
