// SPDX-License-Identifier: MIT
// Where the heap profiles a report names are kept: a run's own exact-mode
// dumps are written there, the re-run children's are moved there out of
// their temp directories, so every path in the report outlives the run.
#pragma once

#include <cstddef>
#include <set>
#include <string>

#include "heapgate/report.h"

namespace heapgate::harness {

/// A test's name as a file name: parameterized names hold '/'.
std::string file_stem_of(const std::string& name);

class ProfileKeeper {
 public:
  /// `dir` "" keeps no profile.
  explicit ProfileKeeper(std::string dir = {}) : dir_(std::move(dir)) {}

  /// The directory exists (made on first use). A failure to make it is said
  /// once; nothing is kept then.
  bool ready();
  /// `<dir>/<stem>.heap`, or `<stem>.N.heap` when this run used that name
  /// already (a test's own profile and its re-runs'). A file of an earlier
  /// run of the same name is replaced. Only when ready().
  std::string new_path(const std::string& stem);
  /// Moves the record's profiles into the directory and names them there.
  /// Without a directory nothing is kept, and the test's own dump
  /// (`own_profile`, exact mode) is removed now rather than piling up until exit.
  void keep(TestRecord& record, const std::string& own_profile);

  const std::string& dir() const noexcept { return dir_; }
  std::size_t kept() const noexcept { return kept_; }

 private:
  std::string dir_;
  bool made_ = false;
  std::set<std::string> used_names_;
  std::size_t kept_ = 0;
};

}  // namespace heapgate::harness
