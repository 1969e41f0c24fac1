// SPDX-License-Identifier: MIT
// Folded stacks (heapgate/folded.h) and the flame graph drawn from them
// (heapgate/flamegraph.h). Properties: no crash; what write_folded() writes
// parses again, one stack per line; the SVG is well-formed XML, plain and
// differential, whatever the frame names hold.
#include <string>
#include <vector>

#include <pugixml.hpp>

#include "fuzz_check.h"
#include "heapgate/flamegraph.h"
#include "heapgate/folded.h"

namespace {

void check_svg(const std::vector<heapgate::FoldedStack>& stacks, bool differential) {
  heapgate::FlamegraphOptions options;
  options.differential = differential;
  options.subtitle = "fuzz";
  const std::string svg = heapgate::render_flamegraph_svg(stacks, options);
  pugi::xml_document document;
  HEAPGATE_FUZZ_CHECK(document.load_buffer(svg.data(), svg.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto stacks = heapgate::parse_folded(heapgate::fuzz::text_of(data, size), "fuzz.folded");
  if (!stacks) {
    HEAPGATE_FUZZ_CHECK(!stacks.error().message().empty());
    return 0;
  }
  const std::string written = heapgate::write_folded(*stacks);
  auto again = heapgate::parse_folded(written, "written.folded");
  HEAPGATE_FUZZ_CHECK(again.has_value());
  HEAPGATE_FUZZ_CHECK(again->size() <= stacks->size());
  HEAPGATE_FUZZ_CHECK(heapgate::write_folded(*again) == written);
  check_svg(*stacks, false);
  check_svg(*stacks, true);
  return 0;
}
