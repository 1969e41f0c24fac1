// SPDX-License-Identifier: MIT
// ReportJournal (heapgate/journal.h): the `<stem>.partial.jsonl` file a run appends one flushed
// record line to per test; report_stem() and is_shard_report() for shard file names.
#include "heapgate/journal.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "heapgate/sys.h"
#include "report_json.h"

namespace heapgate {
namespace {

// `what` ends with strerror(err).
Error dir_error(const std::string& dir, const std::string& what, int err = 0) {
  return make_error(ErrorCode::io_error, dir, what,
                    err == ENOSPC || err == EDQUOT
                        ? "free space on its file system, or choose another report directory (--heapgate_report=<dir>)"
                        : "make the directory writable, or choose another report directory (--heapgate_report=<dir>)");
}

}  // namespace

std::string report_stem(const std::string& binary, int shard_index, int total_shards) {
  if (total_shards <= 0) return binary;
  return binary + ".shard-" + std::to_string(shard_index) + "-of-" + std::to_string(total_shards);
}

bool is_shard_report(std::string_view file_name) noexcept {
  return file_name.find(".shard-") != std::string_view::npos;
}

Result<void> ensure_report_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return {};
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(dir_error(dir, "cannot create the report directory: " + ec.message()));
  return {};
}

ReportJournal::ReportJournal(const std::string& dir, const std::string& stem, const RunInfo& run)
    : dir_(dir), path_(dir + "/" + stem + std::string(kJournalSuffix)) {
  if (auto ok = ensure_report_dir(dir_); !ok) {
    error_ = ok.error();
    return;
  }
  file_ = std::fopen(path_.c_str(), "w");
  if (file_ == nullptr) {
    const int err = errno;
    error_ = dir_error(dir_, "cannot create the journal " + path_ + ": " + std::strerror(err), err);
    return;
  }
  std::string header = detail::journal_header(run) + "\n";
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size() || std::fflush(file_) != 0) {
    const int err = errno;
    error_ = dir_error(dir_, "cannot write the journal " + path_ + ": " + std::strerror(err), err);
  }
}

int ReportJournal::fd() const noexcept { return file_ != nullptr ? ::fileno(file_) : -1; }

ReportJournal::~ReportJournal() {
  if (file_ != nullptr) std::fclose(file_);
}

Result<void> ReportJournal::append(std::string_view record_line) {
  if (error_) return fail(*error_);
  if (file_ == nullptr) {
    return fail(make_error(ErrorCode::conflict, path_, "append() after close_and_remove()",
                           "append every record before closing the journal"));
  }
  // The line and its newline, then fflush: the whole line reaches the kernel
  // before append() returns, so a crash of the process afterwards cannot lose it.
  if (int injected = sys::injected_write_error(path_)) {
    errno = injected;
  } else if (std::fwrite(record_line.data(), 1, record_line.size(), file_) == record_line.size() &&
             std::fputc('\n', file_) != EOF && std::fflush(file_) == 0) {
    return {};
  }
  const int err = errno;
  return fail(dir_error(dir_, "cannot append to the journal " + path_ + ": " + std::strerror(err), err));
}

void ReportJournal::close_and_remove() noexcept {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

}  // namespace heapgate
