// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "heapgate/suppressions.h"

#include "heapgate/sys.h"

namespace heapgate {

const Suppression* Suppressions::match(const StackSample& stack) const noexcept {
  for (const auto& frame : stack.frames) {
    for (const auto& s : entries) {
      if (frame.find(s.pattern) != std::string::npos) return &s;
    }
  }
  return nullptr;
}

Result<Suppressions> parse_suppressions(std::string_view text, const std::string& source) {
  Suppressions out;
  out.source = source;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    const std::string where = source + ":" + std::to_string(number);
    if (line.substr(0, 5) != "leak:" || line.size() == 5) {
      return fail(make_error(ErrorCode::parse_error, where,
                             "expected \"leak:<pattern>\", got \"" + std::string(line) + "\"",
                             "write one leak:<function or file pattern> per line, or start the line with # to "
                             "make it a comment"));
    }
    out.entries.push_back({std::string(line.substr(5)), where});
  }
  return out;
}

Result<Suppressions> read_suppressions(const std::string& path) {
  auto text = sys::read_file(path);
  if (!text) {
    Error e = text.error();
    e.where = path;
    e.what = "cannot read the suppressions file: " + e.what;
    e.fix = "create the file (one leak:<pattern> per line) or correct the --heapgate_suppressions path";
    return fail(std::move(e));
  }
  return parse_suppressions(*text, path);
}

}  // namespace heapgate
