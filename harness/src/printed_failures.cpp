// SPDX-License-Identifier: MIT
// PrintedFailures (heapgate/face.h): a failure a framework cannot attach to
// its test, printed where a compiler puts one and counted for the exit status.
#include <cstdio>

#include "heapgate/face.h"

namespace heapgate::harness {

void PrintedFailures::add(const std::string& file, int line, const std::string& text) {
  ++count_;
  if (file.empty()) {
    std::fprintf(stderr, "heapgate: %s%s%s\n", current_.c_str(), current_.empty() ? "" : ": ", text.c_str());
  } else {
    std::fprintf(stderr, "%s:%d: FAILED (heapgate) %s:\n%s\n", file.c_str(), line, current_.c_str(), text.c_str());
  }
  std::fflush(stderr);
}

}  // namespace heapgate::harness
