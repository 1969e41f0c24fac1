// SPDX-License-Identifier: MIT
// ProgressLine (progress.h): a live, self-rewriting progress line on a terminal, or throttled plain
// lines in CI logs; style_for() maps --progress values.
#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace heapgate::runner {

ProgressLine::Style ProgressLine::style_for(const std::string& setting) {
  if (setting == "none") return Style::none;
  if (setting == "tty") return Style::live;
  if (setting == "auto") return ::isatty(STDERR_FILENO) == 1 ? Style::live : Style::plain;
  return Style::plain;
}

ProgressLine::ProgressLine(Style style, std::chrono::steady_clock::duration plain_every)
    : style_(style), plain_every_(plain_every) {}

ProgressLine::~ProgressLine() { end(); }

bool ProgressLine::show(const std::string& text, bool force) {
  if (style_ == Style::none) return false;
  if (style_ == Style::live) {
    // \033[K clears what a longer previous line left to the right.
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    open_line_ = true;
  } else {
    const auto now = std::chrono::steady_clock::now();
    if (!force && printed_ && now - last_ < plain_every_) return false;
    std::fprintf(stderr, "%s\n", text.c_str());
    printed_ = true;
    last_ = now;
  }
  std::fflush(stderr);
  return true;
}

void ProgressLine::end() {
  if (!open_line_) return;
  std::fputc('\n', stderr);
  std::fflush(stderr);
  open_line_ = false;
}

}  // namespace heapgate::runner
