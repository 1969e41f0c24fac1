// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
#include "gtest_frames.h"

#include <algorithm>
#include <string>

#include "heapgate/frame_text.h"
#include "heapgate/gate.h"
#include "heapgate/normalize.h"

namespace heapgate::gtest {
namespace {

// "Fixture<int>::Fixture()" (template arguments in either part are ignored).
bool is_default_constructor(const std::string& name) {
  if (name.size() < 3 || name.compare(name.size() - 2, 2, "()") != 0) return false;
  const std::string qualified = name.substr(0, name.size() - 2);
  const std::size_t sep = qualified.rfind("::");
  if (sep == std::string::npos) return false;
  auto bare = [](std::string text) {
    const std::size_t angle = text.find('<');
    if (angle != std::string::npos) text.resize(angle);
    const std::size_t scope = text.rfind("::");
    return scope == std::string::npos ? text : text.substr(scope + 2);
  };
  return bare(qualified.substr(0, sep)) == bare(qualified.substr(sep + 2));
}

}  // namespace

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

std::size_t frames_deciding_call_site(const std::vector<FrameName>& frames) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const std::string function = split_frame(frames[i].str()).function;
    if (function != kFrameworkOnlyFrame && !is_library_frame(function) && !is_default_constructor(function)) {
      return i + 1;
    }
  }
  return frames.size();
}

std::vector<StackSample> without_gtest_overhead(std::vector<StackSample> stacks) {
  stacks.erase(std::remove_if(stacks.begin(), stacks.end(), is_gtest_overhead), stacks.end());
  return stacks;
}

}  // namespace heapgate::gtest
