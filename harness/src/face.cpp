// SPDX-License-Identifier: MIT
// What heapgate/face.h gives every face: PrintedFailures (a failure a
// framework cannot attach to its test, printed where a compiler puts one and
// counted for the exit status) and shard_from_environment().
#include "heapgate/face.h"

#include <cstdio>
#include <cstdlib>

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

std::optional<Shard> shard_from_environment() {
  const char* total = std::getenv("GTEST_TOTAL_SHARDS");
  const char* index = std::getenv("GTEST_SHARD_INDEX");
  if (total == nullptr || index == nullptr) return std::nullopt;
  const Shard shard{std::atoi(index), std::atoi(total)};
  // GoogleTest refuses such values; the other faces run every test instead.
  if (shard.total < 1 || shard.index < 0 || shard.index >= shard.total) return std::nullopt;
  return shard;
}

}  // namespace heapgate::harness
