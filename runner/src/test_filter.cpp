// SPDX-License-Identifier: MIT
// matches_test_filter() (test_filter.h): GoogleTest's `POSITIVE[-NEGATIVE]` filter of ':'-separated
// globs, matched with fnmatch(), for `heapgate accept --tests`.
#include "test_filter.h"

#include <fnmatch.h>

namespace heapgate::runner {
namespace {

bool matches_any(const std::string& name, const std::string& globs) {
  std::size_t start = 0;
  while (start <= globs.size()) {
    std::size_t end = globs.find(':', start);
    if (end == std::string::npos) end = globs.size();
    std::string glob = globs.substr(start, end - start);
    if (!glob.empty() && ::fnmatch(glob.c_str(), name.c_str(), 0) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

bool matches_test_filter(const std::string& name, const std::string& filter) {
  if (filter.empty()) return true;
  std::string positive = filter;
  std::string negative;
  if (auto dash = filter.find('-'); dash != std::string::npos) {
    positive = filter.substr(0, dash);
    negative = filter.substr(dash + 1);
  }
  if (!positive.empty() && !matches_any(name, positive)) return false;
  return negative.empty() || !matches_any(name, negative);
}

}  // namespace heapgate::runner
