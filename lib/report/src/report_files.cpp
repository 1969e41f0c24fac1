// SPDX-License-Identifier: MIT
// The formats' table, a run's report files and the journaling ReportWriter.
#include "heapgate/report_files.h"

#include <cstdio>

#include "heapgate/sys.h"

namespace heapgate {
namespace {

Result<void> write_in(const std::string& dir, const std::string& name, const std::string& content) {
  auto written = sys::write_file_atomic(dir + "/" + name, content);
  if (!written) {
    return fail(
        make_error(ErrorCode::io_error, dir, "cannot write " + name + ": " + written.error().what,
                   "make the directory writable, or choose another report directory (--heapgate_report=<dir>)"));
  }
  return {};
}

constexpr std::string_view kJson = "json";

// `json` is to_json(report), made by the caller (from the journal's lines).
Result<void> write_report_files_with(const std::string& dir, const Report& report, const std::string& stem,
                                     const std::string& json) {
  if (auto ok = ensure_report_dir(dir); !ok) return ok;
  for (const ReportFormat& format : report_formats()) {
    if (!format.every_run) continue;
    const std::string name = stem + std::string(format.suffix);
    if (auto ok = write_in(dir, name, format.name == kJson ? json : format.render(report)); !ok) return ok;
  }
  return {};
}

}  // namespace

const std::vector<ReportFormat>& report_formats() {
  static const std::vector<ReportFormat> formats = {
      {kJson, ".json", to_json, true},
      {"junit", ".junit.xml", to_junit_xml, true},
      {"markdown", ".md", to_markdown, true},
      {"html", ".html", to_html, false},
  };
  return formats;
}

const ReportFormat* find_report_format(std::string_view name) {
  for (const ReportFormat& format : report_formats()) {
    if (format.name == name) return &format;
  }
  return nullptr;
}

Result<void> write_report_files(const std::string& dir, const Report& report, const std::string& stem) {
  return write_report_files_with(dir, report, stem, to_json(report));
}

ReportWriter::ReportWriter(std::string dir, std::string stem, RunInfo run)
    : dir_(std::move(dir)), stem_(std::move(stem)), report_{std::move(run), {}} {
  // A crash of this run must not leave an earlier run's report looking current.
  for (const ReportFormat& format : report_formats()) {
    if (format.every_run) std::remove((dir_ + "/" + stem_ + std::string(format.suffix)).c_str());
  }
  journal_.emplace(dir_, stem_, report_.run);
}

ReportWriter::~ReportWriter() = default;

Result<void> ReportWriter::add(TestRecord record) {
  if (finished_) {
    report_.tests.push_back(std::move(record));
    return fail(make_error(ErrorCode::conflict, journal_->path(), "add() after finish()",
                           "add every record before finishing the report"));
  }
  std::string line = record_json_line(record);
  auto appended = journal_->append(line);
  report_.tests.push_back(std::move(record));
  if (lines_current_) lines_.push_back(std::move(line));
  return appended;
}

Result<void> ReportWriter::finish(bool complete) {
  if (finished_) {
    return fail(make_error(ErrorCode::conflict, journal_->path(), "finish() called twice", "call finish() once"));
  }
  finished_ = true;
  if (journal_->error()) return fail(*journal_->error());
  report_.run.complete = complete;
  const std::string json = lines_current_ ? report_json(report_.run, lines_) : to_json(report_);
  if (auto ok = write_report_files_with(dir_, report_, stem_, json); !ok) return ok;
  journal_->close_and_remove();
  return {};
}

}  // namespace heapgate
