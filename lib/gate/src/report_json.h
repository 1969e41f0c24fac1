// SPDX-License-Identifier: MIT
// Private: the JSON forms of report parts, shared by the report file and the
// ReportWriter journal.
#pragma once

#include <string>
#include <string_view>

#include "heapgate/report.h"
#include "json_fields.h"

namespace heapgate::detail {

json run_to_json(const RunInfo& run);
RunInfo read_run(JsonReader& reader, const json& value, const std::string& pointer);
TestRecord read_record(JsonReader& reader, const json& value, const std::string& pointer);

/// Parses a journal (see ReportWriter). `source` names it in errors.
Result<Report> parse_report_journal(std::string_view text, std::string_view source);

/// The journal's first line: the schema, the run, and "journal": true.
std::string journal_header(const RunInfo& run);

}  // namespace heapgate::detail
