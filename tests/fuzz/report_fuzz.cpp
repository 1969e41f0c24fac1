// SPDX-License-Identifier: MIT
// Report JSON and report journals (heapgate/report.h, journal.h) through
// every renderer: JSON, JUnit XML, Markdown, HTML (with its flame graphs) and
// the text pieces they share (report_text.h). Properties: no crash; to_json()
// is stable (parses back to the same bytes); the JUnit XML is well-formed XML.
#include <string>
#include <vector>

#include <pugixml.hpp>

#include "fuzz_check.h"
#include "heapgate/report.h"
#include "heapgate/report_files.h"
#include "report_json.h"
#include "report_text.h"

namespace {

void render(const heapgate::Report& report) {
  const std::string json = heapgate::to_json(report);
  auto again = heapgate::parse_report_json(json, "written.json");
  HEAPGATE_FUZZ_CHECK(again.has_value());
  HEAPGATE_FUZZ_CHECK(heapgate::to_json(*again) == json);

  const std::string junit = heapgate::to_junit_xml(report);
  pugi::xml_document document;
  HEAPGATE_FUZZ_CHECK(document.load_buffer(junit.data(), junit.size()));
  (void)heapgate::to_markdown(report);
  (void)heapgate::to_html(report);
  for (const auto& record : report.tests) {
    (void)heapgate::detail::first_line(record.message);
    (void)heapgate::detail::key_facts(record);
    (void)heapgate::detail::verdict_rank(record.verdict);
    for (const auto& stack : record.stacks) (void)heapgate::detail::describe_stack_counts(stack);
  }
  (void)heapgate::merge_reports({report, report});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = heapgate::fuzz::text_of(data, size);
  if (auto report = heapgate::parse_report_json(text, "fuzz.json")) render(*report);
  if (auto journal = heapgate::detail::parse_report_journal(text, "fuzz.partial.jsonl")) render(*journal);
  return 0;
}
