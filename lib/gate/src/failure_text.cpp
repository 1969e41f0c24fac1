// SPDX-License-Identifier: MIT
// What a failing test shows: the stacks that explain its verdict, and its
// console and JUnit text.
#include "heapgate/gate.h"

#include <algorithm>
#include <cstdio>

#include "heapgate/frame_text.h"

namespace heapgate {
namespace {

std::string format_count(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

}  // namespace

std::vector<StackSample> explaining_stacks(std::vector<StackSample> stacks, Verdict verdict, std::size_t limit) {
  if (verdict == Verdict::leaked) {
    stacks.erase(
        std::remove_if(stacks.begin(), stacks.end(), [](const StackSample& s) { return s.counts.live_objects <= 0; }),
        stacks.end());
    std::stable_sort(stacks.begin(), stacks.end(), [](const StackSample& a, const StackSample& b) {
      return a.counts.live_bytes > b.counts.live_bytes;
    });
  } else {
    std::stable_sort(stacks.begin(), stacks.end(), [](const StackSample& a, const StackSample& b) {
      return a.counts.accum_objects > b.counts.accum_objects;
    });
  }
  if (stacks.size() > limit) stacks.resize(limit);
  return stacks;
}

std::string failure_text(const TestRecord& record, const std::string& stacks_source,
                         const std::string& no_stacks_reason) {
  std::string out = "heapgate: " + record.name + " " + std::string(to_string(record.verdict)) + " (" +
                    std::string(to_string(record.mode)) + " mode)\n";
  if (!record.message.empty()) out += record.message + "\n";
  if (!record.stacks.empty()) {
    out += "  top stacks (" + stacks_source + "):\n";
    for (const auto& s : record.stacks) {
      if (record.verdict == Verdict::leaked) {
        out += "    " + format_count(s.counts.live_objects) + " blocks, " + format_count(s.counts.live_bytes) +
               " B still live, allocated at:\n";
      } else {
        out += "    " + format_count(s.counts.accum_objects) + " allocations, " + format_count(s.counts.accum_bytes) +
               " B, at:\n";
      }
      for (const auto& frame : s.frames) out += "      " + elide_template_arguments(frame) + "\n";
    }
  } else if (!no_stacks_reason.empty()) {
    out += "  (no stacks: " + no_stacks_reason + ")\n";
  }
  return out;
}

}  // namespace heapgate
