// SPDX-License-Identifier: MIT
// is_gtest_overhead(): a stack of only framework frames, or of default constructors ending in the
// generated test class; frames_deciding_call_site() and without_gtest_overhead() use it.
#include "gtest_frames.h"

#include <algorithm>
#include <string>

#include "call_site_frames.h"
#include "heapgate/frame_text.h"
#include "heapgate/gate.h"
#include "heapgate/normalize.h"

namespace heapgate::gtest {

using harness::is_default_constructor;

bool is_gtest_overhead(const StackSample& stack) {
  bool seen_own = false;
  bool constructors = false;
  bool generated = false;
  for (const auto& frame : stack.frames) {
    if (frame.rfind("std::", 0) == 0 && !seen_own) continue;
    seen_own = true;
    const std::string name = split_frame(frame).function;
    if (name == kFrameworkOnlyFrame) continue;
    if (!is_default_constructor(name)) return false;
    constructors = true;
    generated = generated || (name.size() > 7 && name.compare(name.size() - 7, 7, "_Test()") == 0);
  }
  // Only framework frames, or a chain of default constructors that ends in
  // the generated test class.
  return !constructors || generated;
}

std::vector<StackSample> without_gtest_overhead(std::vector<StackSample> stacks) {
  stacks.erase(std::remove_if(stacks.begin(), stacks.end(), is_gtest_overhead), stacks.end());
  return stacks;
}

}  // namespace heapgate::gtest
