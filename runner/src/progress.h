// SPDX-License-Identifier: MIT
// ProgressLine: the one progress line `heapgate run` and `heapgate fetch` draw on stderr, live on a
// terminal or as throttled plain lines in logs (Style: live, plain, none).
#pragma once

#include <chrono>
#include <string>

namespace heapgate::runner {

/// One progress line on stderr, as `heapgate run` and `heapgate fetch` draw it:
/// on a terminal a live line that rewrites itself; in CI logs, where a
/// rewritten line would pile up as garbage, plain lines, at most one per
/// `plain_every` so a long wait does not flood the log.
class ProgressLine {
 public:
  enum class Style { live, plain, none };

  /// `--progress`' values: `tty` (live), `plain`, `none`, and `auto` (live when
  /// stderr is a terminal, else plain).
  static Style style_for(const std::string& setting);

  ProgressLine(Style style, std::chrono::steady_clock::duration plain_every);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  /// Ends the live line (see end()).
  ~ProgressLine();

  bool live() const { return style_ == Style::live; }

  /// Draws `text`. A live line is always redrawn; a plain line is printed only
  /// when `force` is set or `plain_every` has passed since the last one (the
  /// first is always printed). Returns whether anything was printed.
  bool show(const std::string& text, bool force = false);

  /// Ends a live line with a newline, so what follows starts on its own line.
  void end();

 private:
  Style style_;
  std::chrono::steady_clock::duration plain_every_;
  bool printed_ = false;
  bool open_line_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace heapgate::runner
