// SPDX-License-Identifier: MIT
// Frames every face shares: is_default_constructor(), is_framework_only_stack() and
// frames_deciding_call_site(), how far a stack must be normalized to name its call site.
#include "call_site_frames.h"

#include "heapgate/face.h"
#include "heapgate/frame_text.h"
#include "heapgate/gate.h"
#include "heapgate/normalize.h"

namespace heapgate::harness {

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

bool is_framework_only_stack(const StackSample& stack) {
  bool seen_own = false;
  for (const auto& frame : stack.frames) {
    if (frame.rfind("std::", 0) == 0 && !seen_own) continue;
    seen_own = true;
    if (split_frame(frame).function != kFrameworkOnlyFrame) return false;
  }
  return true;
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

}  // namespace heapgate::harness
