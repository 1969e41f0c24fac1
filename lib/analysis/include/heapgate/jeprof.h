// SPDX-License-Identifier: MIT
// Running jemalloc's jeprof and reading its output: JeprofFormat, JeprofOptions, jeprof_command(),
// run_jeprof(), and parse_jeprof_text() into JeprofText lines.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/error.h"

namespace heapgate {

/// What jeprof renders. Closed list, spelled as in flags:
/// - `text`: one line per function, `flat flat% sum% cum cum% name` (`--text`).
/// - `svg`: a call graph; jeprof pipes it through Graphviz `dot` (`--svg`).
/// - `collapsed`: flame-graph input, `root;...;leaf <count>` (`--collapsed`, jemalloc >= 5.3).
/// - `raw`: the symbolized profile, for offline use (`--raw`).
enum class JeprofFormat { text, svg, collapsed, raw };

/// The format's name ("text", "svg", "collapsed", "raw").
std::string_view to_string(JeprofFormat format) noexcept;
/// Parses a format name; the error names the value and lists the valid ones.
Result<JeprofFormat> parse_jeprof_format(std::string_view text);

/// One jeprof run: `jeprof <format> <extra_args...> [--base=<base>] <binary> <profile>`.
struct JeprofOptions {
  /// The profiled executable, as a real path (not /proc/self/exe, which jeprof
  /// resolves to perl). Must exist.
  std::string binary;
  /// The heap_v2 profile to render. Must exist.
  std::string profile;
  /// A profile to subtract (`--base`). jeprof subtracts by raw address, so a
  /// base from another process only cancels after rebase_profile (rebase.h).
  std::optional<std::string> base;
  JeprofFormat format = JeprofFormat::text;
  /// Further flags, passed as they are, e.g. `--show_bytes`, `--inuse_objects`,
  /// `--alloc_space`, `--lines`, `--exclude=re`. Each is one argv element; no shell.
  std::vector<std::string> extra_args;
  /// If set, jeprof's stdout goes to this file (created or truncated) and
  /// run_jeprof returns an empty string.
  std::optional<std::string> output_path;
  /// The jeprof program: a name looked up in $PATH, or a path.
  std::string jeprof_program = "jeprof";
  /// jeprof is killed after this long.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

/// The argument vector run_jeprof spawns for `options` (argv[0] is
/// `options.jeprof_program`). Pure; for logs and tests.
std::vector<std::string> jeprof_command(const JeprofOptions& options);

/// Runs jeprof without a shell and returns its stdout (or "" when
/// `output_path` is set). jeprof's status lines on stderr are dropped on success.
/// Checked before spawning, in this order:
/// - `jeprof_program` empty → `invalid_argument`.
/// - jeprof not found (not on $PATH, or the given path is not executable) →
///   `unavailable`, `where` = `jeprof_program`, naming "jeprof"; fix: apt-get install libjemalloc-dev.
/// - `svg` and Graphviz `dot` not on $PATH → `unavailable`, naming "dot"; fix: apt-get install graphviz.
/// - nm, addr2line or objdump not on $PATH → `unavailable`; fix: apt-get install binutils.
/// - `binary`, `profile` or `base` missing → `io_error` (jeprof would take a
///   missing profile for a URL and try to fetch it with curl).
/// jeprof exiting non-zero, by a signal or after `timeout` → `external_tool`
/// with the last lines of its stderr. Thread-safe; blocks until jeprof exits.
Result<std::string> run_jeprof(const JeprofOptions& options);

/// One function line of `jeprof --text`: `flat flat% sum% cum cum% name`.
/// Values are in the unit of the `Total:` line. They are whole numbers with
/// `--show_bytes` or the `*_objects` columns, and may be negative with `--base`.
struct JeprofTextLine {
  double flat = 0;
  double flat_percent = 0;  ///< NaN or ±inf when the total is 0
  double sum_percent = 0;
  double cum = 0;
  double cum_percent = 0;
  /// Function name, or a hex address such as "0x000055712c5d0183" when jeprof
  /// could not symbolize it.
  std::string name;
};

/// Parsed `jeprof --text` output.
struct JeprofText {
  double total = 0;
  /// The unit after the total: "B" (--show_bytes), "MB" (default), "objects".
  std::string unit;
  /// In jeprof's order (by flat, descending).
  std::vector<JeprofTextLine> lines;

  /// The first line whose name is `name`, or nullptr.
  const JeprofTextLine* find(std::string_view name) const;
};

/// Parses `jeprof --text` stdout. Lines before `Total:` are ignored. Percent
/// columns may be jeprof's bare "nan", "+inf" or "-inf" (a zero total). Errors:
/// `parse_error` with `where` = "source:LINE" when there is no `Total:` line or
/// a line after it does not have the six columns.
Result<JeprofText> parse_jeprof_text(std::string_view text, std::string_view source = "<jeprof>");

}  // namespace heapgate
