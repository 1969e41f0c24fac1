// SPDX-License-Identifier: MIT
// Leak suppressions: known leaks a gate does not fail, in LeakSanitizer's
// file format restricted to `leak:` lines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "heapgate/error.h"
#include "heapgate/report.h"

namespace heapgate {

/// One `leak:<pattern>` line: a stack whose frame (function name or
/// file:line text) contains `pattern` is suppressed.
struct Suppression {
  std::string pattern;
  /// Where it was read, "path:line", for messages.
  std::string origin;
  /// What a leak it suppresses names: the file it came from, or for the C
  /// library's list the family ("heapgate's list of memory the C library
  /// keeps (setenv)").
  std::string source;
  /// Built-in entries match a frame's bare function name (frame_text.h)
  /// exactly, or by prefix when `pattern` ends in '*', never a substring:
  /// a user's own `my_setenv_cache()` is not the C library's.
  bool whole_name = false;
};

/// The suppressions of a run.
struct Suppressions {
  /// The file they came from ("" when none).
  std::string source;
  std::vector<Suppression> entries;

  bool empty() const noexcept { return entries.empty(); }
  /// The first suppression matching a frame of `stack`, or nullptr.
  const Suppression* match(const StackSample& stack) const noexcept;
};

/// Parses a suppressions file's text. One entry per line: `leak:<pattern>`;
/// blank lines and lines starting with '#' are ignored, surrounding blanks
/// trimmed. Errors: `parse_error` at `source:line` naming the bad line, with
/// the fix (a typo such as `leek:foo` included). Pure.
Result<Suppressions> parse_suppressions(std::string_view text, const std::string& source);

/// Memory the C library keeps by contract on the program's behalf, which a
/// test that calls it grows without leaking: every value setenv() was given,
/// the time zone tzset() read, locale and message catalogues, the NSS and
/// resolver state behind getpwnam() and getaddrinfo(), stdio buffers, atexit
/// records, the loader's and thread-local storage's. One entry per function
/// family, matched by whole name (Suppression::whole_name); listed in
/// docs/design.md §6a. `--heapgate_libc_suppressions=false` turns it off.
Suppressions c_library_suppressions();

/// `more`'s entries after `first`'s; the source names both files.
Suppressions combine(Suppressions first, const Suppressions& more);

/// Reads and parses a suppressions file. Errors: `io_error` naming the file
/// when it is missing or unreadable, with a fix; else as parse_suppressions().
Result<Suppressions> read_suppressions(const std::string& path);

}  // namespace heapgate
